"""The GameIndex contract: every adapter (SQLite, PostgreSQL) passes this same module."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from domain.rules import Rules
from infra.ports.events import EventStore, NewEvent
from infra.ports.games import AlreadyRematched, GameIndex
from services.bootstrap import Adapters

CLOCKED = Rules(turn_seconds=30)
CLASSIC = Rules()
OVER = NewEvent("game_finished", b'{"winners": [1], "reason": "thirty_one", "seed": null}')


def game() -> str:
    return f"game-{uuid.uuid4().hex}"


@pytest.fixture
def index(adapters: Adapters) -> GameIndex:
    return adapters.games


async def created(
    index: GameIndex,
    store: EventStore,
    rules: Rules = CLASSIC,
    events: int = 2,
    rematch_of: str | None = None,
) -> str:
    """A game indexed, then appended, as the game service creates one."""
    game_id = game()
    await index.add(game_id, ["ann", "bob"], rules, rematch_of=rematch_of)
    await store.append(game_id, 0, [NewEvent("game_started", b"{}")] * events)
    return game_id


async def finished(index: GameIndex, store: EventStore, winner: int = 1) -> str:
    game_id = await created(index, store)
    await store.append(game_id, 2, [OVER])
    await index.finish(game_id, [winner], "thirty_one")
    return game_id


async def test_a_game_is_listed_with_its_seats_rules_and_the_version_of_its_events(
    index: GameIndex, store: EventStore
) -> None:
    game_id = await created(index, store, CLOCKED, events=3)
    shown = await index.get(game_id)
    assert shown is not None
    assert (shown.seats, shown.rules, shown.status) == (("ann", "bob"), CLOCKED, "in_progress")
    assert (shown.version, shown.winners, shown.reason) == (3, None, None)
    rows = await store.read(game_id)
    assert shown.updated == rows[-1].recorded_at and shown.created <= shown.updated
    await store.append(game_id, 3, [NewEvent("cards_led", b"{}")])
    later = await index.get(game_id)
    assert later is not None and later.version == 4
    assert later.updated == (await store.read(game_id))[-1].recorded_at


async def test_a_finished_game_keeps_its_winners_and_reason(
    index: GameIndex, store: EventStore
) -> None:
    game_id = await finished(index, store, winner=0)
    shown = await index.get(game_id)
    assert shown is not None
    assert (shown.status, shown.winners, shown.reason) == ("finished", (0,), "thirty_one")


async def test_games_are_listed_in_creation_order_a_page_at_a_time(
    index: GameIndex, store: EventStore
) -> None:
    since = datetime.now(UTC) - timedelta(seconds=1)
    ids = [await created(index, store) for _ in range(5)]
    seen: list[str] = []
    after = None
    while True:
        page = await index.search(created_since=since, after=after, limit=2)
        seen += [g.game_id for g in page if g.game_id in ids]
        if not page:
            break
        after = (page[-1].created, page[-1].game_id)
    assert seen == ids


async def test_the_list_filters_by_status_and_by_when_games_were_created_or_changed(
    index: GameIndex, store: EventStore
) -> None:
    old = await created(index, store)
    done = await finished(index, store)
    await asyncio.sleep(0.01)
    mark = datetime.now(UTC)
    await asyncio.sleep(0.01)
    young = await created(index, store)
    await store.append(old, 2, [NewEvent("cards_led", b"{}")])  # the old game changes now

    def ids(games: list[object]) -> set[str]:
        return {g.game_id for g in games} & {old, done, young}  # type: ignore[attr-defined]

    assert ids(await index.search(status="finished", limit=1000)) == {done}
    assert ids(await index.search(status="in_progress", limit=1000)) == {old, young}
    assert ids(await index.search(created_since=mark, limit=1000)) == {young}
    assert ids(await index.search(updated_since=mark, limit=1000)) == {old, young}
    assert ids(await index.search(status="in_progress", updated_since=mark, limit=1000)) == {
        old,
        young,
    }


async def test_a_game_is_listed_finished_as_soon_as_its_last_event_says_so(
    index: GameIndex, store: EventStore
) -> None:
    """The row is marked after the append that finished the game: a list read between the
    two (or after that write failed) still says finished, with the event's result, at the
    version it lists, and each status filter puts the game where that says."""
    game_id = await created(index, store)
    await store.append(game_id, 2, [OVER])  # the row still says in progress
    shown = await index.get(game_id)
    assert shown is not None
    assert (shown.status, shown.winners, shown.reason, shown.version) == (
        "finished",
        (1,),
        "thirty_one",
        3,
    )
    finished_ids = {g.game_id for g in await index.search(status="finished", limit=1000)}
    playing_ids = {g.game_id for g in await index.search(status="in_progress", limit=1000)}
    assert game_id in finished_ids and game_id not in playing_ids
    listed = [g for g in await index.search(limit=1000) if g.game_id == game_id]
    assert listed == [shown]
    await index.finish(game_id, [1], "thirty_one")  # the row written: the same entry
    assert await index.get(game_id) == shown


async def test_a_game_whose_first_append_never_happened_is_not_listed(
    index: GameIndex, store: EventStore
) -> None:
    ghost = game()
    await index.add(ghost, ["ann", "bob"], Rules())
    assert await index.get(ghost) is None
    assert ghost not in {g.game_id for g in await index.search(limit=1000)}


async def test_a_rematch_is_linked_both_ways_and_only_once(
    index: GameIndex, store: EventStore
) -> None:
    first = await finished(index, store)
    second = await created(index, store, rematch_of=first)
    before, after = await index.get(first), await index.get(second)
    assert before is not None and after is not None
    assert (before.rematch, after.rematch_of) == (second, first)
    with pytest.raises(AlreadyRematched) as again:
        await index.add(game(), ["ann", "bob"], Rules(), rematch_of=first)
    assert again.value.existing == second


async def test_a_game_whose_rematch_is_made_is_updated_then(
    index: GameIndex, store: EventStore
) -> None:
    """The rematch changes the finished game's entry (`rematch` is no longer null), so the
    entry is `updated` when it was made and a sync by `updated_since` finds it, though the
    game has no event since."""
    first = await finished(index, store)
    ended = await index.get(first)
    assert ended is not None
    await asyncio.sleep(0.01)
    mark = datetime.now(UTC)
    await asyncio.sleep(0.01)
    assert first not in {g.game_id for g in await index.search(updated_since=mark, limit=1000)}
    second = await created(index, store, rematch_of=first)
    linked = await index.get(first)
    made = await index.get(second)
    assert linked is not None and made is not None
    assert (linked.version, linked.rematch) == (ended.version, second)
    assert linked.updated == made.created > mark > ended.updated
    since = {g.game_id: g for g in await index.search(updated_since=mark, limit=1000)}
    assert since[first] == linked and second in since


async def test_racing_rematches_of_one_game_make_exactly_one(
    index: GameIndex, store: EventStore
) -> None:
    first = await finished(index, store)
    tries = [game() for _ in range(6)]
    results = await asyncio.gather(
        *(index.add(t, ["ann", "bob"], Rules(), rematch_of=first) for t in tries),
        return_exceptions=True,
    )
    made = [t for t, r in zip(tries, results, strict=True) if r is None]
    assert len(made) == 1
    assert all(isinstance(r, AlreadyRematched) for r in results if r is not None)
    linked = await index.get(first)
    assert linked is not None and linked.rematch == made[0]


async def test_removing_a_game_forgets_it_and_the_rematch_link_to_it(
    index: GameIndex, store: EventStore
) -> None:
    first = await finished(index, store)
    ghost = game()
    await index.add(ghost, ["ann", "bob"], Rules(), rematch_of=first)
    await index.remove(ghost)
    linked = await index.get(first)
    assert linked is not None and linked.rematch is None
    await created(index, store, rematch_of=first)  # the rematch can be made again


async def test_the_games_in_progress_with_a_clock_are_what_the_timers_start_from(
    index: GameIndex, store: EventStore
) -> None:
    timed = await created(index, store, CLOCKED)
    untimed = await created(index, store)
    over = await created(index, store, CLOCKED)
    await index.finish(over, [0], "timeout")
    listed = set(await index.clocked_in_progress())
    assert timed in listed and untimed not in listed and over not in listed


async def test_stale_rows_a_crash_left_are_found_for_the_repair(
    index: GameIndex, store: EventStore
) -> None:
    unfinished = await created(index, store)
    await store.append(unfinished, 2, [OVER])  # row not updated
    ongoing = await created(index, store)
    orphan = game()
    await index.add(orphan, ["ann", "bob"], Rules())
    stale = await index.stale(datetime.now(UTC) + timedelta(seconds=5))
    assert unfinished in stale.finished and ongoing not in stale.finished
    assert orphan in stale.orphans and ongoing not in stale.orphans
    margin = await index.stale(datetime.now(UTC) - timedelta(minutes=10))
    assert orphan not in margin.orphans  # a creation still under way is left alone


async def test_a_keyed_add_keeps_the_row_the_id_has_and_settle_writes_it_over(
    index: GameIndex, store: EventStore
) -> None:
    """Tries under one Idempotency-Key share the game id: a try's add leaves another's row
    (and adds one where there is none); the try whose append made the game settles the
    row as dealt, the rematch link moved with it; the status is the game's own."""
    first, other = await finished(index, store), await finished(index, store)
    game_id = game()
    await index.add(game_id, ["x", "y", "z"], CLOCKED, rematch_of=other, keyed=True)
    await index.add(game_id, ["ann", "bob"], CLASSIC, rematch_of=first, keyed=True)
    await store.append(game_id, 0, [NewEvent("game_started", b"{}")])
    kept = await index.get(game_id)
    assert kept is not None and (kept.seats, kept.rematch_of) == (("x", "y", "z"), other)
    await index.settle(game_id, ["ann", "bob"], CLASSIC, rematch_of=first)
    settled, was, now = await index.get(game_id), await index.get(other), await index.get(first)
    assert settled is not None and was is not None and now is not None
    assert (settled.seats, settled.rules, settled.rematch_of) == (("ann", "bob"), CLASSIC, first)
    assert (was.rematch, now.rematch) == (None, game_id)
    assert game_id not in await index.clocked_in_progress()
    await index.finish(game_id, [0], "thirty_one")
    await index.settle(game_id, ["ann", "bob"], CLASSIC, rematch_of=first)
    again = await index.get(game_id)
    assert again is not None and again.status == "finished"
    # settled with no row at all: written anew
    fresh = game()
    await index.settle(fresh, ["ann", "bob"], CLOCKED)
    await store.append(fresh, 0, [NewEvent("game_started", b"{}")])
    written = await index.get(fresh)
    assert written is not None and written.seats == ("ann", "bob")
    assert fresh in await index.clocked_in_progress()


async def test_a_keyed_add_or_a_settle_still_refuses_a_second_rematch(
    index: GameIndex, store: EventStore
) -> None:
    first = await finished(index, store)
    second = await created(index, store, rematch_of=first)
    for write in (index.add, index.settle):
        kwargs = {"keyed": True} if write == index.add else {}
        with pytest.raises(AlreadyRematched) as again:
            await write(game(), ["ann", "bob"], Rules(), rematch_of=first, **kwargs)
        assert again.value.existing == second


async def test_removing_keeps_a_game_that_has_events(index: GameIndex, store: EventStore) -> None:
    """A try whose append failed forgets the row; if another try under its key made the
    game meanwhile, the row is that game's and stays, with the rematch link to it."""
    first = await finished(index, store)
    made = await created(index, store, rematch_of=first)
    await index.remove(made)
    kept, linked = await index.get(made), await index.get(first)
    assert kept is not None and linked is not None and linked.rematch == made
