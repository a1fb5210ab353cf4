"""What each viewer may see: a seat, a spectator, or the arbiter (everything).

Every path by which cards leave the domain (views, redacted events, replays) goes through
this module, so a hidden card has one place to stay hidden.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import msgspec
from msgspec.structs import replace

from domain.cards import Card
from domain.clock import abandon_deadline, bank_left, ticking
from domain.events import (
    CardDealt,
    CardDrawn,
    CardsResponded,
    DealStarted,
    Event,
    GameFinished,
    GameStarted,
    PenaltyApplied,
    SeedRevealed,
    SeedSent,
)
from domain.moves import Moves, moves
from domain.rules import Rules, in_effect
from domain.state import Clock, Deal, DealResult, Game, Shuffle
from domain.table import seat_points
from domain.vocabulary import Combination, Due, Reason, Status, ViewerKind, ViewPhase

ARBITER: Literal["arbiter"] = "arbiter"
SPECTATOR: Literal["spectator"] = "spectator"
Viewer = int | Literal["arbiter", "spectator"]


class Presence(msgspec.Struct, frozen=True):
    """Whether a seat has a live stream open, and since when it has (or has not): the
    server's observation, never a game event (docs/rules.md §13.5). Times in ms since 1970."""

    connected: bool
    since: int | None = None  # None: no stream of this seat was ever seen
    # never seen: when its absence counts from, if not from when it became due (the board
    # lost its state, or began after it became due); None: from then
    counted: int | None = None


class SeatView(msgspec.Struct, frozen=True, kw_only=True):
    seat: int
    name: str
    cards: int  # how many cards the seat holds
    tricks: int
    score: int
    open: bool = False
    hand: tuple[Card, ...] | None = None  # own seat, open seats, or the arbiter
    points: int | None = None  # own with show_own_points, or the arbiter
    pile: tuple[Card, ...] | None = None  # the arbiter only: tricks are face down
    # The clock (docs/rules.md §13), times in ms since 1970-01-01 UTC: for the seat due, when
    # its time runs out and how much is left as of the view's `now`; for every seat, its bank.
    deadline: int | None = None
    time_left: int | None = None
    time_bank: int | None = None
    # Presence: a live stream open (`connected`), and since when it is or is not; for the
    # seat due while away, when it will have been away abandon_seconds (`abandon_at`).
    connected: bool | None = None
    away_since: int | None = None
    connected_since: int | None = None
    abandon_at: int | None = None


class ResponseView(msgspec.Struct, frozen=True, kw_only=True):
    seat: int
    count: int
    beat: bool
    face_down: bool
    cards: tuple[Card, ...] | None


class TrickView(msgspec.Struct, frozen=True, kw_only=True):
    leader: int
    led: tuple[Card, ...]
    responses: tuple[ResponseView, ...]
    winner: int  # who takes it if nobody beats it from here
    combination: Combination | None = None  # the Czech game: the combination led


class DaveView(msgspec.Struct, frozen=True, kw_only=True):
    enabled: bool
    multiplier: int
    may_offer: int | None  # the seat holding the cube, None while either may offer
    offered_by: int | None


class DealView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    number: int
    winners: tuple[int, ...]
    losers: tuple[int, ...]
    reason: Reason
    stake: int
    server_seed: str | None = None  # shuffle "seats": the deal's server seed, revealed
    pot: tuple[int, ...] = ()  # pay_pot: what each seat owed every other side, when any did
    by: int | None = None  # the seat whose act ended the deal, when one seat's did


class ShuffleView(msgspec.Struct, frozen=True, kw_only=True):
    """The current deal's seeds at a table whose seats shuffle (`shuffle: "seats"`)."""

    deal: int
    server_commitment: str  # SHA-256 of the server's seed, published before any seat's
    deadline: int | None  # ms since 1970-01-01 UTC: seeds missing then count as empty
    sent: tuple[int, ...]  # seats whose seed is in
    seed: str | None  # the viewer's own seed, once sent
    seeds: tuple[str, ...] | None  # once seeding closed: every seat's, "" where missing
    missing: tuple[int, ...]  # seats whose seed was missing at the deadline
    server_seed: str | None  # revealed when the deal ends (closed discard: the arbiter only)


