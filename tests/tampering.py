"""A record edited behind the server's back, with SQL on the tables of each store: for
the tests of what the server makes of it (verify, webhooks, the start-up's repairs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from domain.chain import GENESIS, canonical, link
from infra.ports.events import EventStore, RecordedEvent
from infra.postgres.store import PostgresEventStore
from infra.sqlite.store import SqliteEventStore


class Tables:
    """SQL straight on the store's own database, written once for each dialect."""

    def __init__(self, store: EventStore) -> None:
        self.store = store

    async def execute(self, sqlite: str, postgres: str, *args: Any) -> None:
        if isinstance(self.store, SqliteEventStore):
            await self.store.db.run(lambda db: db.execute(sqlite, args))
        else:
            assert isinstance(self.store, PostgresEventStore)
            await self.store.pool.execute(postgres, *args)

    async def edit(self, game: str, version: int, old: str, new: str) -> None:
        """Replace text in one row's payload."""
        await self.execute(
            "UPDATE events SET data = CAST(replace(CAST(data AS TEXT), ?, ?) AS BLOB)"
            " WHERE stream_id = ? AND version = ?",
            "UPDATE events SET data = convert_to(replace(convert_from(data, 'UTF8'), $1, $2),"
            " 'UTF8') WHERE stream_id = $3 AND version = $4",
            old,
            new,
            game,
            version,
        )

    async def rewrite(self, game: str, type: str, **fields: Any) -> None:
        """The first row of `type` in the game, its payload's `fields` replaced."""
        row = next(r for r in await self.store.read(game) if r.type == type)
        data = msgspec.json.encode({**msgspec.json.decode(row.data), **fields})
        await self.overwrite(game, row.version, data)

    async def overwrite(self, game: str, version: int, data: bytes) -> None:
        """One row's payload replaced by these bytes, whatever they are."""
        await self.execute(
            "UPDATE events SET data = ? WHERE stream_id = ? AND version = ?",
            "UPDATE events SET data = $1 WHERE stream_id = $2 AND version = $3",
            data,
            game,
            version,
        )

    async def as_text(self, game: str, version: int) -> None:
        """SQLite: the row's payload kept as TEXT, its bytes unchanged (a hand edit with
        `cast` or `replace` leaves it so); PostgreSQL's bytea has no such thing."""
        if isinstance(self.store, SqliteEventStore):
            await self.execute(
                "UPDATE events SET data = CAST(data AS TEXT) WHERE stream_id = ? AND version = ?",
                "",
                game,
                version,
            )

    async def delete(self, game: str, version: int) -> None:
        await self.execute(
            "DELETE FROM events WHERE stream_id = ? AND version = ?",
            "DELETE FROM events WHERE stream_id = $1 AND version = $2",
            game,
            version,
        )

    async def move(self, game: str, version: int, to: int) -> None:
        await self.execute(
            "UPDATE events SET version = ? WHERE stream_id = ? AND version = ?",
            "UPDATE events SET version = $1 WHERE stream_id = $2 AND version = $3",
            to,
            game,
            version,
        )

    async def swap(self, game: str, a: int, b: int) -> None:
        """Two rows trade places, each keeping its own hash."""
        await self.move(game, a, 1_000_000)
        await self.move(game, b, a)
        await self.move(game, 1_000_000, b)

    async def rechain(self, game: str) -> None:
        """What a careful forger does next: every hash recomputed, so the chain holds."""
        rows = await self.store.read(game)
        for r, digest in zip(rows, rehashed(rows), strict=True):
            await self.execute(
                "UPDATE events SET hash = ? WHERE stream_id = ? AND version = ?",
                "UPDATE events SET hash = $1 WHERE stream_id = $2 AND version = $3",
                digest,
                game,
                r.version,
            )


def rehashed(rows: Sequence[RecordedEvent]) -> list[bytes]:
    """The chain as domain/chain.py computes it from the rows' recorded fields."""
    hashes, previous = [], GENESIS
    for r in rows:
        m = r.metadata
        previous = link(
            previous,
            canonical(
                r.stream_id,
                r.version,
                r.type,
                r.schema_version,
                r.data,
                m.command_id,
                m.actor,
                m.correlation_id,
                r.recorded_micros,
            ),
        )
        hashes.append(previous)
    return hashes
