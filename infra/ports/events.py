"""The event store port: what is appended, what is read back, and the guarantees."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Protocol

import msgspec

# Versions are bigint in the stores, and a browser reads JSON numbers as doubles: no
# version is larger than a double holds exactly (the API and the command line refuse one)
LAST_VERSION = 2**53 - 1


class NewEvent(msgspec.Struct, frozen=True):
    """An event about to be appended: its type tag and its msgspec-encoded JSON payload."""

    type: str
    data: bytes
    schema_version: int = 1


class Metadata(msgspec.Struct, frozen=True):
    """What is recorded with every event of one append: the command id it was appended
    under (idempotency), the seat that sent it, and the request it came in (correlation).
    The fingerprint of the command is kept with the command id (not with each event), so
    that a repeated id can be told from an id reused for another command."""

    command_id: str | None = None
    actor: int | None = None
    correlation_id: str | None = None
    fingerprint: str | None = None


NO_METADATA = Metadata()


class RecordedEvent(msgspec.Struct, frozen=True):
    stream_id: str
    version: int
    type: str
    data: bytes
    schema_version: int
    metadata: Metadata
    recorded_at: datetime
    # Global order for catch-up readers: (transaction id, position). SQLite uses tx_id 0.
    tx_id: int
    position: int
    # SHA-256 chained onto the previous row of the stream (domain/chain.py).
    hash: bytes = b""

    @property
    def recorded_micros(self) -> int:
        return micros(self.recorded_at)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def micros(at: datetime) -> int:
    """Whole microseconds since 1970-01-01 UTC, exactly (no float on the way)."""
    return (at - _EPOCH) // timedelta(microseconds=1)


def from_micros(us: int) -> datetime:
    """The time `us` whole microseconds after 1970-01-01 UTC: micros' inverse, exactly."""
    return _EPOCH + timedelta(microseconds=us)


class AppendResult(msgspec.Struct, frozen=True):
    """Versions written by one append: first_version..last_version inclusive.

    duplicate is true when the command id had been seen: nothing was appended, and the
    versions, actor and fingerprint are those of the first append under that id.
    recovered is true when the answer to this very append was lost and the store found
    its command id afterwards: the versions, actor and fingerprint are those of the
    command found (this append, or another one made under the same id), as for a duplicate.
    last_hash is the chain hash of last_version (empty for a duplicate); hashes, when the
    store gives them, the chain hash of every version written, first_version first.
    """

    stream_id: str
    first_version: int
    last_version: int
    duplicate: bool = False
    actor: int | None = None
    fingerprint: str | None = None
    last_hash: bytes = b""
    recovered: bool = False
    hashes: tuple[bytes, ...] = ()


# A catch-up reader's place in the global order: (tx_id, position) of the last event read.
Checkpoint = tuple[int, int]
START: Checkpoint = (0, 0)


_CHECKPOINT = re.compile(r"([0-9]{1,19}):([0-9]{1,19})")


def checkpoint_text(checkpoint: Checkpoint) -> str:
    """The checkpoint as the API writes it: "<tx_id>:<position>"."""
    return f"{checkpoint[0]}:{checkpoint[1]}"


def parse_checkpoint(text: str) -> Checkpoint:
    """A checkpoint written by checkpoint_text; ValueError for anything else."""
    found = _CHECKPOINT.fullmatch(text.strip())
    if found is None:
        raise ValueError(f"{text!r} is no checkpoint: write <tx_id>:<position>, e.g. 0:0")
    checkpoint = (int(found[1]), int(found[2]))
    if max(checkpoint) >= 2**63:
        raise ValueError(f"{text!r} is beyond any checkpoint")
    return checkpoint


class TouchedStream(msgspec.Struct, frozen=True):
    """One stream a page touched: its last version in the page, and which of the event
    types asked for it holds there (sorted; none when no type was asked for)."""

    stream_id: str
    version: int
    kinds: tuple[str, ...] = ()


class Touched(msgspec.Struct, frozen=True):
    """A page of the global order told without its events (EventStore.touched): which
    streams it touched, and where it ends."""

    # every stream the page touched, or only those with an event of a type asked for, in
    # no particular order
    streams: tuple[TouchedStream, ...]
    rows: int  # the events in the page: as many as the limit, and more may follow
    checkpoint: Checkpoint  # the page's last event's place (the one given, for an empty page)


