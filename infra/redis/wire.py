"""A lean Redis connection for the calls made on every command: the rate counters' script
and the hints' PUBLISH. One connection per process, shared by every caller: commands are
written as they come (pipelined) and replies are matched to callers in order, which is how
Redis answers on one connection. Replies are parsed by hiredis.

It does less than redis-py's client on purpose: no pool, no retries, no reconnect in the
middle of a call. A call that cannot be answered (no connection, a timeout, the connection
lost) raises WireError at once, and the connection is dropped with every call still on
it, since a late reply would be matched to the wrong caller. The next call connects again.
Callers already treat an unreachable Redis as such (the rate limits serve, a hint is
dropped and caught up from the store). redis-py keeps the rest: pub/sub, presence,
tickets, snapshots."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ssl
from collections.abc import Callable
from typing import Any, TypeVar, cast
from urllib.parse import parse_qs, unquote, urlsplit

import hiredis

Arg = bytes | str | int | float


class WireError(ConnectionError):
    """Redis could not answer this call: unreachable, too slow, or the connection lost."""


class ReplyError(Exception):
    """Redis answered with an error (a wrong type, a script error, NOSCRIPT...)."""


def _encode(args: tuple[Arg, ...]) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode()
        parts.append(b"$%d\r\n" % len(data))
        parts.append(data)
        parts.append(b"\r\n")
    return b"".join(parts)


class Where:
    """What a Redis URL names (redis://, rediss:// with TLS, unix:// for a socket file, as
    redis-py reads them): where to connect, and what to say first."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("redis", "rediss", "unix"):
            raise ValueError(f"not a redis://, rediss:// or unix:// URL: {parts.scheme}://...")
        self.socket = unquote(parts.path) if parts.scheme == "unix" else None
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 6379
        self.tls = parts.scheme == "rediss"
        self.username = unquote(parts.username) if parts.username else None
        self.password = unquote(parts.password) if parts.password else None
        db = parse_qs(parts.query).get("db", [""])[0]
        path = "" if self.socket is not None else parts.path.strip("/")
        self.db = int(path or db or 0)

    def __str__(self) -> str:
        return self.socket if self.socket is not None else f"{self.host}:{self.port}"

    def greeting(self) -> list[tuple[str, ...]]:
        said: list[tuple[str, ...]] = []
        if self.password is not None:
            said.append(
                ("AUTH", self.username, self.password) if self.username else ("AUTH", self.password)
            )
        if self.db:
            said.append(("SELECT", str(self.db)))
        return said


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.reader = hiredis.Reader(replyError=ReplyError)
        # a waiter for each reply to come, in order; None for a reply nobody waits for
        self.waiting: collections.deque[asyncio.Future[Any] | None] = collections.deque()
        self.since: collections.deque[float] = collections.deque()  # when each was sent
        self.transport: asyncio.Transport | None = None
        self.lost: Exception | None = None
        self.stirred = False  # something came since the watch last looked (subscriptions)

        self.pending: list[bytes] = []  # written at the end of this turn of the loop
        self.scheduled = False  # a write at the end of this turn is on its way

    def expect(self, waiters: list[asyncio.Future[Any] | None], now: float) -> None:
        self.waiting.extend(waiters)
        self.since.extend([now] * len(waiters))

    def send(self, data: bytes, now: bool = False) -> None:
        """Written with whatever else is sent in this turn of the loop, in one write: under
        load many requests' calls go in one system call, and their replies come in one.
        `now`: written at once, with whatever waits before it (in order)."""
        self.pending.append(data)
        if now:
            self._flush()
        elif not self.scheduled:
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self._turned)

    def _turned(self) -> None:
        self.scheduled = False
        self._flush()

    def _flush(self) -> None:
        if not self.pending:
            return
        data = b"".join(self.pending)
        self.pending.clear()
        if self.lost is None and self.transport is not None:
            self.transport.write(data)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport (uvloop's is not a subclass of asyncio's, but is one)
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        self.stirred = True
        while True:
            try:
                reply = self.reader.gets()
            except hiredis.ProtocolError as error:
                self._fail(WireError(f"redis spoke no RESP: {error}"))
                if self.transport is not None:
                    self.transport.close()
                return
            if reply is False:
                return
            self._reply(reply)

    def _reply(self, reply: Any) -> None:
        if not self.waiting:  # nobody asked: the connection is out of step
            self._fail(WireError("a reply nobody asked for"))
            if self.transport is not None:
                self.transport.close()
            return
        waiter = self.waiting.popleft()
        self.since.popleft()
        if waiter is not None and not waiter.done():
            if isinstance(reply, ReplyError):
                waiter.set_exception(reply)
            else:
                waiter.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(WireError(f"redis connection lost ({exc or 'closed'})"))

    def _fail(self, error: Exception) -> None:
        self.lost = error
        self.since.clear()
        self.pending.clear()
        while self.waiting:
            waiter = self.waiting.popleft()
            if waiter is not None and not waiter.done():
                waiter.set_exception(error)


