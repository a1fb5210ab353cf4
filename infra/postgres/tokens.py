"""Seat token hashes on PostgreSQL, on the event store's pool."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from infra.postgres.store import reachable


class PostgresSeatTokens:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def save(self, stream_id: str, token_hashes: Sequence[bytes]) -> None:
        with reachable():
            async with self.pool.acquire() as conn, conn.transaction():
                await conn.execute("DELETE FROM seat_tokens WHERE stream_id = $1", stream_id)
                await conn.execute(
                    "INSERT INTO seat_tokens (stream_id, seat, token_hash)"
                    " SELECT $1, t.ord - 1, t.hash"
                    " FROM unnest($2::bytea[]) WITH ORDINALITY AS t(hash, ord)",
                    stream_id,
                    list(token_hashes),
                )

    async def hashes(self, stream_id: str) -> list[bytes]:
        with reachable():
            rows = await self.pool.fetch(
                "SELECT token_hash FROM seat_tokens WHERE stream_id = $1 ORDER BY seat",
                stream_id,
            )
        return [r[0] for r in rows]
