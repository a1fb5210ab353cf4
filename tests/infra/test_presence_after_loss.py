"""Presence on a Redis that loses every key while the streams stay open (restarted empty,
flushed, failed over to a copy without them: docs/deploy.md). Each test has a database of
its own (db 13), emptied with FLUSHDB: a Redis restarted empty is the same as all its keys
lost. Time is passed in (ms), as in tests/infra/test_presence_contract.py."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from infra.ports.presence import LAPSE_MS, RENEW_MS, OpenStream, Seen
from infra.redis.presence import RedisPresence
from services.live.attendance import counted

T = 1_700_000_000_000
DB = 13  # this module's own: emptied at will


def on_db(url: str, db: int = DB) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{db}"))


@pytest.fixture
async def boards(redis_url: str) -> AsyncIterator[tuple[RedisPresence, RedisPresence]]:
    """Two replicas' boards on the module's database, empty."""
    url = on_db(redis_url)
    one, two = await RedisPresence.open(url), await RedisPresence.open(url)
    await one.client.flushdb()
    yield one, two
    await one.client.flushdb()
    await one.close()
    await two.close()


async def test_streams_kept_open_through_a_loss_are_back_at_their_next_renewal(
    boards: tuple[RedisPresence, RedisPresence],
) -> None:
    one, two = boards
    g = f"presence-loss-{uuid.uuid4().hex}"
    await one.seats(g, 2, T - 60_000)  # this Redis's presence began a minute before
    await one.arrive(g, 0, "a", T + 1_000)  # seat 0's stream on replica one
    await two.arrive(g, 1, "b", T + 2_000)  # seat 1's on replica two
    lost = T + 5_000
    assert await one.seats(g, 3, lost - 1) == [
        Seen(True, T + 1_000, T + 1_000 + LAPSE_MS),
        Seen(True, T + 2_000, T + 2_000 + LAPSE_MS),
        Seen(False),  # long after this Redis's presence began: nothing unknown
    ]
    await one.client.flushdb()  # Redis restarted empty; both streams stay open

    # Nothing says the seats left, nor since when they are away: not known before every
    # open stream can have been renewed, a lapse from now. Never "away since the clock".
    found = await two.seats(g, 2, lost)
    assert found == [Seen(False, unknown_until=lost + LAPSE_MS)] * 2
    assert [counted(s) for s in found] == [
        Seen(False, lost + LAPSE_MS)
    ] * 2  # as the timers read it

    # Each replica's next renewal writes its stream again: connected since it opened.
    await one.renew([OpenStream(g, 0, "a", since=T + 1_000)], lost + RENEW_MS - 1)
    await two.renew([OpenStream(g, 1, "b", since=T + 2_000)], lost + RENEW_MS)
    assert await one.seats(g, 2, lost + RENEW_MS + 1) == [
        Seen(True, T + 1_000, lost + RENEW_MS - 1 + LAPSE_MS),
        Seen(True, T + 2_000, lost + RENEW_MS + LAPSE_MS),
    ]


async def test_a_seat_whose_stream_did_not_come_back_is_away_from_a_lapse_after_the_loss(
    boards: tuple[RedisPresence, RedisPresence],
) -> None:
    one, two = boards
    g = f"presence-loss-{uuid.uuid4().hex}"
    await one.seats(g, 2, T)
    await one.arrive(g, 0, "a", T + 1_000)
    await two.arrive(g, 1, "b", T + 2_000)
    lost = T + 60_000
    await one.client.flushdb()
    await one.seats(g, 2, lost)  # the loss is found
    # seat 1's replica died with the outage: only seat 0's stream is renewed
    await one.renew([OpenStream(g, 0, "a", since=T + 1_000)], lost + RENEW_MS)
    much_later = lost + 10 * LAPSE_MS
    seat1 = (await two.seats(g, 2, much_later))[1]
    assert not seat1.connected and seat1.since is None
    # counted away from no earlier than a lapse after the loss was found (and after the
    # game's presence was restored), whatever the time its clock started
    assert counted(seat1) == Seen(False, lost + RENEW_MS + LAPSE_MS)
