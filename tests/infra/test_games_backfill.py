"""The games index of a store written before it existed: PostgreSQL migration 008 and the
SQLite schema step both index every old game, finished ones with their result."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import asyncpg

from domain.commands import Concede, StartGame
from domain.decide import decide
from domain.events import Event
from domain.evolve import fold
from domain.rules import Rules
from domain.state import NEW_GAME
from infra.ports.events import Metadata
from infra.postgres.migrate import migrate, migration_files
from infra.postgres.store import PostgresEventStore
from infra.sqlite import database
from infra.sqlite.games import SqliteGameIndex
from infra.sqlite.store import append_in_transaction
from services.app.codec import to_new
from tests import servers

RULES = Rules(match_target=2, stake=3)


class StoreOfThatRelease(PostgresEventStore):
    """Appends as the releases before migration 010 did: bura_append, links made in SQL."""

    append_statement = "SELECT * FROM bura_append($1, $2, $3, $4, $5, $6, $7, $8, $9)"
    chained_answer = False

    def _links(self, *_: object) -> tuple[None, None, None]:
        return None, None, None


def old_game(seed: str, finished: bool) -> list[Event]:
    """A game as it was written before the index: dealt, and conceded to its end."""
    events = decide(NEW_GAME, StartGame(seats=("ann", "bob"), rules=RULES, seed=seed), None)
    state = fold(NEW_GAME, events)
    while finished and not state.finished:
        assert state.deal is not None
        more = decide(state, Concede(), state.deal.turn)
        events, state = events + more, fold(state, more)
    return events


async def test_migration_008_indexes_every_game_written_before_it(postgres_admin_url: str) -> None:
    before = [n for n, _ in migration_files() if n < "008"][-1]
    with servers.fresh_database(postgres_admin_url, migrated=False) as url:
        await migrate(url, until=before)
        store = await StoreOfThatRelease.open(url)
        try:
            for game_id, finished in (("old-on", False), ("old-over", True)):
                events = old_game(game_id, finished)
                await store.append(game_id, 0, [to_new(e) for e in events], Metadata())
        finally:
            await store.close()
        await migrate(url)
        conn = await asyncpg.connect(url)
        try:
            rows = {
                r["stream_id"]: r
                for r in await conn.fetch(
                    "SELECT stream_id, seats, rules, status, winners, reason, clocked FROM games"
                )
            }
        finally:
            await conn.close()
    assert set(rows) == {"old-on", "old-over"}
    assert rows["old-on"]["status"] == "in_progress" and rows["old-on"]["winners"] is None
    assert rows["old-over"]["status"] == "finished" and rows["old-over"]["reason"] == "conceded"
    assert '"stake": 3' in rows["old-on"]["rules"] and rows["old-on"]["clocked"] is False
    assert rows["old-on"]["seats"] == '["ann", "bob"]'


async def test_the_sqlite_step_indexes_every_game_written_before_it(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    step = database.SCHEMA.index(database._index_games)
    db = sqlite3.connect(path, isolation_level=None)
    for number, earlier in enumerate(database.SCHEMA[:step], start=1):
        if isinstance(earlier, str):
            db.executescript(earlier)
        else:
            earlier(db)
        db.execute(f"PRAGMA user_version = {number}")
    for game_id, finished in (("old-on", False), ("old-over", True)):
        events = [to_new(e) for e in old_game(game_id, finished)]
        db.execute("BEGIN IMMEDIATE")
        append_in_transaction(db, game_id, 0, events, Metadata())
        db.execute("COMMIT")
    db.close()
    opened = await database.SqliteDatabase.open(path)
    try:
        index = SqliteGameIndex(opened)
        on, over = await index.get("old-on"), await index.get("old-over")
    finally:
        await opened.close()
    assert on is not None and over is not None
    assert (on.status, on.seats, on.rules) == ("in_progress", ("ann", "bob"), RULES)
    assert (over.status, over.reason, over.winners) == ("finished", "conceded", (1,))
