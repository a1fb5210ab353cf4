"""Event store append throughput on PostgreSQL: ours against two baselines.

- a bare asyncpg INSERT of the same rows (same columns and indexes, no version check, no
  idempotency row): the cost of our guarantees;
- the eventsourcing library's PostgresApplicationRecorder (psycopg, a table lock and a
  NOTIFY per insert): a common off-the-shelf choice.

Each writer appends 2-event batches (a game command's usual shape) round-robin to its own
games, at 1, 8 and 32 concurrent writers, into a scratch database dropped afterwards.
Figures are medians of a few timed windows; no target is asserted here.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import msgspec

from bench import database_url
from harness.databases import fresh_database
from infra.ports.events import Metadata, NewEvent
from infra.postgres.migrate import migrate
from infra.postgres.store import PostgresEventStore

WRITERS = (1, 8, 32)
REPEATS = 3
WARMUP = 0.15  # seconds per window before counting starts (connections, prepared plans)
WINDOW = 0.8  # seconds counted per window
GAMES_PER_WRITER = 20

_BATCH = (
    NewEvent("CardsLed", msgspec.json.encode({"seat": 1, "cards": ["AS", "KS", "10S"]})),
    NewEvent("TurnPassed", msgspec.json.encode({"seat": 0, "phase": "respond", "trick": 4})),
)
_COLUMNS = "stream_id, version, type, data, schema_version, command_id, actor, correlation_id"
_BARE_TABLE = """
CREATE TABLE bare_events (
    stream_id text NOT NULL, version bigint NOT NULL, type text NOT NULL, data bytea NOT NULL,
    schema_version integer NOT NULL DEFAULT 1, command_id text, actor integer,
    correlation_id text, recorded_at timestamptz NOT NULL DEFAULT now(),
    tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(), position bigserial NOT NULL,
    PRIMARY KEY (stream_id, version));
