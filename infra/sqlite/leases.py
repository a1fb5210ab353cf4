"""Leases in the embedded SQLite file. Every process on the file shares one machine's clock,
which judges expiry (times are seconds since 1970, UTC)."""

from __future__ import annotations

import sqlite3
import time
from datetime import UTC, datetime

from infra.ports.leases import Lease
from infra.sqlite.database import SqliteDatabase


def moment(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


class SqliteLeases:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    async def hold(self, name: str, holder: str, seconds: float) -> bool:
        def hold(db: sqlite3.Connection) -> bool:
            now = time.time()
            row = db.execute(
                "SELECT holder, expires_at FROM leases WHERE name = ?", (name,)
            ).fetchone()
            if row is not None and row[0] != holder and row[1] > now:
                return False
            acquired = now if row is None or row[0] != holder else None
            db.execute(
                "INSERT INTO leases (name, holder, expires_at, acquired_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
                " expires_at = excluded.expires_at,"
                " acquired_at = coalesce(?, acquired_at)",
                (name, holder, now + seconds, acquired or now, acquired),
            )
            return True

        return await self.db.write(hold)

    async def release(self, name: str, holder: str) -> None:
        await self.db.write(
            lambda db: db.execute(
                "DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder)
            )
        )

    async def lease(self, name: str) -> Lease | None:
        row = await self.db.run(
            lambda db: db.execute(
                "SELECT name, holder, expires_at FROM leases WHERE name = ?", (name,)
            ).fetchone()
        )
        return None if row is None else Lease(row[0], row[1], moment(row[2]))
