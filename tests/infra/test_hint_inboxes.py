"""Inboxes: once a process knows every other listener's inbox, its hints go there, once
per inbox, and never come back to it as an echo; a listener of an older version (no
inbox) brings them back to the shared channel, where it hears them."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Callable

import msgspec
import pytest

from infra.ports.hints import Hint
from infra.redis.hints import INBOXES, RedisHintBus, _Control
from infra.redis.wire import Subscription, Wire
from tests.infra.test_hints_contract import alone, own_redis, until
from tests.infra.test_wire import writes_on

__all__ = ["own_redis"]  # a fixture, used by name


@pytest.fixture
def echoes(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many messages each bus's subscription has read (by origin): every message it
    reads goes past its `skip`, the echo test, before anything else."""
    read: Counter[str] = Counter()
    own = RedisHintBus._own

    def counted(bus: RedisHintBus, data: bytes) -> bool:
        read[bus.origin] += 1
        return own(bus, data)

    monkeypatch.setattr(RedisHintBus, "_own", counted)
    return read


async def settled(*buses: RedisHintBus) -> list[Callable[[], None]]:
    """Each bus subscribed (as a replica's projector keeps it) and, by a look at Redis,
    knowing the others' inboxes. A look answered after a hello is not believed: such a
    bus looks again."""
    stops = [bus.listen(lambda hint: None) for bus in buses]
    await until(lambda: all(bus._subscribed for bus in buses))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    for bus in buses:
        others = {other.inbox for other in buses if other is not bus}
        while set(bus._to) != others:
            assert loop.time() < deadline, "never settled"
            bus._numsub_at = 0.0
            bus._where()
            await asyncio.sleep(0.05)
    return stops


async def test_hints_go_to_the_others_inboxes_and_no_echo_comes_back(
    own_redis: str, echoes: Counter[str]
) -> None:
    a, b, c = [await RedisHintBus.open(own_redis) for _ in range(3)]
    try:
        stops = await settled(a, b, c)
        heard: dict[str, list[Hint | None]] = {bus.origin: [] for bus in (b, c)}
        stops += [bus.listen(heard[bus.origin].append) for bus in (b, c)]
        read_before = echoes[a.origin]
        writes = writes_on(a.wire)
        await a.publish(Hint("g-inbox", 1))
        await a.publish(Hint("g-inbox", 2), urgent=False)
        await a.publish(Hint("g-inbox", 3), urgent=False)
        await until(lambda: all(len(h) == 4 for h in heard.values()))  # a None, then 3
        await asyncio.sleep(0.2)  # an echo, were there one, would be back by now
        for told in heard.values():
            assert told == [None, *(Hint("g-inbox", v) for v in (1, 2, 3))]
        assert echoes[a.origin] == read_before  # a's subscription read nothing of its own
        sent = b"".join(writes)
        assert sent.count(b"PUBLISH") == 6  # each hint once per inbox
        assert sent.count(b.inbox.encode()) == sent.count(c.inbox.encode()) == 3
        assert f"\r\n{a.channel}\r\n".encode() not in sent  # nothing on the shared channel
        for stop in stops:
            stop()
    finally:
        for bus in (a, b, c):
            await bus.close()


async def test_a_listener_without_an_inbox_hears_every_hint_on_the_shared_channel(
    own_redis: str, echoes: Counter[str]
) -> None:
    """A replica of an older version listens on the shared channel alone: the look at
    Redis counts one listener there beyond the inboxes, and hints go there again (with
    their echo) until a look finds it gone."""
    a, b = await RedisHintBus.open(own_redis), await RedisHintBus.open(own_redis)
    older = Subscription(own_redis, a.channel)
    try:
        stops = await settled(a, b)
        await older.open()
        a._numsub_at = 0.0
        a._where()
        await until(lambda: a._to == a._everyone)
        read_before = echoes[a.origin]
        await a.publish(Hint("g-older", 1))
        message = msgspec.json.decode(await asyncio.wait_for(older.next(), 5))
        assert (message["game_id"], message["version"]) == ("g-older", 1)
        await until(lambda: echoes[a.origin] == read_before + 1)  # its echo, dropped unread
        await older.close()
        await asyncio.sleep(0.05)  # Redis has seen it go
        a._numsub_at = 0.0
        a._where()
        await until(lambda: a._to == (b.inbox,), timeout=1.0)
        for stop in stops:
            stop()
    finally:
        await older.close()
        for bus in (a, b):
            await bus.close()


