"""Rate counters in Redis, shared by every replica. One script counts the hits and opens
the window on a key's first hit, atomically, so no replica's clock decides where windows
fall. The keys of every request of one turn of the event loop (each request's token and
address) are counted in one call of it, on the lean pipelined connection every request
of the process shares (infra/redis/wire.py): under load one script call, one reply and
one wake-up serve many requests.

Hits are numbered in blocks. A hit that names its key's quota lets the script claim,
while the quota is far off, a few numbers beyond the ones asked for: a sixteenth of what
the quota leaves after them, at most 64. The spare numbers stay in this process, lowest
handed out first, until its window closes, and the next hits of that key take them
without asking Redis. So a busy key (a platform's address, a seat playing fast) goes to
Redis about once in 64 hits, not once a hit, and what stays is exact where it matters:

- numbers are unique across replicas (each claimed once, by INCRBY), so no more than the
  quota is ever served in a window;
- with one replica every number claimed is its own, handed out in order: the counts, the
  RateLimit fields and the refusals are what one hit at a time would give;
- with several, a hit can be refused while another replica still holds spare numbers of
  that window (at most its last claims' spares: a sixteenth of what was left each), so a
  client spreading its requests over replicas may be refused those few requests early,
  never late. Near the quota (under 16 left) nothing is spare and every hit is counted in
  Redis as it comes.

A hit without a quota (0) is counted in Redis as it comes."""

from __future__ import annotations

import asyncio
import bisect
import hashlib
from collections.abc import Sequence
from typing import Any

from infra.ports.limits import Hit
from infra.redis.wire import ReplyError, Wire, WireError

SHARE = 16  # a claim's spare is at most this fraction of what the quota leaves after it
MOST = 64  # and at most this many numbers
SWEEP_EVERY = 1024  # claims between sweeps of the spares of closed windows

# One script for any number of keys: KEYS[i] counted in a window of ARGV[3i-2] ms, for
# ARGV[3i-1] hits, held to a quota of ARGV[3i] (0: none given, nothing spare). Each key
# answers the last number claimed, how many were claimed, and the window's ms left.
_HIT = f"""
local out = {{}}
for i, key in ipairs(KEYS) do
  local window = tonumber(ARGV[3 * i - 2])
  local need = tonumber(ARGV[3 * i - 1])
  local quota = tonumber(ARGV[3 * i])
  local claim = need
  if quota > 0 then
    local spare = quota - tonumber(redis.call('GET', key) or '0') - need
    if spare >= {SHARE} then claim = need + math.min({MOST}, math.floor(spare / {SHARE})) end
  end
  local hits = redis.call('INCRBY', key, claim)
  if hits == claim then redis.call('PEXPIRE', key, window) end
  local left = redis.call('PTTL', key)
  if left < 0 then
    redis.call('PEXPIRE', key, window)
    left = window
  end
  out[#out + 1] = hits
  out[#out + 1] = claim
  out[#out + 1] = left
end
return out
"""


_SHA = hashlib.sha1(_HIT.encode()).hexdigest()

Found = tuple[int, float]  # a hit's number, and the seconds its window has left


class _Spare:
    """One key's numbers claimed by this process and not yet handed out: ranges [first,
    last] with when their window closes (the loop's clock), lowest first."""

    __slots__ = ("ranges",)

    def __init__(self) -> None:
        self.ranges: list[list[Any]] = []  # [first, last, closes]

    def add(self, first: int, last: int, closes: float) -> None:
        bisect.insort(self.ranges, [first, last, closes])

    def take(self, at: float) -> tuple[int, float] | None:
        """The lowest number whose window is open at `at`, and when that window closes."""
        ranges = self.ranges
        while ranges:
            spare = ranges[0]
            first, last, closes = spare
            if closes <= at:
                del ranges[0]
                continue
            if first == last:
                del ranges[0]
            else:
                spare[0] = first + 1
            return first, closes
        return None

    def open_at(self, at: float) -> bool:
        return any(closes > at for _, _, closes in self.ranges)


