"""Event store append throughput on PostgreSQL: ours against baselines.

- the same append without its hash chain: a scratch copy of bura_append that hashes
  nothing, into a copy of the tables without the hash column, called through the same
  store code: what the chain costs (`chain_cost`, time per event chained over chainless,
  and `chain_cost_cpu`, CPU per event; the target is at most 1.1);
- a bare asyncpg INSERT of the same rows (same columns and indexes, no version check, no
  idempotency row): the cost of our guarantees;
- the eventsourcing library's PostgresApplicationRecorder (psycopg, a table lock and a
  NOTIFY per insert): a common off-the-shelf choice.

Each writer appends 2-event batches (a game command's usual shape) round-robin to its own
games, at 1, 8 and 32 concurrent writers, into a scratch database dropped afterwards. The
variants take turns (rotated every repeat, so drift spreads over all of them); figures are
medians of the repeats. `client_cpu` is the CPU this process (the load generator) used
per second of the run, in cores: near 1.0 the generator, not the database, may be what
limits the rate.

On two cores the generator competes with the database, so the rates move with it; the
steadier figure is the CPU per event over each counted window, read from /proc (the
bench needs a local server; to the nanosecond, from /proc/PID/schedstat: PostgreSQL's
processes are single-threaded): `backend_us`, the database sessions serving the run;
`server_us`, every process of the cluster (WAL writer, checkpointer, vacuum too); and
`client_us`, this process, generator included. The store computes the chain's links
itself before sending them (migrations 010 and 011): `hashing_us`, timed here in-process,
is that work per event. `chain_cost_cpu` is (backend_us + hashing_us) with the chain over
backend_us without it, per repeat, then the median; `chain_cost_cluster` the same on
server_us. Windows seconds apart drift on a shared machine (per repeat the ratio moves
by a tenth or more either way), so `side_by_side_*` measures the same ratio with both
stores open at once, taking turns every SLICE seconds (PAIRS turns each, the first of
each pair alternating), each turn's database CPU read for that store's own sessions:
`side_by_side_chain_cost_cpu` is the ratio of the totals over all turns (the figure the
target is for), `side_by_side_halves` the same over each half of the turns (how steady it
is), and `side_by_side_total_cost_cpu` counts this process's CPU in too (the store's
Python on both sides, with the generator's).
No target is asserted here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import msgspec

from bench import cpu, database_url, sized
from domain.chain import GENESIS
from harness.databases import fresh_database
from infra.ports.events import Metadata, NewEvent
from infra.postgres.migrate import migrate
from infra.postgres.store import PostgresEventStore

WRITERS = (1, 8, 32)
REPEATS = int(sized(7, 3))
WARMUP = 0.15  # seconds per window before counting starts (connections, prepared plans)
WINDOW = sized(2.0, 0.4)  # seconds counted per window
PAIRS = int(sized(150, 10))  # side by side: turns of each store
SLICE = sized(0.1, 0.05)  # seconds per turn
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
# The store's append with the chain taken out, on a copy of the events table without the
# hash column (the command's record on its first row, under the same unique index, as
# migration 012 keeps it): onto a head the store knows, one INSERT written only if the
# row at the expected version exists (no hash to compare); else a copy of
# bura_append_chained that reads the head, links nothing and writes the same rows.
_CHAINLESS = """
CREATE TABLE chainless_events (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS
                               INCLUDING INDEXES);
ALTER TABLE chainless_events DROP COLUMN hash;
CREATE FUNCTION bura_append_chainless(
    p_stream_id text, p_expected bigint, p_types text[], p_data bytea[],
    p_schema_versions integer[], p_command_id text, p_actor integer,
    p_correlation_id text, p_fingerprint text,
    OUT appended_from bigint, OUT appended_to bigint, OUT duplicate boolean,
    OUT head bigint, OUT last_hash bytea, OUT prior_actor integer,
    OUT prior_fingerprint text)
LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := now();
BEGIN
    duplicate := false;
    SELECT e.version INTO head FROM chainless_events AS e
     WHERE e.stream_id = p_stream_id ORDER BY e.version DESC LIMIT 1;
    IF NOT FOUND THEN
        head := 0;
    END IF;
    IF head <> p_expected THEN
        IF p_command_id IS NOT NULL THEN
            SELECT e.version, e.command_last, e.actor, e.fingerprint
              INTO appended_from, appended_to, prior_actor, prior_fingerprint
              FROM chainless_events AS e
             WHERE e.stream_id = p_stream_id AND e.command_id = p_command_id
               AND e.command_last IS NOT NULL;
            duplicate := FOUND;
        END IF;
        RETURN;
    END IF;
    appended_from := p_expected + 1;
    appended_to := p_expected + cardinality(p_types);
    head := appended_to;
    INSERT INTO chainless_events (stream_id, version, type, data, schema_version,
                                  command_id, actor, correlation_id, recorded_at,
                                  command_last, fingerprint)
    SELECT p_stream_id, p_expected + n.ord, n.type, n.data, n.schema_version,
           p_command_id, p_actor, p_correlation_id, v_now,
           CASE WHEN n.ord = 1 AND p_command_id IS NOT NULL THEN appended_to END,
           CASE WHEN n.ord = 1 AND p_command_id IS NOT NULL THEN p_fingerprint END
      FROM unnest(p_types, p_data, p_schema_versions)
           WITH ORDINALITY AS n(type, data, schema_version, ord)
     ORDER BY n.ord;
END;
$$;
"""


def _chainless(statement: str) -> str:
    """One of the store's INSERTs for a known head, into chainless_events, checking the row
    at the expected version by its version and time alone. The links' parameters ($10,
    $12) are still sent (the store's code is the same) and only checked to be there."""
    statement = statement.replace("INSERT INTO events", "INSERT INTO chainless_events")
    statement = statement.replace(" recorded_at, hash, command_last", " recorded_at, command_last")
    statement = statement.replace("$11::timestamptz, $12::bytea,", "$11::timestamptz,")
    statement = statement.replace(
        " substring($12::bytea FROM n.ord::integer * 32 - 31 FOR 32),", ""
    )
    statement = statement.replace("events AS e", "chainless_events AS e")
    statement = statement.replace("AND e.hash = $10::bytea", "AND $10::bytea IS NOT NULL")
    if " ORDER BY n.ord" in statement:
        statement = statement.replace(" ORDER BY", " AND $12::bytea IS NOT NULL ORDER BY")
    else:
        statement += " AND $12::bytea IS NOT NULL"
    if "hash" in statement or "INSERT INTO chainless_events" not in statement:
        raise RuntimeError(f"the store's INSERT changed; bench/store.py must follow: {statement}")
    return statement


class _ChainlessStore(PostgresEventStore):
    """The store's own append code, with the chainless statements, and computing no links
    (an empty placeholder per event, which the statements do not store)."""

    append_statement = "SELECT * FROM bura_append_chainless($1, $2, $3, $4, $5, $6, $7, $8, $9)"
    chained_answer = False
    take_one = _chainless(PostgresEventStore.take_one)
    take_many = _chainless(PostgresEventStore.take_many)
    take_first = _chainless(PostgresEventStore.take_first)

    def _links(
        self, stream_id: str, expected_version: int, events: Sequence[NewEvent], _: Metadata
    ) -> tuple[bytes | None, int | None, list[bytes] | None]:
        now = time.time_ns() // 1000
        if expected_version == 0:
            return GENESIS, now, [b""] * len(events)
        known = self._heads.get(stream_id)
        if known is None or known[0] != expected_version:
            return None, None, None
        return known[1], max(now, known[2]), [b""] * len(events)


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
        "cores": os.cpu_count(),
        "chain_cost": "time per event with the chain over without",
        "chain_cost_cpu": "CPU per event of the database sessions, plus the store's hashing,"
        " with the chain over without (target <= 1.1)",
        "chain_cost_cluster": "the same with every PostgreSQL process counted",
        "side_by_side_chain_cost_cpu": "chain_cost_cpu with both stores open, taking turns"
        " every slice, over the totals of all turns (target <= 1.1)",
        "side_by_side_total_cost_cpu": "the same with this process's CPU (the store's"
        " client side and the generator) added on both sides",
        "seconds": round(time.perf_counter() - started, 1),
        "table": rows,
    }


