"""The record read from a hot standby (infra/postgres/standby.py), on a real primary and a
real standby streaming from it: the standby carries the rows it has, the primary only
what it lacks, so a standby held behind still gives the primary's answer; a standby that
cannot be read leaves the whole read to the primary."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from harness.databases import free_port
from harness.postgres import PostgresServer
from harness.processes import Proxy
from infra.deadline import within
from infra.ports.events import Metadata, NewEvent, RecordedEvent
from infra.postgres.standby import StandbyReads
from infra.postgres.store import PostgresEventStore
from tests.records import Asked


def same(rows: list[RecordedEvent]) -> list[tuple[int, bytes, bytes]]:
    return [(r.version, r.data, r.hash) for r in rows]


@pytest.fixture
async def stores(
    postgres_pair: tuple[PostgresServer, PostgresServer],
) -> AsyncIterator[tuple[PostgresEventStore, PostgresEventStore]]:
    primary, standby = postgres_pair
    on_primary = await PostgresEventStore.open(primary.url)
    on_standby = await PostgresEventStore.open(standby.url, min_size=0)
    try:
        yield on_primary, on_standby
    finally:
        await standby.replay(True)
        await on_standby.close()
        await on_primary.close()


async def appended(store: PostgresEventStore, game: str, version: int, count: int) -> int:
    events = [NewEvent("note", f'{{"n": {version + i}}}'.encode()) for i in range(count)]
    return (await store.append(game, version, events, Metadata())).last_version


async def test_the_standby_carries_what_it_has_and_the_primary_only_what_it_lacks(
    postgres_pair: tuple[PostgresServer, PostgresServer],
    stores: tuple[PostgresEventStore, PostgresEventStore],
) -> None:
    primary, standby = postgres_pair
    on_primary, on_standby = stores
    game = "standby-prefix"
    version = await appended(on_primary, game, 0, 3)
    version = await appended(on_primary, game, version, 3)
    await standby.caught_up(primary)
    await standby.replay(False)  # held at version 6
    version = await appended(on_primary, game, version, 4)
    asked = Asked(on_primary)
    record = StandbyReads(on_standby, asked)

    whole = await record.read(game)
    assert same(whole) == same(await on_primary.read(game)) and whole[-1].version == 10
    assert asked.reads == [(game, 6, None)]
    assert record.rows == {"standby": 6, "primary": 4} and record.errors == 0

    # what the standby holds whole is not asked of the primary
    assert [r.version for r in await record.read(game, until=5)] == [1, 2, 3, 4, 5]
    assert [r.version for r in await record.read(game, after=2, until=6)] == [3, 4, 5, 6]
    assert len(asked.reads) == 1
    # past what the standby holds: the primary gives it all
    assert [r.version for r in await record.read(game, after=8)] == [9, 10]
    assert asked.reads[-1] == (game, 8, None)
    # a game the standby has not seen yet at all, and one that does not exist
    await appended(on_primary, "standby-new", 0, 2)
    assert [r.version for r in await record.read("standby-new")] == [1, 2]
    assert await record.read("standby-none") == []

    await standby.replay(True)
    await standby.caught_up(primary)
    before = record.rows["primary"]
    assert same(await record.read(game)) == same(whole)
    assert record.rows["primary"] == before  # caught up: the primary found nothing to add


async def test_a_standby_that_cannot_be_read_leaves_the_whole_read_to_the_primary(
    stores: tuple[PostgresEventStore, PostgresEventStore],
) -> None:
    on_primary, _ = stores
    version = await appended(on_primary, "standby-down", 0, 3)
    nowhere = await PostgresEventStore.open(
        f"postgresql://postgres@127.0.0.1:{free_port()}/postgres", min_size=0, connect_timeout=1
    )
    record = StandbyReads(nowhere, on_primary)
    try:
        rows = await record.read("standby-down")
        assert [r.version for r in rows] == list(range(1, version + 1))
        assert record.errors == 1 and record.rows == {"standby": 0, "primary": 3}
    finally:
        await record.close()


async def test_a_standby_that_hangs_leaves_the_primary_time_to_answer_within_the_deadline(
    postgres_pair: tuple[PostgresServer, PostgresServer],
    stores: tuple[PostgresEventStore, PostgresEventStore],
) -> None:
    on_primary, _ = stores
    _, standby = postgres_pair
    version = await appended(on_primary, "standby-hangs", 0, 2)
    proxy = Proxy.before(standby.url).start()
    hung = await PostgresEventStore.open(proxy.via(standby.url), min_size=0)
    record = StandbyReads(hung, on_primary)
    try:
        proxy.pause()  # the standby takes the connection and never answers
        started = time.monotonic()
        with within(2.0):  # a request's deadline
            rows = await record.read("standby-hangs")
        assert [r.version for r in rows] == list(range(1, version + 1))
        assert record.errors == 1 and time.monotonic() - started < 2.0
    finally:
        proxy.resume()
        await record.close()
        proxy.close()
