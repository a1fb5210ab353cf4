"""What only the SQLite store has to show: its file, shared by more than one store."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.records import AppendResult, Conflict, NewEvent, StoreUnavailable
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
