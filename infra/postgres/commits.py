"""Group commit: appends to different games that arrive while the store's lanes are busy
go to PostgreSQL together, as one INSERT in one transaction.

An append made while fewer than `lanes` appends are under way is sent at once, alone, as
it always was. One that arrives while `lanes` are under way waits in a queue; when a lane
comes free, everything queued leaves together: one round trip, one statement, one commit
for all of them. Each append keeps its own answer:

- the rows of an append are written only where its links chain onto its stream's head,
  exactly as the single INSERT's (a head elsewhere writes nothing for that append, and it
  is sent again alone, where the function finds out why);
- a repeated command id, or a head already taken, breaks a unique index and the whole
  statement with it: nothing of the batch was written, and each append is sent again
  alone, where it is told a repeat from a conflict as before;
- an answer lost (the connection broke, the deadline passed) leaves every append of the
  batch to be found out by its command id, as a lost single append is.

A lone queued append is sent alone too. Under load the batches grow with the queue, so a
busy store pays one round trip and one commit for many commands."""

from __future__ import annotations

import asyncio
import collections
import contextvars
import time
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import asyncpg

from domain.chain import GENESIS
from infra.deadline import remaining, within
from infra.ports.events import AppendResult, Metadata, NewEvent, StoreUnavailable, from_micros
from infra.postgres.connections import discard, unavailable

if TYPE_CHECKING:
    from infra.postgres.store import PostgresEventStore

# Every row of every append of the batch, from arrays; a row is written only if its
# append chains onto its stream's head (the row at the expected version, with the hash
# and no later time), or onto the genesis for a new stream. Each head is looked up by the
# primary key (LATERAL ... LIMIT 1): a plain join is planned once per connection, and a
# plan made while the table was small (a hash join over a scan of every row) would be
# kept as it grows.
_TAKE_BATCH = (
    "INSERT INTO events (stream_id, version, type, data, schema_version, command_id, actor,"
    " correlation_id, recorded_at, hash, command_last, fingerprint)"
    " SELECT r.s, r.v, r.t, r.d, r.n, r.c, r.a, r.k, r.at, r.h, r.l, r.f"
    " FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bytea[], $5::integer[],"
    " $6::text[], $7::integer[], $8::text[], $9::timestamptz[], $10::bytea[], $11::bigint[],"
    " $12::text[], $13::bigint[], $14::bytea[])"
    " WITH ORDINALITY AS r (s, v, t, d, n, c, a, k, at, h, l, f, x, p, ord)"
    " LEFT JOIN LATERAL (SELECT e.hash, e.recorded_at FROM events AS e"
    " WHERE e.stream_id = r.s AND e.version = r.x LIMIT 1) AS e ON r.x > 0"
    f" WHERE (r.x = 0 AND r.p = '\\x{GENESIS.hex()}'::bytea)"
    " OR (e.hash = r.p AND e.recorded_at <= r.at)"
    " ORDER BY r.ord RETURNING stream_id, version"
)
BATCH_MAX = 128  # appends in one statement at most


class _Alone:
    """The answer to a queued append that must go alone: sent now by its own caller."""


ALONE = _Alone()


class _Lost:
    """The batch's answer was lost: each append is found out by its command id."""

    def __init__(self, session: tuple[int, datetime | None], why: str) -> None:
        self.session, self.why = session, why


class _Job:
    __slots__ = (
        "at", "events", "expected", "hashes", "metadata", "previous", "stream", "until",
        "waiter",
    )  # fmt: skip

    def __init__(
        self,
        stream: str,
        expected: int,
        events: Sequence[NewEvent],
        metadata: Metadata,
        links: tuple[bytes, int, list[bytes]],
        until: float,
        waiter: asyncio.Future[Any],
    ) -> None:
        self.stream, self.expected, self.events, self.metadata = stream, expected, events, metadata
        self.previous, self.at, self.hashes = links
        self.until = until
        self.waiter = waiter


