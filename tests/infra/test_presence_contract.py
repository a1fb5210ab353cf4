"""The PresenceBoard contract: the in-process board and the Redis board pass this same
module. Time is passed in (ms), so lapses are tested without waiting.

`pair` is two replicas' boards: one board in-process (one process), two clients of the
same Redis for Redis."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from infra.memory.presence import InProcessPresence
from infra.ports.presence import LAPSE_MS, OpenStream, PresenceBoard, Seen
from infra.redis.presence import RedisPresence

T = 1_700_000_000_000


@pytest.fixture(params=["memory", "redis"])
async def pair(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[PresenceBoard, PresenceBoard]]:
    if request.param == "memory":
        board = InProcessPresence()
        yield board, board
        await board.close()
        return
    url = request.getfixturevalue("redis_url")
    one, two = await RedisPresence.open(url), await RedisPresence.open(url)
    yield one, two
    await one.close()
    await two.close()


def game() -> str:
    return f"presence-test-{uuid.uuid4().hex}"


async def test_a_seat_never_seen_is_away_since_nobody_knows_when(
    pair: tuple[PresenceBoard, PresenceBoard],
) -> None:
    one, _ = pair
    assert await one.seats(game(), 2, T) == [Seen(False), Seen(False)]


async def test_a_seat_is_connected_from_its_first_stream_until_its_last_leaves(
    pair: tuple[PresenceBoard, PresenceBoard],
) -> None:
    one, two = pair
    g = game()
    await one.arrive(g, 1, "a", T)
    await two.arrive(g, 1, "b", T + 100)  # a second stream, on another replica
    assert (await two.seats(g, 2, T + 200))[1] == Seen(True, T, T + 100 + LAPSE_MS)
    await one.leave(g, 1, "a", T + 300)
    assert (await one.seats(g, 2, T + 400))[1] == Seen(True, T, T + 100 + LAPSE_MS)
    await two.leave(g, 1, "b", T + 500)
    assert await one.seats(g, 2, T + 600) == [Seen(False), Seen(False, T + 500)]
    await one.arrive(g, 1, "c", T + 700)
    assert (await two.seats(g, 2, T + 800))[1] == Seen(True, T + 700, T + 700 + LAPSE_MS)


async def test_a_stream_its_replica_stopped_renewing_lapses_and_the_seat_is_away_since(
    pair: tuple[PresenceBoard, PresenceBoard],
) -> None:
    one, two = pair
    g = game()
    await one.arrive(g, 0, "a", T)
    await one.renew([OpenStream(g, 0, "a")], T + 5_000)
    alive = T + 5_000 + LAPSE_MS - 1
    assert (await two.seats(g, 1, alive))[0].connected
    # the replica died after its last renewal: nothing leaves, the stream lapses
    assert await two.seats(g, 1, T + 5_000 + LAPSE_MS) == [Seen(False, T + 5_000)]
    await two.arrive(g, 0, "b", T + 60_000)  # back, through another replica
    assert (await one.seats(g, 1, T + 60_001))[0] == Seen(True, T + 60_000, T + 60_000 + LAPSE_MS)


async def test_renewing_a_stream_that_left_does_not_bring_it_back(
    pair: tuple[PresenceBoard, PresenceBoard],
) -> None:
    one, _ = pair
    g = game()
    await one.arrive(g, 0, "a", T)
    await one.leave(g, 0, "a", T + 10)
    await one.renew([OpenStream(g, 0, "a")], T + 20)
    assert await one.seats(g, 1, T + 30) == [Seen(False, T + 10)]


async def test_each_game_and_seat_has_its_own_presence(
    pair: tuple[PresenceBoard, PresenceBoard],
) -> None:
    one, two = pair
    g, h = game(), game()
    await one.arrive(g, 0, "a", T)
    await two.arrive(h, 1, "b", T)
    assert [s.connected for s in await one.seats(g, 2, T + 1)] == [True, False]
    assert [s.connected for s in await one.seats(h, 2, T + 1)] == [False, True]
    await one.leave(g, 0, "not-its-stream", T + 2)  # an unknown stream changes nothing
    assert (await two.seats(g, 2, T + 3))[0] == Seen(True, T, T + LAPSE_MS)
