"""The EventStore contract: every adapter (SQLite, PostgreSQL) passes this same module."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from domain.chain import GENESIS, canonical, link
from infra.deadline import within
from infra.ports.events import (
    START,
    AppendResult,
    Checkpoint,
    Conflict,
    EventStore,
    Metadata,
    NewEvent,
    RecordedEvent,
    StoreUnavailable,
    Touched,
)
from tests.tampering import rehashed

WRITERS = 20


def game() -> str:
    return f"game-{uuid.uuid4()}"


def event(type_: str = "CardsLed", **payload: object) -> NewEvent:
    return NewEvent(type_, msgspec.json.encode(payload))


def payload(e: RecordedEvent) -> object:
    return msgspec.json.decode(e.data)


async def caught_up(store: EventStore) -> Checkpoint:
    """The checkpoint after everything a global reader can see now."""
    checkpoint = START
    while page := await store.read_all(checkpoint):
        checkpoint = (page[-1].tx_id, page[-1].position)
    return checkpoint


async def read_along(
    store: EventStore,
    checkpoint: Checkpoint,
    streams: set[str],
    count: int,
    limit: int = 1000,
    timeout: float = 10.0,
) -> tuple[list[RecordedEvent], Checkpoint]:
    """Follow the global order from checkpoint until count events of streams have come.

    Polls: on PostgreSQL a commit shows only once every older transaction in the
    cluster has finished.
    """
    seen: list[RecordedEvent] = []
    deadline = asyncio.get_running_loop().time() + timeout
    while len(seen) < count:
        page = await store.read_all(checkpoint, limit)
        if page:
            checkpoint = (page[-1].tx_id, page[-1].position)
            seen += [e for e in page if e.stream_id in streams]
        elif asyncio.get_running_loop().time() > deadline:
            break
        else:
            await asyncio.sleep(0.01)
    return seen, checkpoint


# --- append and read -------------------------------------------------------------------


async def test_an_appended_batch_reads_back_as_written(store: EventStore) -> None:
    stream = game()
    led = {"seat": 1, "cards": ["AS", "10H"], "note": "козырь ✓"}
    metadata = Metadata(command_id=str(uuid.uuid4()), actor=1, correlation_id="req-9")
    batch = [
        NewEvent("CardsLed", msgspec.json.encode(led), schema_version=2),
        NewEvent("TurnPassed", b"{}"),
    ]

    result = await store.append(stream, 0, batch, metadata)

    assert (result.first_version, result.last_version, result.duplicate) == (1, 2, False)
    first, second = await store.read(stream)
    assert (first.stream_id, first.version, first.type) == (stream, 1, "CardsLed")
    assert first.data == batch[0].data
    assert payload(first) == led
    assert (first.schema_version, second.schema_version) == (2, 1)
    assert (second.version, second.type, second.data) == (2, "TurnPassed", b"{}")
    assert first.metadata == second.metadata == metadata
    for e in (first, second):
        assert e.recorded_at.tzinfo is not None
        assert abs(e.recorded_at - datetime.now(UTC)) < timedelta(minutes=1)
    assert (first.tx_id, first.position) < (second.tx_id, second.position)


async def test_versions_count_up_from_one_without_gaps(store: EventStore) -> None:
    stream = game()
    assert await store.version(stream) == 0
    assert await store.read(stream) == []

    results = [
        await store.append(stream, 0, [event(n=1)]),
        await store.append(stream, 1, [event(n=2), event(n=3), event(n=4)]),
        await store.append(stream, 4, [event(n=5), event(n=6)]),
    ]

    assert [(r.first_version, r.last_version) for r in results] == [(1, 1), (2, 4), (5, 6)]
    events = await store.read(stream)
    assert [e.version for e in events] == [1, 2, 3, 4, 5, 6]
    assert [payload(e) for e in events] == [{"n": n} for n in range(1, 7)]
    assert await store.version(stream) == 6


async def test_reads_between_versions(store: EventStore) -> None:
    stream = game()
    for n in range(5):
        await store.append(stream, n, [event(n=n + 1)])

    def versions(events: list[RecordedEvent]) -> list[int]:
        return [e.version for e in events]

    assert versions(await store.read(stream, after=2)) == [3, 4, 5]
    assert versions(await store.read(stream, until=2)) == [1, 2]
    assert versions(await store.read(stream, after=1, until=3)) == [2, 3]
    assert await store.read(stream, after=5) == []


async def test_an_empty_batch_is_refused(store: EventStore) -> None:
    with pytest.raises(ValueError):
        await store.append(game(), 0, [])


# --- optimistic concurrency --------------------------------------------------------------


async def test_a_stale_or_future_expected_version_conflicts_and_writes_nothing(
    store: EventStore,
) -> None:
    stream = game()
    await store.append(stream, 0, [event(n=1)])
    attempt = Metadata(command_id="lost-race")

    with pytest.raises(Conflict) as stale:
        await store.append(stream, 0, [event(n=2), event(n=3)], attempt)
    with pytest.raises(Conflict) as future:
        await store.append(stream, 5, [event(n=2)])

    assert (stale.value.stream_id, stale.value.expected, stale.value.actual) == (stream, 0, 1)
    assert (future.value.expected, future.value.actual) == (5, 1)
    assert [payload(e) for e in await store.read(stream)] == [{"n": 1}]
    # The failed attempt did not record its command id: a retry at the right version counts.
    assert await store.find_command(stream, "lost-race") is None
    retried = await store.append(stream, 1, [event(n=2)], attempt)
    assert (retried.first_version, retried.last_version, retried.duplicate) == (2, 2, False)


async def test_writers_racing_at_one_version_have_exactly_one_winner(store: EventStore) -> None:
    stream = game()
    winners = []
    for round_ in range(5):
        version = await store.version(stream)
        outcomes = await asyncio.gather(
            *(
                store.append(stream, version, [event(writer=w, round=round_)])
                for w in range(WRITERS)
            ),
            return_exceptions=True,
        )

        won = [o for o in outcomes if isinstance(o, AppendResult)]
        lost = [o for o in outcomes if isinstance(o, Conflict)]
        assert len(won) == 1 and len(lost) == WRITERS - 1, outcomes
        assert (won[0].first_version, won[0].last_version) == (version + 1, version + 1)
        assert {(c.expected, c.actual) for c in lost} == {(version, version + 1)}
        winners.append(outcomes.index(won[0]))

    events = await store.read(stream)
    assert [e.version for e in events] == [1, 2, 3, 4, 5]
    assert [payload(e) for e in events] == [
        {"writer": w, "round": r} for r, w in enumerate(winners)
    ]


async def test_racing_writers_that_retry_lose_nothing_and_duplicate_nothing(
    store: EventStore,
) -> None:
    stream, batches_each = game(), 3

    async def writer(w: int) -> list[tuple[AppendResult, list[NewEvent]]]:
        won = []
        for b in range(batches_each):
            batch = [event("CardDrawn", writer=w, batch=b, card=i) for i in range(2)]
            while True:
                try:
                    result = await store.append(stream, await store.version(stream), batch)
                except Conflict:
                    continue  # someone else got this version: re-read and retry
                won.append((result, batch))
                break
        return won

    results = [r for rs in await asyncio.gather(*map(writer, range(WRITERS))) for r in rs]

    events = await store.read(stream)
    total = WRITERS * batches_each * 2
    assert [e.version for e in events] == list(range(1, total + 1))
    spans = sorted((r.first_version, r.last_version) for r, _ in results)
    assert spans == [(v, v + 1) for v in range(1, total + 1, 2)]
    for result, batch in results:  # each winner's batch, whole and in order, at its versions
        written = events[result.first_version - 1 : result.last_version]
        assert [e.data for e in written] == [e.data for e in batch]


async def test_batches_of_concurrent_writers_never_interleave_in_global_order(
    store: EventStore,
) -> None:
    checkpoint = await caught_up(store)
    streams = [game() for _ in range(3)]

    async def writer(w: int) -> None:
        for b in range(3):
            stream = streams[(w + b) % len(streams)]
            batch = [event(writer=w, batch=b, i=i) for i in range(3)]
            command = Metadata(command_id=f"{w}-{b}", actor=w)
            while True:
                try:
                    await store.append(stream, await store.version(stream), batch, command)
                    break
                except Conflict:
                    continue

    await asyncio.gather(*map(writer, range(10)))

    seen, _ = await read_along(store, checkpoint, set(streams), count=90)
    assert len(seen) == 90
    runs = [seen[i : i + 3] for i in range(0, 90, 3)]
    for run in runs:
        assert len({(e.stream_id, e.metadata.command_id) for e in run}) == 1
        assert [payload(e)["i"] for e in run] == [0, 1, 2]  # type: ignore[index]
    assert len({(run[0].stream_id, run[0].metadata.command_id) for run in runs}) == 30


# --- idempotency ------------------------------------------------------------------------


async def test_a_repeated_command_id_appends_nothing_and_returns_the_first_result(
    store: EventStore,
) -> None:
    stream, other = game(), game()
    command = Metadata(command_id=str(uuid.uuid4()), actor=0, fingerprint="f-1")
    batch = [event(n=1), event(n=2)]

    first = await store.append(stream, 0, batch, command)
    again = await store.append(stream, 0, batch, command)
    await store.append(stream, 2, [event(n=3)])  # the game moves on
    stale = await store.append(stream, 0, batch, command)
    # the same id from another seat, for another command: still the first one's record
    reused = await store.append(
        stream, 3, batch, Metadata(command.command_id, 1, fingerprint="f-2")
    )

    assert (first.first_version, first.last_version, first.duplicate) == (1, 2, False)
    assert (first.actor, first.fingerprint) == (0, "f-1")
    recorded = AppendResult(stream, 1, 2, duplicate=True, actor=0, fingerprint="f-1")
    assert again == stale == reused == recorded
    assert [payload(e) for e in await store.read(stream)] == [{"n": 1}, {"n": 2}, {"n": 3}]
    found = await store.find_command(stream, command.command_id or "")
    assert found == AppendResult(stream, 1, 2, actor=0, fingerprint="f-1")
    assert await store.find_command(stream, "never-sent") is None
    # Command ids are per stream: the same id elsewhere is a new command.
    elsewhere = await store.append(other, 0, batch, command)
    assert (elsewhere.stream_id, elsewhere.first_version, elsewhere.duplicate) == (other, 1, False)
    assert await store.version(stream) == 3


# --- a whole stream at once (import) -------------------------------------------------------


async def test_batches_start_a_stream_in_one_go_each_under_its_own_command(
    store: EventStore,
) -> None:
    stream = game()
    batches = [
        ([event(n=1), event(n=2)], Metadata(correlation_id="create")),
        ([event(n=3)], Metadata("c-1", 0, "req-1", "f-1")),
        ([event(n=4), event(n=5), event(n=6)], Metadata("c-2", 1, "req-2", "f-2")),
    ]

    result = await store.append_batches(stream, batches)

    assert (result.first_version, result.last_version, result.duplicate) == (1, 6, False)
    rows = await store.read(stream)
    assert [payload(r) for r in rows] == [{"n": n} for n in range(1, 7)]
    assert [r.metadata.command_id for r in rows] == [None, None, "c-1", "c-2", "c-2", "c-2"]
    assert [r.metadata.correlation_id for r in rows][2:4] == ["req-1", "req-2"]
    assert [r.hash for r in rows] == rehashed(rows)
    assert result.last_hash == rows[-1].hash
    assert await store.find_command(stream, "c-2") == AppendResult(
        stream, 4, 6, actor=1, fingerprint="f-2"
    )


async def test_batches_onto_a_stream_that_exists_write_nothing(store: EventStore) -> None:
    stream = game()
    await store.append(stream, 0, [event(n=1)])

    with pytest.raises(Conflict):
        await store.append_batches(stream, [([event(n=2)], Metadata("c-1"))])

    assert [payload(r) for r in await store.read(stream)] == [{"n": 1}]
    assert await store.find_command(stream, "c-1") is None


async def test_batches_repeating_a_command_id_write_nothing_at_all(store: EventStore) -> None:
    stream = game()
    twice = Metadata("c-1", 0)

    with pytest.raises(Conflict):
        await store.append_batches(
            stream, [([event(n=1)], twice), ([event(n=2)], Metadata("c-2")), ([event(n=3)], twice)]
        )

    assert await store.read(stream) == []
    assert await store.version(stream) == 0


# --- deadlines ------------------------------------------------------------------------------


async def test_with_no_time_left_nothing_is_asked_and_nothing_written(store: EventStore) -> None:
    stream = game()
    with within(0):
        with pytest.raises(StoreUnavailable):
            await store.append(stream, 0, [event(n=1)], Metadata("c-1", 0))
        with pytest.raises(StoreUnavailable):
            await store.read(stream)
    assert await store.version(stream) == 0
    assert await store.find_command(stream, "c-1") is None


async def test_within_a_deadline_the_store_answers_as_usual(store: EventStore) -> None:
    stream = game()
    with within(30):
        first = await store.append(stream, 0, [event(n=1)], Metadata("c-1", 0))
        again = await store.append(stream, 0, [event(n=1)], Metadata("c-1", 0))
        assert [payload(r) for r in await store.read(stream)] == [{"n": 1}]
    assert (first.duplicate, again.duplicate, again.recovered) == (False, True, False)


# --- the hash chain -------------------------------------------------------------------------


async def test_every_row_is_hashed_onto_the_one_before_it(store: EventStore) -> None:
    stream = game()
    one = await store.append(
        stream, 0, [event(n=1), event(n=2)], Metadata("c-1", 0, "req-1", fingerprint="f")
    )
    two = await store.append(stream, 2, [event("Ünïcode", text="козырь ✓")], Metadata(actor=1))
    await store.append(game(), 0, [event(n=1)])  # another stream has a chain of its own

    rows = await store.read(stream)
    assert [r.hash for r in rows] == rehashed(rows)
    assert len({r.hash for r in rows}) == 3 and all(len(r.hash) == 32 for r in rows)
    assert (one.last_hash, two.last_hash) == (rows[1].hash, rows[2].hash)
    assert (one.hashes, two.hashes) == ((rows[0].hash, rows[1].hash), (rows[2].hash,))
    assert rows[0].hash == link(
        GENESIS,
        canonical(
            stream, 1, "CardsLed", 1, rows[0].data, "c-1", 0, "req-1", rows[0].recorded_micros
        ),
    )


async def test_concurrent_retries_of_one_command_append_it_once(store: EventStore) -> None:
    stream = game()
    command = Metadata(command_id=str(uuid.uuid4()))

    results = await asyncio.gather(
        *(store.append(stream, 0, [event(n=1), event(n=2)], command) for _ in range(WRITERS))
    )

    assert {(r.first_version, r.last_version) for r in results} == {(1, 2)}
    assert sorted(r.duplicate for r in results) == [False] + [True] * (WRITERS - 1)
    assert await store.version(stream) == 2


# --- the global order -------------------------------------------------------------------


async def test_a_checkpoint_loop_reads_every_stream_in_global_order_exactly_once(
    store: EventStore,
) -> None:
    checkpoint = await caught_up(store)
    streams = [game() for _ in range(5)]
    appended = []
    for round_ in range(4):
        for s in streams:
            await store.append(s, 2 * round_, [event(round=round_, i=0), event(round=round_, i=1)])
            appended += [(s, 2 * round_ + 1), (s, 2 * round_ + 2)]

    seen, checkpoint = await read_along(store, checkpoint, set(streams), count=40, limit=3)

    assert [(e.stream_id, e.version) for e in seen] == appended
    places = [(e.tx_id, e.position) for e in seen]
    assert places == sorted(places) and len(set(places)) == len(places)
    more, _ = await read_along(store, checkpoint, set(streams), count=1, timeout=0.2)
    assert more == []


async def test_the_head_is_where_a_reader_that_read_everything_would_stand(
    store: EventStore,
) -> None:
    """head() moves a reader past every event it can see now without reading them, and
    read_all from there gives exactly what is appended afterwards."""
    before = await caught_up(store)
    if before == START:
        assert await store.head() == START
    stream = game()
    await store.append(stream, 0, [event(n=1), event(n=2)])
    # on PostgreSQL a commit shows once every older transaction in the cluster has ended
    # (another test's, another database's): wait until a reader sees both, as head() must
    await read_along(store, before, {stream}, count=2)
    head = await store.head()
    assert head == await caught_up(store)
    assert await store.read_all(head) == []
    await store.append(stream, 2, [event(n=3)])
    later, _ = await read_along(store, head, {stream}, count=1)
    assert [(e.stream_id, e.version) for e in later] == [(stream, 3)]
    assert await store.head() == (later[0].tx_id, later[0].position)


async def test_touched_tells_the_page_read_all_would_give_without_its_events(
    store: EventStore,
) -> None:
    """touched(after, limit, kinds) describes exactly the page read_all(after, limit) gives:
    its size, its last place (where the next page starts), and the streams it touched,
    each with its last version there; asked for some types, only the streams holding one
    of them there, each with the ones it holds."""
    checkpoint = await caught_up(store)
    one, two, three = game(), game(), game()
    await store.append(one, 0, [event("CardsLed"), event("ClockStarted")])
    await store.append(two, 0, [event("CardsLed"), event("SeedingOpened")])
    await store.append(one, 2, [event("CardsLed"), event("SeedingOpened")])
    await store.append(three, 0, [event("ClockStarted"), event("CardsLed"), event("CardsLed")])
    await read_along(store, checkpoint, {one, two, three}, count=9)  # all of them visible
    asked = ("ClockStarted", "SeedingOpened")
    for limit in (1, 2, 3, 4, 6, 1000):
        after = checkpoint
        while page := await store.read_all(after, limit):
            told = await store.touched(after, limit)
            assert told.rows == len(page)
            assert told.checkpoint == (page[-1].tx_id, page[-1].position)
            last: dict[str, int] = {}
            for row in page:
                last[row.stream_id] = max(row.version, last.get(row.stream_id, 0))
            assert {s.stream_id: s.version for s in told.streams} == last
            assert len(told.streams) == len(last)
            assert all(s.kinds == () for s in told.streams)
            for kinds in (("ClockStarted",), asked):
                some = await store.touched(after, limit, kinds)
                assert (some.rows, some.checkpoint) == (told.rows, told.checkpoint)
                held = {
                    s: tuple(sorted({r.type for r in page if r.stream_id == s} & set(kinds)))
                    for s in last
                }
                assert {(s.stream_id, s.version, s.kinds) for s in some.streams} == {
                    (s, v, held[s]) for s, v in last.items() if held[s]
                }
            after = told.checkpoint
        assert await store.touched(after, limit) == Touched((), 0, after)
        assert await store.touched(after, limit, asked) == Touched((), 0, after)
    whole = await store.touched(checkpoint, 1000, asked)
    assert {
        s.stream_id: (s.version, s.kinds) for s in whole.streams if s.stream_id in (one, two, three)
    } == {
        one: (4, asked),
        two: (2, ("SeedingOpened",)),
        three: (3, ("ClockStarted",)),
    }


async def test_a_checkpoint_is_issued_only_where_an_event_is(store: EventStore) -> None:
    """issued() tells a checkpoint read_all gave (START, or an event's own position) from
    one made up: past the head, between two events, or of another store's making."""
    assert await store.issued(START)
    stream = game()
    await store.append(stream, 0, [event(n=1), event(n=2)])
    rows = await store.read(stream)
    for row in rows:
        assert await store.issued((row.tx_id, row.position))
    last = rows[-1]
    for made_up in (
        (last.tx_id, last.position + 1_000_000),
        (last.tx_id + 1_000_000, 0),
        (2**63 - 1, 2**63 - 1),
        (0, 2**63 - 1),
    ):
        assert not await store.issued(made_up), made_up


# --- lifecycle ------------------------------------------------------------------


async def test_a_closed_store_is_unavailable(store: EventStore) -> None:
    await store.ping()
    await store.close()

    with pytest.raises(StoreUnavailable):
        await store.append(game(), 0, [event()])
    with pytest.raises(StoreUnavailable):
        await store.ping()
