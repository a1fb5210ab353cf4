"""Rate counters in Redis, shared by every replica. One script counts the hit and opens the
window on a key's first hit, atomically, so no replica's clock decides where windows fall;
a request's keys (its token, its address) are counted in one call of it, on the lean
pipelined connection every request of the process shares (infra/redis/wire.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from infra.redis.wire import ReplyError, Wire

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


class RedisRateCounters:
    def __init__(self, wire: Wire, prefix: str = "bura:") -> None:
        self.wire = wire
        self.prefix = prefix + "rate:"

    @classmethod
    async def open(cls, url: str, prefix: str = "bura:") -> RedisRateCounters:
        return cls(Wire(url), prefix)

    async def hit(self, key: str, window_seconds: float) -> tuple[int, float]:
        return (await self.hit_all([(key, window_seconds)]))[0]

    async def hit_all(self, keys: Sequence[tuple[str, float]]) -> list[tuple[int, float]]:
        if not keys:
            return []
        names = [self.prefix + key for key, _ in keys]
        windows = [max(1, int(window * 1000)) for _, window in keys]
        try:
            found = await self.wire.call("EVALSHA", _SHA, len(names), *names, *windows)
        except ReplyError as error:
            if not str(error).startswith("NOSCRIPT"):
                raise
            # a Redis that has not seen the script yet (new, restarted, flushed)
            found = await self.wire.call("EVAL", _HIT, len(names), *names, *windows)
        return [(int(found[i]), int(found[i + 1]) / 1000) for i in range(0, len(found), 2)]

    async def close(self) -> None:
        await self.wire.close()
