"""The StreamTickets contract, on the in-process store and on Redis: a ticket is redeemed
at most once, even by racing redeemers on two connections, and not after it expires."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from infra.memory.tickets import InProcessStreamTickets
from infra.ports.tickets import StreamTickets
from infra.redis.tickets import RedisStreamTickets


@pytest.fixture(params=["memory", "redis"])
async def pair(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[StreamTickets, StreamTickets]]:
    """Two handles on one ticket store: one store in-process, two connections (two
    replicas' worth) on Redis."""
    if request.param == "memory":
        tickets = InProcessStreamTickets()
        yield tickets, tickets
        return
    url = request.getfixturevalue("redis_url")
    prefix = f"test-{uuid.uuid4().hex}:"
    one, two = (
        await RedisStreamTickets.open(url, prefix),
        await RedisStreamTickets.open(url, prefix),
    )
    yield one, two
    await one.close()
    await two.close()


async def test_a_ticket_is_redeemed_once(pair: tuple[StreamTickets, StreamTickets]) -> None:
    issuer, redeemer = pair
    await issuer.issue("t1", b"grant", 30)
    assert await redeemer.redeem("t1") == b"grant"
    assert await redeemer.redeem("t1") is None
    assert await issuer.redeem("t1") is None


async def test_racing_redeemers_get_one_grant_between_them(
    pair: tuple[StreamTickets, StreamTickets],
) -> None:
    issuer, redeemer = pair
    for n in range(20):
        await issuer.issue(f"race-{n}", b"g", 30)
        got = await asyncio.gather(issuer.redeem(f"race-{n}"), redeemer.redeem(f"race-{n}"))
        assert sorted(got, key=lambda g: g is None) == [b"g", None]


async def test_an_unknown_ticket_grants_nothing(pair: tuple[StreamTickets, StreamTickets]) -> None:
    assert await pair[1].redeem("never-issued") is None


async def test_an_expired_ticket_grants_nothing(pair: tuple[StreamTickets, StreamTickets]) -> None:
    issuer, redeemer = pair
    await issuer.issue("short", b"grant", 0.2)
    await issuer.issue("long", b"grant", 60)
    await asyncio.sleep(1.0)  # well past the short one's life
    assert await redeemer.redeem("short") is None
    assert await redeemer.redeem("long") == b"grant"