class GroupCommit:
    """The lanes of one store: `lanes` appends (or batches) under way at once; None sends
    every append alone, at once, however many are under way."""

    def __init__(self, store: PostgresEventStore, lanes: int | None = 2) -> None:
        self.store = store
        self.lanes = lanes
        self.running = 0  # appends and batches under way
        self.queue: collections.deque[_Job] = collections.deque()
        self.batches = 0  # batches sent
        self.batched = 0  # appends sent in them

    async def append(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        metadata: Metadata,
    ) -> AppendResult:
        if self.lanes is None or self.running < self.lanes:
            return await self._alone(stream_id, expected_version, events, metadata)
        store = self.store
        previous, at, hashes = store._links(stream_id, expected_version, events, metadata)
        left = remaining(store.command_timeout)
        if previous is None or at is None or hashes is None or left <= 0:
            return await self._alone(stream_id, expected_version, events, metadata)
        waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        job = _Job(
            stream_id, expected_version, events, metadata, (previous, at, hashes),
            time.monotonic() + left, waiter,
        )  # fmt: skip
        self.queue.append(job)
        answer = await waiter
        if answer is ALONE:
            return await self._alone(stream_id, expected_version, events, metadata)
        if isinstance(answer, _Lost):
            return await store._recover(stream_id, metadata, answer.session, answer.why)
        result: AppendResult = answer
        return result

    async def _alone(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        metadata: Metadata,
    ) -> AppendResult:
        self.running += 1
        try:
            return await self.store._append_alone(stream_id, expected_version, events, metadata)
        finally:
            self.running -= 1
            if self.queue:
                self.next()

    def next(self) -> None:
        """A lane came free: whatever is queued leaves, together."""
        queue = self.queue
        while queue and (self.lanes is None or self.running < self.lanes):
            jobs: list[_Job] = []
            while queue and len(jobs) < BATCH_MAX:
                job = queue.popleft()
                if not job.waiter.done():  # its caller gave up before it was sent
                    jobs.append(job)
            if len(jobs) == 1:
                jobs[0].waiter.set_result(ALONE)  # its caller sends it (and takes a lane)
            elif jobs:
                self.running += 1
                # a context of its own: no request's deadline but the batch's
                asyncio.get_running_loop().create_task(
                    self._send(jobs), context=contextvars.Context()
                )

    async def _send(self, jobs: list[_Job]) -> None:
        try:
            left = min(job.until for job in jobs) - time.monotonic()
            if left <= 0:
                answer: Any = ALONE  # each is refused in its own request's time
                for job in jobs:
                    _answer(job, answer)
                return
            with within(left):
                await self._batch(jobs)
        except BaseException as error:  # nobody may be left waiting
            for job in jobs:
                _fail(job, error)
            if not isinstance(error, Exception):
                raise
        finally:
            self.running -= 1
            if self.queue:
                self.next()

    async def _batch(self, jobs: list[_Job]) -> None:
        store = self.store
        self.batches += 1
        self.batched += len(jobs)
        columns: list[list[Any]] = [[] for _ in range(14)]
        (streams, versions, types, datas, schemas, commands, actors, correlations, ats,
         hashes, lasts, fingerprints, expected, previous) = columns  # fmt: skip
        for job in jobs:
            m, at = job.metadata, from_micros(job.at)
            for n, event in enumerate(job.events):
                first = n == 0 and m.command_id is not None
                streams.append(job.stream)
                versions.append(job.expected + n + 1)
                types.append(event.type)
                datas.append(event.data)
                schemas.append(event.schema_version)
                commands.append(m.command_id)
                actors.append(m.actor)
                correlations.append(m.correlation_id)
                ats.append(at)
                hashes.append(job.hashes[n])
                lasts.append(job.expected + len(job.events) if first else None)
                fingerprints.append(m.fingerprint if first else None)
                expected.append(job.expected)
                previous.append(job.previous)
        async with store.connection() as conn:
            session = (conn.get_server_pid(), getattr(conn, "backend_start", None))
            try:
                rows = await conn.fetch(_TAKE_BATCH, *columns, timeout=remaining(1.0) / 2)
            except asyncpg.UniqueViolationError:
                # a repeated command id, or a head taken: none of the batch was written
                for job in jobs:
                    _answer(job, ALONE)
                return
            except BaseException as error:
                if not (unavailable(error) or isinstance(error, asyncio.CancelledError)):
                    raise
                discard(conn)
                for job in jobs:  # written or not: the heads are no longer known
                    store._heads.pop(job.stream, None)
                lost = _Lost(
                    session,
                    f"the append's answer was lost ({type(error).__name__}: {error})",
                )
                for job in jobs:
                    _answer(job, lost)
                if isinstance(error, asyncio.CancelledError):
                    raise
                return
        written = {(row[0], row[1]) for row in rows}
        for job in jobs:
            last = job.expected + len(job.events)
            taken = sum((job.stream, v) in written for v in range(job.expected + 1, last + 1))
            if taken == 0:  # not onto the head this store knew: alone, the function finds out
                store._heads.pop(job.stream, None)
                _answer(job, ALONE)
                continue
            if taken != len(job.events):  # cannot be: the rows of one append stand together
                _fail(job, StoreUnavailable(f"a batch wrote {taken} of {len(job.events)} rows"))
                continue
            m = job.metadata
            store._remember(job.stream, last, job.hashes[-1], job.at)
            _answer(
                job,
                AppendResult(
                    job.stream, job.expected + 1, last, False, m.actor, m.fingerprint,
                    job.hashes[-1], hashes=tuple(job.hashes),
                ),
            )  # fmt: skip


def _answer(job: _Job, answer: Any) -> None:
    if not job.waiter.done():
        job.waiter.set_result(answer)


def _fail(job: _Job, error: BaseException) -> None:
    if job.waiter.done():
        return
    if isinstance(error, asyncio.CancelledError):
        job.waiter.cancel()
    else:
        job.waiter.set_exception(error)
