"""One SQLite file for the embedded default, served by a single worker thread.

Every call runs on the thread that owns the connection, so calls are serialised; writes
also take SQLite's write lock (BEGIN IMMEDIATE), which keeps them correct when several
processes share the file. The schema is brought up to date when the file is opened, step
by step (`PRAGMA user_version` counts the steps applied).
"""

from __future__ import annotations

import asyncio
import functools
import os
import sqlite3
import urllib.parse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TypeVar

import msgspec

from domain.chain import GENESIS, canonical, link
from infra.deadline import remaining
from infra.ports.events import StoreUnavailable, micros

T = TypeVar("T")


class WorkUnfinished(StoreUnavailable):
    """The caller stopped waiting while the worker was running its work. For a read that
    is all; a write will end on its own, and whoever needs its outcome asks the worker
    again (it runs one job at a time, so a later job sees the earlier one finished)."""


def _chain_old_streams(db: sqlite3.Connection) -> None:
    """Step 2: commands keep their seat and fingerprint; every event row its chain hash,
    computed once here for the rows written before."""
    db.execute("ALTER TABLE commands ADD COLUMN actor INTEGER")
    db.execute("ALTER TABLE commands ADD COLUMN fingerprint TEXT")
    db.execute("ALTER TABLE events ADD COLUMN hash BLOB")
    rows = db.execute(
        "SELECT stream_id, version, type, schema_version, data, command_id, actor,"
        " correlation_id, recorded_at FROM events ORDER BY stream_id, version"
    ).fetchall()
    stream, previous = None, GENESIS
    for stream_id, version, kind, schema, data, command_id, actor, correlation, at in rows:
        if stream_id != stream:
            stream, previous = stream_id, GENESIS
        record = canonical(
            stream_id,
            version,
            kind,
            schema,
            bytes(data),
            command_id,
            actor,
            correlation,
            micros(datetime.fromisoformat(at)),
        )
        previous = link(previous, record)
        db.execute(
            "UPDATE events SET hash = ? WHERE stream_id = ? AND version = ?",
            (previous, stream_id, version),
        )


def _index_games(db: sqlite3.Connection) -> None:
    """Step 4: the games index (infra/ports/games.py), with every game written before it,
    read from its first event (and its last, if it has finished)."""
    db.execute(
        """
        CREATE TABLE games (
            stream_id  TEXT    PRIMARY KEY,
            seats      TEXT    NOT NULL,
            rules      TEXT    NOT NULL,
            clocked    INTEGER NOT NULL DEFAULT 0,
            status     TEXT    NOT NULL DEFAULT 'in_progress',
            winners    TEXT,
            reason     TEXT,
            created_us INTEGER NOT NULL,
            rematch_of TEXT    UNIQUE,
            rematch    TEXT
        )
        """
    )
    db.execute("CREATE INDEX games_by_creation ON games (created_us, stream_id)")
    db.execute("CREATE INDEX games_in_progress ON games (status, clocked)")
    started = db.execute(
        "SELECT stream_id, data, recorded_at FROM events"
        " WHERE version = 1 AND type = 'game_started'"
    ).fetchall()
    for stream_id, data, at in started:
        payload = msgspec.json.decode(bytes(data))
        rules = payload.get("rules") or {}
        db.execute(
            "INSERT INTO games (stream_id, seats, rules, clocked, created_us)"
            " VALUES (?, ?, ?, ?, ?)",
            (
                stream_id,
                msgspec.json.encode(payload["seats"]).decode(),
                msgspec.json.encode(rules).decode(),
                rules.get("turn_seconds") is not None,
                micros(datetime.fromisoformat(at)),
            ),
        )
    for stream_id, data in db.execute(
        "SELECT stream_id, data FROM events WHERE type = 'game_finished'"
    ).fetchall():
        payload = msgspec.json.decode(bytes(data))
        db.execute(
            "UPDATE games SET status = 'finished', winners = ?, reason = ? WHERE stream_id = ?",
            (msgspec.json.encode(payload["winners"]).decode(), payload["reason"], stream_id),
        )


