"""Events to and from the store's rows: msgspec JSON, a schema version per event type, and
upcasters that lift old rows to the current shape so old streams stay readable."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import msgspec
from msgspec.structs import replace

from domain.chain import Row
from domain.commands import Command
from domain.events import AnyEvent, Event
from domain.evolve import RecordBroken
from domain.naming import snake
from infra.ports.events import NewEvent, RecordedEvent

# Bump an event type's version when its shape changes, and register an upcaster from the
# old version: UPCASTERS[(type, old_version)] turns an old payload into the next version's.
Upcaster = Callable[[dict[str, object]], dict[str, object]]


def _seen_unknown(payload: dict[str, object]) -> dict[str, object]:
    """Version 2 records the version the player acted on; rows of version 1 never knew it."""
    return {**payload, "seen": None}


SCHEMA_VERSIONS: dict[str, int] = {"penalty_applied": 2, "declared": 2}
UPCASTERS: dict[tuple[str, int], Upcaster] = {
    ("penalty_applied", 1): _seen_unknown,
    ("declared", 1): _seen_unknown,
}

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(AnyEvent).decode
_decode_raw = msgspec.json.Decoder(dict[str, object]).decode


def type_of(event: Event) -> str:
    return snake(type(event).__name__)


def type_of_command(command: Command) -> str:
    return snake(type(command).__name__)


def fingerprint(command: Command) -> str:
    """What a command says, as a hash: its canonical msgspec JSON (every field, defaults
    and `seen` included, cards in their one code and in one order, since the order of a
    lead's or an answer's cards means nothing), so that two bodies meaning the same command
    share it and any difference shows."""
    cards: tuple[str, ...] | None = getattr(command, "cards", None)
    if cards is not None:
        command = replace(command, cards=tuple(sorted(cards)))
    return fingerprint_as_sent(command)


def fingerprint_as_sent(command: Command) -> str:
    """The fingerprint of releases that kept the cards in the order sent: what a command
    recorded by one carries, so that its exact retry is still known after an upgrade."""
    return hashlib.sha256(_encode(command)).hexdigest()


def to_new(event: Event) -> NewEvent:
    kind = type_of(event)
    return NewEvent(type=kind, data=_encode(event), schema_version=SCHEMA_VERSIONS.get(kind, 1))


class Unreadable(RecordBroken):
    """A row whose payload is no event this server reads: not JSON at all (`json` false:
    changed by hand), or JSON of no shape it knows (a newer server's, or changed by hand).
    A record with one is broken at that row, as one whose event cannot apply."""

    def __init__(self, row: RecordedEvent, cause: Exception, json: bool) -> None:
        why = "is no event this server reads" if json else "is not JSON"
        super().__init__(row.version, row.type, cause, why)
        self.json = json


def cut_short_why(version: int) -> str:
    """What a record cut short is: the games index holds the game finished, and the
    record has no end (services/app/reviews.py cut_short)."""
    return (
        f"the games index holds this game as finished, but its record ends at version "
        f"{version}, before the game's end: rows were removed from its end"
    )


class RecordChanged(RecordBroken):
    """A record whose hash chain does not hold (a row edited, removed, moved or added
    outside the server) or whose end was cut (cut_short). What shows a record as evidence
    (the replay, the audit, the bundle, the arbiter's page, `bura replay`, `audit` and
    `export`) refuses it as a broken record rather than show what is left as if it were
    whole: a missing row would renumber every version after it, and a cut end would hide
    a verdict. `verify` reports it in full."""

    def __init__(self, version: int, why: str, event_type: str = "row") -> None:
        Exception.__init__(self, why)
        self.version = version
        self.event_type = event_type  # "game_finished" for a cut end: the row missing
        self.why = why


def from_recorded(row: RecordedEvent) -> Event:
    """The row's event; Unreadable (a RecordBroken naming the row) when it holds none."""
    try:
        return _event(row)
    except (msgspec.ValidationError, KeyError) as error:
        raise Unreadable(row, error, json=True) from error
    except msgspec.DecodeError as error:
        raise Unreadable(row, error, json=False) from error


def _event(row: RecordedEvent) -> Event:
    current = SCHEMA_VERSIONS.get(row.type, 1)
    if row.schema_version == current:
        event: Event = _decode(row.data)
        return event
    payload = _decode_raw(row.data)
    version = row.schema_version
    while version < current:
        payload = UPCASTERS[(row.type, version)](payload)
        version += 1
    converted: Event = msgspec.convert(payload, AnyEvent)
    return converted


def chain_row(row: RecordedEvent) -> Row:
    """The row as the hash chain covers it (domain/chain.py)."""
    m = row.metadata
    return Row(
        stream_id=row.stream_id,
        version=row.version,
        type=row.type,
        schema_version=row.schema_version,
        data=row.data,
        command_id=m.command_id,
        actor=m.actor,
        correlation_id=m.correlation_id,
        recorded_at=row.recorded_micros,
        hash=row.hash,
    )
