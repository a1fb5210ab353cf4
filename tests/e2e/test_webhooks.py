"""Webhooks over real servers on PostgreSQL and Redis, delivered to a receiver the test
starts on 127.0.0.1: two replicas, one of them delivering; SIGKILL it mid-delivery and
the other takes over; nothing is lost, every delivery verifies, and each game's webhooks
arrive in the game's order."""

from __future__ import annotations

import asyncio
import random
import re
from collections import defaultdict

import httpx

from domain.bots import greedy_bot
from harness.processes import OPERATOR, Service, bearer
from harness.receiver import Receiver
from services.app.signing import verify
from tests.api.conftest import cards_in
from tests.e2e.conftest import StartService
from tests.e2e.play import Table

SECRET = "whsec_e2e_secret_for_the_replica_kill"
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
    client: httpx.AsyncClient, services: list[Service], count: int, seed: int
) -> list[Table]:
    """`count` games played to the end at once, with faulty draws now and then (penalties),
    each command through a replica picked at random."""
    tables = [
        await Table.create(
            client, services[0].url, seed=f"hooks-{seed}-{i}", rules={"match_target": 2}
        )
        for i in range(count)
    ]

    async def one(table: Table, chance: random.Random) -> None:
        while not table.state.finished:
            base = chance.choice(services).url
            await table.play(client, base, greedy_bot, chance, moves=3, faults=0.03)

    await asyncio.gather(*(one(t, random.Random(seed * 100 + i)) for i, t in enumerate(tables)))
    return tables


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
    with Receiver(delay=0.15) as receiver:  # slow enough that the kill finds work in hand
        one = await start_service(**SETTINGS)
        two = await start_service(**SETTINGS)
        services = [one, two]
        answer = await client.post(
            f"{one.url}/webhooks", json={"url": receiver.url, "secret": SECRET}, headers=OPERATOR
        )
        assert answer.status_code == 201, answer.text

        before = await play(client, services, count=6, seed=1)
        await receiver.wait_for(lambda r: len(r.delivered()) >= 3)
        dying = await holder(client, services)
        dying.kill()
        survivor = two if dying is one else one
        assert len(received(receiver)) < len(expected(before)), "nothing was left in hand"

        after = await play(client, [survivor], count=3, seed=2)
        assert await holder(client, [survivor]) is survivor
        wanted = expected(before + after)
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
        table = next(t for t in before + after if t.game_id == game)
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
