"""Group commit (infra/postgres/commits.py): appends that arrive while the store's lanes
are busy go to PostgreSQL together, one INSERT in one transaction, and each keeps the
answer it would have had alone. The lane is held by hand here, so that what waits, and
what leaves together, is known exactly."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import asyncpg
import msgspec
import pytest

from infra.ports.events import AppendResult, Conflict, Metadata, NewEvent
from infra.postgres import commits
from infra.postgres.connections import StatelessConnection
from infra.postgres.store import PostgresEventStore
from tests import servers
from tests.infra.test_store_contract import rehashed


def event(n: object) -> NewEvent:
    return NewEvent("CardsLed", msgspec.json.encode({"n": n}))


@pytest.fixture
async def pg_store(database_url: str) -> AsyncIterator[PostgresEventStore]:
    store = await servers.open_postgres_store(database_url, max_size=4, lanes=1)
    yield store
    await store.close()


async def queued(store: PostgresEventStore, *appends: Awaitable[AppendResult]) -> list[Any]:
    """The appends sent while the one lane is taken, then the lane let go: they wait,
    then leave together. Each one's answer, or what it raised."""
    lanes = store.commits
    lanes.running += 1  # the lane, taken
    tasks = [asyncio.ensure_future(a) for a in appends]
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(lanes.queue) == len(tasks), "every append waits for the lane"
    lanes.running -= 1
    lanes.next()
    return await asyncio.gather(*tasks, return_exceptions=True)


async def streams_of(store: PostgresEventStore, count: int) -> list[str]:
    """`count` new streams of one event each, whose heads the store knows."""
    names = [f"batch-{uuid.uuid4()}" for _ in range(count)]
    for name in names:
        await store.append(name, 0, [event(0)], Metadata(f"{name}/0", 0))
    return names


async def test_appends_that_wait_for_the_lane_go_together_and_each_gets_its_own_answer(
    pg_store: PostgresEventStore, statements: list[str]
) -> None:
    names = await streams_of(pg_store, 5)
    statements.clear()
    batches = pg_store.commits.batches

    results = await queued(
        pg_store,
        *(
            pg_store.append(
                name, 1, [event(i)] * (1 + i % 2), Metadata(f"{name}/1", i % 2, "r", f"f{i}")
            )
            for i, name in enumerate(names)
        ),
    )

    assert statements == ["batch"]  # one statement, one commit, for all five
    assert pg_store.commits.batches == batches + 1
    for i, (name, result) in enumerate(zip(names, results, strict=True)):
        rows = await pg_store.read(name)
        assert [r.hash for r in rows] == rehashed(rows)  # chained as if alone
        assert result == AppendResult(
            name, 2, 2 + i % 2, False, i % 2, f"f{i}", rows[-1].hash,
            hashes=tuple(r.hash for r in rows[1:]),
        )  # fmt: skip
        assert await pg_store.find_command(name, f"{name}/1") == AppendResult(
            name, 2, 2 + i % 2, actor=i % 2, fingerprint=f"f{i}"
        )
        assert {r.tx_id for r in rows[1:]} == {(await pg_store.read(names[0]))[1].tx_id}
    # the heads are known after it: the next append of each is one INSERT again
    await pg_store.append(names[0], 2, [event("next")])
    assert statements[-1] == "insert one"


async def test_new_streams_go_together_onto_the_genesis(
    pg_store: PostgresEventStore, statements: list[str]
) -> None:
    names = [f"batch-{uuid.uuid4()}" for _ in range(3)]
    results = await queued(pg_store, *(pg_store.append(n, 0, [event(n)]) for n in names))
    assert statements == ["batch"]
    for name, result in zip(names, results, strict=True):
        rows = await pg_store.read(name)
        assert (result.first_version, result.last_version) == (1, 1)
        assert [r.hash for r in rows] == rehashed(rows) == [result.last_hash]


async def test_a_repeated_command_breaks_the_batch_and_each_is_answered_alone(
    pg_store: PostgresEventStore, statements: list[str]
) -> None:
    """The repeat breaks the index of command records: nothing of the batch is written,
    every append is sent again alone, and the repeat gets its first answer."""
    names = await streams_of(pg_store, 3)
    first = await pg_store.append(names[0], 1, [event("first")], Metadata("again", 0, None, "f"))
    statements.clear()

    results = await queued(
        pg_store,
        pg_store.append(names[0], 2, [event("retry")], Metadata("again", 0, None, "f")),
        pg_store.append(names[1], 1, [event(1)], Metadata("b", 1)),
        pg_store.append(names[2], 1, [event(2)], Metadata("c", 1)),
    )

    assert statements[0] == "batch" and statements.count("batch") == 1
    assert results[0] == AppendResult(names[0], 2, 2, duplicate=True, actor=0, fingerprint="f")
    assert first.last_version == 2
    assert [(r.first_version, r.duplicate) for r in results[1:]] == [(2, False), (2, False)]
    assert [await pg_store.version(n) for n in names] == [2, 2, 2]


async def test_two_appends_at_one_version_of_one_stream_race_as_they_would_alone(
    pg_store: PostgresEventStore,
) -> None:
    names = await streams_of(pg_store, 2)
    results = await queued(
        pg_store,
        pg_store.append(names[0], 1, [event("ann")], Metadata("ann", 0)),
        pg_store.append(names[0], 1, [event("bob")], Metadata("bob", 1)),
        pg_store.append(names[1], 1, [event("other")], Metadata("other", 0)),
    )
    conflicts = [r for r in results[:2] if isinstance(r, Conflict)]
    written = [r for r in results[:2] if isinstance(r, AppendResult)]
    assert len(conflicts) == 1 and len(written) == 1  # exactly one wins
    assert (conflicts[0].expected, conflicts[0].actual) == (1, 2)
    assert isinstance(results[2], AppendResult) and results[2].last_version == 2
    rows = await pg_store.read(names[0])
    assert len(rows) == 2 and [r.hash for r in rows] == rehashed(rows)


