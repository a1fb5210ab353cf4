"""Folded states kept as snapshots (infra/ports/snapshots.py): how they are written and
read, and the code schema that keys them.

SCHEMA names both the shape of the state and of the events (the msgspec schemas of `Game`
and of every event, hashed) and, in STATE_FOLD, the meaning of the fold: bump it when
`evolve` changes what a state holds without changing its shape. A snapshot or a hint's
events written under another schema are never used, so old snapshots are simply ignored
after such a change (and the game is folded from its events, as always)."""

from __future__ import annotations

import hashlib

import msgspec

from domain.events import AnyEvent, Event
from domain.state import Game
from infra.ports.snapshots import Snapshot
from services.app.codec import SCHEMA_VERSIONS

STATE_FOLD = 1
# A snapshot is written whenever a game's version crosses a multiple of this, and after a
# cold load that folded at least as many events: a load never folds many more.
EVERY = 256


def schema_of(fold: int = STATE_FOLD) -> str:
    shapes = msgspec.json.encode(
        [msgspec.json.schema(Game), msgspec.json.schema(AnyEvent), sorted(SCHEMA_VERSIONS.items())]
    )
    return f"{fold}.{hashlib.sha256(shapes).hexdigest()[:16]}"


SCHEMA = schema_of()

_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(Game).decode
_decode_events = msgspec.json.Decoder(list[AnyEvent]).decode


def snapshot(game_id: str, state: Game, head: bytes) -> Snapshot:
    return Snapshot(game_id, state.version, SCHEMA, _encode(state), head)


def restored(kept: Snapshot) -> Game | None:
    """The state a snapshot holds, or None when it cannot be trusted to be one of ours."""
    if kept.schema != SCHEMA:
        return None
    try:
        state = _decode(kept.state)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return state if state.version == kept.version else None


def crossed(before: int, after: int, every: int = EVERY) -> bool:
    """True when the versions from `before` to `after` pass a multiple of `every`."""
    return after // every > before // every


def carried(payloads: bytes, schema: str) -> list[Event] | None:
    """The events a hint carries (a JSON array of stored payloads), or None when they were
    written by code of another schema or cannot be read: then the store is read instead."""
    if schema != SCHEMA or not payloads:
        return None
    try:
        events: list[Event] = list(_decode_events(payloads))
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return events
