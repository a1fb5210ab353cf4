"""1 vs 2 vs 3 replicas on one PostgreSQL and one Redis: total server CPU per command.

The same 32 bot games (bench/service.py's driver) against 1, 2 or 3 `bura serve` processes
with production settings, on one scratch database. Each seat keeps its own connection to
replica (game + seat) mod replicas, as a load balancer holding client connections would:
with two or more replicas the two seats of a game mostly talk to different ones, so a
command often lands on a replica that did not take the game's previous move. The CPU is
summed over every replica process (/proc, bench/cpu.py); the replica counts take turns
(rotated every repeat), each on fresh processes; figures are medians of the repeats.
What extra replicas cost on top of the work itself: reloading what another replica
appended, hints on Redis, presence and rate counters. `hint_waits_heard` and
`hint_waits_missed` count the commands that got to their replica before the hint of the
version their seat saw (services/app/arrivals.py): heard, the hint brought the copy they
were judged on; missed, the store was read instead.

Targets (printed, never asserted): 2 replicas <= 1.1x and 3 <= 1.15x one replica's CPU
per command.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from typing import Any

import httpx

from bench import PRODUCTION, database_url, redis_url, sized
from bench.service import bura_replicas, window
from harness.databases import fresh_database
from harness.processes import OPERATOR

GAMES = 32
REPEATS = int(sized(3, 1))  # each repeat starts 6 processes: quick mode does one
COUNTS = (1, 2, 3)
TARGETS = {2: 1.1, 3: 1.15}


def _hint_waits(bases: list[str]) -> dict[str, int]:
    """Commands that got to a replica before the hint of the version their seat saw and
    waited for it (bura_hint_waits_total), summed over the replicas, warm-up included:
    `heard` were judged on the copy the hint brought, `missed` read the store."""
    waits = {"hint_waits_heard": 0, "hint_waits_missed": 0}
    for base in bases:
        for line in httpx.get(f"{base}/metrics", headers=OPERATOR, timeout=10).text.splitlines():
            for outcome in ("heard", "missed"):
                if line.startswith(f'bura_hint_waits_total{{outcome="{outcome}"}}'):
                    waits[f"hint_waits_{outcome}"] += int(float(line.split()[-1]))
    return waits


def run() -> dict[str, Any]:
    started = time.perf_counter()
    samples: dict[int, list[dict[str, Any]]] = {n: [] for n in COUNTS}
    with fresh_database(database_url()) as scratch:
        env = {**PRODUCTION, "BURA_DATABASE_URL": scratch, "BURA_REDIS_URL": redis_url()}
        for repeat in range(REPEATS):
            for count in COUNTS[repeat % 3 :] + COUNTS[: repeat % 3]:
                with bura_replicas(env, count) as target:
                    sample = asyncio.run(window(target, GAMES))
                    samples[count].append({**sample, **_hint_waits(target.bases)})
    one = statistics.median(s["cpu_ms"] for s in samples[1])
    rows = []
    for count in COUNTS:

        def median(key: str, count: int = count) -> Any:
            return statistics.median(s[key] for s in samples[count])

        cpu = median("cpu_ms")
        rows.append(
            {
                "replicas": count,
                "cpu_ms_per_command": round(cpu, 3),
                "over_one": round(cpu / one, 3),
                "target": TARGETS.get(count),
                "per_second": round(median("per_second")),
                "p99_ms": median("p99_ms"),
                "client_cpu_share": median("client_cpu_share"),
                "hint_waits_heard": median("hint_waits_heard"),
                "hint_waits_missed": median("hint_waits_missed"),
                "errors": sum(s["errors"] for s in samples[count]),
            }
        )
    met = all(r["over_one"] <= r["target"] for r in rows if r["target"] is not None)
    print(
        "total CPU per command over one replica's: "
        + ", ".join(f"{r['replicas']}: {r['over_one']}" for r in rows)
        + f" (targets 2 <= 1.1, 3 <= 1.15: {'met' if met else 'MISSED'})"
    )
    return {
        "unit": "server CPU ms per request, summed over the replicas (median of repeats)",
        "games": GAMES,
        "repeats": REPEATS,
        "meets_targets": met,
        "cores": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
        "seconds": round(time.perf_counter() - started, 1),
        "table": rows,
    }
