"""The lean Redis connection (infra/redis/wire.py), on the real Redis: concurrent callers
each get their own reply, an error reply is the caller's alone, and a Redis that does not
answer, cannot be reached or drops the connection fails the calls on it at once with a
WireError, after which the next call connects again."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as redis

from harness.processes import Proxy, RedisServer
from infra.ports.hints import Hint
from infra.redis.hints import RedisHintBus
from infra.redis.limits import RedisRateCounters
from infra.redis.wire import ReplyError, Subscription, Where, Wire, WireError
from services.bootstrap import open_adapters
from services.config import Settings


@pytest.fixture
async def wire(redis_url: str) -> AsyncIterator[Wire]:
    opened = Wire(redis_url, timeout=2)
    yield opened
    await opened.close()


async def test_concurrent_callers_each_get_their_own_reply(wire: Wire) -> None:
    prefix = f"wire-{uuid.uuid4().hex}"
    said = [f"{prefix}-{n}" for n in range(300)]
    heard = await asyncio.gather(*(wire.call("ECHO", text) for text in said))
    assert heard == [text.encode() for text in said]
    counted = await asyncio.gather(*(wire.call("INCR", f"{prefix}:n") for _ in range(100)))
    assert sorted(counted) == list(range(1, 101))
    assert await wire.call("DEL", f"{prefix}:n") == 1


def writes_on(wire: Wire) -> list[bytes]:
    """What the wire's connection writes from now on, one item a system call."""
    protocol = wire._protocol
    assert protocol is not None and protocol.transport is not None, "not connected"
    writes: list[bytes] = []
    write = protocol.transport.write

    def spied(data: bytes) -> None:
        writes.append(data)
        write(data)

    protocol.transport.write = spied  # type: ignore[method-assign]
    return writes


async def test_the_calls_of_one_turn_of_the_loop_go_in_one_write(wire: Wire) -> None:
    await wire.call("PING")  # connected
    writes = writes_on(wire)
    said = [f"one-turn-{n}" for n in range(50)]
    assert await asyncio.gather(*(wire.call("ECHO", t) for t in said)) == [t.encode() for t in said]
    assert len(writes) == 1 and writes[0].count(b"ECHO") == 50


async def test_a_command_sent_without_waiting_keeps_the_replies_in_step(wire: Wire) -> None:
    """Its reply is read and dropped: the calls around it get their own."""
    key = f"wire-{uuid.uuid4().hex}"
    assert not Wire("redis://127.0.0.1:1/0").send("PING")  # not connected: nothing sent
    await wire.call("PING")
    calls = []
    for n in range(20):
        assert wire.send("INCR", key)
        calls.append(wire.call("ECHO", f"e{n}"))
    assert await asyncio.gather(*calls) == [f"e{n}".encode() for n in range(20)]
    assert await wire.call("GET", key) == b"20"
    assert await wire.call("DEL", key) == 1


async def test_a_pipeline_answers_in_order(wire: Wire) -> None:
    key = f"wire-{uuid.uuid4().hex}"
    replies = await wire.calls([("SET", key, "1"), ("INCRBY", key, 41), ("GET", key), ("DEL", key)])
    assert replies == [b"OK", 42, b"42", 1]


async def test_an_error_reply_is_the_callers_alone(wire: Wire) -> None:
    key = f"wire-{uuid.uuid4().hex}"
    await wire.call("SET", key, "text")
    failing = wire.call("INCR", key)  # not a number
    fine = wire.call("GET", key)
    results = await asyncio.gather(failing, fine, return_exceptions=True)
    assert isinstance(results[0], ReplyError) and "not an integer" in str(results[0])
    assert results[1] == b"text"
    assert await wire.call("DEL", key) == 1


async def test_a_redis_that_does_not_answer_fails_every_call_on_time() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(1 << 16):  # reads until the caller hangs up; never answers
            pass
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    wire = Wire(f"redis://127.0.0.1:{port}/0", timeout=0.2)
    try:
        started = asyncio.get_running_loop().time()
        calls = [wire.call("PING") for _ in range(5)]
        results = await asyncio.gather(*calls, return_exceptions=True)
        assert all(isinstance(r, WireError) for r in results)
        assert asyncio.get_running_loop().time() - started < 1.5
        with pytest.raises(WireError):  # a new connection, silent as well
            await wire.call("PING")
    finally:
        await wire.close()
        server.close()
        await server.wait_closed()


