"""A game's record as JSON Lines, one stored row a line with all that the store recorded of
it; read back, checked, and cut into the appends that made it.

Reading a file and batching its rows are apart on purpose: any other format that yields
ExportedEvent rows (an audit bundle, say) is imported by the same batches and the same
all-or-nothing append.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime

import msgspec

from infra.ports.events import Metadata, NewEvent, RecordedEvent
from services.app.codec import Unreadable, from_recorded
from services.app.jsontext import named_twice


class ExportedEvent(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One line of an export: a stored row and its metadata. Files written before the
    metadata was exported in full lack the later fields, and still import."""

    game_id: str
    version: int
    type: str
    schema_version: int
    data: msgspec.Raw
    actor: int | None = None
    command_id: str | None = None
    correlation_id: str | None = None  # the request the command came in (X-Request-ID)
    fingerprint: str | None = None  # of the command, kept with its id (idempotency)
    recorded_at: datetime | None = None
    hash: str | None = None  # hex of the row's chain hash in the store it came from


class BadExport(ValueError):
    """A file that is no export of one whole game."""


Batch = tuple[list[NewEvent], Metadata]

_encode = msgspec.json.Encoder().encode
_decode_line = msgspec.json.Decoder(ExportedEvent).decode


def exported(rows: Sequence[RecordedEvent], fingerprints: dict[str, str | None]) -> Iterator[bytes]:
    """The lines of an export of these rows (one game's, in order)."""
    for r in rows:
        m = r.metadata
        line = ExportedEvent(
            game_id=r.stream_id,
            version=r.version,
            type=r.type,
            schema_version=r.schema_version,
            data=msgspec.Raw(r.data),
            actor=m.actor,
            command_id=m.command_id,
            correlation_id=m.correlation_id,
            fingerprint=fingerprints.get(m.command_id) if m.command_id else None,
            recorded_at=r.recorded_at,
            hash=r.hash.hex() if r.hash else None,
        )
        yield _encode(line) + b"\n"


def parse_export(lines: Iterable[bytes], name: str) -> list[ExportedEvent]:
    """Every row of an export, checked: one game, versions 1..n without a gap, and every
    event readable, so that a bad file is refused before anything is written."""
    kept = [line for line in lines if line.strip()]
    for number, line in enumerate(kept, 1):
        twice = named_twice(line)
        if twice is not None:
            raise BadExport(
                f"{name}: line {number} gives `{twice}` twice in one object (which one "
                "counts is each reader's guess)"
            )
    try:
        rows = [_decode_line(line) for line in kept]
    except msgspec.DecodeError as e:
        raise BadExport(f"{name} is not a bura export: {e}") from None
    if not rows:
        raise BadExport(f"{name} holds no events")
    games = {r.game_id for r in rows}
    if len(games) != 1:
        raise BadExport(f"{name} mixes {len(games)} games: export one game a file")
    if [r.version for r in rows] != list(range(1, len(rows) + 1)):
        raise BadExport(f"{name}: versions are not 1..{len(rows)} without gaps")
    for r in rows:
        try:
            from_recorded(as_recorded(r))
        except Unreadable as e:
            raise BadExport(
                f"{name}: the event at version {r.version} is unreadable: {e}"
            ) from None
    return rows


def batches(rows: Sequence[ExportedEvent]) -> list[Batch]:
    """The appends that wrote these rows, each with its metadata: consecutive rows of one
    command id are one append (a response and the trick it took, a penalty and the deal
    it lost); rows without one (the game's creation, older commands) are cut where the
    seat, the request or the time of recording changes."""
    cut: list[Batch] = []
    previous: tuple[object, ...] | None = None
    for r in rows:
        key = (
            ("command", r.command_id)
            if r.command_id is not None
            else ("append", r.actor, r.correlation_id, r.recorded_at)
        )
        event = NewEvent(r.type, bytes(r.data), r.schema_version)
        if key == previous:
            cut[-1][0].append(event)
        else:
            metadata = Metadata(r.command_id, r.actor, r.correlation_id, r.fingerprint)
            cut.append(([event], metadata))
        previous = key
    return cut


def as_recorded(r: ExportedEvent) -> RecordedEvent:
    return RecordedEvent(
        stream_id=r.game_id,
        version=r.version,
        type=r.type,
        data=bytes(r.data),
        schema_version=r.schema_version,
        metadata=Metadata(r.command_id, r.actor, r.correlation_id),
        recorded_at=r.recorded_at or datetime.now(UTC),
        tx_id=0,
        position=0,
    )