P = TypeVar("P", bound="_Protocol")


async def _opened(factory: type[P], where: Where, said: list[tuple[str, ...]]) -> P:
    """A connection of `factory`'s kind to `where`, once Redis has accepted what is `said`
    first (AUTH, SELECT, SUBSCRIBE); closed again if it refuses any of it."""
    loop = asyncio.get_running_loop()
    if where.socket is not None:
        _, protocol = await loop.create_unix_connection(factory, where.socket)
    else:
        context = ssl.create_default_context() if where.tls else None
        _, protocol = await loop.create_connection(factory, where.host, where.port, ssl=context)
    transport = protocol.transport
    assert transport is not None
    try:
        for command in said:
            waiter: asyncio.Future[Any] = loop.create_future()
            protocol.expect([waiter], loop.time())
            transport.write(_encode(command))
            try:
                await waiter
            except ReplyError as error:
                raise WireError(f"redis refused {command[0]}: {error}") from None
    except BaseException:
        transport.close()
        raise
    return protocol


class Wire:
    """One pipelined connection to Redis, opened at the first call and again after a loss.

    No call sets a timer of its own: one watch per connection looks at the oldest call
    still unanswered, and drops the connection once it has waited `timeout`. While
    replies come, the watch is set again once a `timeout`, not once a call."""

    def __init__(self, url: str, timeout: float = 2.0, connect_timeout: float = 2.0) -> None:
        self.where = Where(url)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._protocol: _Protocol | None = None
        self._connecting: asyncio.Future[_Protocol] | None = None
        self._closed = False
        self._watch: asyncio.TimerHandle | None = None

    async def call(self, *args: Arg) -> Any:
        """One command's reply; ReplyError for Redis's error reply, WireError when no
        reply can be had in time."""
        (waiter,) = await self._sent([args])
        return await waiter

    async def calls(self, commands: list[tuple[Arg, ...]]) -> list[Any]:
        """Several commands in one write, their replies in order (a pipeline, not a
        transaction); the first error reply raises once every reply is in."""
        waiters = await self._sent(commands)
        return list(await asyncio.gather(*waiters))

    async def _sent(self, commands: list[tuple[Arg, ...]]) -> list[asyncio.Future[Any]]:
        """The commands written in one go, and a waiter for each reply, in order."""
        protocol = self._protocol
        if protocol is None or protocol.lost is not None:
            protocol = await self._connected()
        assert protocol.transport is not None
        loop = asyncio.get_running_loop()
        waiters: list[asyncio.Future[Any]] = [loop.create_future() for _ in commands]
        protocol.expect(list(waiters), loop.time())
        protocol.send(b"".join([_encode(args) for args in commands]))
        if self._watch is None:
            self._watch = loop.call_later(self.timeout, self._look)
        return waiters

    def send(self, *args: Arg, now: bool = False) -> bool:
        """The command sent without waiting for its reply (read and dropped when it
        comes), if the connection is up; False if it is not (nothing was sent). `now`:
        written at once rather than at the end of this turn of the loop."""
        return self._now(args, None, now)

    def request(self, *args: Arg) -> asyncio.Future[Any] | None:
        """The command sent, if the connection is up, and the future of its reply, for a
        caller that cannot wait (a callback); None if it is not (nothing was sent)."""
        waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        return waiter if self._now(args, waiter) else None

    def _now(
        self, args: tuple[Arg, ...], waiter: asyncio.Future[Any] | None, now: bool = False
    ) -> bool:
        protocol = self._protocol
        if protocol is None or protocol.lost is not None or protocol.transport is None:
            return False
        loop = asyncio.get_running_loop()
        protocol.expect([waiter], loop.time())
        protocol.send(_encode(args), now)
        if self._watch is None:
            self._watch = loop.call_later(self.timeout, self._look)
        return True

    def _look(self) -> None:
        """The watch: the oldest unanswered call has had its time, or it is set again for
        when it will have. A late reply would be matched to the wrong caller, so the
        connection goes with every call on it."""
        self._watch = None
        protocol = self._protocol
        if protocol is None or protocol.lost is not None or not protocol.since:
            return
        loop = asyncio.get_running_loop()
        left = protocol.since[0] + self.timeout - loop.time()
        if left > 0:
            self._watch = loop.call_later(left, self._look)
            return
        self._drop(protocol, WireError(f"redis did not answer in {self.timeout} s"))

    async def _connected(self) -> _Protocol:
        if self._closed:
            raise WireError("closed")
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.ensure_future(self._connect())
        try:
            return await asyncio.shield(self._connecting)
        except (OSError, TimeoutError) as error:
            raise WireError(f"redis unreachable at {self.where}: {error}") from error

    async def _connect(self) -> _Protocol:
        async with asyncio.timeout(self.connect_timeout):
            protocol = await _opened(_Protocol, self.where, self.where.greeting())
        self._protocol = protocol
        return protocol

    def _drop(self, protocol: _Protocol, error: Exception) -> None:
        protocol._fail(error)
        if protocol.transport is not None:
            protocol.transport.close()
        if self._protocol is protocol:
            self._protocol = None

    async def close(self) -> None:
        self._closed = True
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        protocol, self._protocol = self._protocol, None
        if protocol is not None:
            self._drop(protocol, WireError("closed"))
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
            with contextlib.suppress(BaseException):
                await self._connecting


