"""Clocks on real processes (docs/rules.md §13): two replicas sharing PostgreSQL and Redis
time out a seat that stopped acting exactly once, and still on time after both restart.

What is checked of time is what the events record (the deadline, and when the timeout
was judged), never how fast the machine ran: the waiting is generous."""

from __future__ import annotations

import asyncio

import httpx

from domain.commands import Draw, Lead, Respond
from harness.processes import OPERATOR
from services.app.games import wall_clock
from tests.decks import dealing_order
from tests.e2e.conftest import StartService, metric
from tests.e2e.play import Table

# Dealer 1: seat 0 holds AS 10S KS and leads; seat 1 holds 6H 7H 8H; clubs are trumps.
DECK = list(dealing_order([["AS", "10S", "KS"], ["6H", "7H", "8H"]], "6C", dealer=1))

WAIT = 60.0
ON_TIME_MS = 1_000  # a timeout is judged within this of its deadline


async def events(client: httpx.AsyncClient, base: str, game_id: str) -> list[dict[str, object]]:
    answer = await client.get(f"{base}/games/{game_id}/events", headers=OPERATOR)
    assert answer.status_code == 200, answer.text
    return [e["event"] for e in answer.json()["events"]]


async def timed_out(client: httpx.AsyncClient, base: str, game_id: str) -> list[dict[str, object]]:
    async with asyncio.timeout(WAIT):
        while True:
            found = [e for e in await events(client, base, game_id) if e["type"] == "timed_out"]
            if found:
                return found
            await asyncio.sleep(0.1)


async def test_two_replicas_time_out_a_seat_that_stopped_acting_exactly_once(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    one, two = await asyncio.gather(start_service(), start_service())
    table = await Table.create(
        client, one.url, seed="clocks-1", rules={"turn_seconds": 2}, dealer=1, deck=DECK
    )
    acts = [(two, 0, Lead(("AS",))), (one, 1, Respond(("6H",))), (two, 0, Draw())]
    for replica, seat, command in acts:  # a few acts, on both replicas, then nobody acts
        answer = await table.send(client, replica.url, seat, command)
        assert answer.status_code == 200, answer.text
    timing: set[int] = set()  # the replicas seen keeping a timer for the game
    async with asyncio.timeout(WAIT):
        while len(timing) < 2:
            timing |= {
                i for i, s in enumerate((one, two)) if await metric(client, s, "bura_timers")
            }
            await asyncio.sleep(0.02)
    [timeout] = await timed_out(client, two.url, table.game_id)
    await asyncio.sleep(2.5)  # past where a second timer would have fired
    stored = await events(client, one.url, table.game_id)
    assert [e for e in stored if e["type"] == "timed_out"] == [timeout]
    last_clock = [e for e in stored if e["type"] == "clock_started"][-1]
    assert timeout["deadline"] == last_clock["deadline"] == last_clock["at"] + 2_000  # type: ignore[operator]
    assert 0 <= timeout["at"] - timeout["deadline"] <= ON_TIME_MS  # type: ignore[operator]
    assert stored[-1]["type"] == "game_finished" and stored[-1]["reason"] == "timeout"
    appended = [await metric(client, s, "bura_timeouts_total") for s in (one, two)]
    assert sum(appended) == 1  # whichever replica it was, only one appended it


async def test_the_timeout_still_fires_on_time_after_both_replicas_restart_mid_clock(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    # A 2-second turn and an 8-second bank: the seat's time runs out 10 s after it became
    # due, longer than two processes take to stop and start again on a busy machine.
    rules = {"turn_seconds": 2, "time_bank_seconds": 8}
    one, two = await asyncio.gather(start_service(), start_service())
    table = await Table.create(client, one.url, seed="clocks-2", rules=rules, dealer=1)
    shown = (await client.get(f"{two.url}/games/{table.game_id}", headers=OPERATOR)).json()
    deadline = shown["clock"]["deadline"]
    for service in (one, two):
        service.stop()
    assert wall_clock() < deadline, "the replicas stopped only after the deadline"
    again = await asyncio.gather(start_service(), start_service())
    ready_at = wall_clock()
    [timeout] = await timed_out(client, again[0].url, table.game_id)
    assert timeout["deadline"] == deadline and timeout["seat"] == 0
    # On time: within a second of the deadline, or of the moment a replica was back if it
    # took longer than the clock to come back.
    assert deadline <= timeout["at"] <= max(deadline, ready_at) + ON_TIME_MS  # type: ignore[operator]
    await asyncio.sleep(1.0)
    stored = await events(client, again[1].url, table.game_id)
    assert [e for e in stored if e["type"] == "timed_out"] == [timeout]
