"""A rolling update: a replica of the release before hint inboxes and one of this code, on
one PostgreSQL and one Redis, serve the same game. The older one has no inbox; the newer
finds it listening on the shared channel and keeps its hints there, so each replica hears
the other's every append: a read right after a move on the other replica has it, long
before the feed's poll (a minute here) could have brought it."""

from __future__ import annotations

import asyncio
import random
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from domain.bots import random_bot
from harness.processes import ROOT, Service, bearer
from tests.e2e.play import Table

# the last revision whose replicas have no inbox (the one before they came)
BEFORE_INBOXES = "f5a9659cd734598d8bea8bba5d48528ab50436f5"


@pytest.fixture
def older_code(tmp_path: Path) -> Iterator[Path]:
    """The release before inboxes, checked out in a worktree of its own."""
    git = ["git", "-C", str(ROOT)]
    known = subprocess.run([*git, "cat-file", "-e", f"{BEFORE_INBOXES}^{{commit}}"], check=False)
    if known.returncode != 0:
        pytest.skip(f"this clone's history does not reach {BEFORE_INBOXES[:7]} (shallow)")
    tree = tmp_path / "older"
    subprocess.run(
        [*git, "worktree", "add", "--detach", "-q", str(tree), BEFORE_INBOXES], check=True
    )
    try:
        yield tree
    finally:
        subprocess.run([*git, "worktree", "remove", "--force", str(tree)], check=False)


async def version_on(client: httpx.AsyncClient, replica: Service, table: Table, seat: int) -> int:
    """The game's version as `replica` answers a seat's read of it."""
    got = await client.get(
        f"{replica.url}/games/{table.game_id}", headers=bearer(table.tokens[seat])
    )
    assert got.status_code == 200, got.text
    version: int = got.json()["version"]
    return version


async def test_an_older_replica_and_a_newer_one_each_hear_the_others_moves(
    database: str, redis_url: str, older_code: Path, tmp_path: Path, client: httpx.AsyncClient
) -> None:
    env = {
        "BURA_DATABASE_URL": database,
        "BURA_REDIS_URL": redis_url,
        "BURA_REDIS_PREFIX": f"mixed-{uuid.uuid4().hex[:8]}:",  # these two alone
        "BURA_FEED_POLL_SECONDS": "60",  # a read from a copy not told of a move stays stale
    }
    older = Service(env, root=older_code, log_dir=tmp_path)
    newer = Service(env, log_dir=tmp_path)
    try:
        await older.start().ready()  # migrates first: the newer finds the schema there
        await newer.start().ready()
        replicas = [older, newer]
        table = await Table.create(client, newer.url)
        chance = random.Random(7)
        for move in range(60):
            await table.sync(client, newer.url)
            if table.state.finished:
                break
            seat, command = table.next_move(random_bot, chance)
            # first every move on the newer (the older, publishing nothing, is known to
            # it by Redis's count alone), then on each in turn
            on = newer if move < 20 else replicas[move % 2]
            other = older if on is newer else newer
            answer = await table.send(client, on.url, seat, command)
            assert answer.status_code == 200, answer.text
            version = answer.json()["version"]
            seen = [await version_on(client, other, table, seat)]
            # the hint may still be on its way: a second at most, never the feed's minute
            for _ in range(20):
                if seen[-1] == version:
                    break
                await asyncio.sleep(0.05)
                seen.append(await version_on(client, other, table, seat))
            assert seen[-1] == version, (move, on.url, seen)
        assert len(table.acked) > 20  # both phases
    finally:
        newer.stop()
        older.stop()