async def _measure(url: str) -> list[dict[str, Any]]:
    await migrate(url)
    await asyncio.to_thread(_create_eventsourcing_table, url)
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(_BARE_TABLE)
        await conn.execute(_CHAINLESS)
        samples: dict[tuple[str, int], list[_Sample]] = {}
        variants: list[tuple[str, Callable[[int, _Window], Awaitable[float]]]] = [
            ("ours", lambda n, w: _ours(url, n, w)),
            ("chainless", lambda n, w: _ours(url, n, w, _ChainlessStore)),
            ("bare_executemany", lambda n, w: _bare(url, n, w, one_statement=False)),
            ("bare_unnest", lambda n, w: _bare(url, n, w, one_statement=True)),
            ("eventsourcing", lambda n, w: asyncio.to_thread(_theirs, url, n, w)),
        ]
        hashing = []
        for repeat in range(REPEATS):
            hashing.append(_hashing_us())
            turn = variants[repeat % len(variants) :] + variants[: repeat % len(variants)]
            for writers in WRITERS:
                for name, measure in turn:  # rotated, so drift spreads over all variants
                    await conn.execute(
                        "TRUNCATE events, chainless_events, bare_events, es_stored_events"
                    )
                    window = _Window()
                    sample = await _metered(window, measure(writers, window), conn)
                    samples.setdefault((name, writers), []).append(sample)
        hashing_us = statistics.median(hashing)
        rows = [_row(writers, samples, hashing_us) for writers in WRITERS]
        for row in rows:
            row.update(await _side_by_side(url, row["writers"], hashing_us, conn))
    finally:
        await conn.close()
    return rows


