"""Rate counters in Redis, shared by every replica. One script counts the hit and opens the
window on a key's first hit, atomically, so no replica's clock decides where windows fall.
The keys of every request of one turn of the event loop (each request's token and
address) are counted in one call of it, on the lean pipelined connection every request
of the process shares (infra/redis/wire.py): under load one script call, one reply and
one wake-up serve many requests, and each hit is still counted in Redis before its
request is judged."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from typing import Any

from infra.redis.wire import ReplyError, Wire, WireError

# One script for any number of keys: KEYS[i] counted in a window of ARGV[i] ms.
_HIT = """
local out = {}
for i, key in ipairs(KEYS) do
  local window = tonumber(ARGV[i])
  local hits = redis.call('INCR', key)
  if hits == 1 then redis.call('PEXPIRE', key, window) end
  local left = redis.call('PTTL', key)
  if left < 0 then
    redis.call('PEXPIRE', key, window)
    left = window
  end
  out[#out + 1] = hits
  out[#out + 1] = left
end
return out
"""


_SHA = hashlib.sha1(_HIT.encode()).hexdigest()


class _Turn:
    """The keys counted in one turn of the loop, and who waits for which of the replies."""

    __slots__ = ("names", "waiting", "windows")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.windows: list[int] = []
        # each caller's waiter, with where its keys begin among the names and how many
        self.waiting: list[tuple[asyncio.Future[list[tuple[int, float]]], int, int]] = []

    def tell(self, found: list[Any]) -> None:
        for waiter, first, count in self.waiting:
            if not waiter.done():
                waiter.set_result(
                    [
                        (int(found[i]), int(found[i + 1]) / 1000)
                        for i in range(2 * first, 2 * (first + count), 2)
                    ]
                )

    def fail(self, error: BaseException) -> None:
        for waiter, _, _ in self.waiting:
            if not waiter.done():
                waiter.set_exception(error)


class RedisRateCounters:
    def __init__(self, wire: Wire, prefix: str = "bura:", owns_wire: bool = True) -> None:
        self.wire = wire
        self._owns_wire = owns_wire  # else the wire is shared, and its owner closes it
        self.prefix = prefix + "rate:"
        self._turn: _Turn | None = None
        self._calls: set[asyncio.Task[None]] = set()
        self.calls = 0  # script calls made (tests)

    @classmethod
    async def open(cls, url: str, prefix: str = "bura:") -> RedisRateCounters:
        return cls(Wire(url), prefix)

    async def hit(self, key: str, window_seconds: float) -> tuple[int, float]:
        return (await self.hit_all([(key, window_seconds)]))[0]

    async def hit_all(self, keys: Sequence[tuple[str, float]]) -> list[tuple[int, float]]:
        if not keys:
            return []
        loop = asyncio.get_running_loop()
        turn = self._turn
        if turn is None:
            turn = self._turn = _Turn()
            loop.call_soon(self._end_turn)
        waiter: asyncio.Future[list[tuple[int, float]]] = loop.create_future()
        turn.waiting.append((waiter, len(turn.names), len(keys)))
        turn.names.extend(self.prefix + key for key, _ in keys)
        turn.windows.extend(max(1, int(window * 1000)) for _, window in keys)
        return await waiter

    def _end_turn(self) -> None:
        turn, self._turn = self._turn, None
        if turn is None:
            return
        self.calls += 1
        names, windows = turn.names, turn.windows
        replied = self.wire.request("EVALSHA", _SHA, len(names), *names, *windows)
        if replied is None:  # not connected: a task waits for the connection
            task = asyncio.get_running_loop().create_task(self._count(turn))
            self._calls.add(task)
            task.add_done_callback(self._calls.discard)
        else:
            replied.add_done_callback(lambda done: self._replied(turn, done))

    def _replied(self, turn: _Turn, done: asyncio.Future[Any]) -> None:
        error = done.exception()
        if error is None:
            turn.tell(done.result())
        elif isinstance(error, ReplyError) and str(error).startswith("NOSCRIPT"):
            task = asyncio.get_running_loop().create_task(self._count(turn))
            self._calls.add(task)
            task.add_done_callback(self._calls.discard)
        else:
            turn.fail(error)

    async def _count(self, turn: _Turn) -> None:
        """The turn counted by a task, which may wait for a connection, and loads the
        script into a Redis that has not seen it (new, restarted, flushed)."""
        names, windows = turn.names, turn.windows
        try:
            try:
                found = await self.wire.call("EVALSHA", _SHA, len(names), *names, *windows)
            except ReplyError as error:
                if not str(error).startswith("NOSCRIPT"):
                    raise
                found = await self.wire.call("EVAL", _HIT, len(names), *names, *windows)
        except BaseException as error:
            turn.fail(error if isinstance(error, Exception) else WireError("closed"))
            if not isinstance(error, Exception):
                raise
            return
        turn.tell(found)

    async def close(self) -> None:
        for task in list(self._calls):
            task.cancel()
        if self._owns_wire:
            await self.wire.close()
