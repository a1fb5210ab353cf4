"""Leases on PostgreSQL, on the event store's pool. The database's clock judges expiry."""

from __future__ import annotations

from infra.ports.leases import Lease
from infra.postgres.connections import Bounded, acquired, budget

# Letting a lease go at shutdown waits this long at most: on a stalled database the lease
# runs out by itself, and the shutdown has its own grace to keep.
RELEASE_SECONDS = 2.0

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


class PostgresLeases(Bounded):
    """Bounded like the event store (a connection cut off mid-statement is closed, never
    waited on to be given back): by command_timeout, a release by RELEASE_SECONDS."""

    async def hold(self, name: str, holder: str, seconds: float) -> bool:
        async with self.connection() as conn:
            taken: str | None = await conn.fetchval(
                _HOLD, name, holder, float(seconds), timeout=self.left()
            )
        return taken == holder

    async def release(self, name: str, holder: str) -> None:
        async with acquired(self.pool, RELEASE_SECONDS) as conn:
            await conn.execute(
                "DELETE FROM leases WHERE name = $1 AND holder = $2",
                name,
                holder,
                timeout=budget(RELEASE_SECONDS),
            )

    async def lease(self, name: str) -> Lease | None:
        async with self.connection() as conn:
            row = await conn.fetchrow(
                "SELECT name, holder, expires_at FROM leases WHERE name = $1",
                name,
                timeout=self.left(),
            )
        return None if row is None else Lease(row[0], row[1], row[2])
