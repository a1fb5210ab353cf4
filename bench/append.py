"""bura_append against a plain INSERT, in PostgreSQL alone (pgbench-like).

Three statements, each prepared once per client, one round trip per append:
- `plain`: a single-row INSERT into a copy of the events table (same columns but the
  hash, same indexes): no version check, no idempotency row, no chain;
- `bura_append`: the plpgsql function of migration 003, hashing the event onto its
  stream's chain in SQL (as bura_append_chained does when the store does not know the
  head): version check, the link, the command row (id + fingerprint);
- `with_links`: bura_append_chained (migration 011) as the store calls it, the link
  computed by the store and sent with the append: checked against the head, not
  recomputed;
- `cte`: the same append as one SQL statement of CTEs (a recursive one for the chain),
  the candidate to replace the function. It is measured here and not shipped: it does not
  beat the function (see the figures), so the store keeps calling a function.

Every client appends one event per transaction to its own stream (a command's answer
depends on the last one, so a client never conflicts with another), at 1, 8 and 32
clients. The real `pgbench` drives them when it is installed (C: the generator costs
little), else asyncpg clients in this process. The variants take turns, rotated every
repeat; figures are medians of REPEATS runs, and the tables are emptied before each run.
`client_cpu_cores` is the generator's CPU per second of the run (pgbench's, from the
children's rusage; else this process's).

Target (printed, never asserted): the store's append (`with_links`) >= 0.8x the plain
INSERT's rate at 32 clients.
"""

from __future__ import annotations

import asyncio
import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

from bench import database_url, sized
from harness.databases import fresh_database, run_async

CLIENTS = (1, 8, 32)
REPEATS = 3
SECONDS = int(sized(5, 1))
TARGET = 0.8

_DATA = bytes.fromhex("7b2273656174223a312c226361726473223a5b224153222c224b53222c22313053225d7d")
_BARE = """
CREATE TABLE bare_events (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS
                          INCLUDING INDEXES);
ALTER TABLE bare_events DROP COLUMN hash;
"""
PLAIN = (
    "INSERT INTO bare_events (stream_id, version, type, data, schema_version, command_id,"
    " actor, correlation_id) VALUES ($1::text, $2::bigint + 1, $3::text, $4::bytea, $5::int,"
    " $6::text, $7::int, $8::text)"
)
BURA_APPEND = (
    "SELECT appended_to FROM bura_append($1::text, $2::bigint, $3::text[], $4::bytea[],"
    " $5::int[], $6::text, $7::int, $8::text, $9::text)"
)
# The append as one statement. The head row gives the version to check and the previous
# hash; the recursive CTE chains the events one after the other; the two inserts run only
# when the head is the expected version; otherwise the command id is looked up (a repeat
# or a conflict). A lost race fails on a primary key, as the function does.
CTE = """
WITH RECURSIVE
last AS (
    SELECT e.version, e.hash FROM events AS e
     WHERE e.stream_id = $1::text ORDER BY e.version DESC LIMIT 1
),
head AS (
    SELECT coalesce((SELECT l.version FROM last AS l), 0) AS version,
           coalesce((SELECT l.hash FROM last AS l), '\\x'::bytea || decode(repeat('00', 32), 'hex'))
               AS hash
),
chain (ord, hash) AS (
    SELECT 0, h.hash FROM head AS h WHERE h.version = $2::bigint
    UNION ALL
    SELECT c.ord + 1,
           bura_link(c.hash, $1::text, $2::bigint + c.ord + 1, ($3::text[])[c.ord + 1],
                     ($5::int[])[c.ord + 1], ($4::bytea[])[c.ord + 1], $6::text, $7::int,
                     $8::text, now())
      FROM chain AS c WHERE c.ord < cardinality($3::text[])
),
written AS (
    INSERT INTO events (stream_id, version, type, data, schema_version,
                        command_id, actor, correlation_id, recorded_at, hash)
    SELECT $1::text, $2::bigint + c.ord, ($3::text[])[c.ord], ($4::bytea[])[c.ord],
           ($5::int[])[c.ord], $6::text, $7::int, $8::text, now(), c.hash
      FROM chain AS c WHERE c.ord > 0 ORDER BY c.ord
),
command AS (
    INSERT INTO commands (stream_id, command_id, first_version, last_version, actor,
                          fingerprint)
    SELECT $1::text, $6::text, $2::bigint + 1, $2::bigint + cardinality($3::text[]),
           $7::int, $9::text
      FROM head AS h WHERE h.version = $2::bigint AND $6::text IS NOT NULL
),
prior AS (
    SELECT c.first_version, c.last_version, c.actor, c.fingerprint
      FROM commands AS c, head AS h
     WHERE h.version <> $2::bigint AND c.stream_id = $1::text AND c.command_id = $6::text
)
SELECT CASE WHEN h.version = $2::bigint THEN $2::bigint + cardinality($3::text[])
            ELSE p.last_version END AS appended_to,
       p.first_version IS NOT NULL AS duplicate,
       (SELECT c.hash FROM chain AS c WHERE c.ord > 0 ORDER BY c.ord DESC LIMIT 1)
           AS last_hash,
       p.actor AS prior_actor, p.fingerprint AS prior_fingerprint
  FROM head AS h LEFT JOIN prior AS p ON true
"""
# The store's own call (migration 011): the links come with the append, computed by the
# store; the function checks they continue the head (p_previous) and stores them. The
# generator here sends the same made-up link every time, so the head it chains onto is
# that link from the second append on (the genesis before): the function does not
# recompute links, so the database's work is the store's (the store's hashing, a few µs
# of Python per event, is in bench/store.py).
BURA_APPEND_LINKS = (
    "SELECT appended_to FROM bura_append_chained($1::text, $2::bigint, $3::text[],"
    " $4::bytea[], $5::int[], $6::text, $7::int, $8::text, $9::text, $10::bytea,"
    " $11::timestamptz, $12::bytea)"
)
_LINK = bytes(range(32))
VARIANTS = {"plain": PLAIN, "bura_append": BURA_APPEND, "with_links": BURA_APPEND_LINKS, "cte": CTE}