class Result(msgspec.Struct, frozen=True):
    winners: tuple[int, ...]
    reason: Reason


class ClockView(msgspec.Struct, frozen=True, kw_only=True):
    """The table's clock: whom it runs for, since and until when (ms since 1970, UTC)."""

    seat: int
    started: int
    turn_ends: int  # then the seat's bank runs
    deadline: int | None  # None while paused
    paused: bool


class View(msgspec.Struct, frozen=True, kw_only=True):
    viewer: ViewerKind
    seat: int | None
    version: int
    status: Status
    phase: ViewPhase
    turn: int | None
    due: Due | None  # what the viewer itself must do now, if anything
    deal: int
    dealer: int | None
    trump: Card | None  # the turned card while it lies in the stock
    trump_suit: str | None
    stock_count: int
    hand: tuple[Card, ...] | None
    seats: tuple[SeatView, ...]
    trick: TrickView | None
    draws: tuple[int, ...]  # seats due to draw, in order
    dave: DaveView
    deals: tuple[DealView, ...]
    score: tuple[int, ...]
    result: Result | None
    commitment: str | None  # the current deal's shuffle commitment
    seed: str | None  # revealed when the game is over
    stock: tuple[Card, ...] | None = None  # the arbiter only
    rules: Rules
    pot: tuple[int, ...] = ()  # pay_pot: what each seat owes every other side this deal
    # a seat's own view: every command it may send now (domain/moves.py); else None
    moves: Moves | None = None
    shuffle: ShuffleView | None = None  # shuffle "seats": the current deal's seeds
    clock: ClockView | None = None  # a table with a clock, while the game is on
    # the server's time of the view (ms, UTC), where there is a deadline to count down: a
    # table with a clock, or one awaiting the seats' seeds by a time
    now: int | None = None
    rematch_of: str | None = None  # the game this one is the rematch of
    rematch: str | None = None  # the rematch that followed this game, once there is one


def sees_hand(viewer: Viewer, seat: int, rules: Rules) -> bool:
    """Own hand, the arbiter, and open seats («на открытых»): their hands are shown to all."""
    return viewer in (ARBITER, seat) or seat in rules.open_seats


def sees_seed(viewer: Viewer, rules: Rules) -> bool:
    """The seed (revealed when the game ends) gives the deck order, and with it every card
    that was played face down: in a closed_discard game only the arbiter ever sees it."""
    return viewer == ARBITER or not rules.closed_discard


