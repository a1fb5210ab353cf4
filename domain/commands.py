"""What a player (or the operator, for StartGame) asks to do. Tagged by `type`."""

from __future__ import annotations

from typing import Annotated

import msgspec

from domain.cards import Card
from domain.naming import snake
from domain.rules import Rules
from domain.vocabulary import Claim, PauseVerdict


class Command(msgspec.Struct, frozen=True, tag_field="type", tag=snake, forbid_unknown_fields=True):
    pass


class Act(Command, frozen=True, kw_only=True):
    """A seat's own command. `seen` is the game version its player acted on: given, the
    command is judged on exactly that table or not at all (`table_changed`)."""

    seen: Annotated[int, msgspec.Meta(ge=0)] | None = None


class StartGame(Command, frozen=True, kw_only=True):
    seats: tuple[str, ...]
    rules: Rules = Rules()
    seed: str
    dealer: int | None = None
    deck: tuple[Card, ...] | None = None  # the first deal's full pack in dealing order
    rematch_of: str | None = None  # the finished game whose seats and rules these are


# A seat's seed: printable ASCII, so that every language reads the same bytes from it.
SEED_PATTERN = r"^[\x20-\x7e]{1,128}$"
SeedText = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=128,
        pattern=SEED_PATTERN,
        description="1 to 128 printable ASCII characters (space to ~)",
    ),
]


class CloseSeeding(Command, frozen=True, kw_only=True):
    """The server's, never a player's: the seeding deadline has passed at `at`, so the deal
    is dealt with every seed still missing counted as empty."""

    at: int  # when it was judged, in milliseconds since 1970-01-01 UTC


class Seed(Act, frozen=True):
    """`shuffle: "seats"`: add your seed to the coming deal's shuffle, once per deal, before
    the seeding deadline. Nobody else sees it until every seed is in."""

    value: SeedText

    def __post_init__(self) -> None:
        # the pattern's `$` also matches before a final line feed (Python's reading, not
        # JSON Schema's): the value is printable ASCII to its last character
        if self.value.endswith("\n"):
            raise ValueError("value: 1 to 128 printable ASCII characters (space to ~)")


class Draw(Act, frozen=True):
    """Take the top card of the stock when due to draw. A count of 2+ is a double draw."""

    # no pack holds more than 52 cards: a larger count is no draw at any table (and would
    # be kept in the record as the penalty's `asked`)
    count: Annotated[int, msgspec.Meta(le=52)] = 1


class Lead(Act, frozen=True):
    """Lead 1-3 cards of one suit on your turn to lead (Kozel: 1 or 3); in the Czech game
    also a combination led out of turn at the start of a trick."""

    cards: tuple[Card, ...]


class Respond(Act, frozen=True):
    """Answer the cards on the table with as many cards, any cards at all."""

    cards: tuple[Card, ...]


class Declare(Act, frozen=True):
    """Claim the deal: 31 points in your tricks, bura (three trumps) or, in Kozel, four
    aces. A false claim loses the deal."""

    claim: Claim  # four_aces: Kozel only


class Dave(Act, frozen=True):
    """Offer the opponent to give up or to double the stake (two seats, your lead)."""


class DaveAnswer(Act, frozen=True):
    """Answer a dave: accept doubles the stake, decline gives up the deal."""

    accept: bool


class Pass(Act, frozen=True):
    """With the hands played out, take the last lead without declaring."""


class Concede(Act, frozen=True):
    """Give up the deal on your turn: you lose it."""


class TimeOut(Command, frozen=True, kw_only=True):
    """The server's, never a player's: the seat due let its time run out (docs/rules.md
    §13), or, with `away_since`, has been away that long while due (abandonment). Judged on
    the table at `version` and nothing later: if anything happened since, the table changed."""

    seat: int
    version: int
    at: int  # when it was judged: milliseconds since 1970-01-01 UTC
    away_since: int | None = None  # the seat has had no live stream since then
    # abandonment: every other seat has been away abandon_seconds too, so nobody is left at
    # the table and the game ends with this deal (docs/rules.md §13.5)
    deserted: bool = False


class EndPause(Command, frozen=True):
    """The operator's: end the pause a timeout made (`on_timeout: "pause"`), giving the
    seat due a fresh turn (`play_on`) or ruling the deal lost on time (`lose_deal`)."""

    verdict: PauseVerdict = "play_on"


PlayerCommand = Draw | Lead | Respond | Declare | Dave | DaveAnswer | Pass | Concede | Seed
ServerCommand = TimeOut | EndPause | CloseSeeding
AnyCommand = StartGame | PlayerCommand | ServerCommand
