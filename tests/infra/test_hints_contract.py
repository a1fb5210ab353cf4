"""The HintBus contract: the in-process bus and the Redis bus pass this same module.

`pair` is a publisher and a listener: one bus for the in-process adapter (one process), two
buses (two processes' worth of connections) for Redis."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.databases import free_port
from harness.processes import RedisServer
from infra.memory.hints import InProcessHintBus
from infra.ports.hints import Hint, HintBus
from infra.redis.hints import CHANNEL, RedisHintBus
from infra.redis.wire import Wire
from tests.infra.test_wire import writes_on


@pytest.fixture(params=["memory", "redis"])
async def pair(request: pytest.FixtureRequest) -> AsyncIterator[tuple[HintBus, HintBus]]:
    if request.param == "memory":
        bus = InProcessHintBus()
        yield bus, bus
        await bus.close()
        return
    url = request.getfixturevalue("redis_url")
    publisher, listener = await RedisHintBus.open(url), await RedisHintBus.open(url)
    yield publisher, listener
    await publisher.close()
    await listener.close()


async def listening(bus: HintBus, game: str, into: list[Hint]) -> asyncio.Task[None]:
    """A listener that keeps the hints of `game`; returns once it is subscribed."""
    ready = asyncio.Event()

    async def listen() -> None:
        async for hint in bus.hints():
            ready.set()  # a None (subscribed) or a first hint: it hears us now
            if hint is not None and hint.game_id == game:
                into.append(hint)

    task = asyncio.create_task(listen())
    if isinstance(bus, RedisHintBus):
        await asyncio.wait_for(ready.wait(), 5)  # Redis says None once subscribed
    else:
        await asyncio.sleep(0)
    return task


async def until(condition: object, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_hints_reach_a_listener_in_the_order_published(
    pair: tuple[HintBus, HintBus],
) -> None:
    publisher, listener = pair
    game, heard = f"g-{uuid.uuid4()}", []
    task = await listening(listener, game, heard)
    for version in range(1, 21):
        await publisher.publish(Hint(game, version))
    await until(lambda: len(heard) == 20)
    assert [h.version for h in heard] == list(range(1, 21))
    task.cancel()


async def test_hints_urgent_or_not_reach_a_listener_in_the_order_published(
    pair: tuple[HintBus, HintBus],
) -> None:
    """A hint that may wait for the end of the turn is still heard, and never after a
    later one that did not wait."""
    publisher, listener = pair
    game, heard = f"g-{uuid.uuid4()}", []
    task = await listening(listener, game, heard)
    for version in range(1, 13):
        await publisher.publish(Hint(game, version), urgent=version % 3 == 0)
    await until(lambda: len(heard) == 12)
    assert [h.version for h in heard] == list(range(1, 13))
    task.cancel()


async def test_every_listener_hears_every_hint(pair: tuple[HintBus, HintBus]) -> None:
    publisher, listener = pair
    game = f"g-{uuid.uuid4()}"
    one: list[Hint] = []
    two: list[Hint] = []
    tasks = [await listening(listener, game, one), await listening(listener, game, two)]
    await publisher.publish(Hint(game, 7))
    await until(lambda: one and two)
    assert one == two == [Hint(game, 7)]
    for task in tasks:
        task.cancel()


async def test_a_publisher_hears_its_own_hints_at_once(pair: tuple[HintBus, HintBus]) -> None:
    publisher, _ = pair
    game, heard = f"g-{uuid.uuid4()}", []
    task = await listening(publisher, game, heard)
    await publisher.publish(Hint(game, 1))
    await until(lambda: heard)
    assert heard == [Hint(game, 1)]  # once, not again when Redis echoes it
    await asyncio.sleep(0.2)
    assert heard == [Hint(game, 1)]
    task.cancel()


async def test_closing_ends_the_hints_and_publishing_after_close_is_harmless(
    pair: tuple[HintBus, HintBus],
) -> None:
    publisher, listener = pair
    await listener.ping()
    task = await listening(listener, "nothing", [])
    await listener.close()
    await asyncio.wait_for(task, 5)
    await publisher.publish(Hint("after", 1))


async def test_a_hint_carries_its_append_intact(pair: tuple[HintBus, HintBus]) -> None:
    publisher, listener = pair
    game, heard = f"g-{uuid.uuid4()}", []
    task = await listening(listener, game, heard)
    heads = bytes(range(64))  # the chain hash of versions 8 and 9
    carrying = Hint(game, 9, 7, b'[{"type":"a"},{"type":"b","n":1}]', heads[32:], "1.x", heads)
    await publisher.publish(carrying)
    await publisher.publish(Hint(game, 10))
    await until(lambda: len(heard) == 2)
    assert heard == [carrying, Hint(game, 10)]
    assert heard[0].version_heads() == [heads[:32], heads[32:]]
    assert heard[1].version_heads() is None
    task.cancel()


async def test_a_gap_in_a_publishers_hints_is_told_as_a_possible_loss(redis_url: str) -> None:
    """Each process numbers its hints: a number skipped (a hint dropped on the way, say
    while Redis was out of reach for its publisher) is a None, as after a resubscribe.
    On a channel of its own (a prefix of its own): another process's hints on the shared
    Redis would be gaps of their own."""
    listener = await RedisHintBus.open(redis_url, prefix=f"gap-{uuid.uuid4().hex[:8]}:")
    game, heard = f"g-{uuid.uuid4()}", []

    async def listen() -> None:
        async for hint in listener.hints():
            if hint is None or hint.game_id == game:
                heard.append(hint)

    task = asyncio.create_task(listen())
    await until(lambda: heard == [None])  # subscribed
    for seq in (1, 2, 4, 4):  # 3 never came; 4 sent twice (a pipeline sent again)
        await listener.wire.call(
            "PUBLISH",
            listener.channel,
            f'{{"game_id":"{game}","version":{seq},"origin":"other","seq":{seq}}}',
        )
    await until(lambda: len(heard) == 5)
    await asyncio.sleep(0.1)
    assert heard == [None, Hint(game, 1), Hint(game, 2), None, Hint(game, 4)]
    task.cancel()
    await listener.close()


async def test_a_listener_is_told_within_publish_and_remote_hints_as_they_come(
    pair: tuple[HintBus, HintBus],
) -> None:
    """`listen`: no queue and no task between. This process's own hint is told before
    publish returns; another's as it arrives; both in the order published."""
    publisher, listener = pair
    game = f"g-{uuid.uuid4()}"
    own: list[Hint | None] = []
    heard: list[Hint | None] = []
    stop_own = publisher.listen(lambda h: own.append(h) if h is None or h.game_id == game else 0)
    stop = listener.listen(lambda h: heard.append(h) if h is None or h.game_id == game else 0)
    if isinstance(listener, RedisHintBus):
        await until(lambda: None in heard)  # subscribed
    await publisher.publish(Hint(game, 1))
    assert [h for h in own if h is not None] == [Hint(game, 1)]  # at once
    await publisher.publish(Hint(game, 2))
    await until(lambda: [h for h in heard if h is not None] == [Hint(game, 1), Hint(game, 2)])
    await asyncio.sleep(0.1)
    assert [h for h in own if h is not None] == [Hint(game, 1), Hint(game, 2)]  # no echo
    stop_own()
    stop()
    await publisher.publish(Hint(game, 3))
    await asyncio.sleep(0.1)
    assert Hint(game, 3) not in own + heard  # stopped: told nothing more