async def _side_by_side(
    url: str, writers: int, hashing_us: float, admin: asyncpg.Connection
) -> dict[str, Any]:
    """The chain's CPU cost with both stores open at once and taking turns every SLICE
    seconds, PAIRS times (the first of each pair alternating): drift on a shared machine,
    which windows seconds apart cannot avoid, falls on both alike. Each slice's database
    CPU is read for that store's own sessions (to the nanosecond), and this process's CPU
    over the slice is that store's client side (the generator included). The cost is the
    ratio of the totals over all slices; each half's ratio shows how steady it is."""
    await admin.execute("TRUNCATE events, chainless_events")
    stores = [
        await PostgresEventStore.open(url, min_size=writers, max_size=writers),
        await _ChainlessStore.open(url, min_size=writers, max_size=writers),
    ]
    # per half, per store: [database CPU s, client CPU s, events]
    totals = [[[0.0, 0.0, 0] for _ in stores] for _ in range(2)]
    pair_costs = []
    try:
        sessions = [await _sessions_of(store, writers) for store in stores]
        heads = [_Heads(writers) for _ in stores]
        for at, store in enumerate(stores):  # warm: connections, plans, the heads known
            await _slice(store, heads[at], writers, 0.3)
        for pair in range(PAIRS):
            spent = [0.0, 0.0]
            for at in (0, 1) if pair % 2 == 0 else (1, 0):
                before, client = _cpu_of(sessions[at]), time.process_time()
                events = await _slice(stores[at], heads[at], writers, SLICE)
                used = _spent(before, _cpu_of(sessions[at]))
                total = totals[pair * 2 // PAIRS][at]
                total[0] += used
                total[1] += time.process_time() - client
                total[2] += events
                spent[at] = used / max(events, 1) * 1e6
            if spent[1] > 0:
                pair_costs.append((spent[0] + hashing_us) / spent[1])
    finally:
        for store in stores:
            await store.close()

    def per_event(half: list[list[float]], figure: int) -> list[float]:
        return [t[figure] / max(t[2], 1) * 1e6 for t in half]

    whole = [[a + b for a, b in zip(*pair, strict=True)] for pair in zip(*totals, strict=True)]
    backend = per_event(whole, 0)
    driver = per_event(whole, 1)

    def cost(half: list[list[float]]) -> float:
        ours, chainless = per_event(half, 0)
        return round((ours + hashing_us) / chainless, 3)

    return {
        "side_by_side_chain_cost_cpu": cost(whole),
        "side_by_side_halves": [cost(totals[0]), cost(totals[1])],
        "side_by_side_median_of_pairs": round(statistics.median(pair_costs), 3),
        "side_by_side_backend_us_ours": round(backend[0], 1),
        "side_by_side_backend_us_chainless": round(backend[1], 1),
        "side_by_side_client_us_ours": round(driver[0], 1),
        "side_by_side_client_us_chainless": round(driver[1], 1),
        "side_by_side_total_cost_cpu": round(
            (backend[0] + driver[0]) / (backend[1] + driver[1]), 3
        ),
        "side_by_side_pairs": PAIRS,
    }


async def _sessions_of(store: PostgresEventStore, writers: int) -> list[int]:
    """The server process ids of every connection of the store's pool."""
    held = [await store.pool.acquire() for _ in range(writers)]
    try:
        return [c.get_server_pid() for c in held]
    finally:
        for c in held:
            await store.pool.release(c)


class _Heads:
    """Each writer's games and their versions, kept from one slice to the next."""

    def __init__(self, writers: int) -> None:
        self.games = [_games() for _ in range(writers)]
        self.versions = [dict.fromkeys(g, 0) for g in self.games]
        self.turns = [0] * writers


async def _slice(store: PostgresEventStore, heads: _Heads, writers: int, seconds: float) -> int:
    """Every writer appends for `seconds`; the events appended."""
    closes, done = time.perf_counter() + seconds, 0

    async def writer(seat: int) -> None:
        nonlocal done
        games, versions = heads.games[seat], heads.versions[seat]
        while time.perf_counter() < closes:
            game = games[heads.turns[seat] % len(games)]
            heads.turns[seat] += 1
            command = Metadata(command_id=uuid.uuid4().hex, actor=seat, correlation_id=game)
            result = await store.append(game, versions[game], _BATCH, command)
            versions[game] = result.last_version
            done += len(_BATCH)

    await asyncio.gather(*map(writer, range(writers)))
    return done


class _Sample(msgspec.Struct, frozen=True):
    rate: float  # events per second of the window
    backend_us: float  # CPU of the database sessions serving the run, per event, µs
    server_us: float  # PostgreSQL's CPU (every process of the cluster) per event, µs
    client_us: float  # this process's CPU per event, µs: the store's own work included
    client_cores: float  # this process's CPU per second of the window


def _postgres_pids() -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm", encoding="ascii") as f:
                    if f.read().strip() == "postgres":
                        pids.append(int(entry))
            except OSError:
                continue
    return pids


def _cpu_of(pids: list[int]) -> dict[int, float]:
    seen = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            seen[pid] = cpu.thread_seconds(pid)
    return seen


_SESSIONS = (
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
    " AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
)


def _spent(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(after[p] - before[p] for p in after.keys() & before.keys())


async def _metered(window: _Window, run: Awaitable[float], admin: asyncpg.Connection) -> _Sample:
    """The run's rate, and the CPU spent on it over its counted window (from /proc: the
    bench needs a local server): the database sessions serving the run, the whole
    cluster (its WAL writer, checkpointer and vacuum included), and this process."""

    async def meter() -> tuple[float, float, float]:
        while not window.started():
            await asyncio.sleep(0.005)
        sessions = [r[0] for r in await admin.fetch(_SESSIONS)]
        await asyncio.sleep(max(0.0, window.opens - time.perf_counter()))
        pids = _postgres_pids()
        server, client = _cpu_of(pids), time.process_time()
        await asyncio.sleep(max(0.0, window.closes - time.perf_counter()))
        after = _cpu_of(pids)
        mine = set(sessions)
        backends = _spent(
            {p: c for p, c in server.items() if p in mine},
            {p: c for p, c in after.items() if p in mine},
        )
        return backends, _spent(server, after), time.process_time() - client

    metering = asyncio.create_task(meter())
    rate = await run
    backends, server, client = await metering
    per_event = 1e6 / max(window.events, 1)
    return _Sample(
        rate, backends * per_event, server * per_event, client * per_event, client / WINDOW
    )


def _hashing_us() -> float:
    """What the store's own link computation costs per event (timed here, in-process):
    PostgresEventStore._links for one batch onto a head it knows, the clock read
    included."""
    store = PostgresEventStore(None, 10.0)  # type: ignore[arg-type]  # no pool: not used
    metadata, rounds, game = Metadata(uuid.uuid4().hex, 1, "bench"), 2000, "bench-game"
    store._remember(game, 10, bytes(32), 0)
    assert store._links(game, 10, _BATCH, metadata)[2] is not None
    started = time.process_time()
    for _ in range(rounds):
        store._links(game, 10, _BATCH, metadata)
    return (time.process_time() - started) / (rounds * len(_BATCH)) * 1e6


def _row(
    writers: int, samples: dict[tuple[str, int], list[_Sample]], hashing_us: float
) -> dict[str, Any]:
    mine = {name: s for (name, n), s in samples.items() if n == writers}

    def median(name: str, figure: Callable[[_Sample], float]) -> float:
        return statistics.median(figure(s) for s in mine[name])

    rate = {name: median(name, lambda s: s.rate) for name in mine}
    # per repeat, chained against the chainless run of the same repeat (run side by side)
    pairs = list(zip(mine["ours"], mine["chainless"], strict=True))
    costs = [c.rate / o.rate for o, c in pairs]
    # the database's work per event plus the store's hashing, over the database's work
    cpu_costs = [(o.backend_us + hashing_us) / c.backend_us for o, c in pairs]
    cluster_costs = [(o.server_us + hashing_us) / c.server_us for o, c in pairs]
    return {
        "writers": writers,
        "ours": round(rate["ours"]),
        "chainless": round(rate["chainless"]),
        "chain_cost": round(rate["chainless"] / rate["ours"], 3),
        "chain_cost_per_repeat": [round(c, 3) for c in costs],
        "chain_cost_cpu": round(statistics.median(cpu_costs), 3),
        "chain_cost_cpu_per_repeat": [round(c, 3) for c in cpu_costs],
        "chain_cost_cluster": round(statistics.median(cluster_costs), 3),
        "backend_us_ours": round(median("ours", lambda s: s.backend_us), 1),
        "backend_us_chainless": round(median("chainless", lambda s: s.backend_us), 1),
        "hashing_us": round(hashing_us, 1),
        "server_us_ours": round(median("ours", lambda s: s.server_us), 1),
        "server_us_chainless": round(median("chainless", lambda s: s.server_us), 1),
        "client_us_ours": round(median("ours", lambda s: s.client_us), 1),
        "client_us_chainless": round(median("chainless", lambda s: s.client_us), 1),
        "bare_executemany": round(rate["bare_executemany"]),
        "bare_unnest": round(rate["bare_unnest"]),
        "eventsourcing": round(rate["eventsourcing"]),
        "ours/bare_executemany": round(rate["ours"] / rate["bare_executemany"], 2),
        "ours/bare_unnest": round(rate["ours"] / rate["bare_unnest"], 2),
        "ours/eventsourcing": round(rate["ours"] / rate["eventsourcing"], 2),
        "client_cpu_ours": round(median("ours", lambda s: s.client_cores), 2),
        "client_cpu_chainless": round(median("chainless", lambda s: s.client_cores), 2),
    }


class _Window:
    """Counts events completed between the end of the warm-up and the deadline; the
    warm-up begins when the variant has its connections and starts the window."""

    def __init__(self) -> None:
        self.opens = self.closes = float("inf")
        self.events = 0
        self._lock = threading.Lock()

    def start(self) -> None:
        self.opens = time.perf_counter() + WARMUP
        self.closes = self.opens + WINDOW

    def started(self) -> bool:
        return self.opens != float("inf")

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


async def _ours(
    url: str, writers: int, window: _Window, kind: type[PostgresEventStore] = PostgresEventStore
) -> float:
    store = await kind.open(url, min_size=writers, max_size=writers)
    window.start()

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


async def _bare(url: str, writers: int, window: _Window, one_statement: bool) -> float:
    pool = await asyncpg.create_pool(url, min_size=writers, max_size=writers)
    window.start()

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


def _theirs(url: str, writers: int, window: _Window) -> float:
    """The same batches through the library's recorder, one thread per writer."""
    from eventsourcing.persistence import StoredEvent

    recorder = _eventsourcing_recorder(url, pool_size=writers)
    recorder.datastore.pool.open(wait=True, timeout=30)
    window.start()

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