def view(
    state: Game,
    viewer: Viewer,
    *,
    now: int | None = None,
    presence: Sequence[Presence] | None = None,
    rematch: str | None = None,
) -> View:
    """What `viewer` sees. The server adds what is not in the events: the time (`now`, for
    time left), each seat's presence, and the rematch that followed a finished game."""
    deal = state.deal
    rules = state.rules
    arbiter = viewer == ARBITER
    seat = viewer if isinstance(viewer, int) else None
    seeding = state.seeding
    phase: ViewPhase
    if state.finished:
        phase = "finished"
    elif seeding is not None:
        phase = "seeding"
    else:
        phase = deal.phase if deal else "dealing"
    turn = None if state.finished or deal is None else deal.turn
    due = _due(phase) if seat is not None and turn == seat else None
    if seeding is not None and seat is not None and seat not in seeding.sent:
        due = "seed"
    number = deal.number if deal else (state.shuffle.number if state.shuffle else 0)
    seats = tuple(
        _timed(
            state,
            _seat_view(state, deal, s, viewer),
            now,
            presence[s] if presence is not None and s < len(presence) else None,
        )
        for s in range(len(state.seats))
    )
    trump_in_stock = deal is not None and bool(deal.stock) and deal.stock[-1] == deal.trump_card
    return View(
        viewer="arbiter" if arbiter else ("spectator" if seat is None else "seat"),
        seat=seat,
        version=state.version,
        status="finished" if state.finished else "in_progress",
        phase=phase,
        turn=turn,
        due=due,
        deal=number,
        dealer=state.dealer,
        trump=deal.trump_card if deal and trump_in_stock else None,
        trump_suit=deal.trump if deal else None,
        stock_count=len(deal.stock) if deal else 0,
        hand=(deal.hands[seat] if deal else ()) if seat is not None else None,
        seats=seats,
        trick=_trick_view(deal, viewer) if deal else None,
        # a deal over (lost to a penalty while seats were due to draw) has nobody due
        draws=deal.draws if deal and phase not in ("over", "finished") else (),
        dave=DaveView(
            enabled=len(state.seats) == 2 and rules.dave is not False,
            multiplier=deal.multiplier if deal else 1,
            may_offer=deal.cube if deal else None,
            offered_by=deal.dave_from if deal else None,
        ),
        deals=tuple(_deal_view(d, viewer, rules) for d in state.deals),
        score=state.score,
        result=Result(state.winners, state.reason)
        if state.winners is not None and state.reason is not None
        else None,
        commitment=deal.commitment if deal else None,
        seed=state.seed if (state.finished or arbiter) and sees_seed(viewer, rules) else None,
        stock=deal.stock if deal and arbiter else None,
        rules=in_effect(rules, len(state.seats)),
        pot=deal.pot if deal else (),
        moves=moves(state, seat) if seat is not None else None,
        clock=_clock_view(state.clock)
        if state.clock is not None
        and not state.finished
        and (state.clock.paused or ticking(state) is not None)
        else None,
        # a table with a deadline to count down: a clock, or seeds awaited by a time
        now=now
        if state.clock is not None or rules.turn_seconds is not None or seeding is not None
        else None,
        rematch_of=state.rematch_of,
        rematch=rematch,
        shuffle=_shuffle_view(state.shuffle, viewer, rules) if state.shuffle else None,
    )


def _deal_view(deal: DealResult, viewer: Viewer, rules: Rules) -> DealView:
    return DealView(
        number=deal.number,
        winners=deal.winners,
        losers=deal.losers,
        reason=deal.reason,
        stake=deal.stake,
        server_seed=deal.server_seed if sees_seed(viewer, rules) else None,
        pot=deal.pot,
        by=deal.by,
    )


def _shuffle_view(shuffle: Shuffle, viewer: Viewer, rules: Rules) -> ShuffleView:
    own = shuffle.seeds[viewer] if isinstance(viewer, int) else None
    return ShuffleView(
        deal=shuffle.number,
        server_commitment=shuffle.server_commitment,
        deadline=shuffle.deadline,
        sent=tuple(sorted(shuffle.sent)),
        seed=own,
        seeds=tuple(s or "" for s in shuffle.seeds) if shuffle.closed else None,
        missing=shuffle.missing,
        server_seed=shuffle.server_seed if sees_seed(viewer, rules) else None,
    )


def _clock_view(clock: Clock) -> ClockView:
    return ClockView(
        seat=clock.seat,
        started=clock.started,
        turn_ends=clock.turn_ends,
        deadline=None if clock.paused else clock.deadline,
        paused=clock.paused,
    )


def _timed(state: Game, shown: SeatView, now: int | None, presence: Presence | None) -> SeatView:
    """The seat's clock and presence, as of `now`."""
    clock = state.clock
    s = shown.seat
    changes: dict[str, object] = {}
    if clock is not None and not state.finished:
        due = ticking(state) is not None and clock.seat == s
        if due:
            changes["deadline"] = clock.deadline
            if now is not None:
                changes["time_left"] = max(0, clock.deadline - now)
        if state.rules.time_bank_seconds:
            if clock.paused and clock.seat == s:  # timed out: its bank was spent
                changes["time_bank"] = bank_left(clock, clock.deadline)
            elif now is not None and due:
                changes["time_bank"] = bank_left(clock, now)
            else:
                changes["time_bank"] = clock.banks[s]
    if presence is not None:
        changes["connected"] = presence.connected
        if presence.connected:
            changes["connected_since"] = presence.since
        else:
            changes["away_since"] = presence.since
            judged = ticking(state) is not None or (clock is not None and clock.paused)
            if clock is not None and judged and clock.seat == s and not state.finished:
                away = presence.since if presence.since is not None else presence.counted
                changes["abandon_at"] = abandon_deadline(state.rules, clock, away or 0)
    return replace(shown, **changes) if changes else shown