async def test_a_listener_that_raises_is_told_a_gap_and_the_others_go_on(
    pair: tuple[HintBus, HintBus], caplog: pytest.LogCaptureFixture
) -> None:
    publisher, _ = pair
    game = f"g-{uuid.uuid4()}"
    told: list[Hint | None] = []
    others: list[Hint | None] = []

    def failing(hint: Hint | None) -> None:
        told.append(hint)
        if hint is not None and hint.game_id == game:
            raise RuntimeError("a bug in a listener")

    stops = [publisher.listen(failing), publisher.listen(others.append)]
    await publisher.publish(Hint(game, 1))
    assert told[-2:] == [Hint(game, 1), None]  # what it missed is unknown: a gap
    assert Hint(game, 1) in others and None not in others[others.index(Hint(game, 1)) :]
    assert "a hint listener failed" in caplog.text
    for stop in stops:
        stop()


async def test_a_hint_is_written_at_once_when_another_process_listens(redis_url: str) -> None:
    """Ahead of the command's answer: the next move, sent to another replica, finds the
    append there already. Who else listens, and at which inbox, is asked of Redis. On a
    prefix of its own: other tests' buses on this Redis would be listeners too."""
    prefix = f"now-{uuid.uuid4().hex[:8]}:"
    publisher = await RedisHintBus.open(redis_url, prefix=prefix)
    listener = await RedisHintBus.open(redis_url, prefix=prefix)
    try:
        game, heard = f"g-{uuid.uuid4()}", []
        task = await listening(listener, game, heard)
        stop = publisher.listen(lambda hint: None)  # a replica's projector listens
        await until(lambda: publisher._subscribed)
        publisher._to, publisher._numsub_at = (), 0.0
        publisher._where()  # asks Redis
        await until(lambda: publisher._to == (listener.inbox,))
        writes = writes_on(publisher.wire)
        await publisher.publish(Hint(game, 1))
        assert len(writes) == 1 and b"PUBLISH" in writes[0]  # before this turn ended
        assert listener.inbox.encode() in writes[0]
        await until(lambda: heard == [Hint(game, 1)])
        stop()
        task.cancel()
    finally:
        await publisher.close()
        await listener.close()


