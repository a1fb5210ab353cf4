"""The event store on SQLite (stdlib sqlite3): the embedded default of infra.ports.events.

Appends take SQLite's write lock, and positions are handed out under it, so commit order
is position order and tx_id is always 0.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from domain.chain import GENESIS, links
from infra.deadline import remaining
from infra.ports.events import (
    NO_METADATA,
    START,
    AppendResult,
    Checkpoint,
    Conflict,
    Metadata,
    NewEvent,
    OutcomeUnknown,
    RecordedEvent,
    StoreUnavailable,
    Touched,
    TouchedStream,
    micros,
)
from infra.sqlite.database import SqliteDatabase, WorkUnfinished

_COLUMNS = (
    "stream_id, version, type, data, schema_version, command_id, actor,"
    " correlation_id, recorded_at, tx_id, position, hash"
)
_INSERT = (
    "INSERT INTO events (stream_id, version, type, data, schema_version, command_id,"
    " actor, correlation_id, recorded_at, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_VERSION = "SELECT coalesce(max(version), 0) FROM events WHERE stream_id = ?"
_HEAD = "SELECT version, hash FROM events WHERE stream_id = ? ORDER BY version DESC LIMIT 1"
_FIND_COMMAND = (
    "SELECT first_version, last_version, actor, fingerprint FROM commands"
    " WHERE stream_id = ? AND command_id = ?"
)


def _blob(value: bytes | str) -> bytes:
    """A BLOB column as bytes: a row edited by hand may hold TEXT there (SQLite keeps
    whatever type a value is written with), read as its UTF-8 bytes so that the record is
    still read and the chain, not a crash, says whether it changed."""
    return value.encode() if isinstance(value, str) else bytes(value)


def _recorded(row: tuple[Any, ...]) -> RecordedEvent:
    return RecordedEvent(
        stream_id=row[0],
        version=row[1],
        type=row[2],
        data=_blob(row[3]),
        schema_version=row[4],
        metadata=Metadata(command_id=row[5], actor=row[6], correlation_id=row[7]),
        recorded_at=datetime.fromisoformat(row[8]),
        tx_id=row[9],
        position=row[10],
        hash=_blob(row[11]),
    )


class SqliteEventStore:
    def __init__(self, db: SqliteDatabase | str = ":memory:") -> None:
        """A store on an open database, or on a file (path) it opens and owns."""
        self.db = db if isinstance(db, SqliteDatabase) else SqliteDatabase(db)

    @classmethod
    async def open(cls, path: str = ":memory:") -> SqliteEventStore:
        return cls(await SqliteDatabase.open(path))

    async def append(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        metadata: Metadata = NO_METADATA,
    ) -> AppendResult:
        if not events:
            raise ValueError("nothing to append")
        batch = list(events)
        left = remaining(-1.0)
        # With a command id, half of the time left is kept for finding out what became of
        # the append, should it not finish in time.
        timeout = None if left < 0 else left / 2 if metadata.command_id is not None else left
        try:
            return await self.db.write(
                lambda db: append_in_transaction(db, stream_id, expected_version, batch, metadata),
                timeout=timeout,
            )
        except WorkUnfinished as e:
            return await self._recover(stream_id, metadata.command_id, str(e))

    async def _recover(self, stream_id: str, command_id: str | None, why: str) -> AppendResult:
        """The worker runs one job at a time: a lookup queued after the unfinished append
        sees it committed or rolled back."""
        unknown = OutcomeUnknown(f"{why}; the append may have been written", command_id)
        if command_id is None:
            raise unknown
        try:
            found = await self.db.run(lambda db: _find_command(db, stream_id, command_id))
        except StoreUnavailable as e:
            raise unknown from e
        if found is None:
            raise StoreUnavailable(f"{why}; it was not committed: nothing was written")
        return msgspec.structs.replace(found, duplicate=True, recovered=True)

    async def append_batches(
        self, stream_id: str, batches: Sequence[tuple[Sequence[NewEvent], Metadata]]
    ) -> AppendResult:
        if not batches:
            raise ValueError("nothing to append")
        copied = [(list(events), metadata) for events, metadata in batches]

        def all_of_them(db: sqlite3.Connection) -> AppendResult:
            head = db.execute(_VERSION, (stream_id,)).fetchone()[0]
            if head:
                raise Conflict(stream_id, 0, head)
            results: list[AppendResult] = []
            for events, metadata in copied:
                after = results[-1].last_version if results else 0
                result = append_in_transaction(db, stream_id, after, events, metadata)
                if result.duplicate:  # one command id twice: refuse the whole stream
                    raise Conflict(stream_id, after, result.last_version)
                results.append(result)
            return AppendResult(
                stream_id,
                results[0].first_version,
                results[-1].last_version,
                last_hash=results[-1].last_hash,
            )

        try:
            return await self.db.write(all_of_them)
        except WorkUnfinished as e:
            raise OutcomeUnknown(f"{e}: the stream may have been written in full, or not") from e

    async def read(
        self, stream_id: str, after: int = 0, until: int | None = None
    ) -> list[RecordedEvent]:
        last = until if until is not None else 2**62
        rows = await self.db.run(
            lambda db: db.execute(
                f"SELECT {_COLUMNS} FROM events"
                " WHERE stream_id = ? AND version > ? AND version <= ? ORDER BY version",
                (stream_id, after, last),
            ).fetchall()
        )
        return [_recorded(r) for r in rows]

    async def version(self, stream_id: str) -> int:
        row = await self.db.run(lambda db: db.execute(_VERSION, (stream_id,)).fetchone())
        return int(row[0])

    async def find_command(self, stream_id: str, command_id: str) -> AppendResult | None:
        return await self.db.run(lambda db: _find_command(db, stream_id, command_id))

    def heard(self, stream_id: str, version: int, head: bytes) -> None:
        """Nothing to keep: every append links its rows in its own transaction."""

    async def read_all(self, after: Checkpoint, limit: int = 1000) -> list[RecordedEvent]:
        if after[0] > 0:  # tx_id is always 0 here: nothing sorts after that checkpoint
            return []
        rows = await self.db.run(
            lambda db: db.execute(
                f"SELECT {_COLUMNS} FROM events WHERE position > ? ORDER BY position LIMIT ?",
                (after[1], limit),
            ).fetchall()
        )
        return [_recorded(r) for r in rows]

    async def touched(
        self, after: Checkpoint, limit: int = 1000, kinds: tuple[str, ...] = ()
    ) -> Touched:
        if after[0] > 0:  # as read_all: nothing sorts after that checkpoint
            return Touched((), 0, after)
        rows = await self.db.run(
            lambda db: db.execute(
                "SELECT stream_id, version, type, position FROM events"
                " WHERE position > ? ORDER BY position LIMIT ?",
                (after[1], limit),
            ).fetchall()
        )
        if not rows:
            return Touched((), 0, after)
        last: dict[str, int] = {}
        found: dict[str, set[str]] = {}
        for stream_id, version, type_, _ in rows:
            last[stream_id] = max(version, last.get(stream_id, 0))
            if not kinds or type_ in kinds:
                found.setdefault(stream_id, set()).update([type_] if kinds else [])
        streams = tuple(
            TouchedStream(s, v, tuple(sorted(found[s]))) for s, v in last.items() if s in found
        )
        return Touched(streams, len(rows), (0, int(rows[-1][3])))

    async def head(self) -> Checkpoint:
        position = await self.db.run(
            lambda db: db.execute("SELECT max(position) FROM events").fetchone()[0]
        )
        return START if position is None else (0, int(position))

    async def issued(self, checkpoint: Checkpoint) -> bool:
        tx_id, position = checkpoint
        if checkpoint == START:
            return True
        if tx_id != 0:  # every checkpoint here has tx_id 0
            return False
        row = await self.db.run(
            lambda db: db.execute("SELECT 1 FROM events WHERE position = ?", (position,)).fetchone()
        )
        return row is not None

    async def ping(self) -> None:
        await self.db.run(lambda db: db.execute("SELECT 1").fetchone())

    async def close(self) -> None:
        await self.db.close()


def _find_command(db: sqlite3.Connection, stream_id: str, command_id: str) -> AppendResult | None:
    row = db.execute(_FIND_COMMAND, (stream_id, command_id)).fetchone()
    if row is None:
        return None
    return AppendResult(stream_id, row[0], row[1], actor=row[2], fingerprint=row[3])


def append_in_transaction(
    db: sqlite3.Connection,
    stream_id: str,
    expected_version: int,
    events: list[NewEvent],
    metadata: Metadata,
) -> AppendResult:
    """The append itself, on a connection whose caller holds the write lock."""
    m = metadata
    if m.command_id is not None:
        prior = _find_command(db, stream_id, m.command_id)
        if prior is not None:
            return msgspec.structs.replace(prior, duplicate=True)
    head_row = db.execute(_HEAD, (stream_id,)).fetchone()
    head, previous = (head_row[0], bytes(head_row[1])) if head_row else (0, GENESIS)
    if head != expected_version:
        raise Conflict(stream_id, expected_version, head)
    now = datetime.now(UTC)
    hashes = links(
        previous, stream_id, expected_version + 1,
        [(e.type, e.schema_version, e.data) for e in events],
        m.command_id, m.actor, m.correlation_id, micros(now),
    )  # fmt: skip
    at = now.isoformat()
    rows = [
        (stream_id, version, e.type, e.data, e.schema_version, m.command_id, m.actor,
         m.correlation_id, at, hash)
        for version, e, hash in zip(
            range(expected_version + 1, expected_version + 1 + len(events)), events, hashes,
            strict=True,
        )
    ]  # fmt: skip
    previous = hashes[-1]
    db.executemany(_INSERT, rows)
    last = expected_version + len(events)
    if m.command_id is not None:
        db.execute(
            "INSERT INTO commands (stream_id, command_id, first_version, last_version, actor,"
            " fingerprint) VALUES (?, ?, ?, ?, ?, ?)",
            (stream_id, m.command_id, expected_version + 1, last, m.actor, m.fingerprint),
        )
    return AppendResult(
        stream_id,
        expected_version + 1,
        last,
        False,
        m.actor,
        m.fingerprint,
        previous,
        hashes=tuple(hashes),
    )
