"""The event store on PostgreSQL (asyncpg): the production adapter of infra.ports.events."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import asyncpg
import msgspec
from asyncpg.exceptions import OperatorInterventionError, TooManyConnectionsError
from asyncpg.pool import PoolConnectionProxy

from infra.ports.events import (
    NO_METADATA,
    AppendResult,
    Checkpoint,
    Conflict,
    Metadata,
    NewEvent,
    RecordedEvent,
    StoreUnavailable,
)

# A connection of our own, or one lent by the pool.
Connection = asyncpg.Connection | PoolConnectionProxy

# A lost, refused or closed connection, a server shutting down or full: answer 503.
UNAVAILABLE = (
    OSError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    OperatorInterventionError,
    TooManyConnectionsError,
)


@contextmanager
def reachable() -> Iterator[None]:
    """Turn a connection failure into StoreUnavailable."""
    try:
        yield
    except UNAVAILABLE as e:
        if isinstance(e, ValueError):  # asyncpg reports bad arguments as InterfaceErrors too
            raise
        raise StoreUnavailable(f"{type(e).__name__}: {e}") from e


class _StatelessConnection(asyncpg.Connection):
    """A pooled connection released without asyncpg's reset query (RESET ALL, UNLISTEN,
    CLOSE ALL, advisory unlock): the store never sets session state, so that round trip
    on every release bought nothing. Open transactions are still ended on release."""

    def get_reset_query(self) -> str:
        return ""


_APPEND = "SELECT * FROM bura_append($1, $2, $3, $4, $5, $6, $7, $8, $9)"
_COLUMNS = (
    "stream_id, version, type, data, schema_version, command_id, actor,"
    " correlation_id, recorded_at, tx_id, position, hash"
)
_READ = f"SELECT {_COLUMNS} FROM events WHERE stream_id = $1 AND version > $2 ORDER BY version"
_READ_UNTIL = (
    f"SELECT {_COLUMNS} FROM events"
    " WHERE stream_id = $1 AND version > $2 AND version <= $3 ORDER BY version"
)
# Only transactions older than every running one: all of them have committed or
# aborted, so nothing can appear later below this line.
_READ_ALL = (
    f"SELECT {_COLUMNS} FROM events"
    " WHERE (tx_id, position) > ($1::xid8, $2::bigint)"
    " AND tx_id < pg_snapshot_xmin(pg_current_snapshot())"
    " ORDER BY tx_id, position LIMIT $3"
)
_VERSION = "SELECT coalesce(max(version), 0) FROM events WHERE stream_id = $1"
_FIND_COMMAND = (
    "SELECT first_version, last_version, actor, fingerprint FROM commands"
    " WHERE stream_id = $1 AND command_id = $2"
)


def _recorded(row: asyncpg.Record) -> RecordedEvent:
    return RecordedEvent(
        stream_id=row[0],
        version=row[1],
        type=row[2],
        data=row[3],
        schema_version=row[4],
        metadata=Metadata(command_id=row[5], actor=row[6], correlation_id=row[7]),
        recorded_at=row[8],
        tx_id=row[9],
        position=row[10],
        hash=row[11],
    )


class PostgresEventStore:
    """Owns an asyncpg pool; every append is one call of bura_append (one round trip)."""

    # The one statement of an append (a benchmark swaps in a variant of the function).
    append_statement = _APPEND

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    @classmethod
    async def open(
        cls,
        dsn: str,
        min_size: int = 1,
        max_size: int = 10,
        connect_timeout: float = 5.0,
        command_timeout: float = 10.0,
    ) -> PostgresEventStore:
        """A store on a new pool; min_size=0 defers connecting until first use.

        command_timeout bounds every statement: a stalled server answers 503 (and the
        client retries with its Idempotency-Key) instead of hanging the request.
        """
        with reachable():
            pool = await asyncpg.create_pool(
                dsn,
                min_size=min_size,
                max_size=max_size,
                timeout=connect_timeout,
                command_timeout=command_timeout,
                connection_class=_StatelessConnection,
            )
        return cls(pool)

    async def append(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        metadata: Metadata = NO_METADATA,
    ) -> AppendResult:
        with reachable():
            async with self.pool.acquire() as conn:
                return await self.append_on(conn, stream_id, expected_version, events, metadata)

    async def append_on(
        self,
        conn: Connection,
        stream_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        metadata: Metadata = NO_METADATA,
    ) -> AppendResult:
        """append on the caller's connection, e.g. inside a transaction it holds open.

        Inside a transaction, a lost race or a repeated command id aborts it: that
        raises Conflict, without telling a repeat apart, and the caller must roll back.
        """
        if not events:
            raise ValueError("nothing to append")
        try:
            row = await conn.fetchrow(
                self.append_statement,
                stream_id,
                expected_version,
                [e.type for e in events],
                [e.data for e in events],
                [e.schema_version for e in events],
                metadata.command_id,
                metadata.actor,
                metadata.correlation_id,
                metadata.fingerprint,
            )
        except asyncpg.UniqueViolationError:
            # Another writer took the version first, or the command id was already used.
            return await self._settle_race(conn, stream_id, expected_version, metadata)
        assert row is not None  # the function always returns its one row
        first, last, duplicate, head, last_hash, prior_actor, prior_fingerprint = row
        if first is None:
            raise Conflict(stream_id, expected_version, head)
        if duplicate:
            return AppendResult(stream_id, first, last, True, prior_actor, prior_fingerprint)
        return AppendResult(
            stream_id, first, last, False, metadata.actor, metadata.fingerprint, last_hash
        )

    async def _settle_race(
        self, conn: Any, stream_id: str, expected_version: int, metadata: Metadata
    ) -> AppendResult:
        if conn.is_in_transaction():  # aborted: nothing more can be read on it
            raise Conflict(stream_id, expected_version, expected_version + 1)
        if metadata.command_id is not None:
            prior = await self._find_command(conn, stream_id, metadata.command_id)
            if prior is not None:
                return msgspec.structs.replace(prior, duplicate=True)
        raise Conflict(stream_id, expected_version, await conn.fetchval(_VERSION, stream_id))

    async def read(
        self, stream_id: str, after: int = 0, until: int | None = None
    ) -> list[RecordedEvent]:
        with reachable():
            if until is None:
                rows = await self.pool.fetch(_READ, stream_id, after)
            else:
                rows = await self.pool.fetch(_READ_UNTIL, stream_id, after, until)
        return [_recorded(r) for r in rows]

    async def version(self, stream_id: str) -> int:
        with reachable():
            return int(await self.pool.fetchval(_VERSION, stream_id))

    async def find_command(self, stream_id: str, command_id: str) -> AppendResult | None:
        """The result of the first append made under command_id (duplicate=False), if any."""
        with reachable():
            async with self.pool.acquire() as conn:
                return await self._find_command(conn, stream_id, command_id)

    @staticmethod
    async def _find_command(conn: Any, stream_id: str, command_id: str) -> AppendResult | None:
        row = await conn.fetchrow(_FIND_COMMAND, stream_id, command_id)
        if row is None:
            return None
        return AppendResult(stream_id, row[0], row[1], actor=row[2], fingerprint=row[3])

    async def read_all(self, after: Checkpoint, limit: int = 1000) -> list[RecordedEvent]:
        with reachable():
            rows = await self.pool.fetch(_READ_ALL, after[0], after[1], limit)
        return [_recorded(r) for r in rows]

    async def ping(self) -> None:
        with reachable():
            await self.pool.fetchval("SELECT 1")

    async def close(self) -> None:
        await self.pool.close()
