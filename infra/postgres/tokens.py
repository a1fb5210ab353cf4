"""Seat token hashes on PostgreSQL, on the event store's pool."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from infra.postgres.connections import acquired, budget


class PostgresSeatTokens:
    """Bounded like the event store: by the request's deadline, else command_timeout."""

    def __init__(self, pool: asyncpg.Pool, command_timeout: float = 10.0) -> None:
        self.pool = pool
        self.command_timeout = command_timeout

    async def save(self, stream_id: str, token_hashes: Sequence[bytes]) -> None:
        async with acquired(self.pool, self.command_timeout) as conn, conn.transaction():
            await conn.execute(
                "DELETE FROM seat_tokens WHERE stream_id = $1",
                stream_id,
                timeout=budget(self.command_timeout),
            )
            await conn.execute(
                "INSERT INTO seat_tokens (stream_id, seat, token_hash)"
                " SELECT $1, t.ord - 1, t.hash"
                " FROM unnest($2::bytea[]) WITH ORDINALITY AS t(hash, ord)",
                stream_id,
                list(token_hashes),
                timeout=budget(self.command_timeout),
            )

    async def hashes(self, stream_id: str) -> list[bytes]:
        async with acquired(self.pool, self.command_timeout) as conn:
            rows = await conn.fetch(
                "SELECT token_hash FROM seat_tokens WHERE stream_id = $1 ORDER BY seat",
                stream_id,
                timeout=budget(self.command_timeout),
            )
        return [r[0] for r in rows]
