"""The RateCounters contract, in-process and on Redis: hits count up within a window that
every handle shares, keys count apart, and a closed window starts again from one."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from infra.memory.limits import InProcessRateCounters
from infra.ports.limits import RateCounters
from infra.redis.limits import RedisRateCounters


@pytest.fixture(params=["memory", "redis"])
async def pair(request: pytest.FixtureRequest) -> AsyncIterator[tuple[RateCounters, RateCounters]]:
    if request.param == "memory":
        counters = InProcessRateCounters()
        yield counters, counters
        return
    url = request.getfixturevalue("redis_url")
    prefix = f"test-{uuid.uuid4().hex}:"
    one, two = await RedisRateCounters.open(url, prefix), await RedisRateCounters.open(url, prefix)
    yield one, two
    await one.close()
    await two.close()


async def test_hits_count_up_in_one_shared_window(
    pair: tuple[RateCounters, RateCounters],
) -> None:
    one, two = pair
    counts = [(await (one if n % 2 else two).hit("k", 30))[0] for n in range(6)]
    assert counts == [1, 2, 3, 4, 5, 6]
    _, left = await one.hit("k", 30)
    assert 0 < left <= 30


async def test_concurrent_hits_are_each_counted_once(
    pair: tuple[RateCounters, RateCounters],
) -> None:
    one, two = pair
    hits = await asyncio.gather(*(c.hit("busy", 30) for c in (one, two) * 25))
    assert sorted(h for h, _ in hits) == list(range(1, 51))


async def test_keys_count_apart(pair: tuple[RateCounters, RateCounters]) -> None:
    one, _ = pair
    await one.hit("a", 30)
    await one.hit("a", 30)
    assert (await one.hit("b", 30))[0] == 1


async def test_a_closed_window_starts_again(pair: tuple[RateCounters, RateCounters]) -> None:
    one, two = pair
    await one.hit("w", 0.2)
    await one.hit("w", 0.2)
    await asyncio.sleep(1.0)  # well past the window
    assert (await two.hit("w", 0.2))[0] == 1


async def test_several_keys_are_counted_in_one_call_as_one_by_one(
    pair: tuple[RateCounters, RateCounters],
) -> None:
    one, two = pair
    await one.hit("x", 30)
    assert [h for h, _ in await two.hit_all([("x", 30), ("y", 30), ("x", 30)])] == [2, 1, 3]
    found = await one.hit_all([("y", 30), ("z", 0.2)])
    assert [h for h, _ in found] == [2, 1]
    # seconds left: a monotonic clock's sums are not exact, so a hair over is the window
    assert 0 < found[0][1] <= 30 + 1e-6 and 0 < found[1][1] <= 0.2 + 1e-6
    assert await one.hit_all([]) == []


async def test_the_hits_of_one_turn_of_the_loop_share_one_script_call(redis_url: str) -> None:
    """On Redis: every request of one turn of the event loop is counted by one call of the
    script, each hit still counted before its request hears its count; a key hit twice
    in the turn counts twice, in order."""
    counters = await RedisRateCounters.open(redis_url, f"test-{uuid.uuid4().hex}:")
    try:
        await counters.hit("warm", 30)
        calls = counters.calls
        found = await asyncio.gather(
            *(counters.hit_all([(f"t{n % 5}", 30), ("address", 30)]) for n in range(20))
        )
        assert counters.calls == calls + 1
        assert [hits for (hits, _), _ in found] == [1 + n // 5 for n in range(20)]
        assert sorted(hits for _, (hits, _) in found) == list(range(1, 21))

        async def gone() -> None:  # a caller that gives up takes nobody's count with it
            await counters.hit("address", 30)

        quitter = asyncio.ensure_future(gone())
        stays = asyncio.ensure_future(counters.hit("address", 30))
        await asyncio.sleep(0)
        quitter.cancel()
        assert (await stays)[0] == 22
    finally:
        await counters.close()