async def test_an_older_process_s_hello_brings_hints_back_to_the_shared_channel_with_a_mark(
    own_redis: str,
) -> None:
    """A hello that names no inbox is an older version's: hints go on the shared channel
    at once, led by a mark when some were left out, whose number shows it the gap."""
    bus = await RedisHintBus.open(own_redis)
    older = Subscription(own_redis, bus.channel)
    try:
        stop = await alone(bus, [])
        await bus.publish(Hint("g-left", 1))  # nobody else listens: left out
        await older.open()
        said = Wire(own_redis)
        await said.call("PUBLISH", bus.channel, b'{"control":"hello","origin":"older"}')
        await said.close()
        assert b'"hello"' in await asyncio.wait_for(older.next(), 5)  # its own, heard too
        mark = msgspec.json.decode(await asyncio.wait_for(older.next(), 5))
        assert mark == {"control": "mark", "origin": bus.origin, "seq": 2}
        assert bus._to == bus._everyone
        await bus.publish(Hint("g-left", 2))
        hint = msgspec.json.decode(await asyncio.wait_for(older.next(), 5))
        assert (hint["version"], hint["seq"]) == (2, 3)
        stop()
    finally:
        await older.close()
        await bus.close()


async def test_a_hint_from_a_process_whose_inbox_is_not_known_sends_hints_to_everyone(
    own_redis: str,
) -> None:
    bus = await RedisHintBus.open(own_redis)
    try:
        stop = await alone(bus, [])
        said = Wire(own_redis)
        await said.call(
            "PUBLISH",
            bus.channel,
            b'{"game_id":"g-stranger","version":1,"origin":"stranger","seq":1}',
        )
        await said.close()
        await until(lambda: bus._to == bus._everyone, timeout=1.0)
        stop()
    finally:
        await bus.close()


async def test_a_look_at_redis_counts_the_inboxes_under_its_own_prefix_alone(
    own_redis: str,
) -> None:
    """The look's pattern escapes the prefix: a prefix with `*` in it matches no other
    deployment's inboxes."""
    tag = uuid.uuid4().hex[:8]
    starred = await RedisHintBus.open(own_redis, prefix=f"{tag}*:")
    other = await RedisHintBus.open(own_redis, prefix=f"{tag}x:")
    try:
        stops = [starred.listen(lambda hint: None), other.listen(lambda hint: None)]
        await until(lambda: starred._subscribed and other._subscribed)
        stops.append(await alone(starred, []))
        assert starred._to == ()  # the other deployment's inbox is not its listener
        for stop in stops:
            stop()
    finally:
        await starred.close()
        await other.close()


def test_last_is_a_gap_only_to_a_process_that_heard_less() -> None:
    bus = RedisHintBus(Wire("redis://127.0.0.1:1/0"), "redis://127.0.0.1:1/0")
    told: list[Hint | None] = []
    bus._listeners = [told.append]
    heard = {"p": 3}
    bus._said(_Control("last", "p", 3), heard)
    assert told == [] and heard == {"p": 3}  # heard it all
    bus._said(_Control("last", "p", 5), heard)
    assert told == [None] and heard == {"p": 5}  # 4 and 5 went elsewhere
    bus._said(_Control("last", "q", 1), heard)
    assert told == [None, None] and heard == {"p": 5, "q": 1}  # nothing heard of q yet


def test_beyond_a_few_inboxes_hints_go_on_the_shared_channel() -> None:
    """One PUBLISH an inbox: with many listeners, the copies would cost more than the
    echo the shared channel brings back."""
    bus = RedisHintBus(Wire("redis://127.0.0.1:1/0"), "redis://127.0.0.1:1/0")
    bus._shared = False
    bus._inboxes = {f"p{n}": f"bura:inbox:p{n}" for n in range(INBOXES)}
    bus._route()
    assert bus._to == tuple(f"bura:inbox:p{n}" for n in range(INBOXES))
    bus._inboxes["one more"] = "bura:inbox:one more"
    bus._route()
    assert bus._to == bus._everyone == ("bura:hints",)