async def test_an_unreachable_redis_is_a_wire_error() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()  # nothing listens there now
    wire = Wire(f"redis://127.0.0.1:{port}/0", timeout=0.5, connect_timeout=0.5)
    with pytest.raises(WireError, match="unreachable"):
        await wire.call("PING")
    await wire.close()


async def test_a_lost_connection_is_opened_again_by_the_next_call(
    wire: Wire, redis_url: str
) -> None:
    mine = await wire.call("CLIENT", "ID")
    other = redis.Redis.from_url(redis_url)
    try:
        await other.execute_command("CLIENT", "KILL", "ID", str(mine))
    finally:
        await other.aclose()
    for _ in range(50):  # until this side has seen the connection go
        if wire._protocol is None or wire._protocol.lost is not None:
            break
        await asyncio.sleep(0.01)
    assert await wire.call("PING") == b"PONG"
    assert await wire.call("CLIENT", "ID") != mine


async def test_the_url_names_the_database_and_a_refused_password_is_said(redis_url: str) -> None:
    where = Where(redis_url)
    base = f"redis://{where.host}:{where.port}"
    key = f"wire-{uuid.uuid4().hex}"
    wire = Wire(f"{base}/3")
    other = redis.Redis.from_url(f"{base}/3")
    try:
        await wire.call("SET", key, "in three")
        assert await other.get(key) == b"in three"
        await other.delete(key)
    finally:
        await other.aclose()
        await wire.close()
    assert Where("rediss://bob:s%3Acret@cache.internal:6380/2").greeting() == [
        ("AUTH", "bob", "s:cret"),
        ("SELECT", "2"),
    ]
    refused = Wire(f"redis://:wrong@{where.host}:{where.port}/0")  # this Redis has none
    with pytest.raises(WireError, match="refused AUTH"):
        await refused.call("PING")
    await refused.close()
    with pytest.raises(ValueError, match="redis://"):
        Where("http://cache:6379")


async def test_the_rate_script_is_loaded_again_after_redis_forgets_it(tmp_path: Path) -> None:
    # A Redis of the test's own: SCRIPT FLUSH on the shared one would make every other
    # user of it (a test running beside this one, a benchmark) load the script again.
    own = RedisServer(tmp_path / "redis").start()
    counters = await RedisRateCounters.open(own.url, f"test-{uuid.uuid4().hex}:")
    try:
        assert (await counters.hit("k", 30))[0] == 1
        await counters.wire.call("SCRIPT", "FLUSH")  # as after a restart
        assert (await counters.hit("k", 30))[0] == 2
    finally:
        await counters.close()
        own.kill()


async def test_a_subscription_hears_every_message_in_order(wire: Wire, redis_url: str) -> None:
    channel = f"wire-{uuid.uuid4().hex}"
    subscription = Subscription(redis_url, channel)
    await subscription.open()
    try:
        sent = [f"m{n}".encode() for n in range(500)]
        await wire.calls([("PUBLISH", channel, data) for data in sent])  # in one write
        assert [await subscription.next() for _ in sent] == sent
    finally:
        await subscription.close()


async def test_a_subscription_hears_its_channels_in_the_order_redis_sent_them(
    wire: Wire, redis_url: str
) -> None:
    """A hint bus's subscription: the shared channel, then its inbox (in that order, so
    that Redis counts no inbox whose process is not on the shared channel too)."""
    shared, inbox = f"wire-{uuid.uuid4().hex}", f"wire-{uuid.uuid4().hex}"
    subscription = Subscription(redis_url, shared, then=(inbox,))
    await subscription.open()
    try:
        assert await wire.calls([("PUBSUB", "NUMSUB", shared, inbox)]) == [
            [shared.encode(), 1, inbox.encode(), 1]
        ]
        sent = [(shared if n % 2 else inbox, f"m{n}".encode()) for n in range(20)]
        await wire.calls([("PUBLISH", channel, data) for channel, data in sent])
        assert [await subscription.next() for _ in sent] == [data for _, data in sent]
    finally:
        await subscription.close()


