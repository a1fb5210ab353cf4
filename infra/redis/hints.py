"""Hints on Redis pub/sub. Pub/sub delivers at most once, so after any (re)subscribe the
bus says so (a None hint) and readers catch up from the store.

Publishing never waits on Redis: a hint goes at once to this process's own listeners, and
onto the connection without waiting for Redis's reply when the connection is up; when it
is not, into a bounded outbox that a background task sends once it is. So a slow or dead
Redis delays no command; a hint it cannot send is dropped, which the readers' catch-up
makes harmless. An urgent hint (a game whose seats play on several processes) is written
at once, ahead of the command's answer; the others wait for the end of the loop's turn
and go in one write with the turn's other calls: each message a listener hears costs it
a wake-up, and a turn's hints sent together arrive together.

Each process numbers the hints it sends (`seq`, from 1): a listener that sees a number
skipped, or meets a publisher first somewhere past its first hint, says that hints may
have been missed (a None), exactly as after a resubscribe. So a listener that has heard
no None since it last read a game knows of every append to it but those still on their
way, which is what lets a replica trust its copy of a game without asking the store.

Nobody else listening, a hint is not sent at all (a PUBLISH, its reply and the process's
own echo were most of what Redis cost a lone replica's command); it still takes its
number. Whether anyone else listens is known without waiting on the next look at Redis
(PUBSUB NUMSUB, every NUMSUB_SECONDS): a process that subscribes says hello on the channel
before it counts itself subscribed, and a publisher that hears a hello sends every hint
again from then on, beginning with a mark, when it left any out, whose number shows the
newcomer the gap (a None: read the store again). So a newcomer misses no append unnoticed
for longer than its hello takes to arrive, which is what a hint on its way takes. A look
at Redis that says nobody else listens counts only when this process's subscription has
been up since before it was sent and no hello was heard after it was sent: the hello of
whoever subscribed later is then heard. A process that cannot send its hello does not
subscribe (it tries again), and a lost subscription makes a publisher send every hint
until a look after the next one says otherwise.

Each process also has an inbox, a channel of its own (`<prefix>inbox:<origin>`), and once
it knows every other listener's inbox it publishes a hint there, once per inbox, rather
than on the shared channel: no process then hears the echo of its own hints, which on
the shared channel cost each of its listeners a wake-up a burst for nothing. The shared
channel keeps the hellos and marks, and the hints whenever some listener's inbox is not
known: a process's first moments, after its subscription was lost, and while a process
of an older version (which has no inbox) listens. Which of these holds is what the look
at Redis tells (one transaction: the inbox channels and the shared channel's count; a
process subscribes to the shared channel before its inbox, so the shared channel's
listeners without an inbox are the count less the inboxes). A hello names the
newcomer's inbox, and the publishers that hear it send there from then on, beginning
with `last`, their latest number, which shows the newcomer any gap (a None). A hint heard
from a process whose inbox is not known sends this one's back to the shared channel. With
more than INBOXES others, hints go on the shared channel too: each would otherwise be
written once per listener, and the echo is then a small part of what each one hears."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec

from infra.deadline import detached
from infra.ports.hints import Hint, Listener, tell
from infra.redis.wire import ReplyError, Subscription, Wire
from infra.throttle import Throttled

log = logging.getLogger("bura.redis")

PREFIX = "bura:"  # BURA_REDIS_PREFIX's default
CHANNEL = f"{PREFIX}hints"  # the channel under the default prefix
OUTBOX = 4096  # hints waiting to be sent; beyond that, new ones are dropped
NUMSUB_SECONDS = 5.0  # how often a publisher asks whether anyone else listens
# the most inboxes a hint is sent to, one PUBLISH each; with more listeners, the shared
# channel: the echo is then a small part of what each hears, and N copies of each hint
# would cost the publisher and Redis more than the echo costs the listeners
INBOXES = 4
WARN_EVERY = 5.0  # seconds between two warnings that Redis is out of reach
_DOWN = (OSError, ReplyError)  # WireError is an OSError


_NO_EVENTS = msgspec.Raw()  # left out of the wire (omit_defaults goes by this very object)


class _Wire(msgspec.Struct, frozen=True, omit_defaults=True):
    """A hint as sent: `origin` lets a process skip the echo of its own hints, and `seq`
    (1, 2, ... per origin) shows a listener any it missed. The events go as the JSON they
    are stored as (no second encoding), the head as hex. Older replicas ignore the
    fields they do not know and take it as a plain hint."""

    game_id: str
    version: int
    origin: str = ""
    seq: int = 0
    after: int | None = None
    events: msgspec.Raw = _NO_EVENTS
    head: str = ""
    schema: str = ""
    heads: str = ""  # every version's chain hash, hex, when the append's store gave them


class _Control(msgspec.Struct, frozen=True, omit_defaults=True):
    """Not a hint: `hello` from a process that subscribes (seq 0: it numbers nothing),
    naming its `inbox`; `mark` from a publisher that left hints out of the shared
    channel (its seq is the next number, so a newcomer sees the gap); `last`, to one
    newcomer's inbox, the publisher's latest number (not a number of its own: a newcomer
    that heard less has missed some). The first field is `control`, which tells it from
    a hint by its first bytes; older replicas, finding no game id, log it as malformed
    and drop it, and skip the `inbox` of a hello."""

    control: str
    origin: str
    seq: int = 0
    inbox: str = ""


_CONTROL = b'{"control":'


def _wire(hint: Hint, origin: str, seq: int) -> _Wire:
    return _Wire(
        hint.game_id,
        hint.version,
        origin,
        seq,
        hint.after,
        msgspec.Raw(hint.events) if hint.events else _NO_EVENTS,
        hint.head.hex(),
        hint.schema,
        hint.heads.hex(),
    )


def _hint(wire: _Wire) -> Hint:
    if not wire.events:
        return Hint(wire.game_id, wire.version)
    return Hint(
        wire.game_id,
        wire.version,
        wire.after,
        bytes(wire.events),
        bytes.fromhex(wire.head),
        wire.schema,
        bytes.fromhex(wire.heads),
    )


_encode = msgspec.json.Encoder().encode


def _glob(text: str) -> str:
    """`text` as a PUBSUB CHANNELS pattern matching itself alone."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


