"""Stream tickets in Redis, so a ticket issued by one replica opens a stream on any other,
once: GETDEL reads and removes in one atomic step, and the key expires by itself."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import redis.asyncio as redis

from infra.ports.tickets import TicketsUnavailable
from infra.redis.connection import bounded, connect


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
    """One bounded call (infra/redis/connection.py): a Redis that stops answering costs a
    ticket CALL_SECONDS, then 503 tickets_unavailable."""
    return await bounded(pending, TicketsUnavailable)