async def test_hints_that_are_not_urgent_leave_together_at_the_end_of_the_turn(
    redis_url: str,
) -> None:
    """A game played on one replica alone: its hints wait for the end of the loop's turn
    and go in one write with the turn's others, so a listener wakes once for them all;
    an urgent hint takes those waiting before it along, in order."""
    publisher, listener = await RedisHintBus.open(redis_url), await RedisHintBus.open(redis_url)
    try:
        game, heard = f"g-{uuid.uuid4()}", []
        task = await listening(listener, game, heard)
        await publisher.ping()  # connected
        # others listen (on the shared channel: other tests' buses share this Redis)
        publisher._to, publisher._numsub_at = publisher._everyone, time.monotonic() + 60
        writes = writes_on(publisher.wire)
        await publisher.publish(Hint(game, 1), urgent=False)
        await publisher.publish(Hint(game, 2), urgent=False)
        assert writes == []  # not before this turn ends
        await until(lambda: writes)
        assert len(writes) == 1 and writes[0].count(b"PUBLISH") == 2
        await until(lambda: len(heard) == 2)
        await publisher.publish(Hint(game, 3), urgent=False)
        await publisher.publish(Hint(game, 4))  # urgent: written now, 3 first
        assert len(writes) == 2 and writes[1].count(b"PUBLISH") == 2
        assert writes[1].index(b'"version":3') < writes[1].index(b'"version":4')
        await until(lambda: len(heard) == 4)
        assert [h.version for h in heard] == [1, 2, 3, 4]
        task.cancel()
    finally:
        await publisher.close()
        await listener.close()


# --- nobody else listening: hints left out, and a newcomer's hello -------------------


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[str]:
    """A Redis of this test's own: nobody else's buses listen on it."""
    server = RedisServer(tmp_path / "redis").start()
    try:
        yield server.url
    finally:
        server.kill()


@pytest.fixture
async def newcomer_pair(own_redis: str) -> AsyncIterator[tuple[RedisHintBus, RedisHintBus]]:
    """A publisher and a newcomer, two processes' worth of buses on a Redis of their own."""
    publisher, newcomer = await RedisHintBus.open(own_redis), await RedisHintBus.open(own_redis)
    yield publisher, newcomer
    await publisher.close()
    await newcomer.close()


async def alone(bus: RedisHintBus, told: list[Hint | None]) -> Callable[[], None]:
    """`bus` subscribed (its listener keeps what it is told in `told`), and told by Redis
    that nobody else listens; it asks Redis no more after that."""
    stop = bus.listen(told.append)
    await until(lambda: bus._subscribed)
    bus._numsub_at = 0.0
    bus._where()  # asks Redis now
    await until(lambda: bus._to == ())
    bus._numsub_at = float("inf")  # only a hello can tell it otherwise from here
    return stop


async def test_a_hint_nobody_else_would_hear_is_not_sent_but_takes_its_number(
    own_redis: str,
) -> None:
    """Alone on its Redis, a process tells its own listeners and writes nothing: no
    PUBLISH, no reply to read, no echo of its own."""
    bus = await RedisHintBus.open(own_redis)
    try:
        told: list[Hint | None] = []
        stop = await alone(bus, told)
        writes = writes_on(bus.wire)
        for version in (1, 2, 3):
            await bus.publish(Hint("g-alone", version))
        await asyncio.sleep(0.1)
        assert writes == []
        assert [h for h in told if h is not None] == [Hint("g-alone", v) for v in (1, 2, 3)]
        assert bus._sent == 3  # numbered all the same
        stop()
    finally:
        await bus.close()


