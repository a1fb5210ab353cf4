"""The games index on the embedded SQLite file (schema step 3 of infra/sqlite/database.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from domain.rules import Rules
from domain.vocabulary import Reason, Status
from infra.ports.events import micros
from infra.ports.games import After, AlreadyRematched, IndexedGame, Stale, finished_by
from infra.sqlite.database import SqliteDatabase

_encode = msgspec.json.Encoder().encode
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_LAST = (
    "JOIN events AS last ON last.stream_id = g.stream_id AND last.version ="
    " (SELECT max(e.version) FROM events AS e WHERE e.stream_id = g.stream_id)"
)
# The rematch that followed a game changes its entry: it is `updated` when it was made.
_REMATCH = "LEFT JOIN games AS r ON r.stream_id = g.rematch"
_COLUMNS = (
    "g.stream_id, g.seats, g.rules, g.status, g.winners, g.reason, g.created_us,"
    " last.version, last.recorded_at, g.rematch_of, g.rematch, last.type,"
    " CASE WHEN g.status = 'in_progress' AND last.type = 'game_finished' THEN last.data END,"
    " r.created_us"
)
# The status is the last event's (infra/ports/games.py finished_by): a row says finished
# only after its game_finished, so only rows still in progress need that event's word.
# recorded_at is ISO text with a varying number of digits: both sides are compared as
# UTC to the millisecond, which can only let in a game changed within that millisecond.
_LIST = (
    f"SELECT {_COLUMNS} FROM games AS g {_LAST} {_REMATCH}"
    " WHERE (:status IS NULL OR g.status = :status OR g.status = 'in_progress')"
    " AND (:status IS NULL OR (last.type = 'game_finished') = (:status = 'finished'))"
    " AND (:created IS NULL OR g.created_us >= :created)"
    " AND (:updated IS NULL OR strftime('%Y-%m-%dT%H:%M:%f', last.recorded_at) >= :updated"
    " OR r.created_us >= :updated_us)"
    " AND (g.created_us, g.stream_id) > (:after, :after_id)"
    " ORDER BY g.created_us, g.stream_id LIMIT :limit"
)


def _at(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


def _millis(at: datetime) -> str:
    utc = at.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}"


def _later(recorded: datetime, rematch_made: int | None) -> datetime:
    """When the entry last changed: its last event, or the making of its rematch."""
    return recorded if rematch_made is None else max(recorded, _at(rematch_made))


def _indexed(row: tuple[Any, ...]) -> IndexedGame:
    return finished_by(_row(row), row[11], row[12])


def _row(row: tuple[Any, ...]) -> IndexedGame:
    return IndexedGame(
        game_id=row[0],
        seats=tuple(msgspec.json.decode(row[1])),
        rules=msgspec.json.decode(row[2], type=Rules),
        status=row[3],
        winners=tuple(msgspec.json.decode(row[4])) if row[4] is not None else None,
        reason=row[5],
        created=_at(row[6]),
        version=row[7],
        updated=_later(datetime.fromisoformat(row[8]), row[13]),
        rematch_of=row[9],
        rematch=row[10],
    )


def _add(
    db: sqlite3.Connection,
    game_id: str,
    seats: Sequence[str],
    rules: Rules,
    rematch_of: str | None,
    keyed: bool = False,
    settle: bool = False,
) -> None:
    """`keyed`: a row the id has is kept; `settle`: written over (status and creation
    time kept), the rematch link moved to its game (GameIndex.add and .settle)."""
    held = db.execute("SELECT 1 FROM games WHERE stream_id = ?", (game_id,)).fetchone()
    if held is not None and keyed:
        return
    if rematch_of is not None:
        existing = db.execute(
            "SELECT stream_id FROM games WHERE rematch_of = ? AND stream_id != ?",
            (rematch_of, game_id),
        ).fetchone()
        if existing is not None:
            raise AlreadyRematched(rematch_of, existing[0])
    fields = (
        _encode(list(seats)).decode(),
        _encode(rules).decode(),
        rules.turn_seconds is not None,
        rematch_of,
    )
    if held is not None and settle:
        db.execute(
            "UPDATE games SET seats = ?, rules = ?, clocked = ?, rematch_of = ?"
            " WHERE stream_id = ?",
            (*fields, game_id),
        )
        db.execute(
            "UPDATE games SET rematch = NULL WHERE rematch = ? AND stream_id IS NOT ?",
            (game_id, rematch_of),
        )
    else:
        db.execute(
            "INSERT INTO games (stream_id, seats, rules, clocked, rematch_of, created_us)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (game_id, *fields, micros(datetime.now(UTC))),
        )
    if rematch_of is not None:
        db.execute("UPDATE games SET rematch = ? WHERE stream_id = ?", (game_id, rematch_of))


class SqliteGameIndex:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    async def add(
        self,
        game_id: str,
        seats: Sequence[str],
        rules: Rules,
        *,
        rematch_of: str | None = None,
        keyed: bool = False,
    ) -> None:
        await self.db.write(lambda db: _add(db, game_id, seats, rules, rematch_of, keyed=keyed))

    async def settle(
        self,
        game_id: str,
        seats: Sequence[str],
        rules: Rules,
        *,
        rematch_of: str | None = None,
    ) -> None:
        await self.db.write(lambda db: _add(db, game_id, seats, rules, rematch_of, settle=True))

    async def finish(self, game_id: str, winners: Sequence[int], reason: Reason) -> None:
        await self.db.write(
            lambda db: db.execute(
                "UPDATE games SET status = 'finished', winners = ?, reason = ? WHERE stream_id = ?",
                (_encode(list(winners)).decode(), reason, game_id),
            )
        )

    async def remove(self, game_id: str) -> None:
        def forget(db: sqlite3.Connection) -> None:
            gone = db.execute(
                "DELETE FROM games WHERE stream_id = ?"
                " AND NOT EXISTS (SELECT 1 FROM events WHERE stream_id = ?)",
                (game_id, game_id),
            )
            if gone.rowcount:
                db.execute("UPDATE games SET rematch = NULL WHERE rematch = ?", (game_id,))

        await self.db.write(forget)

    async def get(self, game_id: str) -> IndexedGame | None:
        row = await self.db.run(
            lambda db: db.execute(
                f"SELECT {_COLUMNS} FROM games AS g {_LAST} {_REMATCH} WHERE g.stream_id = ?",
                (game_id,),
            ).fetchone()
        )
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
        start, last_id = (micros(after[0]), after[1]) if after is not None else (-(2**62), "")
        params = {
            "status": status,
            "created": micros(created_since) if created_since is not None else None,
            "updated": _millis(updated_since) if updated_since is not None else None,
            "updated_us": micros(updated_since) if updated_since is not None else None,
            "after": start,
            "after_id": last_id,
            "limit": limit,
        }
        rows = await self.db.run(lambda db: db.execute(_LIST, params).fetchall())
        return [_indexed(r) for r in rows]

    async def clocked_in_progress(self) -> list[str]:
        rows = await self.db.run(
            lambda db: db.execute(
                "SELECT stream_id FROM games WHERE status = 'in_progress' AND clocked"
                " ORDER BY created_us"
            ).fetchall()
        )
        return [r[0] for r in rows]

    async def stale(self, orphaned_before: datetime) -> Stale:
        def find(db: sqlite3.Connection) -> Stale:
            finished = db.execute(
                f"SELECT g.stream_id FROM games AS g {_LAST}"
                " WHERE g.status = 'in_progress' AND last.type = 'game_finished'"
            ).fetchall()
            orphans = db.execute(
                "SELECT g.stream_id FROM games AS g WHERE g.created_us < ?"
                " AND NOT EXISTS (SELECT 1 FROM events AS e WHERE e.stream_id = g.stream_id)",
                (micros(orphaned_before),),
            ).fetchall()
            return Stale([r[0] for r in finished], [r[0] for r in orphans])

        return await self.db.run(find)
