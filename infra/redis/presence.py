"""Presence on Redis, shared by every replica: one hash per game (`bura:presence:{game}`,
hash-tagged for Redis Cluster), changed by small Lua scripts so that a seat's arrival or
departure is judged on all its streams at once, whichever replica holds them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import RedisError

from infra.ports.presence import (
    LAPSE_MS,
    OpenStream,
    PresenceUnavailable,
    Seen,
    seen,
    since_key,
    stream_key,
)

KEEP_SECONDS = 86_400  # a game's presence outlives its last change by a day, then goes

# Whether the seat has a live stream, not counting ARGV[2] itself when `skip` is 1.
_ALIVE = """
local function alive(skip)
  local prefix = 's:' .. ARGV[1] .. ':'
  local now, lapse = tonumber(ARGV[4]), tonumber(ARGV[5])
  local entries = redis.call('HGETALL', KEYS[1])
  local found, lapsed = false, {}
  for i = 1, #entries, 2 do
    local key = entries[i]
    if string.sub(key, 1, #prefix) == prefix and not (skip == 1 and key == ARGV[2]) then
      if tonumber(entries[i + 1]) > now - lapse then found = true
      else table.insert(lapsed, key) end
    end
  end
  return found, lapsed
end
"""
# KEYS[1]: the game's hash. ARGV: seat, stream entry, since entry, now, lapse, keep.
_ARRIVE = (
    _ALIVE
    + """
local found, lapsed = alive(0)
if not found then
  redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
  for _, key in ipairs(lapsed) do redis.call('HDEL', KEYS[1], key) end
end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[6])
return 1
"""
)
_LEAVE = (
    _ALIVE
    + """
if redis.call('HDEL', KEYS[1], ARGV[2]) == 0 then return 0 end
if not alive(0) then redis.call('HSET', KEYS[1], ARGV[3], ARGV[4]) end
redis.call('EXPIRE', KEYS[1], ARGV[6])
return 1
"""
)
_RENEW = (
    _ALIVE
    + """
local last = redis.call('HGET', KEYS[1], ARGV[2])
if not last then return 0 end
local found = alive(1)
if not found and tonumber(last) <= tonumber(ARGV[4]) - tonumber(ARGV[5]) then
  redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[6])
return 1
"""
)


def key(game_id: str) -> str:
    return f"bura:presence:{{{game_id}}}"


class RedisPresence:
    def __init__(self, client: redis.Redis, lapse: int = LAPSE_MS) -> None:
        self.client = client
        self.lapse = lapse
        self.errors = 0
        self._arrive = client.register_script(_ARRIVE)
        self._leave = client.register_script(_LEAVE)
        self._renew = client.register_script(_RENEW)

    @classmethod
    async def open(cls, url: str, lapse: int = LAPSE_MS) -> RedisPresence:
        client = redis.Redis.from_url(
            url,
            retry=Retry(ExponentialBackoff(cap=0.2, base=0.02), 2),
            socket_connect_timeout=2,
            socket_timeout=5,
            health_check_interval=10,
        )
        return cls(client, lapse)

    def _args(self, seat: int, stream: str, now: int) -> list[Any]:
        return [seat, stream_key(seat, stream), since_key(seat), now, self.lapse, KEEP_SECONDS]

    async def arrive(self, game_id: str, seat: int, stream: str, now: int) -> None:
        await self._call(self._arrive(keys=[key(game_id)], args=self._args(seat, stream, now)))

    async def leave(self, game_id: str, seat: int, stream: str, now: int) -> None:
        await self._call(self._leave(keys=[key(game_id)], args=self._args(seat, stream, now)))

    async def renew(self, streams: Sequence[OpenStream], now: int) -> None:
        if not streams:
            return
        async with self.client.pipeline(transaction=False) as pipe:
            for s in streams:
                await self._renew(
                    keys=[key(s.game_id)], args=self._args(s.seat, s.stream, now), client=pipe
                )
            await self._call(pipe.execute())

    async def seats(self, game_id: str, count: int, now: int) -> list[Seen]:
        raw = await self._call(self.client.hgetall(key(game_id)))
        entries = {k.decode(): int(v) for k, v in raw.items()}
        return seen(entries, count, now, self.lapse)

    async def _call(self, pending: Any) -> Any:
        try:
            return await pending
        except (RedisError, OSError) as error:
            self.errors += 1
            raise PresenceUnavailable(f"redis: {error}") from error

    async def ping(self) -> None:
        await self._call(self.client.ping())

    async def close(self) -> None:
        await self.client.aclose()
