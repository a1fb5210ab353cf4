"""What the game service answers: the same shapes the API sends, defined once."""

from __future__ import annotations

from datetime import datetime
from typing import cast

import msgspec

from domain.audit import Finding
from domain.events import AnyEvent, Event
from domain.fairness import DealCheck
from domain.rules import Rules
from domain.views import Result, View
from domain.vocabulary import Status


class Recorded(msgspec.Struct, frozen=True):
    """One event of a game and the version it made."""

    version: int
    event: AnyEvent


def recorded(version: int, event: Event) -> Recorded:
    return Recorded(version, cast(AnyEvent, event))


class Outcome(msgspec.Struct, frozen=True):
    """What a command did: the game's version after it and its events as the caller may see
    them; `duplicate` when the command id had been used and nothing new happened."""

    version: int
    duplicate: bool
    events: list[Recorded]


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
    rematch_of: str | None = None  # a rematch: the finished game it follows


class Replay(msgspec.Struct, frozen=True):
    version: int
    view: View


class Audit(msgspec.Struct, frozen=True):
    game_id: str
    version: int
    findings: list[Finding]


class Verification(msgspec.Struct, frozen=True):
    game_id: str
    ok: bool
    deals: list[DealCheck]


class GameSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One game of the operator's list."""

    game_id: str
    seats: tuple[str, ...]  # the seats' names, in seat order
    rules: Rules
    version: int
    status: Status
    result: Result | None  # once finished: the winners and the reason
    created: datetime
    updated: datetime  # when its last event was recorded
    rematch_of: str | None = None
    rematch: str | None = None


class GamePage(msgspec.Struct, frozen=True):
    games: list[GameSummary]
    next_cursor: str | None  # pass it as `cursor` for the next page; null on the last
