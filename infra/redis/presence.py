"""Presence on Redis, shared by every replica: one hash per game (`<prefix>presence:{game}`,
under BURA_REDIS_PREFIX, `bura:` by default; hash-tagged for Redis Cluster), changed by
small Lua scripts so that a seat's arrival or departure is judged on all its streams at
once, whichever replica holds them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis.asyncio as redis

from infra.ports.presence import (
    LAPSE_MS,
    OpenStream,
    PresenceUnavailable,
    Seen,
    seen,
    since_key,
    stream_key,
)
from infra.redis.connection import bounded, connect

KEEP_SECONDS = 86_400  # a game's presence outlives its last change by a day, then goes
PREFIX = "bura:"  # BURA_REDIS_PREFIX's default
# When this Redis's presence began, set by the first reader to find it missing: Redis
# restarted empty, was flushed or failed over to a copy without it. No TTL, so no
# volatile eviction policy takes it. This is its name under the default prefix.
ORIGIN = f"{PREFIX}presence:origin"

# Whether the seat has a live stream, not counting ARGV[2] itself when `skip` is 1; the
# seat's lapsed entries; and, for the whole game, the tombstones no renewal can race any
# more (a stream that left is kept a lapse as minus when it left).
_ALIVE = """
local function alive(skip)
  local prefix = 's:' .. ARGV[1] .. ':'
  local now, lapse = tonumber(ARGV[4]), tonumber(ARGV[5])
  local entries = redis.call('HGETALL', KEYS[1])
  local found, lapsed, stale = false, {}, {}
  for i = 1, #entries, 2 do
    local key, at = entries[i], tonumber(entries[i + 1])
    if string.sub(key, 1, 2) == 's:' and at < 0 and -at <= now - lapse then
      table.insert(stale, key)
    elseif string.sub(key, 1, #prefix) == prefix and not (skip == 1 and key == ARGV[2]) then
      if at > now - lapse then found = true
      else table.insert(lapsed, key) end
    end
  end
  return found, lapsed, stale
end
"""
# KEYS[1]: the game's hash. ARGV: seat, stream entry, since entry, now, lapse, keep, and
# (renewals) when the stream opened.
_ARRIVE = (
    _ALIVE
    + """
local found, lapsed, stale = alive(0)
if not found then
  redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
  for _, key in ipairs(lapsed) do redis.call('HDEL', KEYS[1], key) end
end
for _, key in ipairs(stale) do redis.call('HDEL', KEYS[1], key) end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[6])
return 1
"""
)
_LEAVE = (
    _ALIVE
    + """
local last = redis.call('HGET', KEYS[1], ARGV[2])
if not last or tonumber(last) < 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[2], '-' .. ARGV[4])
local found, _, stale = alive(1)
if not found then redis.call('HSET', KEYS[1], ARGV[3], ARGV[4]) end
for _, key in ipairs(stale) do redis.call('HDEL', KEYS[1], key) end
redis.call('EXPIRE', KEYS[1], ARGV[6])
return 1
"""
)
# A stream that left stays gone; one whose entry is missing (lost: this replica still
# holds it open) is written again, and the game marked restored.
_RENEW = (
    _ALIVE
    + """
local last = redis.call('HGET', KEYS[1], ARGV[2])
if last and tonumber(last) < 0 then return 0 end
local found = alive(1)
if not last then
  redis.call('HSETNX', KEYS[1], 'restored', ARGV[4])
  if not found then
    if redis.call('HEXISTS', KEYS[1], ARGV[3]) == 0 then
      redis.call('HSET', KEYS[1], ARGV[3], ARGV[7])
    else
      redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
    end
  end
elseif not found and tonumber(last) <= tonumber(ARGV[4]) - tonumber(ARGV[5]) then
  redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[6])
return 1
"""
)


def key(game_id: str, prefix: str = PREFIX) -> str:
    return f"{prefix}presence:{{{game_id}}}"


class RedisPresence:
    """`prefix` (BURA_REDIS_PREFIX) keeps deployments that share a Redis apart; `origin`,
    when given, names the origin key whole (tests), else it is `<prefix>presence:origin`."""

    def __init__(
        self,
        client: redis.Redis,
        lapse: int = LAPSE_MS,
        origin: str | None = None,
        prefix: str = PREFIX,
    ) -> None:
        self.client = client
        self.lapse = lapse
        self.prefix = prefix
        self.origin = origin if origin is not None else f"{prefix}presence:origin"
        self.lasting = True  # its entries outlive any one replica
        self.errors = 0
        self._arrive = client.register_script(_ARRIVE)
        self._leave = client.register_script(_LEAVE)
        self._renew = client.register_script(_RENEW)

    @classmethod
    async def open(
        cls, url: str, lapse: int = LAPSE_MS, origin: str | None = None, prefix: str = PREFIX
    ) -> RedisPresence:
        return cls(connect(url, socket_timeout=5), lapse, origin, prefix)

    def _args(self, seat: int, stream: str, now: int, opened: int | None = None) -> list[Any]:
        return [
            seat,
            stream_key(seat, stream),
            since_key(seat),
            now,
            self.lapse,
            KEEP_SECONDS,
            now if opened is None else opened,
        ]

    async def arrive(self, game_id: str, seat: int, stream: str, now: int) -> None:
        await self._call(
            self._arrive(keys=[key(game_id, self.prefix)], args=self._args(seat, stream, now))
        )

    async def leave(self, game_id: str, seat: int, stream: str, now: int) -> None:
        await self._call(
            self._leave(keys=[key(game_id, self.prefix)], args=self._args(seat, stream, now))
        )

    async def renew(self, streams: Sequence[OpenStream], now: int) -> None:
        if not streams:
            return
        async with self.client.pipeline(transaction=False) as pipe:
            for s in streams:
                await self._renew(
                    keys=[key(s.game_id, self.prefix)],
                    args=self._args(s.seat, s.stream, now, s.since),
                    client=pipe,
                )
            await self._call(pipe.execute())

    async def seats(self, game_id: str, count: int, now: int) -> list[Seen]:
        """Read with the origin: a Redis that lost everything (restarted empty, flushed)
        lost it too, and a lapse must pass after it is found missing before a seat with
        nothing recorded is known away (every open stream is renewed by then)."""
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.hgetall(key(game_id, self.prefix))
            pipe.set(self.origin, now, nx=True)
            pipe.get(self.origin)
            raw, _, origin = await self._call(pipe.execute())
        entries = {k.decode(): int(v) for k, v in raw.items()}
        settled = int(origin) + self.lapse
        return seen(entries, count, now, self.lapse, settled if now < settled else None)

    async def _call(self, pending: Any) -> Any:
        """One bounded call (infra/redis/connection.py), each failure counted."""
        try:
            return await bounded(pending, PresenceUnavailable)
        except PresenceUnavailable:
            self.errors += 1
            raise

    async def ping(self) -> None:
        await self._call(self.client.ping())

    async def close(self) -> None:
        await self.client.aclose()