class _Turn:
    """The hits of one turn of the loop, by key, and who waits for which numbers."""

    __slots__ = ("keys", "names", "needs", "quotas", "slots", "waiting", "windows")

    def __init__(self) -> None:
        self.slots: dict[str, int] = {}  # a key's place in the call
        self.keys: list[str] = []
        self.names: list[str] = []  # the keys as Redis names them
        self.windows: list[int] = []
        self.needs: list[int] = []
        self.quotas: list[int] = []
        # each caller's waiter, and the place of each key it waits for (in its order)
        self.waiting: list[tuple[asyncio.Future[list[Found]], list[int]]] = []

    def ask(self, prefix: str, hits: list[tuple[str, float, int]]) -> asyncio.Future[list[Found]]:
        wanted: list[int] = []
        for key, window, quota in hits:
            slot = self.slots.get(key)
            if slot is None:
                slot = self.slots[key] = len(self.keys)
                self.keys.append(key)
                self.names.append(prefix + key)
                self.windows.append(max(1, int(window * 1000)))
                self.needs.append(0)
                self.quotas.append(quota)
            self.needs[slot] += 1
            wanted.append(slot)
        waiter: asyncio.Future[list[Found]] = asyncio.get_running_loop().create_future()
        self.waiting.append((waiter, wanted))
        return waiter

    def args(self) -> list[str | int]:
        args: list[str | int] = [*self.names]
        for window, need, quota in zip(self.windows, self.needs, self.quotas, strict=True):
            args += (window, need, quota)
        return args

    def tell(self, found: list[Any], spares: dict[str, _Spare], sent: float) -> None:
        """Each waiter's numbers from the script's answer (`sent`: when it was asked): a
        key held to a quota hands out the lowest numbers this process holds, the
        others their claim's in turn."""
        now = asyncio.get_running_loop().time()
        fresh: list[list[Any]] = []  # of the keys with no quota: [next, closes]
        for slot, key in enumerate(self.keys):
            last, claimed, left = (int(n) for n in found[3 * slot : 3 * slot + 3])
            closes = sent + max(left, 1) / 1000
            fresh.append([last - claimed + 1, closes])
            if self.quotas[slot] > 0:
                spares.setdefault(key, _Spare()).add(last - claimed + 1, last, closes)
        for waiter, wanted in self.waiting:
            numbered: list[Found] = []
            for slot in wanted:
                if self.quotas[slot] > 0:
                    if waiter.done():  # gone: its numbers stay for the next hits
                        continue
                    taken = spares[self.keys[slot]].take(sent)
                    # never None: this call's own claim is open at `sent`
                    number, closes = taken if taken is not None else (0, now)
                else:
                    number, closes = fresh[slot]
                    fresh[slot][0] = number + 1
                numbered.append((number, max(closes - now, 0.001)))
            if not waiter.done():
                waiter.set_result(numbered)

    def fail(self, error: BaseException) -> None:
        for waiter, _ in self.waiting:
            if not waiter.done():
                waiter.set_exception(error)


class RedisRateCounters:
    def __init__(self, wire: Wire, prefix: str = "bura:", owns_wire: bool = True) -> None:
        self.wire = wire
        self._owns_wire = owns_wire  # else the wire is shared, and its owner closes it
        self.prefix = prefix + "rate:"
        self._turn: _Turn | None = None
        self._calls: set[asyncio.Task[None]] = set()
        self._spares: dict[str, _Spare] = {}
        self._claims = 0
        self.calls = 0  # script calls made (tests)

    @classmethod
    async def open(cls, url: str, prefix: str = "bura:") -> RedisRateCounters:
        return cls(Wire(url), prefix)

    async def hit(self, key: str, window_seconds: float, quota: int = 0) -> Found:
        return (await self.hit_all([Hit(key, window_seconds, quota)]))[0]

    async def hit_all(self, keys: Sequence[Hit | tuple[str, float]]) -> list[Found]:
        if not keys:
            return []
        loop = asyncio.get_running_loop()
        now = loop.time()
        found: list[Found] = []
        asked: list[tuple[str, float, int]] = []
        places: list[int] = []
        spares = self._spares
        for place, hit in enumerate(keys):
            # only a key held to a quota has spare numbers
            spare = spares.get(hit[0])
            taken = spare.take(now) if spare is not None else None
            if taken is None:
                found.append((0, 0.0))
                asked.append((hit[0], hit[1], hit[2] if len(hit) > 2 else 0))
                places.append(place)
            else:
                found.append((taken[0], taken[1] - now))
        if not asked:
            return found
        turn = self._turn
        if turn is None:
            turn = self._turn = _Turn()
            loop.call_soon(self._end_turn)
        for place, numbered in zip(places, await turn.ask(self.prefix, asked), strict=True):
            found[place] = numbered
        return found

    def _end_turn(self) -> None:
        turn, self._turn = self._turn, None
        if turn is None:
            return
        self.calls += 1
        self._sweep()
        sent = asyncio.get_running_loop().time()
        replied = self.wire.request("EVALSHA", _SHA, len(turn.names), *turn.args())
        if replied is None:  # not connected: a task waits for the connection
            self._task(turn, sent)
        else:
            replied.add_done_callback(lambda done: self._replied(turn, sent, done))

    def _replied(self, turn: _Turn, sent: float, done: asyncio.Future[Any]) -> None:
        error = done.exception()
        if error is None:
            turn.tell(done.result(), self._spares, sent)
        elif isinstance(error, ReplyError) and str(error).startswith("NOSCRIPT"):
            self._task(turn, sent)
        else:
            turn.fail(error)

    def _task(self, turn: _Turn, sent: float) -> None:
        task = asyncio.get_running_loop().create_task(self._count(turn, sent))
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)

    async def _count(self, turn: _Turn, sent: float) -> None:
        """The turn counted by a task, which may wait for a connection, and loads the
        script into a Redis that has not seen it (new, restarted, flushed)."""
        args = turn.args()
        try:
            try:
                found = await self.wire.call("EVALSHA", _SHA, len(turn.names), *args)
            except ReplyError as error:
                if not str(error).startswith("NOSCRIPT"):
                    raise
                found = await self.wire.call("EVAL", _HIT, len(turn.names), *args)
        except BaseException as error:
            turn.fail(error if isinstance(error, Exception) else WireError("closed"))
            if not isinstance(error, Exception):
                raise
            return
        turn.tell(found, self._spares, sent)

    def _sweep(self) -> None:
        """Now and then, the spares of windows that have closed are forgotten."""
        self._claims += 1
        if self._claims % SWEEP_EVERY == 0:
            now = asyncio.get_running_loop().time()
            self._spares = {k: s for k, s in self._spares.items() if s.open_at(now)}

    async def close(self) -> None:
        for task in list(self._calls):
            task.cancel()
        if self._owns_wire:
            await self.wire.close()
