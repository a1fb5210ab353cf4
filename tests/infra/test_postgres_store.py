"""What only the PostgreSQL store has to show: lost connections, the transaction ids, and
the chain's links computed by the store and checked by bura_append_chained."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import asyncpg
import msgspec
import pytest

from domain.chain import canonical, link
from harness.postgres import Fault, PostgresProxy
from infra.deadline import within
from infra.ports.events import (
    AppendResult,
    Metadata,
    NewEvent,
    OutcomeUnknown,
    StoreUnavailable,
    micros,
)
from infra.postgres.migrate import migrate
from infra.postgres.store import PostgresEventStore
from tests import servers
from tests.infra.test_store_contract import caught_up, read_along, rehashed


@pytest.fixture
async def pg_store(database_url: str) -> AsyncIterator[PostgresEventStore]:
    store = await servers.open_postgres_store(database_url, max_size=4)
    yield store
    await store.close()


def event(**payload: object) -> NewEvent:
    return NewEvent("CardsLed", msgspec.json.encode(payload))


async def test_an_append_killed_mid_flight_leaves_the_stream_untouched_and_can_be_retried(
    pg_store: PostgresEventStore, database_url: str
) -> None:
    stream = f"game-{uuid.uuid4()}"
    await pg_store.append(stream, 0, [event(n=1)])
    command = Metadata(command_id=str(uuid.uuid4()), actor=1)
    blocker = await asyncpg.connect(database_url)
    try:
        # An uncommitted append of version 2 makes ours wait on its row lock...
        blocking = blocker.transaction()
        await blocking.start()
        await pg_store.append_on(blocker, stream, 1, [event(n="blocker")])
        doomed = asyncio.create_task(pg_store.append(stream, 1, [event(n=2), event(n=3)], command))
        victim = await _backend_waiting_on_a_lock(blocker, doomed)
        # ...where its connection is killed, as by a crash or a failover.
        await blocker.execute("SELECT pg_terminate_backend($1)", victim)
        with pytest.raises(StoreUnavailable):
            await doomed
        await blocking.rollback()
    finally:
        await blocker.close()

    assert await pg_store.version(stream) == 1
    assert await pg_store.find_command(stream, command.command_id or "") is None
    retried = await pg_store.append(stream, 1, [event(n=2), event(n=3)], command)
    again = await pg_store.append(stream, 1, [event(n=2), event(n=3)], command)
    assert (retried.first_version, retried.last_version, retried.duplicate) == (2, 3, False)
    assert again == AppendResult(stream, 2, 3, duplicate=True, actor=1)
    events = await pg_store.read(stream)
    assert [msgspec.json.decode(e.data) for e in events] == [{"n": 1}, {"n": 2}, {"n": 3}]


async def _backend_waiting_on_a_lock(conn: asyncpg.Connection, task: asyncio.Task[object]) -> int:
    for _ in range(500):
        # the session waiting on this one's transaction (its query text may still be
        # the driver's own type lookup that came just before the append)
        pid = await conn.fetchval(
            "SELECT pid FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            " AND pg_backend_pid() = ANY (pg_blocking_pids(pid))"
        )
        if pid is not None:
            return int(pid)
        assert not task.done(), task
        await asyncio.sleep(0.01)
    raise AssertionError("the append never blocked")


async def test_each_event_records_the_id_of_the_transaction_that_wrote_it(
    pg_store: PostgresEventStore,
) -> None:
    stream = f"game-{uuid.uuid4()}"
    async with pg_store.pool.acquire() as conn, conn.transaction():
        await pg_store.append_on(conn, stream, 0, [event(n=1), event(n=2)])
        tx_id = await conn.fetchval("SELECT pg_current_xact_id()")

    assert {e.tx_id for e in await pg_store.read(stream)} == {tx_id}


async def test_an_unreachable_database_makes_the_store_unavailable() -> None:
    nowhere = f"postgresql://postgres@127.0.0.1:{servers.free_port()}/bura"

    with pytest.raises(StoreUnavailable):
        await PostgresEventStore.open(nowhere)
    with pytest.raises(StoreUnavailable):
        await migrate(nowhere)
    store = await PostgresEventStore.open(nowhere, min_size=0)  # connects on first use
    try:
        with pytest.raises(StoreUnavailable):
            await store.append(f"game-{uuid.uuid4()}", 0, [event(n=1)])
        with pytest.raises(StoreUnavailable):
            await store.read_all((0, 0))
        with pytest.raises(StoreUnavailable):
            await store.ping()
    finally:
        await store.close()


async def test_an_append_that_commits_late_is_not_skipped_by_a_global_reader(
    pg_store: PostgresEventStore,
) -> None:
    # Appends that commit while an older one, which took its position first, is still open:
    # a reader that followed positions alone would step past the slow one for good.
    store = pg_store
    checkpoint = await caught_up(store)
    slow, quick = f"slow-{uuid.uuid4()}", [f"quick-{uuid.uuid4()}" for _ in range(3)]
    ours = {slow, *quick}
    async with store.pool.acquire() as conn, conn.transaction():
        await store.append_on(conn, slow, 0, [NewEvent("Slow", b"{}")])
        await asyncio.gather(*(store.append(s, 0, [NewEvent("Quick", b"{}")]) for s in quick))
        seen, checkpoint = await read_along(store, checkpoint, ours, 4, timeout=0.3)
        assert slow not in {e.stream_id for e in seen}
    after, _ = await read_along(store, checkpoint, ours, count=4 - len(seen))
    seen += after

    assert sorted(e.stream_id for e in seen) == sorted(ours)  # each exactly once
    late = next(e for e in seen if e.stream_id == slow)
    assert late.position < min(e.position for e in seen if e.stream_id != slow)


async def test_the_head_stops_short_of_an_append_that_may_still_commit_before_it(
    pg_store: PostgresEventStore,
) -> None:
    # A reader moved to the head while an older transaction is open must still read that
    # transaction's events once it commits.
    store = pg_store
    slow, quick = f"slow-{uuid.uuid4()}", f"quick-{uuid.uuid4()}"
    async with store.pool.acquire() as conn, conn.transaction():
        await store.append_on(conn, slow, 0, [NewEvent("Slow", b"{}")])
        await store.append(quick, 0, [NewEvent("Quick", b"{}")])
        head = await store.head()
    seen, _ = await read_along(store, head, {slow, quick}, count=2)
    assert sorted(e.stream_id for e in seen) == sorted([slow, quick])


# --- answers lost after the append was sent ---------------------------------------------------


@pytest.fixture
async def proxied(database_url: str) -> AsyncIterator[tuple[PostgresProxy, PostgresEventStore]]:
    """A store that reaches its database through a proxy that can strike its answers."""
    proxy = PostgresProxy.before(database_url).start()
    store = await PostgresEventStore.open(proxy.via(database_url), max_size=3)
    try:
        yield proxy, store
    finally:
        proxy.resume()
        await store.close()
        proxy.close()


async def test_an_append_answered_past_the_deadline_after_commit_is_found_and_answered(
    proxied: tuple[PostgresProxy, PostgresEventStore],
) -> None:
    proxy, store = proxied
    stream = f"game-{uuid.uuid4()}"
    await store.append(stream, 0, [event(n=1)])
    proxy.strike(Fault("delay", seconds=30))  # far past the deadline

    with within(4.0):
        result = await store.append(stream, 1, [event(n=2)], Metadata("c-1", 0, fingerprint="f"))

    assert [f.action for f in proxy.struck] == ["delay"]  # the answer really was held back
    assert result == AppendResult(
        stream, 2, 2, duplicate=True, actor=0, fingerprint="f", recovered=True
    )
    assert [msgspec.json.decode(e.data) for e in await store.read(stream)] == [{"n": 1}, {"n": 2}]


async def test_an_append_whose_connection_is_reset_after_commit_is_found_and_answered(
    proxied: tuple[PostgresProxy, PostgresEventStore],
) -> None:
    proxy, store = proxied
    stream = f"game-{uuid.uuid4()}"
    proxy.strike(Fault("reset"))

    with within(5.0):
        result = await store.append(stream, 0, [event(n=1)], Metadata("c-1", 1))

    assert [f.action for f in proxy.struck] == ["reset"]
    assert (result.first_version, result.last_version, result.recovered) == (1, 1, True)
    assert await store.version(stream) == 1


async def test_a_reset_answer_whose_lookup_finds_the_network_down_a_moment_is_still_found(
    proxied: tuple[PostgresProxy, PostgresEventStore],
) -> None:
    """The answer lost, and the database out of reach for 0.3 s after: the lookup is tried
    again while the deadline leaves time (tried once, it answered an unknown outcome for
    an append that had been made)."""
    proxy, store = proxied
    stream = f"game-{uuid.uuid4()}"
    proxy.strike(Fault("reset", seconds=0.3))

    with within(5.0):
        result = await store.append(stream, 0, [event(n=1)], Metadata("c-1", 1))

    assert [f.action for f in proxy.struck] == ["reset"]
    assert (result.first_version, result.last_version, result.recovered) == (1, 1, True)
    assert await store.version(stream) == 1


async def test_a_lost_answer_found_with_no_time_left_is_unknown_never_unavailable(
    proxied: tuple[PostgresProxy, PostgresEventStore],
) -> None:
    """The append was sent and its answer lost, and the deadline has passed by the time
    the store asks what became of it: the outcome is unknown. Reading the time left once
    refused at once as "nothing was written" (a stalled database under load showed it: a
    command answered store_unavailable was applied when the network let it through)."""
    _, store = proxied
    stream = f"game-{uuid.uuid4()}"
    with within(0.001):
        await asyncio.sleep(0.01)  # the deadline has passed
        with pytest.raises(OutcomeUnknown):
            await store._recover(stream, Metadata("c-1", 0), (1, None), "the answer was lost")


async def test_a_lost_answer_without_a_command_id_is_an_unknown_outcome(
    proxied: tuple[PostgresProxy, PostgresEventStore],
) -> None:
    proxy, store = proxied
    stream = f"game-{uuid.uuid4()}"
    proxy.strike(Fault("reset"))

    with pytest.raises(OutcomeUnknown):
        await store.append(stream, 0, [event(n=1)])

    assert await store.version(stream) == 1  # it was written: "nothing was written" would lie


async def test_a_stalled_server_answers_within_the_deadline_and_never_says_nothing_was_written(
    proxied: tuple[PostgresProxy, PostgresEventStore],
) -> None:
    """The append is sent and the server stalls: its fate is unknown, and said so. When the
    server comes back the held append runs after all, and the same command id then
    returns what it did."""
    proxy, store = proxied
    stream = f"game-{uuid.uuid4()}"
    await store.append(stream, 0, [event(n=1)])
    proxy.pause()
    began = time.monotonic()
    with within(1.0), pytest.raises(OutcomeUnknown) as unknown:
        await store.append(stream, 1, [event(n=2)], Metadata("c-stalled", 0))
    waited = time.monotonic() - began
    assert unknown.value.command_id == "c-stalled"
    assert waited < 10, f"answered after {waited:.1f}s, the deadline was 1s"

    proxy.resume()
    settled = await store.append(stream, 1, [event(n=2)], Metadata("c-stalled", 0))
    assert (settled.first_version, settled.last_version) == (2, 2)
    assert [msgspec.json.decode(e.data) for e in await store.read(stream)] == [{"n": 1}, {"n": 2}]


# --- the chain's links, computed by the store and checked by bura_append_chained ------------

# bura_append_chained with the links given: $10 previous, $11 recorded_at, $12 the hashes
# back to back. It answers the time and the hashes only when it made the links itself.
_GIVEN = (
    "SELECT appended_to, recorded_at, hashes FROM bura_append_chained("
    "$1, $2, ARRAY['CardsLed'], ARRAY[$3::bytea], ARRAY[1], NULL, 0, NULL, NULL, $4, $5, $6)"
)


def links_sent(store: PostgresEventStore) -> list[tuple[object, ...]]:
    """What the store's _links makes from now on, (previous, recorded_at, hashes) per
    append, as it is sent."""
    sent: list[tuple[object, ...]] = []
    links = store._links

    def spy(*args: object) -> tuple[object, ...]:
        made = links(*args)  # type: ignore[arg-type]
        sent.append(made)
        return made

    store._links = spy  # type: ignore[assignment, method-assign]
    return sent


async def test_the_links_the_store_computes_are_the_ones_recorded(
    pg_store: PostgresEventStore,
) -> None:
    sent = links_sent(pg_store)
    stream = f"links-{uuid.uuid4()}"
    await pg_store.append(stream, 0, [event(n=1), event(n=2)], Metadata("k-1", 0, "r"))
    await pg_store.append(stream, 2, [event(n=3)], Metadata("k-2", 1, "r"))
    rows = await pg_store.read(stream)

    assert [r.hash for r in rows] == rehashed(rows)
    # both appends chained by the store: its hashes and its times are the recorded ones
    assert [h for _, _, hashes in sent for h in hashes or ()] == [r.hash for r in rows]
    assert [at for _, at, _ in sent] == [micros(rows[0].recorded_at), micros(rows[2].recorded_at)]


async def test_a_store_that_knows_a_wrong_head_still_writes_a_whole_chain(
    pg_store: PostgresEventStore,
) -> None:
    stream = f"links-{uuid.uuid4()}"
    await pg_store.append(stream, 0, [event(n=1)])
    version, _, at = pg_store._heads[stream]
    pg_store._heads[stream] = (version, bytes(32), at)  # as if another writer had forked it

    await pg_store.append(stream, 1, [event(n=2)])
    rows = await pg_store.read(stream)
    assert [r.hash for r in rows] == rehashed(rows)


async def test_two_stores_taking_turns_on_a_stream_keep_one_chain_in_time_order(
    database_url: str,
) -> None:
    stream = f"links-{uuid.uuid4()}"
    one = await servers.open_postgres_store(database_url, max_size=2)
    two = await servers.open_postgres_store(database_url, max_size=2)
    try:
        version = 0
        for n in range(12):  # each writes after the other: its head is one behind
            writer = (one, two)[n % 2]
            if n % 4 == 3:
                await writer.read(stream)  # caught up: it knows the head again
            result = await writer.append(stream, version, [event(n=n), event(n=-n)])
            version = result.last_version
        rows = await one.read(stream)
    finally:
        await one.close()
        await two.close()
    assert [r.version for r in rows] == list(range(1, 25))
    assert [r.hash for r in rows] == rehashed(rows)
    times = [r.recorded_at for r in rows]
    assert times == sorted(times)


@pytest.mark.parametrize("wrong", ["previous", "count", "short", "missing", "earlier"])
async def test_links_that_do_not_continue_the_chain_are_not_taken(
    pg_store: PostgresEventStore, wrong: str
) -> None:
    stream = f"links-{uuid.uuid4()}"
    first = await pg_store.append(stream, 0, [event(n=1)])
    head_at = (await pg_store.read(stream))[0].recorded_at
    previous, at, hashes = first.last_hash, head_at, bytes(range(32))
    if wrong == "previous":
        previous = bytes(32)
    elif wrong == "count":
        hashes = hashes * 2
    elif wrong == "short":
        hashes = hashes[:31]
    elif wrong == "missing":
        previous = None
    else:
        at = head_at - timedelta(seconds=1)
    async with pg_store.pool.acquire() as conn:
        last, recorded, made = await conn.fetchrow(
            _GIVEN, stream, 1, b'{"n":2}', previous, at, hashes
        )

    rows = await pg_store.read(stream)
    assert last == 2 and made == rows[1].hash != bytes(range(32))
    assert [r.hash for r in rows] == rehashed(rows)
    assert recorded == rows[1].recorded_at != at  # the database's time, not the one sent


async def test_links_that_continue_the_chain_are_taken_as_sent(
    pg_store: PostgresEventStore,
) -> None:
    stream = f"links-{uuid.uuid4()}"
    first = await pg_store.append(stream, 0, [event(n=1)])
    head_at = (await pg_store.read(stream))[0].recorded_at
    at = head_at + timedelta(milliseconds=5)
    made = link(
        first.last_hash,
        canonical(stream, 2, "CardsLed", 1, b'{"n":2}', None, 0, None, micros(at)),
    )
    async with pg_store.pool.acquire() as conn:
        last, recorded, returned = await conn.fetchrow(
            _GIVEN, stream, 1, b'{"n":2}', first.last_hash, at, made
        )
    assert (last, recorded, returned) == (2, None, None)  # taken: nothing to tell back
    rows = await pg_store.read(stream)
    assert (rows[1].hash, rows[1].recorded_at) == (made, at)
    assert [r.hash for r in rows] == rehashed(rows)


async def test_links_onto_the_genesis_without_a_time_are_not_taken(
    pg_store: PostgresEventStore,
) -> None:
    stream = f"links-{uuid.uuid4()}"
    async with pg_store.pool.acquire() as conn:
        last, recorded, made = await conn.fetchrow(
            _GIVEN, stream, 0, b'{"n":1}', bytes(32), None, bytes(range(32))
        )
    rows = await pg_store.read(stream)
    assert (last, recorded, made) == (1, rows[0].recorded_at, rows[0].hash)
    assert [r.hash for r in rows] == rehashed(rows)


async def test_an_append_of_several_events_takes_each_its_own_32_bytes(
    pg_store: PostgresEventStore,
) -> None:
    stream = f"links-{uuid.uuid4()}"
    first = await pg_store.append(stream, 0, [event(n=0), event(n=1), event(n=2)])
    rows = await pg_store.read(stream)
    assert first.hashes == tuple(r.hash for r in rows) == tuple(rehashed(rows))
    assert len(set(first.hashes)) == 3 and first.last_hash == rows[-1].hash


async def test_links_made_by_the_database_are_told_back_and_remembered(
    pg_store: PostgresEventStore,
) -> None:
    """When the store does not know the head, the function links the rows and says how:
    the store answers those hashes and chains its next append onto them itself."""
    stream = f"links-{uuid.uuid4()}"
    await pg_store.append(stream, 0, [event(n=1)])
    del pg_store._heads[stream]  # as if another replica had written last
    second = await pg_store.append(stream, 1, [event(n=2), event(n=3)])
    rows = await pg_store.read(stream)
    assert second.hashes == (rows[1].hash, rows[2].hash)
    assert pg_store._heads[stream] == (3, rows[2].hash, micros(rows[2].recorded_at))

    sent = links_sent(pg_store)
    third = await pg_store.append(stream, 3, [event(n=4)])
    rows = await pg_store.read(stream)
    assert [hashes for _, _, hashes in sent] == [[rows[3].hash]]
    assert third.hashes == (rows[3].hash,)
    assert [r.hash for r in rows] == rehashed(rows)


async def test_a_replica_of_the_release_before_and_this_one_keep_one_chain(
    pg_store: PostgresEventStore,
) -> None:
    """During a rollout old replicas still call bura_append (migration 003, seven columns)
    or bura_append_linked (010), chaining onto the rows this release wrote."""
    stream = f"links-{uuid.uuid4()}"
    await pg_store.append(stream, 0, [event(n=1)])
    async with pg_store.pool.acquire() as conn:
        old = await conn.fetchrow(
            "SELECT * FROM bura_append($1, 1, ARRAY['CardsLed'], ARRAY[$2::bytea], ARRAY[1],"
            " 'old-1', 0, NULL, 'fp')",
            stream,
            b'{"n":2}',
        )
    assert len(old) == 7 and old["appended_to"] == 2
    await pg_store.append(stream, 2, [event(n=3)])  # its remembered head is behind: SQL links
    await pg_store.read(stream)
    await pg_store.append(stream, 3, [event(n=4)])  # caught up: its own links
    head = await pg_store.read(stream)
    async with pg_store.pool.acquire() as conn:  # the release of migration 010, with links
        at = head[-1].recorded_at + timedelta(milliseconds=1)
        made = link(
            head[-1].hash,
            canonical(stream, 5, "CardsLed", 1, b'{"n":5}', "old-2", 0, None, micros(at)),
        )
        linked = await conn.fetchrow(
            "SELECT * FROM bura_append_linked($1, 4, ARRAY['CardsLed'], ARRAY[$2::bytea],"
            " ARRAY[1], 'old-2', 0, NULL, 'fp', $3, $4, $5)",
            stream,
            b'{"n":5}',
            head[-1].hash,
            at,
            [made],
        )
    assert len(linked) == 9 and (linked["appended_to"], linked["hashes"]) == (5, [made])
    await pg_store.append(stream, 5, [event(n=6)])  # behind again: SQL links
    rows = await pg_store.read(stream)
    assert [r.version for r in rows] == [1, 2, 3, 4, 5, 6]
    assert [r.hash for r in rows] == rehashed(rows)