async def test_a_newcomer_says_hello_and_hears_a_gap_then_every_hint_at_once(
    newcomer_pair: tuple[RedisHintBus, RedisHintBus],
) -> None:
    """Hints a lone publisher left out may be appends a newcomer reads before it hears
    of them: the newcomer's hello brings a mark whose number shows it the gap (a None),
    and every hint from then on, long before the publisher would have asked Redis again
    (never, here)."""
    publisher, newcomer = newcomer_pair
    own: list[Hint | None] = []
    stop_own = await alone(publisher, own)
    await publisher.publish(Hint("g-join", 1))  # left out
    heard: list[Hint | None] = []
    stop = newcomer.listen(heard.append)
    await until(lambda: publisher._to, timeout=1.0)  # its hello, not a look at Redis
    assert publisher._to == (newcomer.inbox,)
    await until(lambda: heard == [None, None], timeout=1.0)  # subscribed; then `last`
    await publisher.publish(Hint("g-join", 2))
    await until(lambda: len(heard) == 3, timeout=1.0)
    await asyncio.sleep(0.1)
    assert heard == [None, None, Hint("g-join", 2)]
    assert own == [None, Hint("g-join", 1), Hint("g-join", 2)]  # no hello told as a hint
    stop()
    stop_own()


async def test_a_newcomer_to_a_publisher_that_left_nothing_out_hears_no_mark(
    newcomer_pair: tuple[RedisHintBus, RedisHintBus],
) -> None:
    publisher, newcomer = newcomer_pair
    stop_own = await alone(publisher, [])
    heard: list[Hint | None] = []
    stop = newcomer.listen(heard.append)
    await until(lambda: publisher._to, timeout=1.0)
    await publisher.publish(Hint("g-quiet", 1))
    await until(lambda: len(heard) == 2, timeout=1.0)
    await asyncio.sleep(0.1)
    assert heard == [None, Hint("g-quiet", 1)]
    assert publisher._sent == 1  # no mark numbered, and no `last` said
    stop()
    stop_own()


async def test_a_look_at_redis_answered_after_a_hello_does_not_undo_it(own_redis: str) -> None:
    """Redis counted the subscriptions before the newcomer's; its answer can come after
    the newcomer's hello was heard (two connections): it is not believed. Nor is one
    asked while the subscription was down, or before it was last made."""
    bus = await RedisHintBus.open(own_redis)
    try:
        stop = await alone(bus, [])
        loop = asyncio.get_running_loop()

        def answered(life: int, hellos: int) -> None:
            nobody: asyncio.Future[Any] = loop.create_future()
            # only this process's subscriptions: its inbox, and the shared channel
            nobody.set_result([[bus.inbox.encode()], [CHANNEL.encode(), 1]])
            bus._shared, bus._to = True, bus._everyone
            bus._counted(life, hellos, nobody)

        answered(bus._lives, bus._hellos - 1)  # a hello heard since it was asked
        assert bus._to == bus._everyone
        answered(-1, bus._hellos)  # asked while not subscribed
        assert bus._to == bus._everyone
        answered(bus._lives - 1, bus._hellos)  # asked of an earlier subscription
        assert bus._to == bus._everyone
        answered(bus._lives, bus._hellos)  # up since, no hello since: believed
        assert bus._to == ()
        stop()
    finally:
        await bus.close()


