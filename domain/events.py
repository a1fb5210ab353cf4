"""Everything that happens at the table, in the past tense. Tagged by `type`.

Fields a viewer may not see are optional so that redacted copies (views.redact) are the
same types with the secret set to None.
"""

from __future__ import annotations

import msgspec

from domain.cards import Card
from domain.naming import snake
from domain.rules import Rules
from domain.vocabulary import (
    Claim,
    ClockKind,
    Combination,
    CompensationWhy,
    DealerBy,
    Due,
    OnTimeout,
    PauseVerdict,
    PenaltyRule,
    Reason,
)


class Event(msgspec.Struct, frozen=True, tag_field="type", tag=snake, forbid_unknown_fields=True):
    pass


class GameStarted(Event, frozen=True, kw_only=True):
    seats: tuple[str, ...]
    rules: Rules
    seed: str | None  # secret until GameFinished reveals it
    # A rematch names the game it follows. Optional with a default, so the rows written
    # before it existed decode unchanged (no schema version bump).
    rematch_of: str | None = None


class DealerChosen(Event, frozen=True):
    seat: int
    by: DealerBy


class SeedingOpened(Event, frozen=True, kw_only=True):
    """`shuffle: "seats"`: deal `number` waits for every seat's seed. The server is bound to
    its own seed for the deal before any seat's is known."""

    number: int
    server_commitment: str  # SHA-256 of the deal's server seed (docs/fairness.md)
    deadline: int | None  # ms since 1970-01-01 UTC: seeds still missing then count as empty


class SeedSent(Event, frozen=True):
    seat: int
    value: str | None  # hidden from the other seats until seeding closes


class SeedingClosed(Event, frozen=True, kw_only=True):
    """Every seed is in, or the deadline passed: the seeds the deal is shuffled from."""

    number: int
    seeds: tuple[str, ...]  # every seat's, in seat order; "" for a missing one
    missing: tuple[int, ...]  # seats that sent none by the deadline
    at: int | None = None  # closed at the deadline: when that was judged (ms since the epoch)


class SeedRevealed(Event, frozen=True, kw_only=True):
    """A seat-shuffled deal has ended: the server's seed for it, so anyone can check."""

    number: int
    server_seed: str | None  # closed_discard: the arbiter's only, like the game's seed


class DealStarted(Event, frozen=True, kw_only=True):
    number: int
    dealer: int
    commitment: str  # sha256 over the deal's seed and deck order, published before play
    deck: tuple[Card, ...] | None  # secret: the whole pack in dealing order
    explicit: bool = False  # the operator fixed the order


class CardDealt(Event, frozen=True):
    seat: int
    card: Card | None


class TrumpTurned(Event, frozen=True):
    card: Card


class CompensationGiven(Event, frozen=True):
    seat: int  # who receives the points toward 31
    points: int
    why: CompensationWhy


class CardsLed(Event, frozen=True):
    seat: int
    cards: tuple[Card, ...]
    combination: Combination | None = None  # the Czech game only


class CardsResponded(Event, frozen=True, kw_only=True):
    seat: int
    cards: tuple[Card, ...] | None  # None when face down and the viewer may not see
    count: int
    beat: bool
    face_down: bool = False


class TrickTaken(Event, frozen=True):
    seat: int


class CardDrawn(Event, frozen=True):
    seat: int
    card: Card | None
    face_up: bool = False  # the turned trump card, seen by everyone as it is drawn


class PenaltyApplied(Event, frozen=True, kw_only=True):
    seat: int
    rule: PenaltyRule
    due: int | None  # the seat that was due to draw, None when no draw was due
    cards: tuple[Card, ...] | None  # the cards taken from the stock
    count: int  # how many were taken
    # the version the drawer said it acted on (the command's `seen`); None: it said none,
    # and was judged on the table as the command found it
    seen: int | None = None
    # how many the draw asked for: more than `count` when the stock held fewer (a double
    # draw of the last card); None in records made before it was kept
    asked: int | None = None


class BuraShown(Event, frozen=True):
    seat: int
    cards: tuple[Card, ...]


class FourAcesShown(Event, frozen=True):
    """Kozel: four aces in hand win the deal at once."""

    seat: int
    cards: tuple[Card, ...]


