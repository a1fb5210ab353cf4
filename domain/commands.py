"""What a player (or the operator, for StartGame) asks to do. Tagged by `type`."""

from __future__ import annotations

from typing import Literal

import msgspec

from domain.cards import Card
from domain.naming import snake
from domain.rules import Rules


class Command(msgspec.Struct, frozen=True, tag_field="type", tag=snake, forbid_unknown_fields=True):
    pass


class StartGame(Command, frozen=True, kw_only=True):
    seats: tuple[str, ...]
    rules: Rules = Rules()
    seed: str
    dealer: int | None = None
    deck: tuple[Card, ...] | None = None  # the first deal's full pack in dealing order


class Draw(Command, frozen=True):
    count: int = 1


class Lead(Command, frozen=True):
    """Also, in the Czech game, a combination led out of turn at the start of a trick."""

    cards: tuple[Card, ...]


class Respond(Command, frozen=True):
    cards: tuple[Card, ...]


class Declare(Command, frozen=True):
    claim: Literal["thirty_one", "bura", "four_aces"]  # four_aces: Kozel only


class Dave(Command, frozen=True):
    pass


class DaveAnswer(Command, frozen=True):
    accept: bool


class Pass(Command, frozen=True):
    pass


class Concede(Command, frozen=True):
    pass


PlayerCommand = Draw | Lead | Respond | Declare | Dave | DaveAnswer | Pass | Concede
AnyCommand = StartGame | PlayerCommand
