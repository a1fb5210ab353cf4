"""Snapshots on the embedded SQLite file (schema step 5 of infra/sqlite/database.py)."""

from __future__ import annotations

import sqlite3

from infra.ports.snapshots import Snapshot
from infra.sqlite.database import SqliteDatabase

# An older snapshot never replaces a newer one (as on PostgreSQL).
_SAVE = (
    "INSERT INTO snapshots (stream_id, schema, version, state, head) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (stream_id, schema) DO UPDATE"
    " SET version = excluded.version, state = excluded.state, head = excluded.head"
    " WHERE snapshots.version < excluded.version"
)
_LOAD = "SELECT version, state, head FROM snapshots WHERE stream_id = ? AND schema = ?"


class SqliteSnapshots:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    async def save(self, snapshot: Snapshot) -> None:
        s = snapshot

        def save(db: sqlite3.Connection) -> None:
            db.execute(_SAVE, (s.stream_id, s.schema, s.version, s.state, s.head))

        await self.db.write(save)

    async def load(self, stream_id: str, schema: str) -> Snapshot | None:
        def load(db: sqlite3.Connection) -> tuple[int, bytes, bytes] | None:
            row = db.execute(_LOAD, (stream_id, schema)).fetchone()
            return None if row is None else (row[0], bytes(row[1]), bytes(row[2]))

        found = await self.db.run(load)
        if found is None:
            return None
        return Snapshot(stream_id, found[0], schema, found[1], found[2])