CREATE INDEX ON bare_events (tx_id, position);
"""
_BARE_INSERT = f"INSERT INTO bare_events ({_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
_BARE_UNNEST = (
    f"INSERT INTO bare_events ({_COLUMNS}) SELECT * FROM unnest("
    "$1::text[], $2::bigint[], $3::text[], $4::bytea[], $5::int[], $6::text[], $7::int[],"
    " $8::text[])"
)


def run() -> dict[str, Any]:
    started = time.perf_counter()
    # Unmigrated: _measure applies the migrations itself.
    with fresh_database(database_url(), migrated=False) as scratch:
        rows = asyncio.run(_measure(scratch))
    return {
        "unit": "events/s (median of windows)",
        "batch": len(_BATCH),
        "repeats": REPEATS,
        "window_s": WINDOW,
        "seconds": round(time.perf_counter() - started, 1),
        "table": rows,
    }


async def _measure(url: str) -> list[dict[str, Any]]:
    await migrate(url)
    await asyncio.to_thread(_create_eventsourcing_table, url)
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(_BARE_TABLE)
        samples: dict[tuple[str, int], list[float]] = {}
        variants: list[tuple[str, Callable[[int], Awaitable[float]]]] = [
            ("ours", lambda n: _ours(url, n)),
            ("bare_executemany", lambda n: _bare(url, n, one_statement=False)),
            ("bare_unnest", lambda n: _bare(url, n, one_statement=True)),
            ("eventsourcing", lambda n: asyncio.to_thread(_theirs, url, n)),
        ]
        for repeat in range(REPEATS):
            turn = variants[repeat % len(variants) :] + variants[: repeat % len(variants)]
            for writers in WRITERS:
                for name, measure in turn:  # rotated, so drift spreads over all variants
                    await conn.execute("TRUNCATE events, commands, bare_events, es_stored_events")
                    samples.setdefault((name, writers), []).append(await measure(writers))
    finally:
        await conn.close()
    return [_row(writers, samples) for writers in WRITERS]


def _row(writers: int, samples: dict[tuple[str, int], list[float]]) -> dict[str, Any]:
    rate = {name: statistics.median(s) for (name, n), s in samples.items() if n == writers}
    return {
        "writers": writers,
        "ours": round(rate["ours"]),
        "bare_executemany": round(rate["bare_executemany"]),
        "bare_unnest": round(rate["bare_unnest"]),
        "eventsourcing": round(rate["eventsourcing"]),
        "ours/bare_executemany": round(rate["ours"] / rate["bare_executemany"], 2),
        "ours/bare_unnest": round(rate["ours"] / rate["bare_unnest"], 2),
        "ours/eventsourcing": round(rate["ours"] / rate["eventsourcing"], 2),
    }


class _Window:
    """Counts events completed between the end of the warm-up and the deadline."""

    def __init__(self) -> None:
        self.opens = time.perf_counter() + WARMUP
        self.closes = self.opens + WINDOW
        self.events = 0
        self._lock = threading.Lock()

    def running(self) -> bool:
        return time.perf_counter() < self.closes

    def done(self, events: int) -> None:
        if time.perf_counter() >= self.opens:
            with self._lock:
                self.events += events

    def rate(self) -> float:
        return self.events / WINDOW


def _games() -> list[str]:
    return [f"bench-{uuid.uuid4()}" for _ in range(GAMES_PER_WRITER)]


async def _ours(url: str, writers: int) -> float:
    store = await PostgresEventStore.open(url, min_size=writers, max_size=writers)
    window = _Window()

    async def writer(seat: int) -> None:
        games, at = _games(), 0
        versions = dict.fromkeys(games, 0)
        while window.running():
            game = games[at % len(games)]
            at += 1
            command = Metadata(command_id=uuid.uuid4().hex, actor=seat, correlation_id=game)
            result = await store.append(game, versions[game], _BATCH, command)
            versions[game] = result.last_version
            window.done(len(_BATCH))

    try:
        await asyncio.gather(*map(writer, range(writers)))
    finally:
        await store.close()
    return window.rate()


async def _bare(url: str, writers: int, one_statement: bool) -> float:
    pool = await asyncpg.create_pool(url, min_size=writers, max_size=writers)
    window = _Window()

    async def writer(seat: int) -> None:
        games, at = _games(), 0
        versions = dict.fromkeys(games, 0)
        while window.running():
            game = games[at % len(games)]
            at += 1
            command, v = uuid.uuid4().hex, versions[game]
            rows = [
                (game, v + i, e.type, e.data, e.schema_version, command, seat, game)
                for i, e in enumerate(_BATCH, start=1)
            ]
            async with pool.acquire() as conn:
                if one_statement:
                    await conn.execute(_BARE_UNNEST, *map(list, zip(*rows, strict=True)))
                else:
                    async with conn.transaction():
                        await conn.executemany(_BARE_INSERT, rows)
            versions[game] = v + len(rows)
            window.done(len(rows))

    try:
        await asyncio.gather(*map(writer, range(writers)))
    finally:
        await pool.close()
    return window.rate()


def _eventsourcing_recorder(url: str, pool_size: int) -> Any:
    from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore

    parts = urlsplit(url)
    datastore = PostgresDatastore(
        dbname=parts.path.lstrip("/"),
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=parts.username or "postgres",
        password=parts.password or "",
        pool_size=pool_size,
        originator_id_type="text",
    )
    return PostgresApplicationRecorder(datastore, events_table_name="es_stored_events")


def _create_eventsourcing_table(url: str) -> None:
    recorder = _eventsourcing_recorder(url, pool_size=1)
    try:
        recorder.create_table()
    finally:
        recorder.datastore.close()


def _theirs(url: str, writers: int) -> float:
    """The same batches through the library's recorder, one thread per writer."""
    from eventsourcing.persistence import StoredEvent

    recorder = _eventsourcing_recorder(url, pool_size=writers)
    recorder.datastore.pool.open(wait=True, timeout=30)
    window = _Window()

    def writer() -> None:
        games, at = _games(), 0
        versions = dict.fromkeys(games, 0)
        while window.running():
            game = games[at % len(games)]
            at += 1
            v = versions[game]
            recorder.insert_events(
                [
                    StoredEvent(
                        originator_id=game, originator_version=v + i, topic=e.type, state=e.data
                    )
                    for i, e in enumerate(_BATCH, start=1)
                ]
            )
            versions[game] = v + len(_BATCH)
            window.done(len(_BATCH))

    threads = [threading.Thread(target=writer) for _ in range(writers)]
    try:
        for t in threads:
            t.start()
    finally:
        for t in threads:
            if t.is_alive():
                t.join()
        recorder.datastore.close()
    return window.rate()
