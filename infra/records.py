"""The shapes that cross the event store port: what is appended and what is read back."""

from __future__ import annotations

from datetime import datetime

import msgspec


class NewEvent(msgspec.Struct, frozen=True):
    """An event about to be appended: its type tag and its msgspec-encoded JSON payload."""

    type: str
    data: bytes
    schema_version: int = 1


class Metadata(msgspec.Struct, frozen=True):
    command_id: str | None = None
    actor: int | None = None
    causation_id: str | None = None
    correlation_id: str | None = None


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


class AppendResult(msgspec.Struct, frozen=True):
    """Versions written by one append: first_version..last_version inclusive.

    duplicate is true when the command id had been seen: nothing was appended and the
    versions are those of the first append under that id.
    """

    stream_id: str
    first_version: int
    last_version: int
    duplicate: bool = False


# A catch-up reader's place in the global order: (tx_id, position) of the last event read.
Checkpoint = tuple[int, int]
START: Checkpoint = (0, 0)


class Conflict(Exception):
    """The stream is not at the expected version: another writer got there first."""

    def __init__(self, stream_id: str, expected: int, actual: int) -> None:
        super().__init__(f"stream {stream_id}: expected version {expected}, found {actual}")
        self.stream_id = stream_id
        self.expected = expected
        self.actual = actual


class StoreUnavailable(Exception):
    """The database cannot be reached; nothing was written."""


class Hint(msgspec.Struct, frozen=True):
    """A wake-up sent after a commit: game `game_id` has reached `version`."""

    game_id: str
    version: int