class Declared(Event, frozen=True, kw_only=True):
    seat: int
    claim: Claim
    value: int  # thirty_one: trick points with compensation; bura: trumps; four_aces: aces
    needed: int  # the target (31, 41, 51), 3 trumps or 4 aces
    true: bool
    seen: int | None = None  # the version the declarer said it acted on, as in PenaltyApplied


class PotPaid(Event, frozen=True):
    """`false_declaration: "pay_pot"`: a false 31 does not end the deal; the declarer owes
    `amount` to every other side, settled when the deal ends."""

    seat: int
    amount: int


class Passed(Event, frozen=True):
    seat: int


class Conceded(Event, frozen=True):
    seat: int


class DaveOffered(Event, frozen=True):
    seat: int
    multiplier: int  # the multiplier if accepted


class DaveAccepted(Event, frozen=True):
    seat: int
    multiplier: int


class DaveDeclined(Event, frozen=True):
    seat: int


class DealWon(Event, frozen=True):
    seat: int
    reason: Reason


class DealLost(Event, frozen=True):
    seat: int
    reason: Reason


class DealVoid(Event, frozen=True):
    reason: Reason


class StakeSettled(Event, frozen=True, kw_only=True):
    deal: int
    stake: int
    multiplier: int
    payments: tuple[int, ...]  # change of each seat's score


class GameFinished(Event, frozen=True, kw_only=True):
    winners: tuple[int, ...]
    reason: Reason
    # revealed now, so anyone can check every deal's commitment; kept from the seats in a
    # closed_discard game, where the deck order would show the face-down cards
    seed: str | None


class ClockStarted(Event, frozen=True, kw_only=True):
    """On a table with a clock, after every act: the clock now runs for `seat`, the seat due
    (docs/rules.md §13). Times are milliseconds since 1970-01-01 UTC, the server's clock
    when it decided the act, so a replay shows the same deadlines the players had."""

    seat: int
    at: int  # when the seat became due
    turn_ends: int  # at + turn_seconds
    deadline: int  # turn_ends + the seat's bank: when its time runs out
    banks: tuple[int, ...]  # each seat's time bank left this deal
    # Each seat whose last turn the server played for it (auto_play) and that has not
    # acted itself since: when it first became due without acting (its absence counts from
    # there, docs/rules.md §13.5); null for every other seat. Empty when no seat is so
    # (and in rows written before it existed, which decode unchanged).
    unanswered: tuple[int | None, ...] = ()


class TimedOut(Event, frozen=True, kw_only=True):
    """The seat due ran out of time (`clock: "turn"`), or was away from the table for
    abandon_seconds while due (`clock: "abandon"`); the verdict says what followed."""

    seat: int
    clock: ClockKind
    phase: Due  # what the seat was due to do
    deadline: int  # when its time (or the allowed absence) ran out
    at: int  # when the timeout was judged
    verdict: OnTimeout  # abandonment always loses the deal
    away_since: int | None = None  # abandonment: since when the seat had no live stream
    # abandonment of a table every seat had left (abandon_seconds each): true, and the game
    # ended with the deal; absent otherwise (and in rows written before it existed)
    deserted: bool | msgspec.UnsetType = msgspec.UNSET


class PauseEnded(Event, frozen=True, kw_only=True):
    """The operator ended a clock pause: play on with a fresh turn, or the deal lost."""

    seat: int
    verdict: PauseVerdict
    at: int


AnyEvent = (
    GameStarted
    | DealerChosen
    | SeedingOpened
    | SeedSent
    | SeedingClosed
    | SeedRevealed
    | DealStarted
    | CardDealt
    | TrumpTurned
    | CompensationGiven
    | CardsLed
    | CardsResponded
    | TrickTaken
    | CardDrawn
    | PenaltyApplied
    | BuraShown
    | FourAcesShown
    | Declared
    | PotPaid
    | Passed
    | Conceded
    | DaveOffered
    | DaveAccepted
    | DaveDeclined
    | DealWon
    | DealLost
    | DealVoid
    | StakeSettled
    | GameFinished
    | ClockStarted
    | TimedOut
    | PauseEnded
)
EVENT_TYPES: dict[str, type[Event]] = {snake(t.__name__): t for t in AnyEvent.__args__}