class _Listening(_Protocol):
    """A subscribed connection: messages (and PING's pong) go to a queue, not to callers."""

    def __init__(self) -> None:
        super().__init__()
        self.heard: asyncio.Queue[bytes | Exception | None] = asyncio.Queue()
        self.subscribed = False
        self.skip: Callable[[bytes], bool] | None = None  # messages never queued

    def _reply(self, reply: Any) -> None:
        if self.waiting:  # the greeting's replies, then SUBSCRIBE's, come first
            if isinstance(reply, list) and reply[:1] == [b"subscribe"]:
                self.subscribed = True  # a message may follow in this very read
            super()._reply(reply)
        elif isinstance(reply, list) and len(reply) == 3 and reply[0] == b"message":
            if self.skip is None or not self.skip(reply[2]):
                self.heard.put_nowait(reply[2])
        else:
            self.heard.put_nowait(None)  # a pong

    def _fail(self, error: Exception) -> None:
        super()._fail(error)
        if self.subscribed:
            self.heard.put_nowait(error)


class Subscription:
    """One connection subscribed to one channel, and to the channels `then` once it is
    (in that order): `next()` gives their messages in the order Redis sent them, and
    raises WireError once the connection is lost or stops answering. A watch looks every
    `quiet` seconds: after a look that finds nothing heard since the one before, it sends
    a PING, which must be answered within `timeout`. A Redis that went away without
    closing the connection is noticed, not waited on forever, and no message pays for a
    timer of its own."""

    def __init__(
        self,
        url: str,
        channel: str,
        timeout: float = 5.0,
        quiet: float = 10.0,
        skip: Callable[[bytes], bool] | None = None,
        then: tuple[str, ...] = (),
    ) -> None:
        self.where = Where(url)
        self.channel = channel
        self.then = then
        self.skip = skip  # a message it says yes to is dropped as it is read, unqueued
        self.timeout = timeout
        self.quiet = quiet
        self._protocol: _Listening | None = None
        self._watch: asyncio.TimerHandle | None = None
        self._pinged = False

    async def open(self) -> None:
        channels = (self.channel, *self.then)
        said = [*self.where.greeting(), *[("SUBSCRIBE", channel) for channel in channels]]
        try:
            async with asyncio.timeout(self.timeout):
                self._protocol = await _opened(_Listening, self.where, said)
        except (OSError, TimeoutError) as error:
            raise WireError(f"redis pub/sub unreachable at {self.where}: {error!r}") from error
        self._protocol.skip = self.skip
        self._watch = asyncio.get_running_loop().call_later(self.quiet, self._look)

    def _look(self) -> None:
        self._watch = None
        protocol = self._protocol
        if protocol is None or protocol.lost is not None or protocol.transport is None:
            return
        loop = asyncio.get_running_loop()
        if protocol.stirred:  # heard from since the last look: all is well
            protocol.stirred = self._pinged = False
            self._watch = loop.call_later(self.quiet, self._look)
        elif not self._pinged:
            protocol.transport.write(_encode(("PING",)))
            self._pinged = True
            self._watch = loop.call_later(self.timeout, self._look)
        else:
            protocol._fail(WireError(f"redis did not answer a PING in {self.timeout} s"))

    async def next(self) -> bytes:
        protocol = self._protocol
        if protocol is None:
            raise WireError("not subscribed")
        while True:
            if protocol.lost is not None:
                raise protocol.lost
            item = await protocol.heard.get()
            if isinstance(item, Exception):
                raise item
            if item is not None:
                return item

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        protocol, self._protocol = self._protocol, None
        if protocol is not None and protocol.transport is not None:
            protocol.transport.close()
