"""Webhooks over real servers on PostgreSQL and Redis, delivered to a receiver the test
starts on 127.0.0.1: two replicas, one of them delivering; SIGKILL it mid-delivery and
the other takes over; nothing is lost, every delivery verifies, and each game's webhooks
arrive in the game's order."""

from __future__ import annotations

import asyncio
import random
import re
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx

from domain.bots import greedy_bot
from harness.processes import OPERATOR, Service, bearer
from harness.receiver import Receiver
from services.app.signing import verify
from tests.api.conftest import cards_in
from tests.e2e.conftest import StartService
from tests.e2e.play import Table

SECRET = "whsec_e2e_secret_for_the_replica_kill"
GAMES = 8
T = TypeVar("T")
WEBHOOK_EVENTS = {"deal_won", "deal_lost", "deal_void", "game_finished", "penalty_applied"}
SETTINGS = {
    "BURA_WEBHOOK_LEASE_SECONDS": "2",
    "BURA_WEBHOOK_RETRY_SECONDS": "0.2",
    "BURA_WEBHOOK_RETRY_MAX_SECONDS": "1",
}


async def holds_lease(client: httpx.AsyncClient, service: Service) -> bool:
    metrics = (await client.get(f"{service.url}/metrics")).text
    return re.search(r"^bura_webhook_lease_held 1\.0$", metrics, re.M) is not None


async def holder(client: httpx.AsyncClient, services: list[Service]) -> Service:
    async with asyncio.timeout(30):
        while True:
            for service in services:
                if await holds_lease(client, service):
                    return service
            await asyncio.sleep(0.1)


async def play(
    client: httpx.AsyncClient, live: list[Service], table: Table, chance: random.Random
) -> None:
    """A game played to the end with faulty draws now and then (penalties), each command
    through a replica of `live` picked at random; a command cut off by a replica's death
    goes again to another under the same Idempotency-Key (never a second move)."""

    async def anywhere(call: Callable[..., Awaitable[T]], *args: Any) -> T:
        while True:
            try:
                return await call(client, chance.choice(live).url, *args)
            except httpx.TransportError:
                await asyncio.sleep(0.05)

    while not table.state.finished:
        seat, command = table.next_move(greedy_bot, chance, faults=0.03)
        key = uuid.uuid4().hex
        answer = await anywhere(table.send, seat, command, key)
        assert answer.status_code == 200, answer.text
        await anywhere(table.sync)


def expected(tables: list[Table]) -> set[tuple[str, int]]:
    """(game, version) of every event a webhook is for, from the arbiter's record."""
    return {
        (t.game_id, version)
        for t in tables
        for version, event in t.events
        if type(event).__name__
        in {"DealWon", "DealLost", "DealVoid", "GameFinished", "PenaltyApplied"}
    }


def received(receiver: Receiver) -> set[tuple[str, int]]:
    return {(r.json["game_id"], r.json["version"]) for r in receiver.delivered().values()}


async def test_nothing_is_lost_when_the_delivering_replica_is_killed_and_order_holds(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    with Receiver(delay=0.1) as receiver:
        one = await start_service(**SETTINGS)
        two = await start_service(**SETTINGS)
        answer = await client.post(
            f"{one.url}/webhooks", json={"url": receiver.url, "secret": SECRET}, headers=OPERATOR
        )
        assert answer.status_code == 201, answer.text

        live = [one, two]
        tables = [
            await Table.create(client, one.url, seed=f"hooks-{i}", rules={"match_target": 2})
            for i in range(GAMES)
        ]
        games = asyncio.gather(
            *(play(client, live, t, random.Random(i)) for i, t in enumerate(tables))
        )
        await receiver.wait_for(lambda r: len(r.delivered()) >= 5)
        dying = await holder(client, live)
        live.remove(dying)
        dying.kill()
        assert not all(t.state.finished for t in tables), "the kill came after the games"
        (survivor,) = live
        await games
        assert await holder(client, live) is survivor
        wanted = expected(tables)
        await receiver.wait_for(lambda r: received(r) >= wanted, timeout=120)

    assert received(receiver) == wanted  # and nothing else
    requests = receiver.requests()
    bodies = defaultdict(set)
    for request in requests:
        assert verify(SECRET, request.headers["bura-signature"], request.body)
        assert request.headers["bura-delivery"] == request.json["id"]
        bodies[request.delivery_id].add(request.body)
    assert all(len(b) == 1 for b in bodies.values()), "a delivery id with two bodies"
    assert len(bodies) == len(wanted)
    by_game = defaultdict(list)
    for request in requests:
        by_game[request.json["game_id"]].append(request.json["version"])
    for game, versions in by_game.items():
        assert versions == sorted(versions), f"game {game} out of order: {versions}"
    for request in requests:  # a webhook shows no card a spectator of its game could not see
        game, version = request.json["game_id"], request.json["version"]
        table = next(t for t in tables if t.game_id == game)
        seen = await client.get(
            f"{survivor.url}/games/{game}/events", headers=bearer(table.spectator)
        )
        public = [e["event"] for e in seen.json()["events"] if e["version"] <= version]
        assert set(cards_in(request.json)) <= set(cards_in(public)), request.json
    kinds = {request.json["event"]["type"] for request in requests}
    assert kinds <= WEBHOOK_EVENTS and {"penalty_applied", "game_finished"} <= kinds
    log = await client.get(
        f"{survivor.url}/webhooks/deliveries",
        params={"state": "pending", "limit": 500},
        headers=OPERATOR,
    )
    assert log.json()["deliveries"] == []
