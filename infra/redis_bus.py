"""Redis pub/sub for hints, and a versioned view cache. Pub/sub delivers at most once, so
after any reconnect the bus says so (a None hint) and readers catch up from the store."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import msgspec
import redis.asyncio as redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from infra.records import Hint

log = logging.getLogger("bura.redis")

CHANNEL = "bura:hints"
_encode = msgspec.json.Encoder().encode
_decode_hint = msgspec.json.Decoder(Hint).decode
_DOWN = (RedisConnectionError, RedisTimeoutError, OSError)

# Set a cached view only if it is newer than the one stored: replicas race to write.
_PUT_NEWER = """
local old = redis.call('HGET', KEYS[1], 'version')
if old and tonumber(old) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'view', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""


class RedisBus:
    def __init__(self, client: redis.Redis, url: str) -> None:
        self.client = client
        self.url = url
        self.errors = 0  # read by the metrics endpoint
        self._closed = asyncio.Event()
        self._put = client.register_script(_PUT_NEWER)

    @classmethod
    async def open(cls, url: str) -> RedisBus:
        client = redis.Redis.from_url(
            url, socket_connect_timeout=2, socket_timeout=5, health_check_interval=10
        )
        return cls(client, url)

    async def publish(self, hint: Hint) -> None:
        try:
            await self.client.publish(CHANNEL, _encode(hint))
        except RedisError:
            self.errors += 1
            raise

    async def hints(self) -> AsyncIterator[Hint | None]:
        delay = 0.05
        while not self._closed.is_set():
            pubsub = self.client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(CHANNEL)
                # Subscribed (again): whatever was published meanwhile was lost to us.
                yield None
                delay = 0.05
                while not self._closed.is_set():
                    message = await pubsub.get_message(timeout=1.0)
                    if message is not None and message["type"] == "message":
                        try:
                            yield _decode_hint(message["data"])
                        except msgspec.DecodeError:
                            log.warning("ignored a malformed hint on %s", CHANNEL)
            except _DOWN as error:
                self.errors += 1
                log.warning("redis pub/sub lost (%s); reconnecting", error)
                yield None
            finally:
                with contextlib.suppress(_DOWN):
                    await pubsub.aclose()
            if not self._closed.is_set():
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    async def put_view(self, game_id: str, viewer: str, version: int, view: bytes,
                       ttl_seconds: int = 86_400) -> bool:
        """Cache a viewer's view unless a newer one is there; False when Redis is down."""
        try:
            done = await self._put(keys=[f"bura:view:{game_id}:{viewer}"],
                                   args=[version, view, ttl_seconds])
            return bool(done)
        except RedisError:
            self.errors += 1
            return False

    async def get_view(self, game_id: str, viewer: str) -> tuple[int, bytes] | None:
        found = await self.client.hmget(f"bura:view:{game_id}:{viewer}", ["version", "view"])
        if found[0] is None or found[1] is None:
            return None
        return int(found[0]), bytes(found[1])

    async def ping(self) -> None:
        await self.client.ping()

    async def close(self) -> None:
        self._closed.set()
        await self.client.aclose()
