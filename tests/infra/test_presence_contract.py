"""The PresenceBoard contract: the in-process board and the Redis board pass this same
module. Time is passed in (ms), so lapses are tested without waiting.

`pair` is two replicas' boards: one board in-process (one process), two clients of the
same Redis for Redis. Redis's origin (when its presence began: tests/infra/
test_presence_after_loss.py) is a key of each test's own, set long before T, so only the
cases here that lose a game's entries see a loss."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from infra.memory.presence import InProcessPresence
from infra.ports.presence import LAPSE_MS, RENEW_MS, OpenStream, PresenceBoard, Seen
from infra.redis.presence import RedisPresence, key

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
    origin = f"presence-test-origin-{uuid.uuid4().hex}"
    one, two = (
        await RedisPresence.open(url, origin=origin),
        await RedisPresence.open(url, origin=origin),
    )
    await one.client.set(origin, 0)  # this Redis's presence began long ago
    yield one, two
    await one.client.delete(origin)
    await one.close()
    await two.close()


async def lose(board: PresenceBoard, game_id: str) -> None:
    """The board loses the game's entries while its streams stay open (Redis evicted or
    lost the key; the in-process board forgot the game)."""
    if isinstance(board, RedisPresence):
        await board.client.delete(key(game_id))
    else:
        assert isinstance(board, InProcessPresence)
        board._games.pop(game_id, None)


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


async def test_a_renewal_writes_again_a_stream_the_board_lost_and_the_seat_was_never_away(
    pair: tuple[PresenceBoard, PresenceBoard],
) -> None:
    one, two = pair
    g = game()
    await one.arrive(g, 0, "a", T)
    await two.arrive(g, 1, "b", T + 100)
    await lose(one, g)
    renewed = T + RENEW_MS
    await one.renew([OpenStream(g, 0, "a", since=T)], renewed)
    # connected since its stream opened: it stayed open all along
    assert (await two.seats(g, 2, renewed + 1))[0] == Seen(True, T, renewed + LAPSE_MS)
    # seat 1's stream lives on a replica that has not renewed yet: nothing is known of it,
    # and its absence is not known before every open stream can have been renewed
    assert (await two.seats(g, 2, renewed + 1))[1] == Seen(False, unknown_until=renewed + LAPSE_MS)
    await two.renew([OpenStream(g, 1, "b", since=T + 100)], renewed + 100)
    assert await one.seats(g, 2, renewed + 200) == [
        Seen(True, T, renewed + LAPSE_MS),
        Seen(True, T + 100, renewed + 100 + LAPSE_MS),
    ]
    # once written again, a stream leaves as any other, and stays gone
    await one.leave(g, 0, "a", renewed + 300)
    await one.renew([OpenStream(g, 0, "a", since=T)], renewed + 400)
    assert (await two.seats(g, 2, renewed + 500))[0] == Seen(False, renewed + 300)


async def test_a_seat_never_seen_in_a_restored_game_is_away_from_a_lapse_after(
    pair: tuple[PresenceBoard, PresenceBoard],
) -> None:
    one, two = pair
    g = game()
    await one.arrive(g, 0, "a", T)
    await lose(one, g)
    await one.renew([OpenStream(g, 0, "a", since=T)], T + 1_000)
    later = T + 1_000 + LAPSE_MS
    # no stream of seat 1 came back within a lapse: it has none, away from then at least
    assert (await two.seats(g, 2, later + 60_000))[1] == Seen(False, unknown_until=later)
    await two.arrive(g, 1, "b", later + 60_001)
    assert (await one.seats(g, 2, later + 60_002))[1] == Seen(
        True, later + 60_001, later + 60_001 + LAPSE_MS
    )


async def test_presence_under_two_prefixes_on_one_redis_is_kept_apart(redis_url: str) -> None:
    """BURA_REDIS_PREFIX names the presence keys, the origin included, so two deployments
    sharing a Redis never mix their seats (the default prefix keeps `bura:presence:`)."""
    tag = uuid.uuid4().hex[:8]
    blue_prefix, green_prefix = f"blue-{tag}:", f"green-{tag}:"
    blue = await RedisPresence.open(redis_url, prefix=blue_prefix)
    green = await RedisPresence.open(redis_url, prefix=green_prefix)
    g = game()
    try:
        await blue.client.set(f"{blue_prefix}presence:origin", 0)  # began long ago
        await blue.arrive(g, 0, "a", T)
        assert (await blue.seats(g, 2, T + 100))[0] == Seen(True, T, T + LAPSE_MS)
        assert not any(seat.connected for seat in await green.seats(g, 2, T + 100))
        assert await blue.client.exists(f"{blue_prefix}presence:{{{g}}}") == 1
        assert await blue.client.exists(key(g), f"{green_prefix}presence:{{{g}}}") == 0
        # the origin each board found missing is its own
        assert await green.client.get(f"{green_prefix}presence:origin") is not None
        assert key(g) == f"bura:presence:{{{g}}}"  # the default prefix's names are unchanged
    finally:
        await blue.client.delete(
            *(
                f"{prefix}presence:{suffix}"
                for prefix in (blue_prefix, green_prefix)
                for suffix in ("origin", f"{{{g}}}")
            )
        )
        await blue.close()
        await green.close()
