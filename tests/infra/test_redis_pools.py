"""A replica's Redis clients for presence and tickets keep a bounded pool: a burst of
calls (every stream of a replica reconnecting at once) waits its turn for a connection
rather than opening one per call and keeping them all. Counted by a Redis of the test's
own, which sees no other client."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.asyncio as redis

from harness.processes import RedisServer
from infra.redis.connection import POOL_CONNECTIONS
from infra.redis.presence import RedisPresence
from infra.redis.tickets import RedisStreamTickets

BURST = 150


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.kill()


async def clients_of(url: str) -> int:
    """Connections Redis holds open, the one asking left out."""
    asking = redis.Redis.from_url(url)
    try:
        info = await asking.info("clients")
        return int(info["connected_clients"]) - 1
    finally:
        await asking.aclose()


async def test_a_burst_of_presence_calls_shares_a_bounded_pool(own_redis: RedisServer) -> None:
    presence = await RedisPresence.open(own_redis.url, prefix="pool-test:")
    try:
        await asyncio.gather(
            *(presence.arrive(f"game-{i}", i % 4, f"stream-{i}", 1_000 + i) for i in range(BURST))
        )
        held = await clients_of(own_redis.url)
        assert 1 <= held <= POOL_CONNECTIONS < BURST, held
        assert presence.errors == 0
    finally:
        await presence.close()


async def test_a_burst_of_tickets_shares_a_bounded_pool(own_redis: RedisServer) -> None:
    tickets = await RedisStreamTickets.open(own_redis.url, prefix="pool-test:")
    try:
        await asyncio.gather(*(tickets.issue(f"t{i}", b"grant", 30.0) for i in range(BURST)))
        redeemed = await asyncio.gather(*(tickets.redeem(f"t{i}") for i in range(BURST)))
        assert redeemed == [b"grant"] * BURST
        held = await clients_of(own_redis.url)
        assert 1 <= held <= POOL_CONNECTIONS < BURST, held
    finally:
        await tickets.close()
