"""The event store on SQLite (stdlib sqlite3): the embedded default of services.ports.EventStore.

Every call runs on one worker thread that owns the connection, so calls are serialised;
appends also take SQLite's write lock (BEGIN IMMEDIATE), which keeps them correct when
several processes share the file. Positions are handed out under that lock, so commit
order is position order and tx_id is always 0.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar

from infra.records import (
    AppendResult,
    Checkpoint,
    Conflict,
    Metadata,
    NewEvent,
    RecordedEvent,
    StoreUnavailable,
)

T = TypeVar("T")

NO_METADATA = Metadata()

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    position       INTEGER PRIMARY KEY AUTOINCREMENT,
    stream_id      TEXT    NOT NULL,
    version        INTEGER NOT NULL CHECK (version > 0),
    type           TEXT    NOT NULL,
    data           BLOB    NOT NULL,
    schema_version INTEGER NOT NULL DEFAULT 1,
    command_id     TEXT,
    actor          INTEGER,
    causation_id   TEXT,
    correlation_id TEXT,
    recorded_at    TEXT    NOT NULL,
    tx_id          INTEGER NOT NULL DEFAULT 0,
    UNIQUE (stream_id, version)
);
CREATE TABLE IF NOT EXISTS commands (
    stream_id     TEXT    NOT NULL,
    command_id    TEXT    NOT NULL,
    first_version INTEGER NOT NULL,
    last_version  INTEGER NOT NULL,
    PRIMARY KEY (stream_id, command_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS seat_tokens (
    stream_id  TEXT    NOT NULL,
    seat       INTEGER NOT NULL,
    token_hash BLOB    NOT NULL,
    PRIMARY KEY (stream_id, seat)
) WITHOUT ROWID;
"""

