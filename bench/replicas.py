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

A replica's CPU per command depends on how busy it is, not only on what it does: on this
machine one replica spends about 2.5 ms per command at 70 commands/s, 1.4-1.8 at 300 and
1.0-1.1 flat out at 850-900 (each command then shares the event loop's wake-ups, system
calls and warm caches with others). Flat out, n replicas carry about what one does, so each
is a fraction as busy, and the ratio above holds that as well as the work replicas add.
So a paced phase follows on the same processes: PACED games, each move after a pause of
THINK s on average, the same offered load for every count (`paced_over_one`); and one
replica alone carrying what each of n carries, PACED / n games at the same pace
(`share_cpu_ms`). `paced_over_share` is what the replicas add over that: the hints they
hear, the copies they keep up to date, the waits for a late hint.

The stack's own floor, side by side in the same repeats: 1, 2 or 3 bare endpoints
(bench/bare.py, one INSERT a request) under the same connections, flat out and at the same
pace (`bare_over_one`, `bare_paced_over_one`). They share nothing and follow no game, so
what they lose going from one process to several is what any process of this stack pays
for being less busy; `over_bare` is bura's ratio over theirs.

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
from bench.service import Target, bare_replicas, bura_replicas, window
from harness.databases import fresh_database
from harness.processes import OPERATOR

GAMES = 32
PACED = 48  # games at a pace: 48 / THINK = about 480 moves a second offered
THINK = 0.1  # mean pause before each move of a game, seconds
REPEATS = int(sized(3, 1))  # each repeat starts 6 processes: quick mode does one
COUNTS = (1, 2, 3)
TARGETS = {2: 1.1, 3: 1.15}


def hint_waits(bases: list[str]) -> dict[str, int]:
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


def by_game(target: Target) -> dict[str, Any]:
    """A flat-out window with each game's commands on the replica its id hashes to; the
    hint waits it adds to the replicas' counts."""
    before = hint_waits(target.bases)
    sample = asyncio.run(window(target, GAMES, by_game=True))
    after = hint_waits(target.bases)
    return {**sample, **{name: after[name] - before[name] for name in after}}


