"""Cold load of a long game: a 20,000-event game read and folded by a process that has
never seen it (an empty state cache, e.g. a replica just started), with and without a
snapshot.

The game is a bot match played in process to EVENTS events (match_target high enough that
it does not end first), written to a scratch PostgreSQL database in one transaction, one
append per command, as the service writes them. A cold load is what the game service does
on a cache miss: read the stream, decode every row (services/app/codec.py) and fold it.
With a snapshot (infra/ports/snapshots.py and its PostgreSQL adapter) it is: load the
newest snapshot, decode it, read and fold the events after it. Each figure is the median
of REPEATS loads, each on a fresh store (a new pool, so no prepared statement or cache of
ours survives).

Target (printed, never asserted): <= 10 ms with a snapshot.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import random
import statistics
import time
import uuid
from types import ModuleType
from typing import Any

from bench import database_url, sized
from domain.bots import greedy_bot
from domain.commands import StartGame
from domain.decide import decide
from domain.events import Event
from domain.evolve import fold
from domain.legal import claimants, seeding_seats
from domain.rules import Rules
from domain.state import NEW_GAME, Game
from harness.databases import fresh_database
from infra.ports.events import Metadata, NewEvent
from infra.postgres.store import PostgresEventStore
from services.app.codec import from_recorded, to_new

EVENTS = int(sized(20_000, 3_000))
REPEATS = int(sized(7, 3))
TARGET_SNAPSHOT_MS = 10.0


def run() -> dict[str, Any]:
    started = time.perf_counter()
    commands = _long_game(EVENTS)
    snapshots = _snapshots()
    with fresh_database(database_url()) as scratch:
        figures = asyncio.run(_measure(scratch, commands, snapshots))
    figures |= {
        "events": sum(len(batch) for batch, _ in commands),
        "commands": len(commands),
        "repeats": REPEATS,
        "snapshot_port": snapshots is not None,
        "target_snapshot_ms": TARGET_SNAPSHOT_MS,
        "cores": os.cpu_count(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    with_snapshot = figures.get("snapshot_ms")
    if with_snapshot is None:
        print(
            f"cold load of {figures['events']} events: {figures['full_ms']} ms (full fold; "
            "no snapshot port in this code base, so no snapshot figure)"
        )
    else:
        verdict = "met" if with_snapshot <= TARGET_SNAPSHOT_MS else "MISSED"
        print(
            f"cold load of {figures['events']} events: {figures['full_ms']} ms full, "
            f"{with_snapshot} ms from a snapshot (target <= {TARGET_SNAPSHOT_MS:.0f}: {verdict})"
        )
    figures["meets_target"] = with_snapshot is not None and with_snapshot <= TARGET_SNAPSHOT_MS
    return figures


def _long_game(events: int) -> list[tuple[list[NewEvent], Metadata]]:
    """A two-seat greedy-bot match of at least `events` events, as one batch per command."""
    chance = random.Random(11)
    start = StartGame(seats=("ann", "bob"), rules=Rules(match_target=1_000_000), seed="load")
    first = decide(NEW_GAME, start, None)
    state = fold(NEW_GAME, first)
    batches = [_batch(first, None)]
    written = len(first)
    while written < events:
        if state.finished:
            raise RuntimeError(f"the match ended after {written} events")
        waiting = seeding_seats(state)
        assert state.deal is not None or waiting
        seat = waiting[0] if waiting else next(iter(claimants(state)), state.deal.turn)  # type: ignore[union-attr]
        new = decide(state, greedy_bot(state, seat, chance), seat)
        state = fold(state, new)
        batches.append(_batch(new, seat))
        written += len(new)
    return batches


def _batch(events: list[Event], seat: int | None) -> tuple[list[NewEvent], Metadata]:
    return [to_new(e) for e in events], Metadata(command_id=uuid.uuid4().hex, actor=seat)


def _snapshots() -> tuple[ModuleType, ModuleType] | None:
    """The snapshot adapter and the service's snapshot codec, when this code base has them."""
    try:
        return (
            importlib.import_module("infra.postgres.snapshots"),
            importlib.import_module("services.app.snapshots"),
        )
    except ModuleNotFoundError:
        return None


async def _measure(
    url: str,
    commands: list[tuple[list[NewEvent], Metadata]],
    snapshots: tuple[ModuleType, ModuleType] | None,
) -> dict[str, Any]:
    game = f"load-{uuid.uuid4().hex[:8]}"
    store = await PostgresEventStore.open(url)
    try:
        await store.append_batches(game, commands)
        rows = await store.read(game)
        state = fold(NEW_GAME, (from_recorded(r) for r in rows))
    finally:
        await store.close()
    full = [await _cold(url, game) for _ in range(REPEATS)]
    figures: dict[str, Any] = {
        "full_ms": round(statistics.median(t for t, _ in full), 2),
        "full_read_ms": round(statistics.median(r for _, r in full), 2),
        "snapshot_ms": None,
    }
    if snapshots is not None:
        adapter, codec = snapshots
        # the newest version a running service would have snapshotted
        at = state.version - state.version % codec.EVERY
        kept = fold(NEW_GAME, (from_recorded(r) for r in rows[:at]))
        store = await PostgresEventStore.open(url)
        try:
            await adapter.PostgresSnapshots(store.pool).save(
                codec.snapshot(game, kept, rows[at - 1].hash)
            )
        finally:
            await store.close()
        timed = [await _from_snapshot(url, game, snapshots, state) for _ in range(REPEATS)]
        figures["snapshot_ms"] = round(statistics.median(timed), 2)
        figures["snapshot_version"] = at
    return figures


async def _cold(url: str, game: str) -> tuple[float, float]:
    """(whole load, its read) in ms, on a fresh pool."""
    store = await PostgresEventStore.open(url)
    try:
        await store.ping()  # the connection is not part of a load
        started = time.perf_counter()
        rows = await store.read(game)
        read = time.perf_counter()
        fold(NEW_GAME, (from_recorded(r) for r in rows))
        done = time.perf_counter()
    finally:
        await store.close()
    return 1000 * (done - started), 1000 * (read - started)


async def _from_snapshot(
    url: str, game: str, snapshots: tuple[ModuleType, ModuleType], expected: Game
) -> float:
    adapter, codec = snapshots
    store = await PostgresEventStore.open(url)
    try:
        kept_by = adapter.PostgresSnapshots(store.pool)
        await store.ping()
        started = time.perf_counter()
        kept = await kept_by.load(game, codec.SCHEMA)
        state = codec.restored(kept)
        rows = await store.read(game, after=state.version)
        state = fold(state, (from_recorded(r) for r in rows))
        done = time.perf_counter()
    finally:
        await store.close()
    if state != expected:
        raise RuntimeError("the snapshot's load is not the full fold's state")
    return 1000 * (done - started)
