"""Commands carrying the version their player saw (`seen`): judged on that table, or
refused with 409 `table_changed` and the game's version, never judged on another."""

from __future__ import annotations

import asyncio

from tests.api.conftest import FIRST_TRICK, OPERATOR, Api, Body, Table

DRAW: Body = {"type": "draw"}


async def after_first_trick(api: Api) -> Table:
    table = await api.create()
    for seat, command in FIRST_TRICK:
        await api.play(table, seat, command)
    return table  # seat 0 draws first, then seat 1, three rounds


async def test_a_command_on_the_version_its_player_saw_is_played(api: Api) -> None:
    table = await api.create()
    seen = await api.version(table)
    played = await api.play(table, 0, {"type": "lead", "cards": ["AS"], "seen": seen})
    assert played["version"] == seen + 1


async def test_a_command_on_a_table_that_moved_on_is_refused_with_the_current_version(
    api: Api,
) -> None:
    table = await after_first_trick(api)
    seen = await api.version(table)
    await api.play(table, 0, {**DRAW, "seen": seen})
    now = await api.view(table)
    # a second click on "draw", made on the table before the first draw: not a penalty
    refused = await api.send(table, 0, {**DRAW, "seen": seen})
    assert refused.status_code == 409
    body = refused.json()
    assert body["code"] == "table_changed" and body["version"] == now["version"]
    assert f"version {seen}" in body["detail"]
    assert await api.view(table) == now


async def test_without_seen_the_same_second_click_is_judged_and_loses_the_deal(api: Api) -> None:
    """The rules still punish a careless draw: `seen` is the client's way to say which
    table it acted on, not a way out of the penalties."""
    table = await after_first_trick(api)
    await api.play(table, 0, DRAW)
    judged = await api.play(table, 0, DRAW)
    assert judged["events"][0]["event"]["type"] == "penalty_applied"
    assert judged["events"][0]["event"]["seen"] is None


async def test_double_clicks_racing_with_seen_are_one_move_and_one_refusal(api: Api) -> None:
    table = await after_first_trick(api)
    seen = await api.version(table)
    answers = await asyncio.gather(*(api.send(table, 0, {**DRAW, "seen": seen}) for _ in range(6)))
    codes = sorted(a.status_code for a in answers)
    assert codes == [200] + [409] * 5, [a.text for a in answers]
    assert {a.json()["code"] for a in answers if a.status_code == 409} == {"table_changed"}
    view = await api.view(table)
    assert view["version"] == seen + 1 and view["status"] == "in_progress"


async def test_a_retry_with_the_key_returns_the_first_answer_even_after_the_table_moved(
    api: Api,
) -> None:
    table = await after_first_trick(api)
    seen = await api.version(table)
    first = await api.play(table, 0, {**DRAW, "seen": seen}, key="draw-1")
    await api.play(table, 1, {**DRAW, "seen": seen + 1}, key="draw-2")
    again = await api.play(table, 0, {**DRAW, "seen": seen}, key="draw-1")
    assert again == {**first, "duplicate": True}


async def test_the_audit_tells_a_penalty_made_on_a_seen_table_from_one_made_blind(
    api: Api,
) -> None:
    table = await after_first_trick(api)
    seen = await api.version(table)
    # seat 1 draws out of turn on the table it saw: its own act
    penalised = await api.client.post(
        f"/games/{table.game_id}/commands",
        json={**DRAW, "seen": seen},
        headers={**table.seat(1), "X-Request-ID": "req-of-the-fault"},
    )
    assert penalised.status_code == 200
    assert penalised.json()["events"][0]["event"]["seen"] == seen
    audit = await api.get(f"/games/{table.game_id}/audit", OPERATOR)
    [finding] = audit["findings"]
    assert (finding["rule"], finding["seat"], finding["due"]) == ("out_of_turn_draw", 1, 0)
    assert (finding["seen"], finding["seen_carried"]) == (seen, True)
    assert finding["before_version"] == seen
    assert finding["request_id"] == "req-of-the-fault"
    assert finding["recorded_at"]


async def test_the_arbiter_reads_the_key_each_act_came_under(api: Api) -> None:
    """ "My retry became a penalty": a retry under the same key is never a second move, so
    the arbiter's evidence is the key of each act. The audit's finding names the key the
    faulty draw came under, and the record page gives every act's key, beside the draw
    before it under another; a seat's audit names none (a key is the seat's own)."""
    table = await after_first_trick(api)
    await api.play(table, 0, DRAW, key="ann-2")
    await api.play(table, 0, DRAW, key="ann-2")  # a retry: the first answer, no move
    await api.play(table, 0, DRAW, key="ann-2-retry")  # a new command: judged
    audit = await api.get(f"/games/{table.game_id}/audit", OPERATOR)
    [finding] = audit["findings"]
    assert finding["rule"] in ("out_of_turn_draw", "double_draw") and finding["seat"] == 0
    assert finding["command_id"] == "ann-2-retry"
    page = await api.client.get(f"/arbiter/games/{table.game_id}", headers=OPERATOR)
    assert page.status_code == 200
    assert "key ann-2<" in page.text and "key ann-2-retry<" in page.text
    assert "command key</th><td>ann-2-retry" in page.text
    assert (await api.view(table))["status"] == "finished"  # the penalty ended the game
    seat = await api.get(f"/games/{table.game_id}/audit", table.seat(1))
    assert seat["findings"] and all(f["command_id"] is None for f in seat["findings"])
    as_seat = await api.client.get(
        f"/arbiter/games/{table.game_id}", headers=OPERATOR, params={"as": "1"}
    )
    assert "key ann-2" not in as_seat.text


async def test_seen_is_accepted_on_every_command(api: Api) -> None:
    """Each command type takes `seen`; a wrong one is table_changed, never another code."""
    table = await api.create()
    stale = (await api.version(table)) - 1
    commands: list[Body] = [
        DRAW,
        {"type": "draw", "count": 2},
        {"type": "lead", "cards": ["AS"]},
        {"type": "respond", "cards": ["6H"]},
        {"type": "declare", "claim": "thirty_one"},
        {"type": "declare", "claim": "bura"},
        {"type": "dave"},
        {"type": "dave_answer", "accept": True},
        {"type": "pass"},
        {"type": "concede"},
    ]
    for command in commands:
        for seat in (0, 1):
            refused = await api.send(table, seat, {**command, "seen": stale})
            assert refused.status_code == 409, (command, refused.text)
            assert refused.json()["code"] == "table_changed"
