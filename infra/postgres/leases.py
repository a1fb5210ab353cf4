"""Leases on PostgreSQL, on the event store's pool. The database's clock judges expiry."""

from __future__ import annotations

import asyncpg

from infra.ports.leases import Lease
from infra.postgres.store import reachable

# Taken when free or expired, renewed by its holder: one statement, so two replicas that
# try at once are ordered by the row lock and only one gets a row back.
_HOLD = """
INSERT INTO leases AS l (name, holder, expires_at)
VALUES ($1, $2, now() + make_interval(secs => $3))
ON CONFLICT (name) DO UPDATE
   SET holder = excluded.holder,
       expires_at = excluded.expires_at,
       acquired_at = CASE WHEN l.holder = excluded.holder THEN l.acquired_at ELSE now() END
 WHERE l.holder = excluded.holder OR l.expires_at <= now()
RETURNING holder
"""


class PostgresLeases:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def hold(self, name: str, holder: str, seconds: float) -> bool:
        with reachable():
            taken: str | None = await self.pool.fetchval(_HOLD, name, holder, float(seconds))
        return taken == holder

    async def release(self, name: str, holder: str) -> None:
        with reachable():
            await self.pool.execute(
                "DELETE FROM leases WHERE name = $1 AND holder = $2", name, holder
            )

    async def lease(self, name: str) -> Lease | None:
        with reachable():
            row = await self.pool.fetchrow(
                "SELECT name, holder, expires_at FROM leases WHERE name = $1", name
            )
        return None if row is None else Lease(row[0], row[1], row[2])