async def test_a_subscription_drops_what_it_is_told_to_skip_as_it_reads_it(
    wire: Wire, redis_url: str
) -> None:
    """A process's own hints come back on its subscription: they are dropped as they are
    read, never queued, and the rest keep their order."""
    channel = f"wire-{uuid.uuid4().hex}"
    subscription = Subscription(redis_url, channel, skip=lambda data: data.startswith(b"own"))
    await subscription.open()
    try:
        sent = [f"{'own' if n % 3 else 'other'}-{n}".encode() for n in range(30)]
        await wire.calls([("PUBLISH", channel, data) for data in [*sent, b"last"]])
        kept = [data for data in sent if not data.startswith(b"own")]
        assert [await subscription.next() for _ in kept] == kept
        assert await subscription.next() == b"last"
        assert subscription._protocol is not None and subscription._protocol.heard.empty()
    finally:
        await subscription.close()


async def test_a_subscription_cut_off_or_gone_silent_says_so(wire: Wire, redis_url: str) -> None:
    proxy = Proxy.before(redis_url).start()
    channel = f"wire-{uuid.uuid4().hex}"
    try:
        subscription = Subscription(proxy.via(redis_url), channel, timeout=0.3, quiet=0.3)
        await subscription.open()
        await wire.call("PUBLISH", channel, "before")
        assert await subscription.next() == b"before"
        proxy.pause()  # the network stalls: the PING after 0.3 s quiet goes unanswered
        started = asyncio.get_running_loop().time()
        with pytest.raises(WireError, match="PING"):
            await subscription.next()
        assert asyncio.get_running_loop().time() - started < 2.0
        await subscription.close()
        proxy.resume()

        again = Subscription(proxy.via(redis_url), channel)
        await again.open()
        proxy.cut()  # the connection dropped
        with pytest.raises(WireError, match="lost"):
            await asyncio.wait_for(again.next(), 5)
        await again.close()
        with pytest.raises(WireError, match="unreachable"):
            await Subscription(proxy.via(redis_url), channel, timeout=1).open()
    finally:
        proxy.close()


async def test_a_unix_socket_url_is_connected_to_its_file(tmp_path: Path) -> None:
    """unix:///path?db=N, as redis-py reads it: the socket file, then SELECT N."""
    said: list[bytes] = []

    async def redis_like(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1 << 16):
            said.append(data)
            writer.write(b"+OK\r\n" if b"SELECT" in data else b"+PONG\r\n")
        writer.close()

    path = tmp_path / "redis.sock"
    server = await asyncio.start_unix_server(redis_like, path=str(path))
    wire = Wire(f"unix://{path}?db=2")
    try:
        assert await wire.call("PING") == b"PONG"
        assert said[0] == b"*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n"
    finally:
        await wire.close()
        server.close()
        await server.wait_closed()
    assert Where("redis://cache:6379?db=4").db == 4
    assert str(Where("unix:///run/redis.sock")) == "/run/redis.sock"


async def test_the_rate_counts_and_the_hints_share_one_connection_closed_once(
    redis_url: str, tmp_path: Path
) -> None:
    """The composition root gives the rate counters and the hints one wire: a hint that
    another process hears is written at once, ahead of the count that goes at the end of
    the turn; one nobody else would hear is not written at all; and closing the adapters
    closes the wire once, after the hints have had their moment to leave."""
    settings = Settings(
        sqlite_path=str(tmp_path / "bura.sqlite3"),
        redis_url=redis_url,
        redis_prefix=f"test-{uuid.uuid4().hex}:",
    )
    adapters = await open_adapters(settings)
    counters, hints = adapters.counters, adapters.hints
    assert isinstance(counters, RedisRateCounters) and isinstance(hints, RedisHintBus)
    wire = counters.wire
    assert hints.wire is wire
    try:
        await wire.call("PING")  # connected
        for others in (True, False):  # set by hand: other tests' buses share this Redis
            hints._to = hints._everyone if others else ()
            hints._numsub_at = float("inf")
            writes = writes_on(wire)
            counted, _ = await asyncio.gather(
                counters.hit(f"seat-{others}", 30),
                hints.publish(Hint(game_id="g-shared", version=1)),
            )
            assert counted[0] == 1
            published = [n for n, data in enumerate(writes) if b"PUBLISH" in data]
            if others:
                assert published == [0] and b"EVAL" not in writes[0]
                assert any(b"EVALSHA" in data for data in writes[1:])
            else:
                assert published == [] and any(b"EVALSHA" in data for data in writes)
    finally:
        await adapters.close()
    with pytest.raises(WireError, match="closed"):
        await wire.call("PING")