class Conflict(Exception):
    """The stream is not at the expected version: another writer got there first."""

    def __init__(self, stream_id: str, expected: int, actual: int) -> None:
        super().__init__(f"stream {stream_id}: expected version {expected}, found {actual}")
        self.stream_id = stream_id
        self.expected = expected
        self.actual = actual


class StoreUnavailable(Exception):
    """The database cannot be reached, or did not answer in time, and nothing was written:
    the call failed before anything was sent, or the store made sure that what was sent
    can no longer be committed. `said` is what an answer may tell anyone of it: the whole
    text, unless it is a driver's, which can name hosts and ports (then its kind alone)."""

    def __init__(self, detail: str, said: str | None = None) -> None:
        super().__init__(detail)
        self.said = detail if said is None else said


class OutcomeUnknown(Exception):
    """An append was sent and its answer lost (a timeout, a broken connection), and the
    store could not find out whether it was committed. Its command id says, later: the
    same append again under the same id, or find_command."""

    def __init__(self, detail: str, command_id: str | None = None) -> None:
        super().__init__(detail)
        self.command_id = command_id


class EventStore(Protocol):
    """One stream per game, versions gapless from 1, appends optimistic and idempotent."""

    async def append(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        metadata: Metadata = NO_METADATA,
    ) -> AppendResult:
        """Append after expected_version in one transaction, or raise Conflict.

        metadata.command_id makes the append idempotent within the stream: a repeated id
        appends nothing and returns the first append's result with duplicate=True.

        Bounded by the request's deadline (infra/deadline.py). Raises StoreUnavailable
        only when nothing was written. When the answer is lost after the append was sent,
        a store that has the command id looks it up: found, it returns that command's
        result with recovered=True; sure the append can no longer be committed and not
        found, StoreUnavailable; unsure, OutcomeUnknown.
        """
        ...

    async def append_batches(
        self, stream_id: str, batches: Sequence[tuple[Sequence[NewEvent], Metadata]]
    ) -> AppendResult:
        """Start a stream with several appends in one transaction, each batch under its own
        metadata (command id): all of them are written, or none. A stream that already
        exists raises Conflict and nothing is written."""
        ...

    async def read(
        self, stream_id: str, after: int = 0, until: int | None = None
    ) -> list[RecordedEvent]: ...

    async def version(self, stream_id: str) -> int: ...

    async def find_command(self, stream_id: str, command_id: str) -> AppendResult | None:
        """The result of the first append made under command_id (duplicate=False, with its
        actor and fingerprint), if any."""
        ...

    async def read_all(self, after: Checkpoint, limit: int = 1000) -> list[RecordedEvent]:
        """Events of every stream after the checkpoint, in global order, never skipping one
        that a concurrent writer commits late."""
        ...

    async def touched(
        self, after: Checkpoint, limit: int = 1000, kinds: tuple[str, ...] = ()
    ) -> Touched:
        """The page read_all(after, limit) would give, without its events: the streams it
        touched (only those with an event of one of the types `kinds`, when given), each
        with its last version in the page and the types of `kinds` it holds there, and
        the page's last checkpoint, from which the next page starts. For a follower that
        needs to know which games moved, not how: one query however many types are
        asked for, no payload read, and on PostgreSQL one row per stream."""
        ...

    async def head(self) -> Checkpoint:
        """The checkpoint just after everything read_all would give now (START for an
        empty store): a reader that needs none of those events moves there without
        reading them, and skips nothing it would read later."""
        ...

    async def issued(self, checkpoint: Checkpoint) -> bool:
        """Whether read_all could have given this checkpoint: START, or the position of an
        event this store holds. Anything else was made up, or comes from another store."""
        ...

    def heard(self, stream_id: str, version: int, head: bytes) -> None:
        """Word from another writer (a hint) that the stream's head is `version` with chain
        hash `head`. A store may chain its next append onto it; it must not trust it: an
        append onto a wrong head is still a Conflict or a whole chain, never a fork."""
        ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...


class Record(Protocol):
    """Where the record of a game is read for replays, audits and exports: the event store
    itself, or a standby of it that answers as the store would (infra/postgres/standby.py)."""

    async def read(
        self, stream_id: str, after: int = 0, until: int | None = None
    ) -> list[RecordedEvent]:
        """The stream's events after `after` (through `until`), as the store holds them
        now: a reader that lags is topped up, never stale."""
        ...

    async def close(self) -> None: ...
