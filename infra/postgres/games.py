"""The games index on PostgreSQL (migration 008), on the event store's pool, bounded like
the event store: by the request's deadline, else command_timeout (a pooled connection
waited for included; one that fails is thrown away, never given back to wait on)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import asyncpg
import msgspec

from domain.rules import Rules
from domain.vocabulary import Reason, Status
from infra.ports.games import After, AlreadyRematched, IndexedGame, Stale, finished_by
from infra.postgres.connections import Bounded

_encode = msgspec.json.Encoder().encode
_EARLIEST = datetime(1, 1, 1, tzinfo=UTC)

# The last event of each listed game, one index probe each on the events' primary key.
_LAST = (
    "CROSS JOIN LATERAL (SELECT e.version, e.recorded_at, e.type, e.data FROM events AS e"
    " WHERE e.stream_id = g.stream_id ORDER BY e.version DESC LIMIT 1) AS last"
)
# The rematch that followed a game changes its entry: it is `updated` when it was made
# (GREATEST passes over a NULL: no rematch, the last event's time).
_REMATCH = "LEFT JOIN games AS r ON r.stream_id = g.rematch"
_UPDATED = "GREATEST(last.recorded_at, r.created_at)"
_COLUMNS = (
    "g.stream_id, g.seats, g.rules, g.status, g.winners, g.reason, g.created_at,"
    f" last.version, {_UPDATED}, g.rematch_of, g.rematch, last.type,"
    " CASE WHEN g.status = 'in_progress' AND last.type = 'game_finished' THEN last.data END"
)
# The status is the last event's (infra/ports/games.py finished_by): a row says finished
# only after its game_finished, so only rows still in progress need that event's word.
_LIST = (
    f"SELECT {_COLUMNS} FROM games AS g {_LAST} {_REMATCH}"
    " WHERE ($1::text IS NULL OR g.status = $1 OR g.status = 'in_progress')"
    " AND ($1::text IS NULL OR (last.type = 'game_finished') = ($1 = 'finished'))"
    " AND ($2::timestamptz IS NULL OR g.created_at >= $2)"
    f" AND ($3::timestamptz IS NULL OR {_UPDATED} >= $3)"
    " AND (g.created_at, g.stream_id) > ($4::timestamptz, $5::text)"
    " ORDER BY g.created_at, g.stream_id LIMIT $6"
)
_GET = f"SELECT {_COLUMNS} FROM games AS g {_LAST} {_REMATCH} WHERE g.stream_id = $1"
_FINISHED_BUT_OPEN = (
    f"SELECT g.stream_id FROM games AS g {_LAST}"
    " WHERE g.status = 'in_progress' AND last.type = 'game_finished'"
)
_ORPHANS = (
    "SELECT g.stream_id FROM games AS g WHERE g.created_at < $1"
    " AND NOT EXISTS (SELECT 1 FROM events AS e WHERE e.stream_id = g.stream_id)"
)


def _indexed(row: asyncpg.Record) -> IndexedGame:
    return finished_by(_row(row), row[11], row[12])


def _row(row: asyncpg.Record) -> IndexedGame:
    return IndexedGame(
        game_id=row[0],
        seats=tuple(msgspec.json.decode(row[1])),
        rules=msgspec.json.decode(row[2], type=Rules),
        status=row[3],
        winners=tuple(msgspec.json.decode(row[4])) if row[4] is not None else None,
        reason=row[5],
        created=row[6],
        version=row[7],
        updated=row[8],
        rematch_of=row[9],
        rematch=row[10],
    )


_INSERT = """
    INSERT INTO games (stream_id, seats, rules, clocked, rematch_of)
    VALUES ($1, $2::jsonb, $3::jsonb, $4, $5)"""
_LINK = "UPDATE games SET rematch = $1 FROM added WHERE games.stream_id = added.rematch_of"
_ADD = f"WITH added AS ({_INSERT} RETURNING rematch_of) {_LINK}"
# under a key: a row the id has is kept (ON CONFLICT names the id alone, so a second rematch
# of one game still breaks rematch_of's UNIQUE)
_ADD_KEYED = (
    f"WITH added AS ({_INSERT} ON CONFLICT (stream_id) DO NOTHING RETURNING rematch_of) {_LINK}"
)
# one statement: the row as dealt, the link from the game it is a rematch of, and no link
# left from another (disjoint rows: one statement's CTEs must not update one row twice)
_SETTLE = f"""
WITH added AS (
    {_INSERT}
    ON CONFLICT (stream_id) DO UPDATE SET seats = excluded.seats, rules = excluded.rules,
        clocked = excluded.clocked, rematch_of = excluded.rematch_of
    RETURNING rematch_of
), unlinked AS (
    UPDATE games SET rematch = NULL
    WHERE rematch = $1 AND stream_id IS DISTINCT FROM $5
)
{_LINK}
"""
_REMOVE = (
    "DELETE FROM games WHERE stream_id = $1"
    " AND NOT EXISTS (SELECT 1 FROM events WHERE stream_id = $1) RETURNING stream_id"
)


class PostgresGameIndex(Bounded):
    async def add(
        self,
        game_id: str,
        seats: Sequence[str],
        rules: Rules,
        *,
        rematch_of: str | None = None,
        keyed: bool = False,
    ) -> None:
        # one statement: the row, and the link from the game it is a rematch of, both or
        # neither (a second rematch breaks rematch_of's UNIQUE)
        await self._write(_ADD_KEYED if keyed else _ADD, game_id, seats, rules, rematch_of)

    async def _rematched(self, conn: Any, game_id: str) -> None:
        """Raise AlreadyRematched naming the rematch a concurrent writer made first."""
        existing = await conn.fetchval(
            "SELECT stream_id FROM games WHERE rematch_of = $1", game_id, timeout=self.left()
        )
        if existing is not None:
            raise AlreadyRematched(game_id, existing)

    async def settle(
        self,
        game_id: str,
        seats: Sequence[str],
        rules: Rules,
        *,
        rematch_of: str | None = None,
    ) -> None:
        await self._write(_SETTLE, game_id, seats, rules, rematch_of)

    async def _write(
        self,
        statement: str,
        game_id: str,
        seats: Sequence[str],
        rules: Rules,
        rematch_of: str | None,
    ) -> None:
        async with self.connection() as conn:
            try:
                await conn.execute(
                    statement,
                    game_id,
                    _encode(list(seats)).decode(),
                    _encode(rules).decode(),
                    rules.turn_seconds is not None,
                    rematch_of,
                    timeout=self.left(),
                )
            except asyncpg.UniqueViolationError:
                if rematch_of is not None:
                    await self._rematched(conn, rematch_of)
                raise

    async def finish(self, game_id: str, winners: Sequence[int], reason: Reason) -> None:
        async with self.connection() as conn:
            await conn.execute(
                "UPDATE games SET status = 'finished', winners = $2::jsonb, reason = $3"
                " WHERE stream_id = $1",
                game_id,
                _encode(list(winners)).decode(),
                reason,
                timeout=self.left(),
            )

    async def remove(self, game_id: str) -> None:
        async with self.connection() as conn, conn.transaction():
            if await conn.fetchval(_REMOVE, game_id, timeout=self.left()) is not None:
                await conn.execute(
                    "UPDATE games SET rematch = NULL WHERE rematch = $1",
                    game_id,
                    timeout=self.left(),
                )

    async def get(self, game_id: str) -> IndexedGame | None:
        async with self.connection() as conn:
            row = await conn.fetchrow(_GET, game_id, timeout=self.left())
        return _indexed(row) if row is not None else None

    async def search(
        self,
        *,
        status: Status | None = None,
        created_since: datetime | None = None,
        updated_since: datetime | None = None,
        after: After | None = None,
        limit: int = 50,
    ) -> list[IndexedGame]:
        start, last_id = after if after is not None else (_EARLIEST, "")
        async with self.connection() as conn:
            rows = await conn.fetch(
                _LIST,
                status,
                created_since,
                updated_since,
                start,
                last_id,
                limit,
                timeout=self.left(),
            )
        return [_indexed(r) for r in rows]

    async def clocked_in_progress(self) -> list[str]:
        async with self.connection() as conn:
            rows = await conn.fetch(
                "SELECT stream_id FROM games WHERE status = 'in_progress' AND clocked"
                " ORDER BY created_at",
                timeout=self.left(),
            )
        return [r[0] for r in rows]

    async def stale(self, orphaned_before: datetime) -> Stale:
        async with self.connection() as conn:
            finished = await conn.fetch(_FINISHED_BUT_OPEN, timeout=self.left())
            orphans = await conn.fetch(_ORPHANS, orphaned_before, timeout=self.left())
        return Stale([r[0] for r in finished], [r[0] for r in orphans])
