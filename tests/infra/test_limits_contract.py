"""The RateCounters contract, in-process and on Redis: hits count up within a window that
every handle shares, keys count apart, and a closed window starts again from one. A hit
held to a quota is numbered in blocks on Redis: one process still numbers its hits one by
one, several never number more than the quota within it and hold back only their spares
(a property over random interleavings)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infra.memory.limits import InProcessRateCounters
from infra.ports.limits import Hit, RateCounters
from infra.redis.limits import MOST, SHARE, RedisRateCounters
from tests.examples import examples


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


async def test_one_process_numbers_its_hits_one_by_one_whatever_the_quota(
    pair: tuple[RateCounters, RateCounters],
) -> None:
    """Spare numbers or not, one process's hits are 1, 2, 3, ...: in turn, and in any
    order when they come at once (over several turns of the loop), past the quota too."""
    one, _ = pair
    assert [(await one.hit("q", 30, 100))[0] for _ in range(40)] == list(range(1, 41))

    async def later(turns: int) -> tuple[int, float]:
        for _ in range(turns):
            await asyncio.sleep(0)
        return await one.hit("q", 30, 100)

    found = await asyncio.gather(*(later(n % 4) for n in range(80)))
    assert sorted(hits for hits, _ in found) == list(range(41, 121))
    assert all(0 < left <= 30 + 1e-6 for _, left in found)
    mixed = await one.hit_all([Hit("q", 30, 100), ("r", 30), Hit("q", 30, 100)])
    assert [hits for hits, _ in mixed] == [121, 1, 122]


async def test_a_busy_key_far_from_its_quota_goes_to_redis_once_in_many_hits(
    redis_url: str,
) -> None:
    counters = await RedisRateCounters.open(redis_url, f"test-{uuid.uuid4().hex}:")
    try:
        calls = counters.calls
        numbers = [(await counters.hit("busy", 30, 100_000))[0] for _ in range(640)]
        assert numbers == list(range(1, 641))
        # each claim takes the hit's own number and MOST spares: 640 hits, 10 calls
        assert counters.calls - calls == 640 // (MOST + 1) + 1
    finally:
        await counters.close()


async def test_near_its_quota_every_hit_is_counted_in_redis_as_it_comes(redis_url: str) -> None:
    prefix = f"test-{uuid.uuid4().hex}:"
    counters = await RedisRateCounters.open(redis_url, prefix)
    try:
        quota = 40
        numbers = []
        calls = []
        for _ in range(50):
            before = counters.calls
            numbers.append((await counters.hit("near", 30, quota))[0])
            calls.append(counters.calls - before)
        assert numbers == list(range(1, 51))
        # spares are claimed while at least SHARE are left beyond the hit: the claims at
        # hits 1, 4 and 7 take 2 spares (39 // 16, 36 // 16, 33 // 16), those at 10, 12,
        # ..., 24 one (30 // 16 to 16 // 16); from hit 26 (14 left) each hit is one call
        assert SHARE == 16
        assert [n for n, made in enumerate(calls[:25], 1) if made] == [1, 4, 7, *range(10, 25, 2)]
        assert all(made == 1 for made in calls[25:])
        # and Redis holds the count exactly: nothing spare is left past the quota
        assert int(await counters.wire.call("GET", f"{prefix}rate:near")) == 50
    finally:
        await counters.close()


async def test_spare_numbers_end_with_their_window(redis_url: str) -> None:
    counters = await RedisRateCounters.open(redis_url, f"test-{uuid.uuid4().hex}:")
    try:
        assert (await counters.hit("w", 0.2, 1000))[0] == 1  # and 62 spare
        await asyncio.sleep(0.5)  # past the window
        calls = counters.calls
        assert (await counters.hit("w", 0.2, 1000))[0] == 1
        assert counters.calls == calls + 1
    finally:
        await counters.close()


async def test_a_hit_given_up_leaves_its_number_to_the_next(redis_url: str) -> None:
    counters = await RedisRateCounters.open(redis_url, f"test-{uuid.uuid4().hex}:")
    try:
        quitter = asyncio.ensure_future(counters.hit("gone", 30, 1000))
        stays = asyncio.ensure_future(counters.hit("gone", 30, 1000))
        await asyncio.sleep(0)
        quitter.cancel()
        assert (await stays)[0] == 1
        assert (await counters.hit("gone", 30, 1000))[0] == 2
    finally:
        await counters.close()


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.integers(1, 300).flatmap(
        lambda quota: st.tuples(
            st.just(quota),
            # about as many hits as the quota, one process or several, in any order
            st.lists(st.integers(0, 2), min_size=max(1, quota // 2), max_size=quota + 40)
            | st.lists(st.just(0), min_size=max(1, quota // 2), max_size=quota + 40),
        )
    )
)
def test_processes_sharing_a_key_never_number_more_than_its_quota_within_it(
    redis_url: str, case: tuple[int, list[int]]
) -> None:
    """Three processes on one Redis, hits in a random order: numbers are unique, each
    process's go up, no more than the quota fall within it, and a process holds back from
    the others at most one claim's spares (at most a SHARE-th of the quota, and MOST).
    A single process is exact: the hits within the quota are all served."""

    quota, callers = case

    async def play() -> None:
        prefix = f"test-{uuid.uuid4().hex}:"
        processes = [await RedisRateCounters.open(redis_url, prefix) for _ in range(3)]
        try:
            numbers: list[list[int]] = [[], [], []]
            for caller in callers:
                numbers[caller].append((await processes[caller].hit("k", 30, quota))[0])
        finally:
            for process in processes:
                await process.close()
        every = [n for own in numbers for n in own]
        assert len(set(every)) == len(every)
        assert all(own == sorted(own) for own in numbers)
        served = sum(1 for n in every if n <= quota)
        assert served <= min(quota, len(callers))
        involved = sum(1 for own in numbers if own)
        if involved == 1:
            assert served == min(quota, len(callers))
        held = min(MOST, quota // SHARE)
        assert served >= min(quota, len(callers)) - (involved - 1) * held

    asyncio.run(play())