_decode_wire = msgspec.json.Decoder(_Wire).decode
_decode_control = msgspec.json.Decoder(_Control).decode


class RedisHintBus:
    shared = True

    def __init__(self, wire: Wire, url: str, owns_wire: bool = True, prefix: str = PREFIX) -> None:
        # Under BURA_REDIS_PREFIX: pub/sub ignores the database number of the URL, so the
        # prefix is all that keeps two deployments on one Redis from hearing each other.
        self.channel = f"{prefix}hints"
        self._inbox_prefix = f"{prefix}inbox:"
        self.wire = wire  # commands: publish, ping (the lean pipelined connection)
        self._owns_wire = owns_wire  # else the wire is shared, and its owner closes it
        self.url = url  # the subscription opens its own connection
        self.errors = 0  # read by the metrics endpoint
        self.origin = uuid.uuid4().hex
        self.inbox = f"{self._inbox_prefix}{self.origin}"  # this process's own channel
        self._mark = f'"origin":"{self.origin}"'.encode()  # as _Wire writes it
        # where a hint goes: the shared channel while some listener's inbox may not be
        # known (until Redis says otherwise), else every other process's inbox
        self._shared = True
        self._inboxes: dict[str, str] = {}  # origin -> inbox, of the other processes
        self._everyone: tuple[str, ...] = (self.channel,)
        self._to: tuple[str, ...] = self._everyone  # where the next hint goes (() nowhere)
        self._numsub_at = 0.0  # when to ask Redis again
        self._lives = 0  # subscriptions made so far (the current one's number)
        self._hellos = 0  # hellos heard from other processes
        self._left_out = False  # a hint left out of the shared channel since the last sent there
        self._closed = asyncio.Event()
        self._listeners: list[Listener] = []  # copied on change: told while it may change
        self._outbox: asyncio.Queue[tuple[tuple[str, ...], bytes]] = asyncio.Queue(OUTBOX)
        self._sender: asyncio.Task[None] | None = None
        self._down = Throttled(log, WARN_EVERY)  # Redis out of reach, said now and then
        self._sent = 0  # the seq of the last hint this process queued
        self._remote: asyncio.Task[None] | None = None  # the one subscription, shared
        self._subscribed = False

    @classmethod
    async def open(cls, url: str, prefix: str = PREFIX) -> RedisHintBus:
        return cls(Wire(url, timeout=5), url, prefix=prefix)

    async def publish(self, hint: Hint, urgent: bool = True) -> None:
        """Tell this process's listeners now and send the hint to the other processes,
        if any listens: at once when `urgent`, else with the turn's other calls."""
        tell(self._listeners, hint)
        if self._closed.is_set():
            return
        # Numbered before it leaves: a hint dropped on the way, or left out while nobody
        # else listens, still uses its number, so the listeners see the gap at the next.
        self._sent += 1
        to = self._where()
        if to is not self._everyone:
            self._left_out = True  # out of the shared channel: to inboxes, or nowhere
            if not to:
                return
        self._put(to, _encode(_wire(hint, self.origin, self._sent)), urgent)

    def _put(self, to: tuple[str, ...], data: bytes, now: bool = True) -> None:
        """Onto the connection when it is up and nothing waits before it, a PUBLISH to
        each channel of `to`, their replies dropped: `now`, at once, ahead of the
        command's answer (so the next move, sent to another replica, finds the append
        there already); else at the end of this turn of the loop, in one write with the
        turn's other calls (so a turn's hints reach Redis, and each listener, together:
        one wake-up for them all). When it is not up, in order through the outbox, which
        waits for a connection."""
        if to is self._everyone:
            self._left_out = False
        last = len(to) - 1
        # one connection, one turn: if the first is sent, the connection is up for all
        if self._outbox.empty() and self.wire.send("PUBLISH", to[0], data, now=now and not last):
            for n in range(1, last + 1):
                self.wire.send("PUBLISH", to[n], data, now=now and n == last)
            return
        if self._sender is None or self._sender.done():
            # outside the command that first needs it: its deadline and request id are
            # that command's alone (a warning of the sender's named that request)
            self._sender = detached(self._send())
        try:
            self._outbox.put_nowait((to, data))
        except asyncio.QueueFull:
            self.errors += 1

    async def _send(self) -> None:
        while True:
            batch = [await self._outbox.get()]
            while not self._outbox.empty() and len(batch) < 256:
                batch.append(self._outbox.get_nowait())
            try:
                await self.wire.calls(
                    [("PUBLISH", channel, data) for to, data in batch for channel in to]
                )
            except _DOWN as error:
                self.errors += 1
                self._down.warn("dropped %d hint(s): redis unavailable (%s)", len(batch), error)

    @property
    def subscribed(self) -> bool:
        return self._subscribed

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Every hint: this process's own as they are published, the others' as Redis
        brings them. None after each (re)subscribe, since whatever was published while we
        were away is lost to us, and at once to a listener that joins a subscription
        already made.

        All the listeners of a process share one subscription (the projector, the timers
        and the operator feed would otherwise each read and decode every hint); it ends
        with the last of them."""
        self._listeners = [*self._listeners, listener]
        if self._remote is None or self._remote.done():
            self._subscribed = False
            self._remote = detached(self._subscribe())
        elif self._subscribed:
            tell([listener], None)

        def stop() -> None:
            self._listeners = [f for f in self._listeners if f is not listener]
            if not self._listeners and self._remote is not None:
                remote, self._remote = self._remote, None
                remote.cancel()

        return stop

    async def hints(self) -> AsyncIterator[Hint | None]:
        """What `listen` tells, as an iterator."""
        local: asyncio.Queue[Hint | None] = asyncio.Queue()
        stop = self.listen(local.put_nowait)
        try:
            while True:
                hint = await local.get()
                if hint is None and self._closed.is_set():
                    return
                yield hint
        finally:
            stop()

    def _where(self) -> tuple[str, ...]:
        """Where a hint goes: the shared channel, every other process's inbox, or nowhere
        when nobody else listens. Told by a hello, or by another process's hint, at once;
        asked of Redis every NUMSUB_SECONDS, in one transaction: the inbox channels that
        have a listener and how many listen on the shared channel."""
        now = time.monotonic()
        if now >= self._numsub_at:
            self._numsub_at = now + NUMSUB_SECONDS
            if self.wire.send("MULTI"):  # no other caller's command can come between
                self.wire.send("PUBSUB", "CHANNELS", _glob(self._inbox_prefix) + "*")
                self.wire.send("PUBSUB", "NUMSUB", self.channel)
                asked = self.wire.request("EXEC")
                if asked is not None:
                    # which subscription was up when it was asked, and how many hellos heard
                    life = self._lives if self._subscribed else -1
                    asked.add_done_callback(functools.partial(self._counted, life, self._hellos))
        return self._to

    def _counted(self, life: int, hellos: int, asked: asyncio.Future[Any]) -> None:
        if asked.cancelled() or asked.exception() is not None:
            return
        channels, numsub = asked.result()
        inboxes = {}
        for channel in channels:
            name = channel.decode()
            if name != self.inbox:
                inboxes[name.removeprefix(self._inbox_prefix)] = name
        # each process subscribes to the shared channel before its inbox, and loses both
        # at once: those of the shared channel beyond the inboxes have none known
        unknown = int(numsub[1]) - len(channels) > 0
        if self._subscribed and life == self._lives and hellos == self._hellos:
            # up since before it was asked, no hello since: whoever subscribes after
            # Redis answered says hello to this subscription
            self._inboxes = inboxes
            self._shared = unknown
        else:
            self._inboxes.update(inboxes)
            self._shared = self._shared or unknown
        self._route()

    def _route(self) -> None:
        if self._shared or len(self._inboxes) > INBOXES:
            self._to = self._everyone
        else:
            self._to = tuple(self._inboxes.values())

    def _everywhere(self) -> None:
        """A listener may have an inbox not known here: hints go on the shared channel."""
        self._shared = True
        self._route()

    def _said(self, control: _Control, heard: dict[str, int]) -> None:
        """A hello: another process listens from now on, at its inbox (and hears `last`
        there, the latest number, which shows it a gap), or on the shared channel if it
        names none (an older version: a mark first if hints were left out of the shared
        channel). A mark: a number in a publisher's sequence, like a hint's. `last`: a
        publisher's latest number, to this process's inbox."""
        if control.control == "hello":
            self._hellos += 1
            if not control.inbox:
                if self._left_out and not self._closed.is_set():
                    self._sent += 1
                    self._put(self._everyone, _encode(_Control("mark", self.origin, self._sent)))
                self._everywhere()
                return
            self._inboxes[control.origin] = control.inbox
            self._route()
            if self._sent and not self._closed.is_set():
                said = _Control("last", self.origin, self._sent)
                self._put((control.inbox,), _encode(said))
        elif control.control == "mark" and control.seq:
            self._numbered(control.origin, control.seq, heard)
        elif control.control == "last" and control.seq > heard.get(control.origin, 0):
            self._tell(None)  # hints of its, sent before it knew this inbox, went elsewhere
            heard[control.origin] = control.seq

    def _numbered(self, origin: str, seq: int, heard: dict[str, int]) -> bool:
        """Whether a publisher's message numbered `seq` is new (not a pipeline sent again);
        a None first when some of its numbers were missed."""
        last = heard.get(origin)
        if last is not None and seq <= last:
            return False
        if seq != (last or 0) + 1:
            self._tell(None)
        heard[origin] = seq
        return True

    def _own(self, data: bytes) -> bool:
        return self._mark in data

    def _tell(self, hint: Hint | None) -> None:
        tell(self._listeners, hint)

    async def _subscribe(self) -> None:
        delay = 0.05
        while not self._closed.is_set():
            # this process's own hints come back too: dropped as they are read, undecoded
            subscription = Subscription(self.url, self.channel, skip=self._own, then=(self.inbox,))
            try:
                await subscription.open()
                # published, and so told to every other subscription, before this one
                # counts: a publisher leaving hints out sends them from then on
                hello = _Control("hello", self.origin, inbox=self.inbox)
                await self.wire.call("PUBLISH", self.channel, _encode(hello))
                self._lives += 1
                self._subscribed = True
                self._tell(None)
                heard: dict[str, int] = {}  # origin -> the last seq heard since subscribing
                delay = 0.05
                while not self._closed.is_set():
                    data = await subscription.next()
                    try:
                        if data.startswith(_CONTROL):
                            control = _decode_control(data)
                            if control.origin != self.origin:
                                self._said(control, heard)
                            continue
                        wire = _decode_wire(data)
                    except msgspec.DecodeError:
                        log.warning("ignored a malformed hint on %s", self.channel)
                        continue
                    if wire.origin == self.origin:
                        continue
                    if wire.origin not in self._inboxes:
                        self._everywhere()  # it publishes, so it listens (or did)
                    if wire.seq and not self._numbered(wire.origin, wire.seq, heard):
                        continue  # a pipeline sent again: heard already
                    self._tell(_hint(wire))
            except _DOWN as error:
                self.errors += 1
                self._down.warn("redis pub/sub lost (%s); reconnecting", error)
            except Exception:
                self.errors += 1
                log.exception("redis pub/sub failed; reconnecting")
            finally:
                self._subscribed = False
                # a hello said while this was down would not be heard: send every hint
                # on the shared channel until a look at Redis made while subscribed
                # again says otherwise
                self._everywhere()
                await subscription.close()
            if not self._closed.is_set():
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)

    async def ping(self) -> None:
        await self.wire.call("PING")

    async def close(self) -> None:
        self._closed.set()
        tell(self._listeners, None)
        if self._sender is not None:
            # Give the hints already queued a moment to leave.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.5):
                    while not self._outbox.empty() and not self._sender.done():
                        await asyncio.sleep(0.01)
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
        if self._remote is not None:
            self._remote.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._remote
        if self._owns_wire:
            await self.wire.close()
