"""The event store on PostgreSQL (asyncpg): the production adapter of infra.ports.events."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg
import msgspec

from domain.chain import GENESIS, links
from infra.deadline import remaining
from infra.ports.events import (
    NO_METADATA,
    START,
    AppendResult,
    Checkpoint,
    Conflict,
    Metadata,
    NewEvent,
    OutcomeUnknown,
    RecordedEvent,
    StoreUnavailable,
    Touched,
    TouchedStream,
    from_micros,
    micros,
)
from infra.postgres.commits import GroupCommit
from infra.postgres.connections import (
    UNAVAILABLE,
    Bounded,
    Connection,
    StatelessConnection,
    close_pool,
    discard,
    reachable,
    remember_start,
    unavailable,
)

__all__ = ["UNAVAILABLE", "Connection", "PostgresEventStore", "reachable"]

# When the store does not know the head, or it was not where the store believed: the
# function reads it, and links the rows in SQL (it is sent no links).
_APPEND = "SELECT * FROM bura_append_chained($1, $2, $3, $4, $5, $6, $7, $8, $9)"
# The append when the store knows the head (migration 012): the rows are written only if
# the row at the expected version exists with the hash the links chain onto, and no later
# time than theirs; a new stream's only if they chain onto the genesis. A head past it
# breaks the primary key with the first new row, a repeated command id the index of
# command records; either way 23505. A head short of it, or another hash or time there,
# writes nothing: then bura_append_chained tells a conflict from a repeat, or links the
# rows itself. The row found is joined, not tested by EXISTS (0.87 times a plain INSERT's
# rate in bench/append.py against 0.80). One event (most commands) in a plain SELECT;
# several from arrays. The parameters are the function's, in its order.
_TAKE_COLUMNS = (
    "INSERT INTO events (stream_id, version, type, data, schema_version, command_id, actor,"
    " correlation_id, recorded_at, hash, command_last, fingerprint) "
)
_ONTO_HEAD = (
    " events AS e WHERE e.stream_id = $1::text AND e.version = $2::bigint"
    " AND e.hash = $10::bytea AND e.recorded_at <= $11::timestamptz"
)
_TAKE_ONE = (
    _TAKE_COLUMNS + "SELECT $1::text, $2::bigint + 1, $3::text, $4::bytea, $5::integer,"
    " $6::text, $7::integer, $8::text, $11::timestamptz, $12::bytea,"
    " CASE WHEN $6::text IS NOT NULL THEN $2::bigint + 1 END,"
    " CASE WHEN $6::text IS NOT NULL THEN $9::text END FROM" + _ONTO_HEAD
)
_ROWS = (
    "SELECT $1::text, $2::bigint + n.ord, n.type, n.data, n.schema_version,"
    " $6::text, $7::integer, $8::text, $11::timestamptz,"
    " substring($12::bytea FROM n.ord::integer * 32 - 31 FOR 32),"
    " CASE WHEN n.ord = 1 AND $6::text IS NOT NULL THEN $2::bigint + cardinality($3::text[]) END,"
    " CASE WHEN n.ord = 1 AND $6::text IS NOT NULL THEN $9::text END"
    " FROM unnest($3::text[], $4::bytea[], $5::integer[]) WITH ORDINALITY"
    " AS n (type, data, schema_version, ord)"
)
_TAKE_MANY = _TAKE_COLUMNS + _ROWS + "," + _ONTO_HEAD + " ORDER BY n.ord"
_TAKE_FIRST = (
    _TAKE_COLUMNS + _ROWS + f" WHERE $2::bigint = 0 AND $10::bytea = '\\x{GENESIS.hex()}'"
    " AND $11::timestamptz IS NOT NULL ORDER BY n.ord"
)
# How many streams' heads a store remembers to chain its next append onto (about 100 bytes
# each); the oldest is forgotten first.
HEADS_KEPT = 10_000
# A lost answer's lookup, tried again while the deadline leaves this much after the pause
# (a lookup that starts later could not answer in time); first pause, doubling to 0.5 s.
RECOVER_MARGIN = 0.25
RECOVER_PAUSE = 0.05
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
# read_all's page told without its events (EventStore.touched): one row per stream touched
# (with an event of a type in $4, when not empty), each carrying the types of $4 it holds
# and the page's size and last place;
# a page that touched none of those streams is one row of the size and place alone, an
# empty page no row.
_TOUCHED = (
    "WITH page AS MATERIALIZED ("
    " SELECT stream_id, version, type, tx_id, position FROM events"
    " WHERE (tx_id, position) > ($1::xid8, $2::bigint)"
    " AND tx_id < pg_snapshot_xmin(pg_current_snapshot())"
    " ORDER BY tx_id, position LIMIT $3),"
    " last AS (SELECT count(*) OVER () AS rows, tx_id, position FROM page"
    " ORDER BY tx_id DESC, position DESC LIMIT 1),"
    " streams AS (SELECT stream_id, max(version) AS version,"
    " array_agg(DISTINCT type) FILTER (WHERE type = ANY($4::text[])) AS kinds"
    " FROM page GROUP BY stream_id"
    " HAVING cardinality($4::text[]) = 0 OR bool_or(type = ANY($4::text[])))"
    " SELECT s.stream_id, s.version, s.kinds, l.rows, l.tx_id, l.position"
    " FROM last AS l LEFT JOIN streams AS s ON true"
)
# The newest event read_all can give now (the index on (tx_id, position), backwards).
_HEAD = (
    "SELECT tx_id, position FROM events"
    " WHERE tx_id < pg_snapshot_xmin(pg_current_snapshot())"
    " ORDER BY tx_id DESC, position DESC LIMIT 1"
)
_ISSUED = "SELECT EXISTS (SELECT 1 FROM events WHERE tx_id = $1::xid8 AND position = $2::bigint)"
_VERSION = "SELECT coalesce(max(version), 0) FROM events WHERE stream_id = $1"
# A keyed command's record is its first event's row (migration 012).
_FIND_COMMAND = (
    "SELECT version, command_last, actor, fingerprint FROM events"
    " WHERE stream_id = $1 AND command_id = $2 AND command_last IS NOT NULL"
)
# End the server session that ran a lost append, and wait (up to $3 ms) until it is gone:
# then its transaction has committed or never will. backend_start tells the session from
# a later one that was given the same process id.
_END_SESSION = (
    "SELECT pg_terminate_backend(pid, $3) FROM pg_stat_activity"
    " WHERE pid = $1 AND backend_start = $2"
)
_SESSION_GONE = (
    "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND backend_start = $2)"
)


def _at(us: int | None) -> datetime | None:
    return None if us is None else from_micros(us)


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


class PostgresEventStore(Bounded):
    """Owns an asyncpg pool; every append is one round trip: one INSERT when the store
    knows the head, else one call of bura_append_chained.

    Every call is bounded by the request's deadline (infra/deadline.py), else by
    command_timeout, waiting for a pooled connection included: a stalled server or a
    full pool answers StoreUnavailable in time, and waiting requests never pile up.

    The chain's links are computed here when the store knows the head it appends onto
    (the head of its last append or full read of that stream, or a new stream's genesis),
    and sent with the append: an INSERT that writes nothing unless they continue the
    stream's chain where it stands (migration 012). Otherwise, or without them,
    bura_append_chained (migration 011) links the rows itself and returns the links."""

    # The function an append calls when it cannot be one INSERT (a test or a benchmark
    # swaps in another), and whether it answers as bura_append_chained does (recorded_at,
    # hashes); if not, as bura_append does (last_hash).
    append_statement = _APPEND
    chained_answer = True
    # The INSERTs onto a head the store knows (of one event, of several, and a new
    # stream's): used whenever _links makes the links (a store of a release before makes
    # none).
    take_one = _TAKE_ONE
    take_many = _TAKE_MANY
    take_first = _TAKE_FIRST

    def __init__(
        self, pool: asyncpg.Pool, command_timeout: float = 10.0, lanes: int | None = None
    ) -> None:
        super().__init__(pool, command_timeout)
        # stream id -> (version, hash, recorded_at in microseconds since the epoch) of its
        # head as this store last saw it
        self._heads: dict[str, tuple[int, bytes, int]] = {}
        self.commits = GroupCommit(self, lanes)

    def _remember(self, stream_id: str, version: int, hash: bytes, at: int) -> None:
        heads = self._heads
        heads.pop(stream_id, None)
        heads[stream_id] = (version, hash, at)
        if len(heads) > HEADS_KEPT:
            del heads[next(iter(heads))]

    def heard(self, stream_id: str, version: int, head: bytes) -> None:
        """Another replica's append: the next one here may be one INSERT onto it. Its time
        is not known; the rows' own (this clock) is checked against the head's by the
        INSERT, which writes nothing if it is earlier, and the function links them then."""
        known = self._heads.get(stream_id)
        if len(head) == 32 and (known is None or known[0] < version):
            self._remember(stream_id, version, head, 0)

    def _links(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        metadata: Metadata,
    ) -> tuple[bytes | None, int | None, list[bytes] | None]:
        """(previous, recorded_at in microseconds, hashes) to send, or NULLs when the head
        is unknown."""
        now = time.time_ns() // 1000
        if expected_version == 0:
            previous = GENESIS
        else:
            known = self._heads.get(stream_id)
            if known is None or known[0] != expected_version:
                return None, None, None
            previous = known[1]
            now = max(now, known[2])  # never earlier than the row it follows
        m = metadata
        hashes = links(
            previous, stream_id, expected_version + 1,
            [(e.type, e.schema_version, e.data) for e in events],
            m.command_id, m.actor, m.correlation_id, now,
        )  # fmt: skip
        return previous, now, hashes

    @classmethod
    async def open(
        cls,
        dsn: str,
        min_size: int = 1,
        max_size: int = 10,
        connect_timeout: float = 5.0,
        command_timeout: float = 10.0,
        lanes: int | None = None,
    ) -> PostgresEventStore:
        """A store on a new pool; min_size=0 defers connecting until first use.

        The server bounds every statement too (statement_timeout), so the work of a
        client that gave up does not linger there holding locks.
        """
        with reachable():
            pool = await asyncpg.create_pool(
                dsn,
                min_size=min_size,
                max_size=max_size,
                timeout=connect_timeout,
                command_timeout=command_timeout,
                connection_class=StatelessConnection,
                init=remember_start,
                server_settings={"statement_timeout": str(int(command_timeout * 1000))},
            )
        return cls(pool, command_timeout, lanes)

    async def append(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        metadata: Metadata = NO_METADATA,
    ) -> AppendResult:
        if not events:
            raise ValueError("nothing to append")
        return await self.commits.append(stream_id, expected_version, events, metadata)

    async def _append_alone(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        metadata: Metadata = NO_METADATA,
    ) -> AppendResult:
        async with self.connection() as conn:
            # With a command id, half of the time left is kept for finding out what
            # became of the append, should its answer be lost.
            left = self.left()
            timeout = left / 2 if metadata.command_id is not None else left
            session = (conn.get_server_pid(), getattr(conn, "backend_start", None))
            try:
                return await self.append_on(
                    conn, stream_id, expected_version, events, metadata, timeout=timeout
                )
            except BaseException as error:
                if not (unavailable(error) or isinstance(error, asyncio.CancelledError)):
                    raise
                # Sent, and no answer came: it may have been committed.
                discard(conn)
                if isinstance(error, asyncio.CancelledError):
                    raise
                lost = f"the append's answer was lost ({type(error).__name__}: {error})"
        return await self._recover(stream_id, metadata, session, lost)

    async def _recover(
        self,
        stream_id: str,
        metadata: Metadata,
        session: tuple[int, datetime | None],
        lost: str,
    ) -> AppendResult:
        """What became of an append whose answer was lost: first end the server session
        that ran it (then it has committed or never will), then look its command id up.
        The database out of reach for a moment (what lost the answer, often) is asked
        again, after a pause that doubles, while what is left of the deadline allows."""
        command_id = metadata.command_id
        unknown = OutcomeUnknown(f"{lost}; it may have been written", command_id)
        if command_id is None:
            raise unknown
        # what is left of the deadline, read without refusing: past it, the lookup is still
        # tried once (its own bound refuses it), and the answer is unknown, never "nothing
        # was written" for an append that was sent
        give_up = time.monotonic() + remaining(self.command_timeout) - RECOVER_MARGIN
        pause = RECOVER_PAUSE
        while True:
            try:
                async with self.connection() as conn:
                    ended = await self._end_session(conn, *session)
                    found = await self._find_command(conn, stream_id, command_id)
                break
            except StoreUnavailable as e:
                if time.monotonic() + pause >= give_up:
                    raise unknown from e
                await asyncio.sleep(pause)
                pause = min(2 * pause, 0.5)
        if found is not None:
            return msgspec.structs.replace(found, duplicate=True, recovered=True)
        if ended:
            raise StoreUnavailable(
                f"{lost} before it was committed: its session has ended, nothing was written"
            )
        raise unknown

    async def _end_session(self, conn: Connection, pid: int, started: datetime | None) -> bool:
        """True once the session is surely gone: ended here, or gone already."""
        if started is None:
            return False
        wait_ms = int(self.left() * 500)
        try:
            await conn.fetchval(_END_SESSION, pid, started, wait_ms, timeout=self.left())
            gone: bool = await conn.fetchval(_SESSION_GONE, pid, started, timeout=self.left())
        except asyncpg.PostgresError:  # e.g. not allowed to end it: then it cannot be known
            return False
        return gone

    async def append_on(
        self,
        conn: Connection,
        stream_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        metadata: Metadata = NO_METADATA,
        *,
        timeout: float | None = None,
    ) -> AppendResult:
        """append on the caller's connection, e.g. inside a transaction it holds open.

        Inside a transaction, a lost race or a repeated command id aborts it: that
        raises Conflict, without telling a repeat apart, and the caller must roll back.
        """
        if not events:
            raise ValueError("nothing to append")
        previous, at, hashes = self._links(stream_id, expected_version, events, metadata)
        timeout = self.left() if timeout is None else timeout
        m = metadata
        try:
            if hashes is not None:
                one = len(events) == 1 and expected_version > 0
                onto = self.take_many if expected_version else self.take_first
                status = await conn.execute(
                    self.take_one if one else onto,
                    stream_id,
                    expected_version,
                    *(
                        (events[0].type, events[0].data, events[0].schema_version)
                        if one
                        else (
                            [e.type for e in events],
                            [e.data for e in events],
                            [e.schema_version for e in events],
                        )
                    ),
                    m.command_id, m.actor, m.correlation_id, m.fingerprint,
                    previous, _at(at), b"".join(hashes),
                    timeout=timeout,
                )  # fmt: skip
                if status != "INSERT 0 0":  # taken as sent
                    last = expected_version + len(events)
                    assert at is not None
                    self._remember(stream_id, last, hashes[-1], at)
                    return AppendResult(
                        stream_id, expected_version + 1, last, False, m.actor, m.fingerprint,
                        hashes[-1], hashes=tuple(hashes),
                    )  # fmt: skip
                # Not where this store believed the head was: the function finds out.
                self._heads.pop(stream_id, None)
            row = await conn.fetchrow(
                self.append_statement,
                stream_id,
                expected_version,
                [e.type for e in events],
                [e.data for e in events],
                [e.schema_version for e in events],
                m.command_id,
                m.actor,
                m.correlation_id,
                m.fingerprint,
                timeout=timeout,
            )
        except asyncpg.UniqueViolationError:
            # Another writer took the version first, or the command id was already used.
            self._heads.pop(stream_id, None)
            return await self._settle_race(conn, stream_id, expected_version, metadata)
        except BaseException:
            self._heads.pop(stream_id, None)  # it may or may not have been written
            raise
        assert row is not None  # the function always returns its one row
        first, last, duplicate, head = row[0], row[1], row[2], row[3]
        if first is None:
            self._heads.pop(stream_id, None)
            raise Conflict(stream_id, expected_version, head)
        if duplicate:
            return AppendResult(
                stream_id, first, last, True, row["prior_actor"], row["prior_fingerprint"]
            )
        if not self.chained_answer:  # an append function of a release before
            return AppendResult(
                stream_id, first, last, False, metadata.actor, metadata.fingerprint,
                row["last_hash"],
            )  # fmt: skip
        # Sent no links, the function linked the rows itself and says how.
        computed: bytes = row["hashes"]
        made = tuple(computed[i : i + 32] for i in range(0, len(computed), 32))
        self._remember(stream_id, last, made[-1], micros(row["recorded_at"]))
        return AppendResult(
            stream_id, first, last, False, m.actor, m.fingerprint, made[-1], hashes=made
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
        head = await conn.fetchval(_VERSION, stream_id, timeout=self.left())
        raise Conflict(stream_id, expected_version, head)

    async def append_batches(
        self, stream_id: str, batches: Sequence[tuple[Sequence[NewEvent], Metadata]]
    ) -> AppendResult:
        if not batches:
            raise ValueError("nothing to append")
        async with self.connection() as conn:
            transaction = conn.transaction()
            await transaction.start()
            try:
                head = await conn.fetchval(_VERSION, stream_id, timeout=self.left())
                if head:
                    raise Conflict(stream_id, 0, head)
                results: list[AppendResult] = []
                for events, metadata in batches:
                    after = results[-1].last_version if results else 0
                    results.append(await self.append_on(conn, stream_id, after, events, metadata))
            except BaseException:
                # not committed: whatever was sent is rolled back, here or when the
                # broken session ends
                self._heads.pop(stream_id, None)
                with contextlib.suppress(Exception):
                    await transaction.rollback()
                raise
            try:
                await transaction.commit()
            except UNAVAILABLE as e:
                if not unavailable(e):
                    raise
                discard(conn)
                raise OutcomeUnknown(
                    f"the answer to COMMIT was lost ({type(e).__name__}: {e}): the stream may "
                    "have been written in full, or not at all"
                ) from e
        return AppendResult(
            stream_id,
            results[0].first_version,
            results[-1].last_version,
            last_hash=results[-1].last_hash,
        )

    async def read(
        self, stream_id: str, after: int = 0, until: int | None = None
    ) -> list[RecordedEvent]:
        async with self.connection() as conn:
            if until is None:
                rows = await conn.fetch(_READ, stream_id, after, timeout=self.left())
                if rows:  # read to the end: the last row was the head when read
                    last, known = rows[-1], self._heads.get(stream_id)
                    if known is None or known[0] < last[1]:
                        self._remember(stream_id, last[1], last[11], micros(last[8]))
            else:
                rows = await conn.fetch(_READ_UNTIL, stream_id, after, until, timeout=self.left())
        return [_recorded(r) for r in rows]

    async def version(self, stream_id: str) -> int:
        async with self.connection() as conn:
            return int(await conn.fetchval(_VERSION, stream_id, timeout=self.left()))

    async def find_command(self, stream_id: str, command_id: str) -> AppendResult | None:
        """The result of the first append made under command_id (duplicate=False), if any."""
        async with self.connection() as conn:
            return await self._find_command(conn, stream_id, command_id)

    async def _find_command(
        self, conn: Connection, stream_id: str, command_id: str
    ) -> AppendResult | None:
        row = await conn.fetchrow(_FIND_COMMAND, stream_id, command_id, timeout=self.left())
        if row is None:
            return None
        return AppendResult(stream_id, row[0], row[1], actor=row[2], fingerprint=row[3])

    async def read_all(self, after: Checkpoint, limit: int = 1000) -> list[RecordedEvent]:
        async with self.connection() as conn:
            rows = await conn.fetch(_READ_ALL, after[0], after[1], limit, timeout=self.left())
        return [_recorded(r) for r in rows]

    async def touched(
        self, after: Checkpoint, limit: int = 1000, kinds: tuple[str, ...] = ()
    ) -> Touched:
        async with self.connection() as conn:
            rows = await conn.fetch(
                _TOUCHED, after[0], after[1], limit, list(kinds), timeout=self.left()
            )
        if not rows:  # an empty page
            return Touched((), 0, after)
        first = rows[0]
        streams = tuple(
            TouchedStream(r[0], int(r[1]), tuple(sorted(r[2] or ())))
            for r in rows
            if r[0] is not None
        )
        return Touched(streams, int(first[3]), (int(first[4]), int(first[5])))

    async def head(self) -> Checkpoint:
        async with self.connection() as conn:
            row = await conn.fetchrow(_HEAD, timeout=self.left())
        return START if row is None else (int(row[0]), int(row[1]))

    async def issued(self, checkpoint: Checkpoint) -> bool:
        if checkpoint == START:
            return True
        async with self.connection() as conn:
            found = await conn.fetchval(_ISSUED, *checkpoint, timeout=self.left())
        return bool(found)

    async def ping(self) -> None:
        async with self.connection() as conn:
            await conn.fetchval("SELECT 1", timeout=self.left())

    async def close(self) -> None:
        await close_pool(self.pool)
