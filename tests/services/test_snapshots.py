"""Snapshots (services/app/snapshots.py): a cache, never the truth. Loading from a
snapshot and the events after it gives the state a full fold gives; a cold load reads only
the events after the newest snapshot; a snapshot of another code schema, or naming
another record, is ignored."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.bots import random_bot
from domain.commands import StartGame
from domain.evolve import fold, replay
from domain.legal import claimants
from domain.rules import Rules
from domain.state import Game
from infra.ports.events import EventStore, RecordedEvent
from infra.ports.snapshots import Snapshot
from services.app.callers import Seating
from services.app.codec import from_recorded
from services.app.games import GameService
from services.app.snapshots import SCHEMA, restored, schema_of, snapshot
from services.bootstrap import Adapters
from tests.domain.play import Style, play_game, styles, tables
from tests.examples import examples


class CountedReads:
    """The real event store, counting the rows its reads return."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.rows = 0

    async def read(
        self, stream_id: str, after: int = 0, until: int | None = None
    ) -> list[RecordedEvent]:
        rows = await self.store.read(stream_id, after, until)
        self.rows += len(rows)
        return rows

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), styles, st.randoms(use_true_random=True))
def test_a_snapshot_and_the_events_after_it_fold_to_the_state_of_a_full_fold(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    played = play_game(start, style, chance, lambda state, events: None)
    cut = chance.randint(1, len(played.events))
    kept = snapshot("g", replay(played.events[:cut]), bytes(32))
    state = restored(kept)
    assert state is not None and state.version == cut
    assert fold(state, played.events[cut:]) == replay(played.events) == played.state


def test_a_snapshot_of_another_schema_is_not_restored() -> None:
    state = Game(seats=("ann", "bob"), version=3, started=True)
    kept = snapshot("g", state, bytes(32))
    assert restored(kept) == state
    other = Snapshot("g", 3, schema_of(2), kept.state, kept.head)
    assert schema_of(2) != SCHEMA and restored(other) is None


async def played(service: GameService, moves: int, seed: int = 7) -> Game:
    created = await service.create(["ann", "bob"], Rules(), seed=f"snap-{seed}")
    chance = random.Random(seed)
    state = await service.load(created.game_id)
    for _ in range(moves):
        if state.finished:
            break
        assert state.deal is not None
        seat = next(iter(claimants(state)), state.deal.turn)
        await service.execute(created.game_id, seat, random_bot(state, seat, chance))
        state = await service.load(created.game_id)
    await service.settled()
    return state


def service_on(adapters: Adapters, store: EventStore | None = None, **options: Any) -> GameService:
    return GameService(
        store or adapters.store,
        Seating(adapters.tokens, "operator"),
        adapters.hints,
        snapshots=adapters.snapshots,
        **options,
    )


def game_of(state: Game, services: Sequence[GameService]) -> str:
    [game_id] = {g for s in services for g, c in s._cache.items() if c.state == state}
    return game_id


async def test_a_cold_load_reads_only_the_events_after_the_newest_snapshot(
    adapters: Adapters,
) -> None:
    writer = service_on(adapters, snapshot_every=8)
    state = await played(writer, 30)
    game_id = game_of(state, [writer])
    assert adapters.snapshots is not None
    kept = await adapters.snapshots.load(game_id, SCHEMA)
    assert kept is not None and kept.version == state.version // 8 * 8 and kept.version > 8

    counted = CountedReads(adapters.store)
    reader = service_on(adapters, counted)
    assert await reader.current(game_id) == (state, (await adapters.store.read(game_id))[-1].hash)
    # the row at the snapshot's version (to check its head) and those after it
    assert counted.rows == state.version - kept.version + 1


async def test_a_stream_resumes_from_the_newest_snapshot_no_later_than_it_saw(
    adapters: Adapters,
) -> None:
    """A stream resuming a few versions behind, where no feed holds them, folded the whole
    record from version 0: it starts from the newest snapshot at or before what it saw,
    and from nothing when that snapshot is later (its versions must all be rendered)."""
    writer = service_on(adapters, snapshot_every=8)
    state = await played(writer, 30)
    game_id = game_of(state, [writer])
    assert adapters.snapshots is not None
    kept = await adapters.snapshots.load(game_id, SCHEMA)
    assert kept is not None and kept.version > 8
    reader = service_on(adapters)
    base = await reader.resumed_from(game_id, max(kept.version, state.version - 1))
    rows = await adapters.store.read(game_id, until=kept.version)
    assert base.version == kept.version and base == fold(Game(), (from_recorded(r) for r in rows))
    assert (await reader.resumed_from(game_id, kept.version - 1)).version == 0
    assert (await reader.resumed_from(game_id, 0)).version == 0


async def test_snapshots_of_another_schema_or_another_record_are_ignored(
    adapters: Adapters,
) -> None:
    writer = service_on(adapters, snapshot_every=1_000_000)  # it writes none itself
    state = await played(writer, 20, seed=8)
    game_id = game_of(state, [writer])
    assert adapters.snapshots is not None
    assert await adapters.snapshots.load(game_id, SCHEMA) is None
    bogus = replay([])  # a state no fold of this game gives, at version 4
    wrong = Snapshot(game_id, 4, schema_of(2), snapshot(game_id, bogus, bytes(32)).state, bytes(32))
    await adapters.snapshots.save(wrong)
    counted = CountedReads(adapters.store)
    assert await service_on(adapters, counted).load(game_id) == state
    assert counted.rows == state.version  # every event, as without any snapshot

    # of this schema, but naming a head the record does not have at its version
    forged = Snapshot(game_id, 4, SCHEMA, snapshot(game_id, Game(version=4), b"").state, bytes(32))
    await adapters.snapshots.save(forged)
    counted = CountedReads(adapters.store)
    assert await service_on(adapters, counted).load(game_id) == state
    assert counted.rows == state.version  # still every event once