# Each step runs once, in order, in one transaction with the bump of user_version: an SQL
# script, or a function of the connection.
SCHEMA: tuple[str | Callable[[sqlite3.Connection], None], ...] = (
    """
    CREATE TABLE IF NOT EXISTS events (
        position       INTEGER PRIMARY KEY AUTOINCREMENT,
        stream_id      TEXT    NOT NULL,
        version        INTEGER NOT NULL CHECK (version > 0),
        type           TEXT    NOT NULL,
        data           BLOB    NOT NULL,
        schema_version INTEGER NOT NULL DEFAULT 1,
        command_id     TEXT,
        actor          INTEGER,
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
    """,
    _chain_old_streams,
    # Step 3: webhooks (PostgreSQL migration 005); times are seconds since 1970, UTC.
    """
    CREATE TABLE leases (
        name        TEXT PRIMARY KEY,
        holder      TEXT NOT NULL,
        expires_at  REAL NOT NULL,
        acquired_at REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE feed_checkpoints (
        name       TEXT    PRIMARY KEY,
        tx_id      INTEGER NOT NULL,
        position   INTEGER NOT NULL,
        updated_at REAL    NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE webhook_endpoints (
        id          TEXT PRIMARY KEY,
        url         TEXT NOT NULL,
        secret      TEXT NOT NULL,
        events      TEXT NOT NULL,
        source      TEXT NOT NULL CHECK (source IN ('api', 'config')),
        description TEXT,
        created_at  REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE webhook_deliveries (
        seq             INTEGER PRIMARY KEY AUTOINCREMENT,
        id              TEXT    NOT NULL UNIQUE,
        endpoint_id     TEXT    NOT NULL,
        url             TEXT    NOT NULL,
        type            TEXT    NOT NULL,
        game_id         TEXT    NOT NULL,
        version         INTEGER NOT NULL,
        tx_id           INTEGER NOT NULL,
        position        INTEGER NOT NULL,
        recorded_at     REAL    NOT NULL,
        body            BLOB    NOT NULL,
        state           TEXT    NOT NULL DEFAULT 'pending'
                        CHECK (state IN ('pending', 'delivered', 'failed', 'cancelled')),
        attempts        INTEGER NOT NULL DEFAULT 0,
        created_at      REAL    NOT NULL,
        next_attempt_at REAL    NOT NULL,
        last_attempt_at REAL,
        last_status     INTEGER,
        last_error      TEXT,
        delivered_at    REAL
    );
    CREATE INDEX webhook_deliveries_pending
        ON webhook_deliveries (endpoint_id, game_id, tx_id, position) WHERE state = 'pending';
    CREATE INDEX webhook_deliveries_game ON webhook_deliveries (game_id, seq);
    CREATE TABLE webhook_attempts (
        delivery_id TEXT    NOT NULL,
        number      INTEGER NOT NULL,
        at          REAL    NOT NULL,
        status      INTEGER,
        error       TEXT,
        seconds     REAL    NOT NULL,
        PRIMARY KEY (delivery_id, number)
    ) WITHOUT ROWID;
    """,
    _index_games,
    # Step 5: snapshots (PostgreSQL migration 009), a disposable cache of folded states.
    """
    CREATE TABLE snapshots (
        stream_id TEXT    NOT NULL,
        schema    TEXT    NOT NULL,
        version   INTEGER NOT NULL CHECK (version > 0),
        state     BLOB    NOT NULL,
        head      BLOB    NOT NULL,
        PRIMARY KEY (stream_id, schema)
    ) WITHOUT ROWID;
    """,
)


