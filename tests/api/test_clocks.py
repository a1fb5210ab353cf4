"""Clocks through the API, on both stores (docs/rules.md §13): deadlines in the views, the
timers that time a seat out (once, whatever the number of replicas racing), the pause and
the operator's ruling, abandonment, and timers rebuilt when the server starts again.

Waiting is generous and nothing here measures speed: a timeout is checked by the deadline
and the time its event records, never by how long the machine took."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from domain.commands import Lead
from domain.errors import RuleViolation
from infra.memory.hints import InProcessHintBus
from services.app.games import GameService, wall_clock
from tests.api.conftest import OPERATOR, Api, Body, Table, app_on, bearer, serving

WAIT = 30.0  # seconds: far more than any clock here, so only a failure runs out of it
# These wait for a real clock of a second or more to run out.
SLOW = pytest.mark.slow


async def until(check: Callable[[], Awaitable[Body | None]], timeout: float = WAIT) -> Body:
    """Poll until `check` returns something."""
    async with asyncio.timeout(timeout):
        while (found := await check()) is None:
            await asyncio.sleep(0.05)
    return found


async def events_of(api: Api, table: Table, kind: str) -> list[Body]:
    return [e["event"] for e in await api.events(table) if e["event"]["type"] == kind]


def timed_out(api: Api, table: Table) -> Callable[[], Awaitable[Body | None]]:
    async def check() -> Body | None:
        found = await events_of(api, table, "timed_out")
        return found[0] if found else None

    return check


async def test_a_view_shows_the_deadline_and_time_left_of_the_seat_due(api: Api) -> None:
    before = wall_clock()
    table = await api.create(rules={"turn_seconds": 60, "time_bank_seconds": 30})
    shown = await api.view(table, table.seat(1))
    due, other = shown["seats"]
    assert shown["now"] >= before and shown["clock"]["seat"] == 0
    assert due["deadline"] == shown["clock"]["deadline"] >= before + 90_000
    assert 0 < due["time_left"] <= 90_000 and due["time_bank"] == 30_000
    assert (other["deadline"], other["time_left"], other["time_bank"]) == (None, None, 30_000)
    started = (await events_of(api, table, "clock_started"))[-1]
    assert started["deadline"] == due["deadline"] and started["banks"] == [30_000, 30_000]


@SLOW
async def test_a_seat_that_does_not_act_loses_the_deal_on_time(api: Api) -> None:
    table = await api.create(rules={"turn_seconds": 1})
    timeout = await until(timed_out(api, table))
    assert (timeout["seat"], timeout["clock"], timeout["verdict"]) == (0, "turn", "lose_deal")
    assert timeout["at"] >= timeout["deadline"]
    final = await api.view(table)
    assert final["result"] == {"winners": [1], "reason": "timeout"}
    assert final["clock"] is None and all(s["deadline"] is None for s in final["seats"])
    [finding] = (await api.get(f"/games/{table.game_id}/audit"))["findings"]
    assert (finding["rule"], finding["seat"], finding["deadline"]) == (
        "timeout",
        0,
        timeout["deadline"],
    )


@SLOW
async def test_auto_play_the_server_leads_for_the_seat_and_the_game_goes_on(api: Api) -> None:
    table = await api.create(rules={"turn_seconds": 1, "on_timeout": "auto_play"})
    timeout = await until(timed_out(api, table))
    assert timeout["verdict"] == "auto_play" and timeout["phase"] == "lead"
    led = await events_of(api, table, "cards_led")
    assert led[0] == {"type": "cards_led", "seat": 0, "cards": ["KS"], "combination": None}
    # KS: the lowest card of "AS 10S KS" (trump clubs) by points
    shown = await api.view(table)
    assert shown["status"] == "in_progress" and shown["clock"]["seat"] == 1


@SLOW
async def test_pause_the_operator_rules_play_on_and_the_clock_runs_again(api: Api) -> None:
    table = await api.create(rules={"turn_seconds": 1, "on_timeout": "pause"})
    timeout = await until(timed_out(api, table))
    assert timeout["verdict"] == "pause"
    paused = await api.view(table)
    assert paused["clock"]["paused"] and paused["clock"]["deadline"] is None
    assert paused["status"] == "in_progress"
    denied = await api.client.post(f"/games/{table.game_id}/resume", headers=table.seat(0))
    assert denied.status_code == 403
    answer = await api.client.post(
        f"/games/{table.game_id}/resume", json={"verdict": "play_on"}, headers=OPERATOR
    )
    assert answer.status_code == 200, answer.text
    kinds = [e["event"]["type"] for e in answer.json()["events"]]
    assert kinds == ["pause_ended", "clock_started"]
    running = await api.view(table)
    assert not running["clock"]["paused"] and running["clock"]["deadline"] > timeout["at"]
    again = await api.client.post(f"/games/{table.game_id}/resume", headers=OPERATOR)
    assert again.status_code == 409 and again.json()["code"] == "not_paused"
    # a refusal says the version it was judged on, as a seat's does
    assert again.json()["version"] == answer.json()["version"]


@SLOW
async def test_pause_the_operator_may_rule_the_deal_lost_on_time(api: Api) -> None:
    table = await api.create(rules={"turn_seconds": 1, "on_timeout": "pause"})
    await until(timed_out(api, table))
    answer = await api.client.post(
        f"/games/{table.game_id}/resume", json={"verdict": "lose_deal"}, headers=OPERATOR
    )
    assert answer.status_code == 200, answer.text
    assert (await api.view(table))["result"] == {"winners": [1], "reason": "timeout"}


@SLOW
async def test_a_seat_due_that_never_opens_a_stream_is_abandoned(api: Api) -> None:
    table = await api.create(rules={"turn_seconds": 60, "abandon_seconds": 1})
    timeout = await until(timed_out(api, table))
    assert (timeout["clock"], timeout["verdict"], timeout["seat"]) == ("abandon", "lose_deal", 0)
    assert (await api.view(table))["result"]["reason"] == "abandoned"


async def test_a_table_every_seat_left_ends_rather_than_dealing_again(api: Api) -> None:
    """Nobody ever opens a stream at a table of three deals: the first abandonment ends
    the game (the deal lost, then `game_finished`), marked `deserted`, and the record
    verifies (the rules decide it again from the record alone). It dealt again and again,
    each deal lost by whoever was due, and never ended."""
    rules = {"turn_seconds": 60, "abandon_seconds": 1, "on_timeout": "auto_play", "match_target": 3}
    table = await api.create(rules=rules)
    timeout = await until(timed_out(api, table))
    assert (timeout["clock"], timeout["seat"], timeout["deserted"]) == ("abandon", 0, True)
    shown = await api.view(table)
    assert shown["status"] == "finished" and shown["result"]["reason"] == "abandoned", shown
    assert shown["result"]["winners"] == [1] and len(shown["deals"]) == 1
    verified = await api.client.get(f"/games/{table.game_id}/verify", headers=OPERATOR)
    assert verified.status_code == 200 and verified.json()["ok"] is True, verified.text


def abandoned(api: Api, table: Table) -> Callable[[], Awaitable[Body | None]]:
    async def check() -> Body | None:
        found = [e for e in await events_of(api, table, "timed_out") if e["clock"] == "abandon"]
        return found[0] if found else None

    return check


@SLOW
@pytest.mark.parametrize("policy", ["pause", "auto_play"])
async def test_a_seat_gone_is_abandoned_at_a_table_that_pauses_or_plays_for_it(
    api: Api, policy: str
) -> None:
    """Its turn runs out first (1 s): the table pauses, or the server plays for it; either
    way a seat that never opens a stream is abandoned abandon_seconds after it first
    became due, by the server's timers alone (docs/rules.md §13.5)."""
    table = await api.create(rules={"turn_seconds": 1, "abandon_seconds": 3, "on_timeout": policy})
    present = await api.runtime.attendance.arrive(table.game_id, 1)  # seat 1 is there
    began = (await api.view(table))["clock"]["started"]
    judged = await until(abandoned(api, table))
    await api.runtime.attendance.leave(present)
    assert (judged["seat"], judged["verdict"]) == (0, "lose_deal")
    assert judged["deadline"] == began + 3_000 <= judged["at"]
    assert (await api.view(table))["result"]["reason"] == "abandoned"
    first = (await events_of(api, table, "timed_out"))[0]
    assert (first["clock"], first["verdict"]) == ("turn", policy)


