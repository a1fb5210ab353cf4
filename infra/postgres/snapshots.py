"""Snapshots on PostgreSQL (table `snapshots`, migration 009), on the event store's pool."""

from __future__ import annotations

import asyncpg

from infra.ports.snapshots import Snapshot
from infra.postgres.connections import acquired, budget

# An older snapshot never replaces a newer one: two replicas may save the same game.
_SAVE = (
    "INSERT INTO snapshots (stream_id, schema, version, state, head)"
    " VALUES ($1, $2, $3, $4, $5)"
    " ON CONFLICT (stream_id, schema) DO UPDATE"
    " SET version = excluded.version, state = excluded.state, head = excluded.head"
    " WHERE snapshots.version < excluded.version"
)
_LOAD = "SELECT version, state, head FROM snapshots WHERE stream_id = $1 AND schema = $2"


class PostgresSnapshots:
    def __init__(self, pool: asyncpg.Pool, command_timeout: float = 10.0) -> None:
        self.pool = pool
        self.command_timeout = command_timeout

    async def save(self, snapshot: Snapshot) -> None:
        s = snapshot
        async with acquired(self.pool, self.command_timeout) as conn:
            await conn.execute(
                _SAVE,
                s.stream_id,
                s.schema,
                s.version,
                s.state,
                s.head,
                timeout=budget(self.command_timeout),
            )

    async def load(self, stream_id: str, schema: str) -> Snapshot | None:
        async with acquired(self.pool, self.command_timeout) as conn:
            row = await conn.fetchrow(
                _LOAD, stream_id, schema, timeout=budget(self.command_timeout)
            )
        if row is None:
            return None
        return Snapshot(stream_id, row[0], schema, bytes(row[1]), bytes(row[2]))
