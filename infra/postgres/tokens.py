"""Seat token hashes on PostgreSQL, on the event store's pool."""

from __future__ import annotations

from collections.abc import Sequence

from infra.postgres.connections import Bounded

_SAVE = """
WITH gone AS (
    DELETE FROM seat_tokens WHERE stream_id = $1 AND seat >= cardinality($2::bytea[])
)
INSERT INTO seat_tokens (stream_id, seat, token_hash)
SELECT $1, t.ord - 1, t.hash FROM unnest($2::bytea[]) WITH ORDINALITY AS t(hash, ord)
ON CONFLICT (stream_id, seat) DO UPDATE SET token_hash = excluded.token_hash
"""


class PostgresSeatTokens(Bounded):
    """Bounded like the event store: by the request's deadline, else command_timeout."""

    async def save(self, stream_id: str, token_hashes: Sequence[bytes]) -> None:
        """The stream's hashes, all of them replaced, in one statement (one round trip, and
        atomic without a transaction around it): the seats given are written over, the
        seats past them deleted."""
        async with self.connection() as conn:
            await conn.execute(_SAVE, stream_id, list(token_hashes), timeout=self.left())

    async def hashes(self, stream_id: str) -> list[bytes]:
        async with self.connection() as conn:
            rows = await conn.fetch(
                "SELECT token_hash FROM seat_tokens WHERE stream_id = $1 ORDER BY seat",
                stream_id,
                timeout=self.left(),
            )
        return [r[0] for r in rows]
