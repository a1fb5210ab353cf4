"""GET /games/{id}/commands/{key}: what became of a command, for the seat that sent it and
the operator; for everyone else a key is unknown."""

from __future__ import annotations

from urllib.parse import quote

from tests.api.conftest import FIRST_TRICK, OPERATOR, Api, Body, Table


def lookup_path(table: Table, key: str) -> str:
    return f"/games/{table.game_id}/commands/{quote(key, safe='')}"


async def lookup(api: Api, table: Table, key: str, headers: dict[str, str]) -> Body:
    answer = await api.client.get(lookup_path(table, key), headers=headers)
    assert answer.status_code == 200, answer.text
    body: Body = answer.json()
    return body


async def test_an_applied_command_is_told_with_its_version_and_events_as_its_seat_saw_them(
    api: Api,
) -> None:
    table = await api.create()
    led = await api.play(table, 0, {"type": "lead", "cards": ["AS"]}, key="ann-1")
    status = await lookup(api, table, "ann-1", table.seat(0))
    assert status["status"] == "applied" and status["command_id"] == "ann-1"
    assert (status["seat"], status["version"]) == (0, led["version"])
    assert status["events"] == led["events"]
    assert status["recorded_at"]


async def test_a_command_that_drew_cards_shows_them_to_its_seat_and_the_arbiter_only(
    api: Api,
) -> None:
    table = await api.create()
    for seat, command in FIRST_TRICK:
        await api.play(table, seat, command)
    drawn = await api.play(table, 0, {"type": "draw"}, key="draw-1")
    mine = await lookup(api, table, "draw-1", table.seat(0))
    assert mine["events"] == drawn["events"]
    assert mine["events"][0]["event"]["card"] is not None
    arbiter = await lookup(api, table, "draw-1", OPERATOR)
    assert arbiter["events"] == mine["events"] and arbiter["seat"] == 0
    # to the other seat the key is unknown, as if it had never been sent
    theirs = await lookup(api, table, "draw-1", table.seat(1))
    assert theirs == {
        "command_id": "draw-1",
        "status": "unknown",
        "seat": None,
        "version": None,
        "events": [],
        "recorded_at": None,
    }


async def test_a_key_never_used_or_only_refused_is_unknown(api: Api) -> None:
    table = await api.create()
    refused = await api.send(table, 0, {"type": "lead", "cards": ["6D"]}, key="bad-1")
    assert refused.status_code == 409
    for key in ("never-sent", "bad-1"):
        assert (await lookup(api, table, key, table.seat(0)))["status"] == "unknown"


async def test_a_command_sent_without_a_key_can_be_looked_up_by_the_id_it_was_given(
    api: Api,
) -> None:
    table = await api.create()
    led = await api.play(table, 0, {"type": "lead", "cards": ["AS"]})
    given = led["command_id"]
    assert given
    status = await lookup(api, table, given, table.seat(0))
    assert (status["status"], status["version"]) == ("applied", led["version"])
    # and it is a key like any other: sent again under it, the command is not played twice
    again = await api.play(table, 0, {"type": "lead", "cards": ["AS"]}, key=given)
    assert again == {**led, "duplicate": True}


async def test_any_key_the_header_accepts_can_be_looked_up(api: Api) -> None:
    table = await api.create()
    await api.play(table, 0, {"type": "lead", "cards": ["AS"]}, key="with/slash")
    await api.play(table, 1, {"type": "respond", "cards": ["6H"]}, key="with space 100% a?b#c")
    for seat, key in ((0, "with/slash"), (1, "with space 100% a?b#c")):
        status = await lookup(api, table, key, table.seat(seat))
        assert (status["status"], status["command_id"], status["seat"]) == ("applied", key, seat)


async def test_slashes_at_either_end_or_doubled_are_part_of_the_key(api: Api) -> None:
    """The router joins repeated slashes and drops them at a path's ends: the lookup reads
    its key as the path has it, so `/d`, `d/`, `d//e` and `d` are four keys, each found
    by its own seat, and one seat's key never answers for another's."""
    table = await api.create()
    keys = ("/d", "d/", "d//e", "d")
    plays = (
        (0, {"type": "lead", "cards": ["AS"]}),
        (1, {"type": "respond", "cards": ["6H"]}),
        (0, {"type": "draw"}),
        (1, {"type": "draw"}),
    )
    for key, (seat, command) in zip(keys, plays, strict=True):
        await api.play(table, seat, command, key=key)
    for key, (seat, _) in zip(keys, plays, strict=True):
        status = await lookup(api, table, key, table.seat(seat))
        assert (status["status"], status["command_id"], status["seat"]) == ("applied", key, seat)
        assert (await lookup(api, table, key, OPERATOR))["seat"] == seat
    raw = f"/games/{table.game_id}/commands//d?as=x"  # sent unencoded, a query after it
    answer = await api.client.get(raw, headers=table.seat(0))
    assert answer.status_code == 200 and answer.json()["command_id"] == "/d", answer.text


async def test_a_lookup_of_slashes_alone_is_a_400_naming_the_key(
    api: Api,
) -> None:
    """Routing reads such a path as the end of /games/{id}/commands, which only POST
    answers: it was a 405 there, while every other key no command can have is a 400."""
    table = await api.create()
    base = f"/games/{table.game_id}/commands"
    for path in (f"{base}/%2F", f"{base}/%2f%2F", f"{base}//", f"{base}/"):
        answer = await api.client.get(path, headers=table.seat(0))
        assert answer.status_code == 400, (path, answer.text)
        problem = answer.json()
        assert problem["code"] == "bad_request"
        assert [(e["key"], e["source"]) for e in problem["errors"]] == [("command_id", "path")]
    # no key at all: a path where only POST is served
    assert (await api.client.get(base, headers=table.seat(0))).status_code == 405


async def test_keys_stay_valid_after_the_game_ends(api: Api) -> None:
    table = await api.create()
    await api.play(table, 0, {"type": "concede"}, key="give-up")
    assert (await api.view(table))["status"] == "finished"
    assert (await lookup(api, table, "give-up", table.seat(0)))["status"] == "applied"


async def test_who_may_ask(api: Api) -> None:
    table = await api.create()
    await api.play(table, 0, {"type": "lead", "cards": ["AS"]}, key="k")
    spectator = await api.client.get(lookup_path(table, "k"), headers=table.watcher)
    assert spectator.status_code == 403 and spectator.json()["code"] == "forbidden"
    nobody = await api.client.get(lookup_path(table, "k"))
    assert nobody.status_code == 401
    other = await api.create()
    wrong_game = await api.client.get(lookup_path(table, "k"), headers=other.seat(0))
    assert wrong_game.status_code == 403
    missing = await api.client.get("/games/nope/commands/k", headers=OPERATOR)
    assert missing.status_code == 404 and missing.json()["code"] == "game_not_found"


async def test_a_key_no_header_could_carry_is_a_400(api: Api) -> None:
    table = await api.create()
    for key in ("k" * 201, "tab%09key", "nul%00key", "%C3%A9", "%20k", "k%20", "%2E", "%2E%2E"):
        answer = await api.client.get(
            f"/games/{table.game_id}/commands/{key}", headers=table.seat(0)
        )
        assert answer.status_code == 400, (key, answer.text)
        problem = answer.json()
        assert problem["code"] == "bad_request" and problem["detail"].startswith("command_id: ")
        assert problem["errors"] == [
            {"key": "command_id", "message": problem["detail"][12:], "source": "path"}
        ]
