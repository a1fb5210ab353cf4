"""The state the events fold into: a game, its current deal, the trick on the table."""

from __future__ import annotations

import msgspec

from domain.cards import Card, Suit
from domain.rules import Rules
from domain.vocabulary import Combination, Phase, Reason


class Response(msgspec.Struct, frozen=True):
    seat: int
    cards: tuple[Card, ...]
    beat: bool
    face_down: bool = False


class Trick(msgspec.Struct, frozen=True):
    leader: int
    led: tuple[Card, ...]
    winning: tuple[Card, ...]  # the set every next response must beat
    winner: int
    responses: tuple[Response, ...] = ()
    combination: Combination | None = None


class DealResult(msgspec.Struct, frozen=True):
    number: int
    winners: tuple[int, ...]
    losers: tuple[int, ...]
    reason: Reason
    stake: int
    server_seed: str | None = None  # shuffle "seats": revealed when the deal ended
    pot: tuple[int, ...] = ()  # pay_pot: per seat, the deal's fines for false 31s, if any
    # the seat whose act ended it (a declaration, a show, an offence, a concession, a dave
    # declined, a clock run out); None when no one seat's did (most points, no claim)
    by: int | None = None


class Shuffle(msgspec.Struct, frozen=True, kw_only=True):
    """A seat-shuffled deal's seeds (`shuffle: "seats"`), from its seeding to its end."""

    number: int
    server_commitment: str
    deadline: int | None
    seeds: tuple[str | None, ...]  # per seat; None until sent (or when not seen)
    sent: tuple[int, ...] = ()  # seats whose seed is in, in the order they came
    closed: bool = False
    missing: tuple[int, ...] = ()
    closed_at: int | None = None  # closed at the deadline, judged at this time
    server_seed: str | None = None  # revealed when the deal ends


class Deal(msgspec.Struct, frozen=True, kw_only=True):
    number: int
    dealer: int
    deck: tuple[Card, ...]
    commitment: str
    stock: tuple[Card, ...]  # top first; the turned trump card is the last one
    hands: tuple[tuple[Card, ...], ...]
    piles: tuple[tuple[Card, ...], ...]  # trick piles, face down
    tricks: tuple[int, ...]  # how many tricks each seat has taken
    bonus: tuple[int, ...]  # compensation points counted toward 31
    trump: Suit | None = None
    trump_card: Card | None = None
    phase: Phase = "dealing"
    turn: int = 0
    leader: int = 0  # who leads (or led) the current trick
    trick: Trick | None = None
    draws: tuple[int, ...] = ()  # seats due to draw, one card each, in order
    multiplier: int = 1
    cube: int | None = None  # who may offer the next dave; None: either seat
    dave_from: int | None = None
    tricks_played: int = 0
    face_down: tuple[tuple[Card, ...], ...] = ()  # per seat: cards it played face down
    pot: tuple[int, ...] = ()  # per seat: fines for false 31s (pay_pot), settled with the deal
    refuted: tuple[int, ...] = ()  # seats whose 31 was found false since the last trick


class Clock(msgspec.Struct, frozen=True, kw_only=True):
    """The table's clock (docs/rules.md §13), as the last `clock_started` set it. Times are
    milliseconds since 1970-01-01 UTC, taken by the server when it decided the act."""

    seat: int  # the seat it runs for: the one due to act
    started: int  # when that seat became due
    turn_ends: int  # started + turn_seconds: then the seat's bank starts to run
    deadline: int  # turn_ends + the seat's bank: its time runs out
    banks: tuple[int, ...]  # each seat's bank left this deal, before the running turn
    paused: bool = False  # on_timeout "pause": no clock runs until an act or the operator
    unanswered: tuple[int | None, ...] = ()  # as the clock_started (domain/events.py)
    # the version its clock_started made: at a later version an act has been recorded and
    # its own clock_started is still to come (the events of one command), so the deadline
    # here is no seat's (views show no clock there: domain/clock.py `ticking`)
    version: int = 0


class Game(msgspec.Struct, frozen=True, kw_only=True):
    seats: tuple[str, ...] = ()
    rules: Rules = Rules()
    seed: str = ""
    version: int = 0
    dealer: int | None = None
    deal: Deal | None = None
    deals: tuple[DealResult, ...] = ()
    score: tuple[int, ...] = ()
    winners: tuple[int, ...] | None = None
    reason: Reason | None = None
    started: bool = False
    shuffle: Shuffle | None = None  # the current deal's seeds, at a seat-shuffled table
    clock: Clock | None = None
    rematch_of: str | None = None  # the finished game this one is the rematch of

    @property
    def finished(self) -> bool:
        return self.winners is not None

    @property
    def seeding(self) -> Shuffle | None:
        """The deal waiting for seeds, if the table is waiting for them."""
        if self.shuffle is None or self.shuffle.closed or self.finished:
            return None
        return self.shuffle


NEW_GAME = Game()
