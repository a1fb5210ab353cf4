"""What the game service answers: the same shapes the API sends, defined once."""

from __future__ import annotations

from typing import cast

import msgspec

from domain.audit import Finding
from domain.chain import ChainCheck
from domain.events import AnyEvent, Event
from domain.fairness import DealCheck
from domain.views import ShuffleView, View


class Recorded(msgspec.Struct, frozen=True):
    """One event of a game and the version it made."""

    version: int
    event: AnyEvent


def recorded(version: int, event: Event) -> Recorded:
    return Recorded(version, cast(AnyEvent, event))


class Outcome(msgspec.Struct, frozen=True):
    """What a command did: the game's version after it and its events as the caller may see
    them; `duplicate` when the command id had been used and nothing new happened;
    `chain_head`, the record's hash at that version (docs/fairness.md): keep it, and the
    record can be shown to hold what you were answered."""

    version: int
    duplicate: bool
    events: list[Recorded]
    chain_head: str


class TableView(View, frozen=True, kw_only=True):
    """The caller's view (docs/rules.md §9), with the record's chain head at its version."""

    chain_head: str  # hex SHA-256 of the row at `version` (docs/fairness.md)


def with_head(shown: View, head: bytes) -> TableView:
    fields = {name: getattr(shown, name) for name in View.__struct_fields__}
    return TableView(**fields, chain_head=head.hex())


class EventPage(msgspec.Struct, frozen=True):
    version: int
    events: list[Recorded]


class SeatToken(msgspec.Struct, frozen=True):
    seat: int
    name: str
    token: str


class CreatedGame(msgspec.Struct, frozen=True):
    game_id: str
    version: int
    seats: list[SeatToken]
    spectator_token: str
    chain_head: str  # the record's hash at `version`
    commitment: str | None  # shuffle "server": the first deal's, published before play
    shuffle: ShuffleView | None  # shuffle "seats": the server's commitment and the deadline


class Replay(msgspec.Struct, frozen=True):
    version: int
    view: TableView


class Audit(msgspec.Struct, frozen=True):
    game_id: str
    version: int
    findings: list[Finding]


class Verification(msgspec.Struct, frozen=True):
    """The record checked: its hash chain row by row, and every deal against its
    commitments (docs/fairness.md). `ok` when both hold."""

    game_id: str
    ok: bool
    deals: list[DealCheck]
    chain: ChainCheck
    unreadable_version: int | None = None  # the first row whose payload is no event