async def test_an_append_onto_a_head_that_is_gone_is_sent_alone_and_the_rest_written(
    pg_store: PostgresEventStore, statements: list[str]
) -> None:
    """The store remembers a head from a transaction that rolled back: that append writes
    nothing in the batch, and alone, the function says where its stream stands."""
    names = await streams_of(pg_store, 3)
    async with pg_store.pool.acquire() as conn:
        transaction = conn.transaction()
        await transaction.start()
        await pg_store.append_on(conn, names[0], 1, [event("rolled back")])
        await transaction.rollback()
    statements.clear()

    results = await queued(
        pg_store,
        pg_store.append(names[0], 2, [event("onto nothing")], Metadata("x", 0)),
        pg_store.append(names[1], 1, [event(1)], Metadata("y", 0)),
        pg_store.append(names[2], 1, [event(2)], Metadata("z", 0)),
    )

    assert statements == ["batch", "function"]
    assert isinstance(results[0], Conflict) and results[0].actual == 1
    assert [r.last_version for r in results[1:]] == [2, 2]
    for name in names:
        rows = await pg_store.read(name)
        assert [r.hash for r in rows] == rehashed(rows)


async def test_an_append_whose_caller_gave_up_while_it_waited_is_never_sent(
    pg_store: PostgresEventStore,
) -> None:
    names = await streams_of(pg_store, 3)
    lanes = pg_store.commits
    lanes.running += 1
    tasks = [
        asyncio.ensure_future(pg_store.append(n, 1, [event(i)], Metadata(f"g{i}", 0)))
        for i, n in enumerate(names)
    ]
    for _ in range(5):
        await asyncio.sleep(0)
    tasks[1].cancel()
    lanes.running -= 1
    lanes.next()
    done = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(done[1], asyncio.CancelledError)
    assert [await pg_store.version(n) for n in names] == [2, 1, 2]


async def test_a_batch_whose_answer_is_lost_is_found_out_append_by_append(
    pg_store: PostgresEventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch was committed and its answer lost with the connection: each append is
    looked up by its command id, as a lost single append is, and told as recovered."""
    names = await streams_of(pg_store, 3)
    fetch = StatelessConnection.fetch

    async def committed_then_lost(self: StatelessConnection, query: str, *a: Any, **k: Any) -> Any:
        result = await fetch(self, query, *a, **k)
        if query == commits._TAKE_BATCH:
            raise asyncpg.ConnectionDoesNotExistError("the connection broke")
        return result

    monkeypatch.setattr(StatelessConnection, "fetch", committed_then_lost)
    results = await queued(
        pg_store,
        *(pg_store.append(n, 1, [event(i)], Metadata(f"lost{i}", i)) for i, n in enumerate(names)),
    )
    for i, (name, result) in enumerate(zip(names, results, strict=True)):
        assert isinstance(result, AppendResult), result
        assert (result.first_version, result.last_version, result.actor) == (2, 2, i)
        assert result.duplicate and result.recovered
        assert await pg_store.version(name) == 2


async def test_without_lanes_every_append_goes_alone_at_once(
    database_url: str, statements: list[str]
) -> None:
    store = await servers.open_postgres_store(database_url, max_size=4, lanes=None)
    try:
        names = [f"alone-{uuid.uuid4()}" for _ in range(6)]
        await asyncio.gather(*(store.append(n, 0, [event(n)]) for n in names))
        assert statements == ["insert first"] * 6
        assert store.commits.batches == 0
    finally:
        await store.close()


async def test_under_load_appends_go_in_batches_and_every_stream_stays_chained(
    pg_store: PostgresEventStore,
) -> None:
    """Many writers at once, each appending onto its own stream, with no lane held by
    hand: batches form by themselves, and every stream is whole and chained."""
    names = [f"load-{uuid.uuid4()}" for _ in range(24)]

    async def writer(name: str) -> None:
        for version in range(8):
            await pg_store.append(name, version, [event(version)], Metadata(f"w{version}", 0))

    await asyncio.gather(*(writer(n) for n in names))
    assert pg_store.commits.batches > 0 and pg_store.commits.batched > pg_store.commits.batches
    for name in names:
        rows = await pg_store.read(name)
        assert [r.version for r in rows] == list(range(1, 9))
        assert [r.hash for r in rows] == rehashed(rows)


async def test_the_batch_finds_each_head_by_the_primary_key_whatever_the_plan(
    pg_store: PostgresEventStore,
) -> None:
    """A connection plans its statement once and may keep the plan: one made while the
    events table was small must still find each head by the index, never by a scan of
    every row (which grew with the table: a replica slowed down as games were played)."""
    await streams_of(pg_store, 2)  # a table of a few rows
    async with pg_store.pool.acquire() as conn:
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        await conn.execute(f"PREPARE generic AS {commits._TAKE_BATCH}")
        try:
            plan = await conn.fetch("EXPLAIN EXECUTE generic(" + ", ".join(["'{}'"] * 14) + ")")
        finally:
            await conn.execute("DEALLOCATE generic")
            await conn.execute("RESET plan_cache_mode")
    text = "\n".join(row[0] for row in plan)
    assert "Index Scan using events_pkey on events e" in text, text
    assert "Seq Scan on events" not in text, text
