"""The Snapshots contract: the in-process, SQLite and PostgreSQL adapters pass this same
module (a disposable cache: the newest of a schema is kept, other schemas never answer)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from infra.memory.snapshots import InProcessSnapshots
from infra.ports.snapshots import Snapshot, Snapshots
from tests import servers


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def snapshots(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Snapshots]:
    if request.param == "memory":
        yield InProcessSnapshots()
        return
    if request.param == "sqlite":
        opened = await servers.sqlite_adapters(tmp_path / "events.db")
    else:
        opened = await servers.postgres_adapters(request.getfixturevalue("database_url"))
    assert opened.snapshots is not None
    yield opened.snapshots
    await opened.close()


def game() -> str:
    return f"game-{uuid.uuid4().hex}"


def kept(game_id: str, version: int, schema: str = "1.a") -> Snapshot:
    return Snapshot(
        game_id, version, schema, f"state {version}".encode(), bytes([version % 256]) * 32
    )


async def test_a_game_without_a_snapshot_has_none(snapshots: Snapshots) -> None:
    assert await snapshots.load(game(), "1.a") is None


async def test_a_saved_snapshot_loads_exactly_as_saved(snapshots: Snapshots) -> None:
    game_id = game()
    await snapshots.save(kept(game_id, 256))
    assert await snapshots.load(game_id, "1.a") == kept(game_id, 256)


async def test_a_later_snapshot_replaces_an_earlier_one(snapshots: Snapshots) -> None:
    game_id = game()
    await snapshots.save(kept(game_id, 256))
    await snapshots.save(kept(game_id, 512))
    assert await snapshots.load(game_id, "1.a") == kept(game_id, 512)


async def test_an_earlier_snapshot_never_replaces_a_later_one(snapshots: Snapshots) -> None:
    """Two replicas may save the same game in either order: the newest stays."""
    game_id = game()
    await snapshots.save(kept(game_id, 512))
    await snapshots.save(kept(game_id, 256))
    await snapshots.save(kept(game_id, 512))
    assert await snapshots.load(game_id, "1.a") == kept(game_id, 512)


async def test_a_snapshot_of_another_schema_is_never_returned(snapshots: Snapshots) -> None:
    game_id = game()
    await snapshots.save(kept(game_id, 768, schema="1.a"))
    assert await snapshots.load(game_id, "2.a") is None
    await snapshots.save(kept(game_id, 256, schema="2.a"))
    assert await snapshots.load(game_id, "2.a") == kept(game_id, 256, schema="2.a")
    assert await snapshots.load(game_id, "1.a") == kept(game_id, 768, schema="1.a")


async def test_games_keep_their_own_snapshots(snapshots: Snapshots) -> None:
    one, two = game(), game()
    await asyncio.gather(snapshots.save(kept(one, 256)), snapshots.save(kept(two, 512)))
    assert await snapshots.load(one, "1.a") == kept(one, 256)
    assert await snapshots.load(two, "1.a") == kept(two, 512)