async def test_a_subscription_whose_hello_cannot_be_sent_is_not_made(
    own_redis: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A process that cannot say hello (its command connection down) might not be heard
    joining: it tries again rather than counting itself subscribed."""
    dead = Wire(f"redis://127.0.0.1:{free_port()}/0", timeout=0.5)
    bus = RedisHintBus(dead, own_redis)
    try:
        told: list[Hint | None] = []
        stop = bus.listen(told.append)
        await until(lambda: bus.errors >= 2)
        assert told == [] and not bus._subscribed and bus._lives == 0
        stop()
    finally:
        await bus.close()


async def test_a_lost_subscription_sends_every_hint_again(own_redis: str) -> None:
    """While its subscription is down a process would not hear a hello: every hint goes,
    until a look at Redis made once it is back says nobody else listens."""
    bus = await RedisHintBus.open(own_redis)
    try:
        stop = await alone(bus, [])
        before = bus._lives
        killer = Wire(own_redis)
        await killer.call("CLIENT", "KILL", "TYPE", "pubsub")
        await until(lambda: bus._to == bus._everyone)
        await until(lambda: bus._lives == before + 1)  # subscribed again
        assert bus._to == bus._everyone
        await killer.close()
        stop()
    finally:
        await bus.close()


async def test_buses_under_two_prefixes_on_one_redis_never_hear_each_other(
    redis_url: str,
) -> None:
    """BURA_REDIS_PREFIX names the hint channel: two deployments sharing a Redis under
    different prefixes never hear each other's hints (which carry the appended events,
    hidden cards included). The database number would not keep them apart: pub/sub
    ignores it, so a bus on another database under the same prefix hears them."""
    tag = uuid.uuid4().hex[:8]
    blue, green = f"blue-{tag}:", f"green-{tag}:"
    other_db = redis_url.rsplit("/", 1)[0] + "/1"
    buses = [
        await RedisHintBus.open(redis_url, prefix=blue),  # publishes
        await RedisHintBus.open(redis_url, prefix=blue),
        await RedisHintBus.open(other_db, prefix=blue),
        await RedisHintBus.open(redis_url, prefix=green),
    ]
    publisher, apart = buses[0], buses[-1]
    assert publisher.channel == f"{blue}hints" and apart.channel == f"{green}hints"
    game = f"g-{uuid.uuid4()}"
    heard: list[list[Hint]] = [[], [], []]  # blue here, blue on another database, green
    tasks = [await listening(bus, game, into) for bus, into in zip(buses[1:], heard, strict=True)]
    try:
        await publisher.publish(Hint(game, 1, 0, b'[{"type":"dealt"}]', bytes(32), "1.x"))
        await until(lambda: heard[0] and heard[1])
        await apart.publish(Hint(game, 2))  # and the other way round
        await asyncio.sleep(0.3)
        assert [h.version for h in heard[0]] == [h.version for h in heard[1]] == [1]
        assert [h.version for h in heard[2]] == [2]  # its own, never blue's
    finally:
        for task in tasks:
            task.cancel()
        for bus in buses:
            await bus.close()


async def test_the_default_prefix_keeps_the_channel_bura_hints(redis_url: str) -> None:
    bus = await RedisHintBus.open(redis_url)
    try:
        assert bus.channel == CHANNEL == "bura:hints"
    finally:
        await bus.close()


async def test_the_server_puts_its_hints_and_presence_under_bura_redis_prefix(
    redis_url: str, tmp_path: Path
) -> None:
    from infra.redis.presence import RedisPresence
    from services.bootstrap import open_adapters
    from services.config import Settings

    settings = Settings(
        sqlite_path=str(tmp_path / "x.db"), redis_url=redis_url, redis_prefix="bura-blue:"
    )
    adapters = await open_adapters(settings)
    try:
        assert isinstance(adapters.hints, RedisHintBus)
        assert adapters.hints.channel == "bura-blue:hints"
        assert isinstance(adapters.presence, RedisPresence)
        assert adapters.presence.origin == "bura-blue:presence:origin"
    finally:
        await adapters.close()


async def test_a_bus_is_subscribed_only_while_its_subscription_is_up(tmp_path: Path) -> None:
    """`subscribed` says whether what others publish now is heard here: not while Redis is
    down (the game service then trusts no copy), again once it is back and the bus has
    said that some hints may have been missed."""
    server = RedisServer(tmp_path / "redis").start()
    bus = await RedisHintBus.open(server.url)
    told: list[Hint | None] = []
    try:
        assert not bus.subscribed  # nobody listens yet: no subscription
        stop = bus.listen(told.append)
        await until(lambda: bus.subscribed)
        server.kill()
        await until(lambda: not bus.subscribed)
        await asyncio.sleep(0.3)  # reconnects keep failing meanwhile
        assert not bus.subscribed
        told.clear()
        server.start()  # on its port again
        await until(lambda: bus.subscribed, timeout=10)
        assert told[:1] == [None]  # back: a possible gap first
        stop()
    finally:
        await bus.close()
        server.kill()


async def test_the_in_process_bus_always_hears_its_own_process() -> None:
    assert InProcessHintBus().subscribed