def run() -> dict[str, Any]:
    started = time.perf_counter()
    pgbench = shutil.which("pgbench")
    samples: dict[tuple[str, int], list[tuple[float, float]]] = {}
    with fresh_database(database_url()) as scratch:
        run_async(lambda: _sql(scratch, _BARE))
        names = list(VARIANTS)
        for repeat in range(REPEATS):
            for clients in CLIENTS:
                for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
                    run_async(lambda: _sql(scratch, "TRUNCATE events, commands, bare_events"))
                    if pgbench:
                        sample = _pgbench(pgbench, scratch, VARIANTS[name], clients)
                    else:
                        sql, n = VARIANTS[name], clients
                        sample = run_async(lambda: _asyncpg(scratch, sql, n))  # noqa: B023
                    samples.setdefault((name, clients), []).append(sample)
                    if name == "with_links":
                        run_async(lambda: _links_taken(scratch))
    rows = [_row(clients, samples) for clients in CLIENTS]
    at_32 = rows[-1]["with_links/plain"]
    print(
        f"the store's append (bura_append_chained) over plain INSERT at {CLIENTS[-1]}"
        f" clients: {at_32} (target >= {TARGET}: {'met' if at_32 >= TARGET else 'MISSED'});"
        f" bura_append hashing in SQL: {rows[-1]['bura_append/plain']};"
        f" one-statement CTE over bura_append: {rows[-1]['cte/bura_append']}"
    )
    return {
        "unit": "appends/s of one event (median of repeats)",
        "driver": "pgbench" if pgbench else "asyncpg",
        "repeats": REPEATS,
        "seconds_per_run": SECONDS,
        "target": TARGET,
        "meets_target": at_32 >= TARGET,
        "cores": os.cpu_count(),
        "seconds": round(time.perf_counter() - started, 1),
        "table": rows,
    }


def _row(clients: int, samples: dict[tuple[str, int], list[tuple[float, float]]]) -> dict[str, Any]:
    rate = {n: statistics.median(r for r, _ in samples[(n, clients)]) for n in VARIANTS}
    cpu = {n: statistics.median(c for _, c in samples[(n, clients)]) for n in VARIANTS}
    return {
        "clients": clients,
        **{n: round(rate[n]) for n in VARIANTS},
        "bura_append/plain": round(rate["bura_append"] / rate["plain"], 2),
        "cte/plain": round(rate["cte"] / rate["plain"], 2),
        "cte/bura_append": round(rate["cte"] / rate["bura_append"], 2),
        "with_links/plain": round(rate["with_links"] / rate["plain"], 2),
        **{f"client_cpu_cores_{n}": round(cpu[n], 2) for n in VARIANTS},
    }


