"""Rate counters in Redis, shared by every replica. One script counts the hit and opens the
window on a key's first hit, atomically, so no replica's clock decides where windows fall."""

from __future__ import annotations

from typing import Any

import redis.asyncio as redis

from infra.redis.connection import connect

_HIT = """
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  left = tonumber(ARGV[1])
end
return {hits, left}
"""


class RedisRateCounters:
    def __init__(self, client: redis.Redis, prefix: str = "bura:") -> None:
        self.client = client
        self.prefix = prefix + "rate:"
        self._hit: Any = client.register_script(_HIT)

    @classmethod
    async def open(cls, url: str, prefix: str = "bura:") -> RedisRateCounters:
        return cls(connect(url), prefix)

    async def hit(self, key: str, window_seconds: float) -> tuple[int, float]:
        window_ms = max(1, int(window_seconds * 1000))
        hits, left = await self._hit(keys=[self.prefix + key], args=[window_ms])
        return int(hits), int(left) / 1000

    async def close(self) -> None:
        await self.client.aclose()
