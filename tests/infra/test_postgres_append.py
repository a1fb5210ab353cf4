"""The PostgreSQL store's two ways to append (migration 012): one INSERT onto the head it
knows, else bura_append_chained; and the command records kept on the events' rows."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import msgspec
import pytest

from infra.ports.events import AppendResult, Conflict, Metadata, NewEvent
from infra.postgres.migrate import migrate, migration_files
from infra.postgres.store import PostgresEventStore
from tests import servers
from tests.infra.test_store_contract import rehashed


def event(n: object) -> NewEvent:
    return NewEvent("CardsLed", msgspec.json.encode({"n": n}))


@pytest.fixture
async def pg_store(database_url: str) -> AsyncIterator[PostgresEventStore]:
    store = await servers.open_postgres_store(database_url, max_size=2)
    yield store
    await store.close()


async def test_an_append_onto_the_head_the_store_knows_is_one_insert(
    pg_store: PostgresEventStore, statements: list[str]
) -> None:
    stream = f"take-{uuid.uuid4()}"
    first = await pg_store.append(stream, 0, [event(1)], Metadata("k-1", 0, "r", "f-1"))
    second = await pg_store.append(stream, 1, [event(2), event(3)], Metadata("k-2", 1, "r"))
    unkeyed = await pg_store.append(stream, 3, [event(4)])

    assert statements == ["insert first", "insert many", "insert one"]
    rows = await pg_store.read(stream)
    assert [r.hash for r in rows] == rehashed(rows)
    assert (first.hashes, second.hashes, unkeyed.hashes) == (
        (rows[0].hash,),
        (rows[1].hash, rows[2].hash),
        (rows[3].hash,),
    )
    assert await pg_store.find_command(stream, "k-1") == AppendResult(
        stream, 1, 1, actor=0, fingerprint="f-1"
    )
    assert await pg_store.find_command(stream, "k-2") == AppendResult(stream, 2, 3, actor=1)


async def test_a_repeat_onto_the_new_head_writes_nothing_and_answers_the_first(
    pg_store: PostgresEventStore, statements: list[str]
) -> None:
    """As a retry decided again on the state its first attempt made: the insert breaks
    the index of command records, and the first answer comes back."""
    stream = f"take-{uuid.uuid4()}"
    command = Metadata("k-1", 1, fingerprint="f")
    await pg_store.append(stream, 0, [event(1), event(2)], command)
    again = await pg_store.append(stream, 2, [event("again")], command)

    assert again == AppendResult(stream, 1, 2, duplicate=True, actor=1, fingerprint="f")
    assert statements == ["insert first", "insert one"]
    assert await pg_store.version(stream) == 2


async def test_a_head_remembered_from_a_rolled_back_transaction_is_not_appended_onto(
    pg_store: PostgresEventStore, statements: list[str]
) -> None:
    """The row the store chained onto is gone: the insert writes nothing, and the function
    says where the stream really stands (no gap, no fork)."""
    stream = f"take-{uuid.uuid4()}"
    await pg_store.append(stream, 0, [event(1)])
    async with pg_store.pool.acquire() as conn:
        transaction = conn.transaction()
        await transaction.start()
        await pg_store.append_on(conn, stream, 1, [event("rolled back")])
        await transaction.rollback()
    assert pg_store._heads[stream][0] == 2  # what the store believes

    with pytest.raises(Conflict) as conflict:
        await pg_store.append(stream, 2, [event(3)])

    assert (conflict.value.expected, conflict.value.actual) == (2, 1)
    assert statements == ["insert first", "insert one", "insert one", "function"]
    assert await pg_store.version(stream) == 1
    await pg_store.append(stream, 1, [event(2)])  # the function linked it: chained again
    rows = await pg_store.read(stream)
    assert [r.hash for r in rows] == rehashed(rows)


async def test_the_releases_before_find_the_records_of_this_one_and_this_one_theirs(
    pg_store: PostgresEventStore,
) -> None:
    """Their store reads `commands` (now a view of the records on the events' rows) and
    calls bura_append, which keeps its answers and writes the record the same way."""
    stream = f"take-{uuid.uuid4()}"
    await pg_store.append(stream, 0, [event(1), event(2)], Metadata("new", 0, fingerprint="f"))
    async with pg_store.pool.acquire() as conn:
        seen = await conn.fetch(
            "SELECT command_id, first_version, last_version, actor, fingerprint"
            " FROM commands WHERE stream_id = $1",
            stream,
        )
        old = await conn.fetchrow(
            "SELECT * FROM bura_append($1, 2, ARRAY['CardsLed'], ARRAY[$2::bytea], ARRAY[1],"
            " 'old', 1, NULL, 'g')",
            stream,
            b'{"n":3}',
        )
        repeat = await conn.fetchrow(  # behind the head: told a repeat at once
            "SELECT * FROM bura_append($1, 0, ARRAY['CardsLed'], ARRAY[$2::bytea], ARRAY[1],"
            " 'new', 0, NULL, 'f')",
            stream,
            b'{"n":4}',
        )
        with pytest.raises(asyncpg.UniqueViolationError):  # at the head: 23505, as before
            await conn.fetchrow(
                "SELECT * FROM bura_append($1, 3, ARRAY['CardsLed'], ARRAY[$2::bytea],"
                " ARRAY[1], 'new', 0, NULL, 'f')",
                stream,
                b'{"n":4}',
            )
    assert [tuple(r) for r in seen] == [("new", 1, 2, 0, "f")]
    assert (old["appended_from"], old["appended_to"], old["duplicate"]) == (3, 3, False)
    assert (repeat["appended_from"], repeat["appended_to"], repeat["duplicate"]) == (1, 2, True)
    assert (repeat["prior_actor"], repeat["prior_fingerprint"]) == (0, "f")
    assert await pg_store.find_command(stream, "old") == AppendResult(
        stream, 3, 3, actor=1, fingerprint="g"
    )
    again = await pg_store.append(stream, 3, [event(4)], Metadata("old", 1, fingerprint="g"))
    assert (again.first_version, again.duplicate) == (3, True)
    rows = await pg_store.read(stream)
    assert [r.version for r in rows] == [1, 2, 3]
    assert [r.hash for r in rows] == rehashed(rows)


def _before_012() -> str:
    return [n for n, _ in migration_files() if n < "012"][-1]


async def test_migration_012_keeps_every_command_record(postgres_admin_url: str) -> None:
    with servers.fresh_database(postgres_admin_url, migrated=False) as url:
        await migrate(url, until=_before_012())
        conn = await asyncpg.connect(url)
        try:
            for expected, key, count in ((0, "a", 2), (2, None, 1), (3, "b", 3)):
                await conn.fetchrow(
                    "SELECT * FROM bura_append_chained('old', $1, $2, $3, $4, $5, 1, NULL,"
                    " 'fp-' || $5)",
                    expected,
                    ["CardsLed"] * count,
                    [b"{}"] * count,
                    [1] * count,
                    key,
                )
        finally:
            await conn.close()
        assert await migrate(url) == ["012_command_on_its_event.sql"]
        store = await servers.open_postgres_store(url)
        try:
            assert await store.find_command("old", "a") == AppendResult(
                "old", 1, 2, actor=1, fingerprint="fp-a"
            )
            assert await store.find_command("old", "b") == AppendResult(
                "old", 4, 6, actor=1, fingerprint="fp-b"
            )
            repeat = await store.append("old", 6, [event(0)], Metadata("a", 1))
            rows = await store.read("old")
        finally:
            await store.close()
    assert (repeat.first_version, repeat.last_version, repeat.duplicate) == (1, 2, True)
    assert [r.version for r in rows] == [1, 2, 3, 4, 5, 6]
    assert [r.hash for r in rows] == rehashed(rows)  # the chain does not hash the record


async def test_migration_012_refuses_a_record_that_matches_no_event(
    postgres_admin_url: str,
) -> None:
    with servers.fresh_database(postgres_admin_url, migrated=False) as url:
        await migrate(url, until=_before_012())
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(
                "INSERT INTO commands (stream_id, command_id, first_version, last_version)"
                " VALUES ('nowhere', 'k', 1, 1)"
            )
        finally:
            await conn.close()
        with pytest.raises(asyncpg.RaiseError, match="1 command records match no event"):
            await migrate(url)
        conn = await asyncpg.connect(url)
        try:  # rolled back whole: the table and its row are still there
            assert await conn.fetchval("SELECT count(*) FROM commands") == 1
        finally:
            await conn.close()
