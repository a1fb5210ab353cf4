"""Seat token hashes in the embedded SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from infra.sqlite.database import SqliteDatabase


class SqliteSeatTokens:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    async def save(self, stream_id: str, token_hashes: Sequence[bytes]) -> None:
        rows = [(stream_id, seat, bytes(h)) for seat, h in enumerate(token_hashes)]

        def save(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM seat_tokens WHERE stream_id = ?", (stream_id,))
            db.executemany("INSERT INTO seat_tokens VALUES (?, ?, ?)", rows)

        await self.db.write(save)

    async def hashes(self, stream_id: str) -> list[bytes]:
        rows = await self.db.run(
            lambda db: db.execute(
                "SELECT token_hash FROM seat_tokens WHERE stream_id = ? ORDER BY seat",
                (stream_id,),
            ).fetchall()
        )
        return [bytes(r[0]) for r in rows]
