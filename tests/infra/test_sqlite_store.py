"""What only the SQLite store has to show: its file, shared by more than one store."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from infra.deadline import within
from infra.ports.events import (
    START,
    AppendResult,
    Conflict,
    Metadata,
    NewEvent,
    OutcomeUnknown,
    StoreUnavailable,
)
from infra.sqlite.database import SCHEMA
from infra.sqlite.store import append_in_transaction
from tests import servers
from tests.infra.test_store_contract import rehashed


async def test_two_stores_on_one_file_share_streams_and_versions(tmp_path: Path) -> None:
    one, two = servers.sqlite_store(tmp_path / "g.db"), servers.sqlite_store(tmp_path / "g.db")
    try:
        assert (await one.append("g", 0, [NewEvent("A", b"{}")])).last_version == 1
        with pytest.raises(Conflict):
            await two.append("g", 0, [NewEvent("B", b"{}")])
        assert (await two.append("g", 1, [NewEvent("B", b"{}")])).last_version == 2
        assert [e.type for e in await one.read("g")] == ["A", "B"]
    finally:
        await one.close()
        await two.close()


async def test_an_in_memory_store_works_and_an_impossible_path_is_unavailable(
    tmp_path: Path,
) -> None:
    memory = servers.sqlite_store()
    assert (await memory.append("g", 0, [NewEvent("A", b"{}")])).last_version == 1
    await memory.close()

    with pytest.raises(StoreUnavailable):
        servers.sqlite_store(tmp_path / "no" / "such" / "dir.db")


async def test_a_writer_waits_for_an_open_append_and_the_global_order_keeps_both(
    tmp_path: Path,
) -> None:
    # SQLite has one writer at a time: an append while another is open waits for it, so a
    # global reader can never see the later one first.
    store = servers.sqlite_store(tmp_path / "g.db")
    try:
        other = sqlite3.connect(store.db.path, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")
        append_in_transaction(other, "slow", 0, [NewEvent("Slow", b"{}")], Metadata())
        quick = asyncio.create_task(store.append("quick", 0, [NewEvent("Quick", b"{}")]))
        await asyncio.sleep(0.2)
        assert not quick.done()
        other.execute("COMMIT")
        other.close()
        await quick
        assert [e.stream_id for e in await store.read_all(START)] == ["slow", "quick"]
    finally:
        await store.close()


async def test_a_file_of_an_earlier_schema_gets_its_chain_computed_once(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as old:  # as the first schema wrote it
        old.executescript(SCHEMA[0])
        old.execute("PRAGMA user_version = 1")
        for version in (1, 2):
            old.execute(
                "INSERT INTO events (stream_id, version, type, data, command_id, actor,"
                " correlation_id, recorded_at) VALUES ('g', ?, 'A', ?, 'k', 0, 'r', ?)",
                (version, b'{"n": %d}' % version, "2026-01-02T03:04:05.123456+00:00"),
            )
        old.execute("INSERT INTO commands VALUES ('g', 'k', 1, 2)")
    store = servers.sqlite_store(path)
    try:
        rows = await store.read("g")
        assert [r.hash for r in rows] == rehashed(rows)
        assert await store.find_command("g", "k") == AppendResult("g", 1, 2)
        await store.append("g", 2, [NewEvent("B", b"{}")])
        rows = await store.read("g")
        assert [r.hash for r in rows] == rehashed(rows)
    finally:
        await store.close()


# --- deadlines: another process holds the file's write lock ---------------------------------


@pytest.mark.slow  # it waits out a real lock for seconds
async def test_an_append_left_waiting_on_the_lock_is_an_unknown_outcome_then_settles(
    tmp_path: Path,
) -> None:
    store = servers.sqlite_store(tmp_path / "g.db")
    other = sqlite3.connect(store.db.path, isolation_level=None, check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")
        # long enough for the worker to take the append up, however busy the machine
        with within(3.0), pytest.raises(OutcomeUnknown) as unknown:
            await store.append("g", 0, [NewEvent("A", b"{}")], Metadata("c-1", 0))
        assert unknown.value.command_id == "c-1"
        other.execute("ROLLBACK")  # the append, still waiting in the worker, goes through
        again = await store.append("g", 0, [NewEvent("A", b"{}")], Metadata("c-1", 0))
        assert (again.first_version, again.duplicate) == (1, True)
        assert [e.type for e in await store.read("g")] == ["A"]
    finally:
        other.close()
        await store.close()


async def test_an_append_still_queued_at_its_deadline_never_runs(tmp_path: Path) -> None:
    store = servers.sqlite_store(tmp_path / "g.db")
    other = sqlite3.connect(store.db.path, isolation_level=None, check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")
        first = asyncio.create_task(store.append("g", 0, [NewEvent("A", b"{}")]))
        await asyncio.sleep(0.1)  # the worker is busy with it, waiting for the lock
        with within(0.3), pytest.raises(StoreUnavailable):
            await store.append("h", 0, [NewEvent("B", b"{}")], Metadata("c-2", 0))
        other.execute("ROLLBACK")
        await first
        assert await store.read("h") == []
        assert await store.find_command("h", "c-2") is None
    finally:
        other.close()
        await store.close()


async def test_a_file_opened_for_reading_only_is_refused_at_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file SQLite can only read (permissions, an immutable or read-only mount; here a
    read-only open, since the tests may run as root) is refused as it is opened, rather
    than served ready with every move refused."""
    path = tmp_path / "made.db"
    made = servers.sqlite_store(path)
    assert (await made.append("g", 0, [NewEvent("A", b"{}")])).last_version == 1
    await made.close()
    connect = sqlite3.connect

    def read_only(where: str, **options: object) -> sqlite3.Connection:
        return connect(f"file:{where}?mode=ro", uri=True, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(sqlite3, "connect", read_only)
    with pytest.raises(StoreUnavailable, match="readonly"):
        servers.sqlite_store(path)