_COLUMNS = (
    "stream_id, version, type, data, schema_version, command_id, actor,"
    " causation_id, correlation_id, recorded_at, tx_id, position"
)
_INSERT = (
    "INSERT INTO events (stream_id, version, type, data, schema_version, command_id,"
    " actor, causation_id, correlation_id, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_VERSION = "SELECT coalesce(max(version), 0) FROM events WHERE stream_id = ?"
_FIND_COMMAND = (
    "SELECT first_version, last_version FROM commands WHERE stream_id = ? AND command_id = ?"
)


def _recorded(row: tuple[Any, ...]) -> RecordedEvent:
    return RecordedEvent(
        stream_id=row[0],
        version=row[1],
        type=row[2],
        data=bytes(row[3]),
        schema_version=row[4],
        metadata=Metadata(
            command_id=row[5], actor=row[6], causation_id=row[7], correlation_id=row[8]
        ),
        recorded_at=datetime.fromisoformat(row[9]),
        tx_id=row[10],
        position=row[11],
    )


class SqliteEventStore:
    def __init__(self, path: str = ":memory:") -> None:
        """Open (and create) the database at path; blocks briefly while it opens."""
        self.path = path
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bura-sqlite")
        self._db: sqlite3.Connection | None = None
        try:
            self._worker.submit(self._open).result()
        except BaseException:
            self._worker.shutdown(wait=False)
            raise

    @classmethod
    async def open(cls, path: str = ":memory:") -> SqliteEventStore:
        return await asyncio.to_thread(cls, path)

    def _open(self) -> None:
        db = None
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA busy_timeout = 5000")
            if self.path != ":memory:":
                db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.executescript(_SCHEMA)
        except sqlite3.Error as e:
            if db is not None:
                db.close()
            raise StoreUnavailable(f"cannot open {self.path}: {e}") from e
        self._db = db

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def guarded() -> T:
            if self._db is None:
                raise StoreUnavailable("the event store is closed")
            try:
                return work(self._db)
            except sqlite3.OperationalError as e:  # locked, I/O error, disk full
                raise StoreUnavailable(f"sqlite: {e}") from e

        try:
            done = asyncio.get_running_loop().run_in_executor(self._worker, guarded)
        except RuntimeError as e:  # the worker has been shut down
            raise StoreUnavailable("the event store is closed") from e
        return await done

    async def append(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        metadata: Metadata = NO_METADATA,
    ) -> AppendResult:
        if not events:
            raise ValueError("nothing to append")
        events = list(events)

        def append(db: sqlite3.Connection) -> AppendResult:
            db.execute("BEGIN IMMEDIATE")
            try:
                result = append_in_transaction(db, stream_id, expected_version, events, metadata)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return result

        return await self._run(append)

    async def read(
        self, stream_id: str, after: int = 0, until: int | None = None
    ) -> list[RecordedEvent]:
        last = until if until is not None else 2**62
        rows = await self._run(
            lambda db: db.execute(
                f"SELECT {_COLUMNS} FROM events"
                " WHERE stream_id = ? AND version > ? AND version <= ? ORDER BY version",
                (stream_id, after, last),
            ).fetchall()
        )
        return [_recorded(r) for r in rows]

    async def version(self, stream_id: str) -> int:
        row = await self._run(lambda db: db.execute(_VERSION, (stream_id,)).fetchone())
        return int(row[0])

    async def find_command(self, stream_id: str, command_id: str) -> AppendResult | None:
        """The result of the first append made under command_id (duplicate=False), if any."""
        row = await self._run(
            lambda db: db.execute(_FIND_COMMAND, (stream_id, command_id)).fetchone()
        )
        return None if row is None else AppendResult(stream_id, row[0], row[1])

    async def read_all(self, after: Checkpoint, limit: int = 1000) -> list[RecordedEvent]:
        if after[0] > 0:  # tx_id is always 0 here: nothing sorts after that checkpoint
            return []
        rows = await self._run(
            lambda db: db.execute(
                f"SELECT {_COLUMNS} FROM events WHERE position > ? ORDER BY position LIMIT ?",
                (after[1], limit),
            ).fetchall()
        )
        return [_recorded(r) for r in rows]

    async def save_seat_tokens(self, stream_id: str, token_hashes: Sequence[bytes]) -> None:
        """Store one token hash per seat (seat i gets token_hashes[i]), replacing any."""
        rows = [(stream_id, seat, bytes(h)) for seat, h in enumerate(token_hashes)]

        def save(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM seat_tokens WHERE stream_id = ?", (stream_id,))
                db.executemany("INSERT INTO seat_tokens VALUES (?, ?, ?)", rows)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

        await self._run(save)

    async def seat_tokens(self, stream_id: str) -> list[bytes]:
        rows = await self._run(
            lambda db: db.execute(
                "SELECT token_hash FROM seat_tokens WHERE stream_id = ? ORDER BY seat",
                (stream_id,),
            ).fetchall()
        )
        return [bytes(r[0]) for r in rows]

    async def ping(self) -> None:
        await self._run(lambda db: db.execute("SELECT 1").fetchone())

    async def close(self) -> None:
        def close() -> None:
            if self._db is not None:
                self._db.close()
                self._db = None

        try:
            await asyncio.get_running_loop().run_in_executor(self._worker, close)
        except RuntimeError:  # already closed
            return
        self._worker.shutdown(wait=True)


def append_in_transaction(
    db: sqlite3.Connection,
    stream_id: str,
    expected_version: int,
    events: list[NewEvent],
    metadata: Metadata,
) -> AppendResult:
    """The append itself, on a connection whose caller holds the write lock."""
    if metadata.command_id is not None:
        prior = db.execute(_FIND_COMMAND, (stream_id, metadata.command_id)).fetchone()
        if prior is not None:
            return AppendResult(stream_id, prior[0], prior[1], duplicate=True)
    head = db.execute(_VERSION, (stream_id,)).fetchone()[0]
    if head != expected_version:
        raise Conflict(stream_id, expected_version, head)
    now = datetime.now(UTC).isoformat()
    m = metadata
    db.executemany(
        _INSERT,
        [
            (
                stream_id,
                expected_version + i,
                e.type,
                e.data,
                e.schema_version,
                m.command_id,
                m.actor,
                m.causation_id,
                m.correlation_id,
                now,
            )
            for i, e in enumerate(events, start=1)
        ],
    )
    last = expected_version + len(events)
    if metadata.command_id is not None:
        db.execute(
            "INSERT INTO commands VALUES (?, ?, ?, ?)",
            (stream_id, metadata.command_id, expected_version + 1, last),
        )
    return AppendResult(stream_id, expected_version + 1, last)