async def _sql(url: str, sql: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def _links_taken(url: str) -> None:
    """Every row of a with_links run holds the link sent: had the function recomputed
    them in SQL, the figure would be bura_append's, not the store's call."""
    conn = await asyncpg.connect(url)
    try:
        recomputed = await conn.fetchval("SELECT count(*) FROM events WHERE hash <> $1", _LINK)
    finally:
        await conn.close()
    if recomputed:
        raise RuntimeError(f"{recomputed} rows were linked by the database, not as sent")


# What the parameters are in a pgbench script: each client owns a stream, and `v`, its
# head, is carried from one transaction to the next (\gset keeps it).
_PGBENCH_ARGS = {
    "1": "('pgb-' || :run || '-' || :client_id)",
    "2": ":v::bigint",
    "3": "ARRAY['CardsLed']",
    "4": f"ARRAY['\\x{_DATA.hex()}'::bytea]",
    "5": "ARRAY[1]",
    "6": "('c' || :v)",
    "7": "0",
    "8": "'pgb'",
    "9": "'fp'",
    "10": f"(CASE WHEN :v = 0 THEN '\\x{bytes(32).hex()}' ELSE '\\x{_LINK.hex()}' END)::bytea",
    "11": "now()",
    "12": f"'\\x{_LINK.hex()}'::bytea",
}
_SINGLE = {"3": "'CardsLed'", "4": f"'\\x{_DATA.hex()}'::bytea", "5": "1"}


def _script(sql: str) -> str:
    if sql is PLAIN:
        args = {**_PGBENCH_ARGS, **_SINGLE}
        body = re.sub(r"\$(\d+)::[a-z\[\]]+", lambda m: args[m[1]], sql)
        return f"{body};\n\\set v :v + 1\n"
    body = re.sub(r"\$(\d+)::[a-z\[\]]+", lambda m: _PGBENCH_ARGS[m[1]], sql)
    body = body.replace("appended_to FROM bura_append", "appended_to AS v FROM bura_append")
    body = body.replace("END AS appended_to", "END AS v")
    return " ".join(body.split()) + " \\gset\n"


def _pgbench(binary: str, url: str, sql: str, clients: int) -> tuple[float, float]:
    """(transactions per second, pgbench's CPU cores) of one run."""
    with tempfile.TemporaryDirectory() as home:
        script = Path(home) / "append.sql"
        script.write_text(_script(sql))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter()
        done = subprocess.run(
            [binary, "-n", "-M", "prepared", "-c", str(clients), "-j", str(min(clients, 2)),
             "-T", str(SECONDS), "-D", f"run={uuid.uuid4().hex[:12]}", "-D", "v=0",
             "-f", str(script), url],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        wall = time.perf_counter() - wall
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    found = re.search(r"tps = ([\d.]+)", done.stdout)
    if done.returncode != 0 or found is None or "error" in done.stderr.lower():
        raise RuntimeError(f"pgbench failed: {done.stdout[-800:]} {done.stderr[-800:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return float(found[1]), cpu / wall


async def _asyncpg(url: str, sql: str, clients: int) -> tuple[float, float]:
    """The same statements from asyncpg clients in this process (no pgbench)."""
    run, appended = uuid.uuid4().hex[:12], 0
    closes = time.perf_counter() + SECONDS
    cpu, wall = time.process_time(), time.perf_counter()

    async def client(n: int) -> None:
        nonlocal appended
        conn = await asyncpg.connect(url)
        statement = await conn.prepare(sql)
        stream, v, head = f"pgb-{run}-{n}", 0, bytes(32)
        try:
            while time.perf_counter() < closes:
                events = (
                    (["CardsLed"], [_DATA], [1]) if sql is not PLAIN else ("CardsLed", _DATA, 1)
                )
                args = [stream, v, *events, f"c{v}", 0, "pgb", "fp"][: 8 if sql is PLAIN else 9]
                if sql is BURA_APPEND_LINKS:
                    args += [head, datetime.now(UTC), _LINK]
                row = await statement.fetchrow(*args)
                if sql is BURA_APPEND_LINKS:
                    assert row[0] == v + 1, "the link was not taken"
                    head = _LINK
                v, appended = v + 1, appended + 1
        finally:
            await conn.close()

    await asyncio.gather(*map(client, range(clients)))
    wall = time.perf_counter() - wall
    return appended / wall, (time.process_time() - cpu) / wall