@SLOW
async def test_a_seat_with_a_live_stream_is_shown_connected_and_not_abandoned(api: Api) -> None:
    table = await api.create(rules={"turn_seconds": 60, "abandon_seconds": 1})
    present = await api.runtime.attendance.arrive(table.game_id, 0)  # as its stream does
    shown = await api.view(table)
    assert shown["seats"][0]["connected"] is True and shown["seats"][0]["connected_since"]
    assert shown["seats"][1]["connected"] is False and shown["seats"][1]["away_since"] is None
    await asyncio.sleep(2.5)  # more than abandon_seconds: connected, so nothing happens
    assert await events_of(api, table, "timed_out") == []
    await api.runtime.attendance.leave(present)
    gone = await api.view(table)
    assert gone["seats"][0]["connected"] is False
    assert gone["seats"][0]["abandon_at"] == gone["seats"][0]["away_since"] + 1_000
    timeout = await until(timed_out(api, table))
    assert timeout["clock"] == "abandon" and timeout["away_since"] == gone["seats"][0]["away_since"]


async def test_an_act_after_the_deadline_is_refused_and_the_timeout_judged_at_once(
    api: Api,
) -> None:
    table = await api.create(rules={"turn_seconds": 30})
    later = wall_clock() + 31_000  # a replica whose clock is past the deadline: no waiting
    late = GameService(api.store, api.runtime.seating, InProcessHintBus(), now=lambda: later)
    try:
        await late.execute(table.game_id, 0, Lead(("AS",)))
        raise AssertionError("a late lead was taken")
    except RuleViolation as refused:
        assert refused.code == "out_of_time"
        told = refused.version
    [timeout] = await events_of(api, table, "timed_out")
    after = await api.view(table)
    assert timeout["at"] == later and after["result"]["reason"] == "timeout"
    # the refusal names the table after the timeout (the one to go on from), not before it
    assert told == after["version"]