def run() -> dict[str, Any]:
    started = time.perf_counter()
    samples: dict[str, list[dict[str, Any]]] = {}

    def keep(name: str, sample: dict[str, Any]) -> None:
        samples.setdefault(name, []).append(sample)

    with fresh_database(database_url()) as scratch:
        env = {**PRODUCTION, "BURA_DATABASE_URL": scratch, "BURA_REDIS_URL": redis_url()}
        for repeat in range(REPEATS):
            for count in COUNTS[repeat % 3 :] + COUNTS[: repeat % 3]:
                with bura_replicas(env, count) as target:
                    first = count > 1 and repeat % 2 == 0  # by game first every other repeat
                    if first:
                        keep(f"{count}-by-game", by_game(target))
                    sample = asyncio.run(window(target, GAMES))
                    keep(f"{count}", {**sample, **hint_waits(target.bases)})
                    if count > 1 and not first:
                        keep(f"{count}-by-game", by_game(target))
                    keep(f"{count}-paced", asyncio.run(window(target, PACED, think=THINK)))
            with bura_replicas(env, 1) as target:  # one replica carrying one replica's share
                for count in COUNTS[1:]:
                    keep(f"{count}-share", asyncio.run(window(target, PACED // count, think=THINK)))
            for count in COUNTS[repeat % 3 :] + COUNTS[: repeat % 3]:
                with bare_replicas(scratch, count) as target:
                    keep(f"bare-{count}", asyncio.run(window(target, GAMES, bare=True)))
                    paced_bare = asyncio.run(window(target, PACED, bare=True, think=THINK))
                    keep(f"bare-{count}-paced", paced_bare)

    def median(name: str, key: str) -> Any:
        return statistics.median(s[key] for s in samples[name])

    one, paced_one = median("1", "cpu_ms"), median("1-paced", "cpu_ms")
    bare_one, bare_paced_one = median("bare-1", "cpu_ms"), median("bare-1-paced", "cpu_ms")
    rows = []
    for count in COUNTS:
        cpu, paced = median(f"{count}", "cpu_ms"), median(f"{count}-paced", "cpu_ms")
        # one replica's share of one replica's load is that load
        shared = f"{count}-share" if count > 1 else "1-paced"
        share = median(shared, "cpu_ms")
        bare = median(f"bare-{count}", "cpu_ms") / bare_one
        bare_paced = median(f"bare-{count}-paced", "cpu_ms") / bare_paced_one
        routed: dict[str, Any] = {}
        if count > 1:  # a game's commands on one replica, as a router by game sends them
            by = median(f"{count}-by-game", "cpu_ms")
            routed = {
                "by_game_cpu_ms": round(by, 3),
                "by_game_over_one": round(by / one, 3),
                "by_game_over_bare": round(by / one / bare, 3),
                "by_game_per_second": round(median(f"{count}-by-game", "per_second")),
                "by_game_client_cpu_share": median(f"{count}-by-game", "client_cpu_share"),
                "by_game_hint_waits": median(f"{count}-by-game", "hint_waits_heard")
                + median(f"{count}-by-game", "hint_waits_missed"),
            }
        rows.append(
            {
                "replicas": count,
                "cpu_ms_per_command": round(cpu, 3),
                "over_one": round(cpu / one, 3),
                "target": TARGETS.get(count),
                "per_second": round(median(f"{count}", "per_second")),
                "p99_ms": median(f"{count}", "p99_ms"),
                "client_cpu_share": median(f"{count}", "client_cpu_share"),
                "hint_waits_heard": median(f"{count}", "hint_waits_heard"),
                "hint_waits_missed": median(f"{count}", "hint_waits_missed"),
                "paced_cpu_ms": round(paced, 3),
                "paced_per_second": round(median(f"{count}-paced", "per_second")),
                "paced_over_one": round(paced / paced_one, 3),
                "bare_cpu_ms": round(median(f"bare-{count}", "cpu_ms"), 3),
                "bare_over_one": round(bare, 3),
                "over_bare": round(cpu / one / bare, 3),
                "bare_client_cpu_share": median(f"bare-{count}", "client_cpu_share"),
                "bare_paced_over_one": round(bare_paced, 3),
                "paced_over_bare": round(paced / paced_one / bare_paced, 3),
                **routed,
                "share_cpu_ms": round(share, 3),
                "share_per_second": round(median(shared, "per_second")),
                "paced_over_share": round(paced / share, 3),
                "errors": sum(
                    s["errors"]
                    for name in {
                        f"{count}",
                        *([f"{count}-by-game"] if count > 1 else []),
                        f"{count}-paced",
                        shared,
                        f"bare-{count}",
                        f"bare-{count}-paced",
                    }
                    for s in samples[name]
                ),
            }
        )
    met = all(r["over_one"] <= r["target"] for r in rows if r["target"] is not None)
    print(
        "total CPU per command over one replica's: "
        + ", ".join(f"{r['replicas']}: {r['over_one']}" for r in rows)
        + f" (targets 2 <= 1.1, 3 <= 1.15: {'met' if met else 'MISSED'}); paced, over one "
        "replica carrying the same load: "
        + ", ".join(f"{r['replicas']}: {r['paced_over_one']}" for r in rows[1:])
        + "; over one replica carrying one replica's share: "
        + ", ".join(f"{r['replicas']}: {r['paced_over_share']}" for r in rows[1:])
        + "; the bare endpoint's own, flat out: "
        + ", ".join(f"{r['replicas']}: {r['bare_over_one']}" for r in rows[1:])
        + ", paced: "
        + ", ".join(f"{r['replicas']}: {r['bare_paced_over_one']}" for r in rows[1:])
        + "; each game on one replica (routed by game), flat out: "
        + ", ".join(
            f"{r['replicas']}: {r['by_game_over_one']} (over bare {r['by_game_over_bare']}, "
            f"{r['by_game_hint_waits']} hint waits)"
            for r in rows[1:]
        )
    )
    return {
        "unit": "server CPU ms per request, summed over the replicas (median of repeats)",
        "games": GAMES,
        "paced_games": PACED,
        "think_s": THINK,
        "repeats": REPEATS,
        "meets_targets": met,
        "meets_targets_by_game": all(
            r["by_game_over_one"] <= r["target"] for r in rows if r["target"] is not None
        ),
        "cores": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
        "seconds": round(time.perf_counter() - started, 1),
        "table": rows,
    }
