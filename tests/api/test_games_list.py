"""The operator's list of games (GET /games) and the rematch (POST /games/{id}/rematch), on
both stores."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from domain.commands import Concede
from domain.rules import Rules
from infra.memory.hints import InProcessHintBus
from services.app.games import GameService
from services.live.timers import Timers
from tests.api.conftest import OPERATOR, Api, Body, Table, bearer
from tests.tampering import Tables

CONCEDE: Body = {"type": "concede"}


async def listed(api: Api, **params: object) -> list[Body]:
    """Every game of the list (all pages), with the filters given."""
    games: list[Body] = []
    cursor = None
    while True:
        page = await api.get("/games", **params, **({"cursor": cursor} if cursor else {}))
        games += page["games"]
        cursor = page["next_cursor"]
        if cursor is None:
            return games


async def finished(api: Api) -> Table:
    table = await api.create()
    await api.play(table, 0, CONCEDE)  # seat 0 concedes: seat 1 wins the game
    return table


async def test_the_list_shows_each_game_with_seats_rules_version_status_and_result(
    api: Api,
) -> None:
    since = datetime.now(UTC).isoformat()
    on = await api.create(rules={"turn_seconds": 600, "stake": 2})
    over = await finished(api)
    games = {g["game_id"]: g for g in await listed(api, created_since=since)}
    assert set(games) == {on.game_id, over.game_id}
    shown = games[on.game_id]
    assert shown["seats"] == ["p0", "p1"] and shown["status"] == "in_progress"
    assert shown["rules"]["turn_seconds"] == 600 and shown["rules"]["stake"] == 2
    # the defaults that depend on the seats, as the table plays them
    assert shown["rules"]["dave"] is True and shown["rules"]["hand_size"] == [3, 3]
    assert (await api.view(on))["rules"] == shown["rules"]
    assert shown["version"] == await api.version(on) and shown["result"] is None
    assert shown["created"] <= shown["updated"]
    done = games[over.game_id]
    assert done["status"] == "finished"
    assert done["result"] == {"winners": [1], "reason": "conceded"}
    assert done["version"] == await api.version(over)


async def test_the_list_pages_by_cursor_in_creation_order_with_nothing_missed_or_repeated(
    api: Api,
) -> None:
    since = datetime.now(UTC).isoformat()
    made = [(await api.create()).game_id for _ in range(7)]
    first = await api.get("/games", created_since=since, limit=3)
    assert len(first["games"]) == 3 and first["next_cursor"]
    games = await listed(api, created_since=since, limit=3)
    assert [g["game_id"] for g in games] == made


async def test_the_list_filters_by_status_and_by_what_changed_since(api: Api) -> None:
    since = datetime.now(UTC).isoformat()
    quiet = await api.create()
    moving = await api.create()
    over = await finished(api)
    await asyncio.sleep(0.02)
    mark = datetime.now(UTC).isoformat()
    await asyncio.sleep(0.02)
    await api.play(moving, 0, {"type": "lead", "cards": ["AS"]})
    mine = {quiet.game_id, moving.game_id, over.game_id}

    async def ids(**params: object) -> set[str]:
        return {g["game_id"] for g in await listed(api, **params)} & mine

    assert await ids(created_since=since, status="finished") == {over.game_id}
    assert await ids(created_since=since, status="in_progress") == {quiet.game_id, moving.game_id}
    assert await ids(updated_since=mark) == {moving.game_id}


async def test_only_the_operator_lists_games_and_bad_filters_are_400(api: Api) -> None:
    table = await api.create()
    assert (await api.client.get("/games")).status_code == 401
    seat = await api.client.get("/games", headers=table.seat(0))
    assert seat.status_code == 403
    assert (await api.client.get("/games", headers=bearer("nobody"))).status_code == 401
    for params, code in (
        ({"cursor": "not-a-cursor"}, "bad_cursor"),
        ({"cursor": ""}, "bad_request"),  # no cursor is no `cursor`, not an empty one
        ({"status": "paused"}, "bad_request"),
        ({"limit": 0}, "bad_request"),
        ({"updated_since": "yesterday"}, "bad_request"),
        # a number is no RFC 3339 time (the framework would read it as seconds since 1970)
        ({"created_since": "1796599100"}, "bad_request"),
        ({"updated_since": "-1"}, "bad_request"),
        ({"created_since": "1700000000.5"}, "bad_request"),
        # well formed, but no time UTC can write: refused, not a failure of the store
        ({"created_since": "0001-01-01T00:00:00+01:00"}, "bad_request"),
        ({"updated_since": "0001-01-01T00:00:00+01:00"}, "bad_request"),
        ({"created_since": "9999-12-31T23:59:59-01:00"}, "bad_request"),
        ({"updated_since": "9999-12-31T23:59:59-01:00"}, "bad_request"),
    ):
        answer = await api.client.get("/games", params=params, headers=OPERATOR)
        assert answer.status_code == 400, (params, answer.text)
        assert answer.json()["code"] == code
        [name] = params
        assert [e["key"] for e in answer.json()["errors"]] == [name], answer.text
    for edge in ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "0001-01-01T01:00:00+01:00"):
        for name in ("created_since", "updated_since"):
            answer = await api.client.get("/games", params={name: edge}, headers=OPERATOR)
            assert answer.status_code == 200, (name, edge, answer.text)


@pytest.mark.parametrize(
    "forged",
    [
        b'[9223372036854775807,"zz"]',
        b'[99999999999999999999999,"a"]',
        b'[-9223372036854775809,"zz"]',
        b'[-99999999999999999,"zz"]',
        b'[1796477235790735,"\\u0000"]',
        b'[1796477235790735,"a b"]',
        b'[1796477235790735,""]',
        b'[1796477235790735,"' + b"a" * 65 + b'"]',
        b'[1.5,"a"]',
        b'[1,"a",3]',
        # well formed, but no cursor this server gave: a place made up, or an old one's
        b'[1,"x"]',
        b'[1796477235790735,"0123456789abcdef0123456789abcdef"]',
        b'[1796477235790735,"0123456789abcdef0123456789abcdef","00112233aabbccdd"]',
    ],
)
async def test_a_forged_cursor_is_a_bad_cursor_on_every_store(api: Api, forged: bytes) -> None:
    """A cursor holds a creation time and a game id; one holding what no game could have
    (a time out of any calendar, an id no game may have) is the client's mistake, not a
    500 from the index."""
    await api.create()
    cursor = base64.urlsafe_b64encode(forged).decode().rstrip("=")
    answer = await api.client.get("/games", params={"cursor": cursor}, headers=OPERATOR)
    assert answer.status_code == 400, answer.text
    assert answer.json()["code"] == "bad_cursor"


async def test_a_rematch_has_the_same_seats_and_rules_is_dealt_by_the_winner_and_is_linked(
    api: Api,
) -> None:
    over = await api.create(rules={"stake": 3})  # dealer 1: seat 0 leads, and concedes
    await api.play(over, 0, CONCEDE)
    answer = await api.client.post(f"/games/{over.game_id}/rematch", headers=OPERATOR)
    assert answer.status_code == 201, answer.text
    created = answer.json()
    assert created["rematch_of"] == over.game_id and len(created["seats"]) == 2
    again = Table(
        created["game_id"],
        [s["token"] for s in created["seats"]],
        created["spectator_token"],
        created["version"],
    )
    shown = await api.view(again, again.seat(0))
    assert shown["rules"]["stake"] == 3 and [s["name"] for s in shown["seats"]] == ["p0", "p1"]
    assert shown["dealer"] == 1 and shown["rematch_of"] == over.game_id  # seat 1 won
    chosen = [e for e in await api.events(again) if e["event"]["type"] == "dealer_chosen"]
    assert chosen[0]["event"] == {"type": "dealer_chosen", "seat": 1, "by": "winner"}
    old = await api.view(over, over.seat(1))
    assert old["rematch"] == again.game_id
    games = {g["game_id"]: g for g in await listed(api, status="finished")}
    assert games[over.game_id]["rematch"] == again.game_id
    new = {g["game_id"]: g for g in await listed(api, status="in_progress")}[again.game_id]
    assert new["rematch_of"] == over.game_id
    # the old tokens do not play the new game
    stale = await api.client.get(f"/games/{again.game_id}", headers=over.seat(0))
    assert stale.status_code == 403


async def test_a_game_has_one_rematch_only_after_it_is_over_and_only_by_the_operator(
    api: Api,
) -> None:
    on = await api.create()
    early = await api.client.post(f"/games/{on.game_id}/rematch", headers=OPERATOR)
    assert early.status_code == 409 and early.json()["code"] == "game_not_finished"
    over = await finished(api)
    seat = await api.client.post(f"/games/{over.game_id}/rematch", headers=over.seat(1))
    assert seat.status_code == 403
    racing = await asyncio.gather(
        *(api.client.post(f"/games/{over.game_id}/rematch", headers=OPERATOR) for _ in range(4))
    )
    statuses = sorted(r.status_code for r in racing)
    assert statuses == [201, 409, 409, 409]
    made = next(r.json()["game_id"] for r in racing if r.status_code == 201)
    for refused in (r for r in racing if r.status_code == 409):
        assert refused.json()["code"] == "rematch_exists" and made in refused.json()["detail"]
    missing = await api.client.post(f"/games/{'f' * 32}/rematch", headers=OPERATOR)
    assert missing.status_code == 404


async def test_a_game_whose_record_no_longer_folds_keeps_no_other_game_from_its_repair(
    api: Api,
) -> None:
    """Two games a crash left in progress in the index, one of them edited behind the
    server's back so that it no longer folds: the other is repaired all the same, and the
    start-up goes on to start the clocks."""
    index = api.adapters.games
    crashed = GameService(api.store, api.runtime.seating, InProcessHintBus())
    broken, over = await api.create(), await api.create()
    for table in (broken, over):
        await crashed.execute(table.game_id, 0, Concede())
    await Tables(api.store).rewrite(broken.game_id, "card_dealt", seat=7)
    fresh = GameService(api.store, api.runtime.seating, InProcessHintBus())  # nothing cached
    timers = Timers(fresh, InProcessHintBus(), index, orphaned_after=timedelta(0))
    await timers.repair()
    rows_left = (await index.stale(datetime.now(UTC) + timedelta(days=1))).finished
    assert over.game_id not in rows_left  # its row written
    assert broken.game_id in rows_left  # its row left as it was
    repaired = await index.get(over.game_id)
    assert repaired is not None and repaired.status == "finished"


async def test_the_start_up_repairs_what_a_crash_left_in_the_games_index(api: Api) -> None:
    index = api.adapters.games
    over = await api.create()
    # a replica that crashed between the final append and its index write
    crashed = GameService(api.store, api.runtime.seating, InProcessHintBus())
    await crashed.execute(over.game_id, 0, Concede())
    assert over.game_id in (await index.stale(datetime.now(UTC) + timedelta(days=1))).finished
    # the list reads the game's end from its events even before its row is repaired
    before = await index.get(over.game_id)
    assert before is not None and before.status == "finished"
    assert (before.winners, before.reason) == ((1,), "conceded")
    ghost = f"ghost-{uuid.uuid4().hex}"  # a creation whose first append never happened
    first = await finished(api)
    await index.add(ghost, ["p0", "p1"], Rules(), rematch_of=first.game_id)
    timers = Timers(api.service, InProcessHintBus(), index, orphaned_after=timedelta(0))
    await timers.repair()
    assert over.game_id not in (await index.stale(datetime.now(UTC) + timedelta(days=1))).finished
    repaired = await index.get(over.game_id)
    assert repaired == before
    unlinked = await index.get(first.game_id)
    assert unlinked is not None and unlinked.rematch is None
    assert ghost not in (await index.stale(datetime.now(UTC) + timedelta(days=1))).orphans


async def test_a_cursor_edited_to_another_place_is_a_bad_cursor(api: Api) -> None:
    """The server seals its cursors: one whose time or id was changed (to skip ahead, or
    to probe the list) is refused, and the one it gave pages on."""
    for _ in range(3):
        await api.create()
    page = await api.get("/games", limit=1)
    given = page["next_cursor"]
    assert given is not None
    raw = base64.urlsafe_b64decode(given + "=" * (-len(given) % 4))
    created, game_id, tag = json.loads(raw)
    for edited in ([created + 1, game_id, tag], [created, "f" * 32, tag]):
        cursor = base64.urlsafe_b64encode(json.dumps(edited).encode()).decode().rstrip("=")
        answer = await api.client.get("/games", params={"cursor": cursor}, headers=OPERATOR)
        assert answer.status_code == 400 and answer.json()["code"] == "bad_cursor", answer.text
    assert (await api.client.get("/games", params={"cursor": given}, headers=OPERATOR)).is_success
