"""What only the SQLite store has to show: its file, shared by more than one store."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from infra.ports.events import START, AppendResult, Conflict, Metadata, NewEvent, StoreUnavailable
from infra.sqlite.store import append_in_transaction
from tests import servers


async def test_two_stores_on_one_file_share_streams_and_versions(tmp_path: Path) -> None:
    one, two = servers.sqlite_store(tmp_path / "g.db"), servers.sqlite_store(tmp_path / "g.db")
    try:
        assert await one.append("g", 0, [NewEvent("A", b"{}")]) == AppendResult("g", 1, 1)
        with pytest.raises(Conflict):
            await two.append("g", 0, [NewEvent("B", b"{}")])
        assert await two.append("g", 1, [NewEvent("B", b"{}")]) == AppendResult("g", 2, 2)
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