class SqliteDatabase:
    def __init__(self, path: str = ":memory:", *, reading: bool = False) -> None:
        """Open (and create) the database at path; blocks briefly while it opens.

        `reading` (the record's readers: `bura replay`, `audit`, `verify`, `export`): the
        file is opened for reading only and left byte for byte as it was, a store kept as
        evidence or another program's database named by mistake alike. It must hold this
        bura's schema as it is: nothing is created or upgraded (StoreUnavailable)."""
        self.path = path
        self.reading = reading
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bura-sqlite")
        self._db: sqlite3.Connection | None = None
        try:
            self._worker.submit(self._open).result()
        except BaseException:
            self._worker.shutdown(wait=False)
            raise

    @classmethod
    async def open(cls, path: str = ":memory:", *, reading: bool = False) -> SqliteDatabase:
        return await asyncio.to_thread(functools.partial(cls, path, reading=reading))

    def _open(self) -> None:
        if self.reading:
            self._open_for_reading()
            return
        db = None
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA busy_timeout = 5000")
            if self.path != ":memory:":
                db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            _upgrade(db)
            # a file SQLite could open for reading only (its permissions, an immutable or
            # read-only mount) would serve reads, answer ready and refuse every move:
            # refused here, as a file that cannot be opened (`bura serve` exits 3), by a
            # write of the header as it is, rolled back
            (version,) = db.execute("PRAGMA user_version").fetchone()
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(f"PRAGMA user_version = {int(version)}")
            finally:
                db.execute("ROLLBACK")
        except sqlite3.Error as e:
            if db is not None:
                db.close()
            raise StoreUnavailable(f"cannot open {self.path}: {e}") from e
        self._db = db

    def _open_for_reading(self) -> None:
        if os.path.isdir(self.path):  # as SQLite words it when opening one to write
            raise StoreUnavailable(f"cannot open {self.path}: unable to open database file")
        # A store in WAL mode read while no server has it open leaves its -wal and -shm
        # files beside it (SQLite makes them to read, and only a writer may take them
        # away); the file itself is not touched.
        where = "file:" + urllib.parse.quote(os.path.abspath(self.path)) + "?mode=ro"
        db = None
        try:
            db = sqlite3.connect(where, uri=True, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA busy_timeout = 5000")
            (version,) = db.execute("PRAGMA user_version").fetchone()
        except sqlite3.Error as e:
            if db is not None:
                db.close()
            raise StoreUnavailable(f"cannot open {self.path}: {e}") from e
        if version != len(SCHEMA):
            db.close()
            raise StoreUnavailable(
                f"{self.path} holds no bura store"
                if version == 0
                else f"{self.path} is a bura store of schema {version}, and this bura reads "
                f"schema {len(SCHEMA)}: read it with the bura that wrote it, or let "
                "`bura serve` of this one upgrade it first"
                if version < len(SCHEMA)
                else f"{self.path} is a bura store of schema {version}, newer than this bura "
                f"reads ({len(SCHEMA)})"
            )
        self._db = db

    async def run(
        self, work: Callable[[sqlite3.Connection], T], *, timeout: float | None = None
    ) -> T:
        """Run `work` on the worker thread; a locked or failing file is StoreUnavailable.

        The wait is bounded by `timeout`, else by the request's deadline (none: as long as
        it takes). Work still queued when time is up never runs (StoreUnavailable);
        work already running is finished by the worker, and the caller is told
        WorkUnfinished, since it cannot know how that ends."""

        def guarded() -> T:
            if self._db is None:
                raise StoreUnavailable("the event store is closed")
            try:
                return work(self._db)
            except sqlite3.OperationalError as e:  # locked, I/O error, disk full
                raise StoreUnavailable(f"sqlite: {e}") from e

        limit = timeout if timeout is not None else remaining(-1.0)
        if limit == 0:
            raise StoreUnavailable("the request's deadline passed before the store was asked")
        try:
            job = self._worker.submit(guarded)
        except RuntimeError as e:  # the worker has been shut down
            raise StoreUnavailable("the event store is closed") from e
        done = asyncio.wrap_future(job)
        if limit < 0:  # no deadline
            return await done
        try:
            return await asyncio.wait_for(done, limit)
        except TimeoutError:
            if job.cancel():  # still queued: it will never run
                raise StoreUnavailable("the database was busy past the deadline") from None
            if job.done():  # it finished as time ran out
                return job.result()
            raise WorkUnfinished("the database did not finish in time") from None

    async def write(
        self, work: Callable[[sqlite3.Connection], T], *, timeout: float | None = None
    ) -> T:
        """Run `work` inside one write transaction (BEGIN IMMEDIATE ... COMMIT)."""

        def transaction(db: sqlite3.Connection) -> T:
            db.execute("BEGIN IMMEDIATE")
            try:
                result = work(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return result

        return await self.run(transaction, timeout=timeout)

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


def _upgrade(db: sqlite3.Connection) -> None:
    applied = db.execute("PRAGMA user_version").fetchone()[0]
    for number, step in enumerate(SCHEMA[applied:], start=applied + 1):
        if isinstance(step, str):
            db.executescript(f"BEGIN IMMEDIATE; {step}; PRAGMA user_version = {number}; COMMIT;")
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            step(db)
            db.execute(f"PRAGMA user_version = {number}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
