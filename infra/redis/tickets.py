"""Stream tickets in Redis, so a ticket issued by one replica opens a stream on any other,
once: GETDEL reads and removes in one atomic step, and the key expires by itself."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import redis.asyncio as redis
from redis.exceptions import RedisError

from infra.ports.tickets import TicketsUnavailable
from infra.redis.connection import CALL_SECONDS, connect


class RedisStreamTickets:
    def __init__(self, client: redis.Redis, prefix: str = "bura:") -> None:
        self.client = client
        self.prefix = prefix + "ticket:"

    @classmethod
    async def open(cls, url: str, prefix: str = "bura:") -> RedisStreamTickets:
        return cls(connect(url), prefix)

    async def issue(self, ticket_id: str, grant: bytes, ttl_seconds: float) -> None:
        ttl = max(1, int(ttl_seconds * 1000))
        await _call(self.client.set(self.prefix + ticket_id, grant, px=ttl))

    async def redeem(self, ticket_id: str) -> bytes | None:
        found: Any = await _call(self.client.getdel(self.prefix + ticket_id))
        return bytes(found) if found is not None else None

    async def close(self) -> None:
        await self.client.aclose()


async def _call(pending: Awaitable[Any]) -> Any:
    """One call, its retries included, within CALL_SECONDS (a Redis that stops answering
    costs a ticket that long, then 503 tickets_unavailable)."""
    try:
        async with asyncio.timeout(CALL_SECONDS):
            return await pending
    except TimeoutError as error:
        raise TicketsUnavailable(f"redis did not answer in {CALL_SECONDS:g} s") from error
    except (RedisError, OSError) as error:
        raise TicketsUnavailable(f"redis: {error}") from error