async def test_timers_on_many_replicas_time_a_seat_out_exactly_once(api: Api) -> None:
    table = await api.create(rules={"turn_seconds": 30, "on_timeout": "auto_play"})
    state = await api.service.load(table.game_id)
    assert state.clock is not None
    at = state.clock.deadline + 5
    replicas = [
        GameService(api.store, api.runtime.seating, InProcessHintBus(), now=lambda: at)
        for _ in range(6)
    ]
    won = await asyncio.gather(*(r.time_out(table.game_id, state, at) for r in replicas))
    assert won.count(True) == 1
    assert len(await events_of(api, table, "timed_out")) == 1
    # and once the seat acted, a timer judging the old table does nothing
    assert not await replicas[0].time_out(table.game_id, state, at + 1)
    assert len(await events_of(api, table, "timed_out")) == 1


@SLOW
async def test_timers_are_rebuilt_from_the_games_index_when_the_server_starts_again(
    api: Api,
) -> None:
    created = await api.create(rules={"turn_seconds": 2})
    await api.runtime.timers.stop()  # this server stops before the deadline ...
    assert await events_of(api, created, "timed_out") == []
    async with serving(app_on(api.adapters)) as client:  # ... and another starts

        async def check() -> Body | None:
            page = await client.get(f"/games/{created.game_id}/events", headers=OPERATOR)
            found = [e["event"] for e in page.json()["events"] if e["event"]["type"] == "timed_out"]
            return found[0] if found else None

        timeout = await until(check)
    assert timeout["at"] >= timeout["deadline"]


async def test_only_the_operator_rules_on_a_pause(api: Api) -> None:
    table = await api.create(rules={"turn_seconds": 30, "on_timeout": "pause"})
    for headers in (table.seat(1), table.watcher, bearer("nobody")):
        answer = await api.client.post(f"/games/{table.game_id}/resume", headers=headers)
        assert answer.status_code in (401, 403), answer.text


async def test_a_ruling_at_a_table_without_a_clock_is_not_paused(api: Api) -> None:
    """As documented for POST /games/{id}/resume: nothing is paused where nothing is timed
    (no_clock is what the server's own timeout meets there, never a client)."""
    table = await api.create()
    answer = await api.client.post(f"/games/{table.game_id}/resume", headers=OPERATOR)
    assert answer.status_code == 409 and answer.json()["code"] == "not_paused", answer.text
    assert "no clock" in answer.json()["detail"]
    assert answer.json()["version"] == (await api.view(table))["version"]
