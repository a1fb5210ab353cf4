"""The operator's feed (GET /events): every game's events in the store's global order, as
the arbiter sees them, each with its place in that order to resume from."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from infra.ports.events import RecordedEvent, checkpoint_text
from services.app.codec import Unreadable, from_recorded


class FeedEntry(msgspec.Struct, frozen=True, kw_only=True):
    checkpoint: str  # "<tx_id>:<position>": resume after it (Last-Event-ID, or after=)
    game_id: str
    version: int
    type: str
    event: Any  # the whole event, hidden cards and all: the arbiter's record
    recorded_at: datetime
    seat: int | None  # the seat whose command it came of; None for the operator's
    command_id: str | None  # the command's Idempotency-Key, if it had one
    request_id: str | None  # the X-Request-ID of the request that made it


def entry(row: RecordedEvent) -> FeedEntry:
    try:
        event: Any = from_recorded(row)
    except Unreadable as unreadable:
        # written by a newer server: the payload passed on as stored rather than stop the
        # feed; one that is not JSON at all (changed by hand) as null, or the entry would
        # be no JSON either, and every consumer's parser would stop at it
        event = msgspec.Raw(row.data) if unreadable.json else None
    return FeedEntry(
        checkpoint=checkpoint_text((row.tx_id, row.position)),
        game_id=row.stream_id,
        version=row.version,
        type=row.type,
        event=event,
        recorded_at=row.recorded_at,
        seat=row.metadata.actor,
        command_id=row.metadata.command_id,
        request_id=row.metadata.correlation_id,
    )