def disclosed_to(state: Game, viewer: Viewer) -> Viewer:
    """Whose eyes `viewer` reviews a game's record with: once a game is over its seed is
    revealed and with it every card, so everyone reviews it as the arbiter; but in a
    closed_discard game the seed stays hidden and a seat (or a spectator) sees only what
    it saw at the time, since the hands and the stock hold cards later played face down."""
    if state.finished and sees_seed(viewer, state.rules):
        return ARBITER
    return viewer


def review(state: Game, viewer: Viewer) -> View:
    """The whole table at any version of a game that is over, for a replay: every hand,
    the stock and the piles; but in a closed_discard game a seat (or a spectator) sees
    only what it saw at the time, since the hands and the stock hold the cards that were
    later played face down."""
    return view(state, ARBITER if sees_seed(viewer, state.rules) else viewer)


def _due(phase: ViewPhase) -> Due | None:
    match phase:
        case "lead" | "respond" | "draw" | "dave_answer":
            return phase
    return None


def _seat_view(state: Game, deal: Deal | None, s: int, viewer: Viewer) -> SeatView:
    rules = state.rules
    own_points = viewer == ARBITER or (viewer == s and rules.show_own_points)
    return SeatView(
        seat=s,
        name=state.seats[s],
        cards=len(deal.hands[s]) if deal else 0,
        tricks=deal.tricks[s] if deal else 0,
        score=state.score[s],
        open=s in rules.open_seats,
        hand=deal.hands[s] if deal and sees_hand(viewer, s, rules) else None,
        points=seat_points(deal, s) if deal and own_points else None,
        pile=deal.piles[s] if deal and viewer == ARBITER else None,
    )


def _trick_view(deal: Deal, viewer: Viewer) -> TrickView | None:
    trick = deal.trick
    if trick is None:
        return None
    return TrickView(
        leader=trick.leader,
        led=trick.led,
        winner=trick.winner,
        combination=trick.combination,
        responses=tuple(
            ResponseView(
                seat=r.seat,
                count=len(r.cards),
                beat=r.beat,
                face_down=r.face_down,
                cards=r.cards if not r.face_down or viewer in (r.seat, ARBITER) else None,
            )
            for r in trick.responses
        ),
    )


def redact(event: Event, viewer: Viewer, rules: Rules) -> Event:
    """The event as the viewer may see it: secrets set to None, nothing else changed."""
    if viewer == ARBITER:
        return event
    match event:
        case CardDealt(seat=seat) | CardDrawn(seat=seat, face_up=False) if not sees_hand(
            viewer, seat, rules
        ):
            return replace(event, card=None)
        case PenaltyApplied(seat=seat) if not sees_hand(viewer, seat, rules):
            return replace(event, cards=None)
        case CardsResponded(seat=seat, face_down=True) if viewer != seat:
            return replace(event, cards=None)
        case DealStarted():
            return replace(event, deck=None)
        case GameStarted():
            return replace(event, seed=None)
        case GameFinished() if not sees_seed(viewer, rules):
            return replace(event, seed=None)
        case SeedSent(seat=seat) if viewer != seat:
            # until every seed is in, nobody may fit its seed to another's
            return replace(event, value=None)
        case SeedRevealed() if not sees_seed(viewer, rules):
            return replace(event, server_seed=None)
    return event


def redact_all(events: Iterable[Event], viewer: Viewer, rules: Rules) -> list[Event]:
    return [redact(e, viewer, rules) for e in events]
