"""Snapshots on PostgreSQL (table `snapshots`, migration 009), on the event store's pool."""

from __future__ import annotations

from infra.ports.snapshots import Snapshot
from infra.postgres.connections import Bounded

# An older snapshot never replaces a newer one: two replicas may save the same game.
_SAVE = (
    "INSERT INTO snapshots (stream_id, schema, version, state, head)"
    " VALUES ($1, $2, $3, $4, $5)"
    " ON CONFLICT (stream_id, schema) DO UPDATE"
    " SET version = excluded.version, state = excluded.state, head = excluded.head"
    " WHERE snapshots.version < excluded.version"
)
_LOAD = "SELECT version, state, head FROM snapshots WHERE stream_id = $1 AND schema = $2"


class PostgresSnapshots(Bounded):
    async def save(self, snapshot: Snapshot) -> None:
        s = snapshot
        async with self.connection() as conn:
            await conn.execute(
                _SAVE,
                s.stream_id,
                s.schema,
                s.version,
                s.state,
                s.head,
                timeout=self.left(),
            )

    async def load(self, stream_id: str, schema: str) -> Snapshot | None:
        async with self.connection() as conn:
            row = await conn.fetchrow(_LOAD, stream_id, schema, timeout=self.left())
        if row is None:
            return None
        return Snapshot(stream_id, row[0], schema, bytes(row[1]), bytes(row[2]))
