"""The record played back by the rules: each act's command is read back from the event that
records it and decided again on the table before it, and what the rules decide must be
what the record holds, event for event. A fold (domain/evolve.py) applies events as they
come and never validates, so a record rewritten by hand, its hashes recomputed, could give
a deal to the wrong seat, a stake nobody owed or a game to the loser, and still fold. Only
the commands are read from the record; every consequence (the cards dealt, the trick's
taker, a penalty, a deal's end, its settlement, the game's end) is the rules' own.

The times a command was decided at are not events of their own: they are read back from
the clocks and deadlines the decision recorded (a clock started, a seeding's deadline, a
timeout's judgement), which is all the rules ever use them for."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import msgspec

from domain.commands import (
    AnyCommand,
    CloseSeeding,
    Concede,
    Dave,
    DaveAnswer,
    Declare,
    Draw,
    EndPause,
    Lead,
    Pass,
    Respond,
    Seed,
    StartGame,
    TimeOut,
)
from domain.decide import decide
from domain.errors import BadSetup, RuleViolation
from domain.events import (
    BuraShown,
    CardDrawn,
    CardsLed,
    CardsResponded,
    ClockStarted,
    Conceded,
    DaveAccepted,
    DaveDeclined,
    DaveOffered,
    DealerChosen,
    DealStarted,
    Declared,
    Event,
    FourAcesShown,
    GameStarted,
    Passed,
    PauseEnded,
    PenaltyApplied,
    SeedingClosed,
    SeedingOpened,
    SeedSent,
    TimedOut,
)
from domain.evolve import RecordBroken, fold
from domain.state import NEW_GAME, Game

NOT_DECIDED = "is not what the rules decide on the table before it"
# a record that stops in the middle of an act: its event `version` was never recorded
ENDS_TOO_SOON = "is missing: the record ends in the middle of an act"
REFUSED = "is an act the rules refuse on the table before it"
NO_ACT = "begins no act: no command of the rules records it first"


def play_back(events: Sequence[Event]) -> Game:
    """The game the record leaves, each act decided again; RecordBroken at the first event
    the rules would not have recorded there: as a fold names it (the event cannot apply,
    and why) when it cannot even apply to the table."""
    state = NEW_GAME
    at = 0
    while at < len(events):
        decided = _decision(state, events, at)
        state = fold(state, decided)
        at += len(decided)
    return state


def _decision(state: Game, events: Sequence[Event], at: int) -> list[Event]:
    """The events the rules decide for the act recorded at `at`, which the record holds
    from there; RecordBroken otherwise."""
    first = events[at]
    version = state.version + 1
    tag = str(first.__struct_config__.tag)
    read = _command(state, events, at)
    if read is None:
        no_act = RecordBroken(version, tag, ValueError("no command"), NO_ACT)
        raise _as_folded(state, events[at : at + 1], no_act)
    command, actor = read
    closest: tuple[int, list[Event]] | None = None
    refusal: Exception | None = None
    for now in _times(state, events, at):
        try:
            decided = decide(state, command, actor, now)
        except (RuleViolation, BadSetup, ValueError) as refused:
            refusal = refusal or refused
            continue
        held = events[at : at + len(decided)]
        shaped = [_as_recorded(d, r) for d, r in zip(decided, held, strict=False)]
        same = next(
            (i for i, (d, r) in enumerate(zip(shaped, held, strict=True)) if d != r), len(held)
        )
        if same == len(decided):
            return list(held)
        if closest is None or same > closest[0]:
            closest = (same, decided)
    if closest is None:
        assert refusal is not None
        raise _as_folded(state, events[at : at + 1], RecordBroken(version, tag, refusal, REFUSED))
    same, decided = closest
    wanted = _named(decided[same])
    if at + same >= len(events):  # the record ends in the middle of the act
        cause = ValueError(f"the rules go on with {wanted}")
        raise RecordBroken(version + same, "end", cause, ENDS_TOO_SOON)
    found = str(events[at + same].__struct_config__.tag)
    cause = ValueError(f"the rules decide {wanted} here")
    other = RecordBroken(version + same, found, cause, NOT_DECIDED)
    raise _as_folded(state, events[at : at + same + 1], other)


def _as_folded(state: Game, held: Sequence[Event], broken: RecordBroken) -> RecordBroken:
    """`broken`, unless the record's events `held` (those of the act up to the first the
    rules would not have recorded) cannot even apply to the table: then the fold's own
    account of that event."""
    try:
        fold(state, held)
    except RecordBroken as folded:
        return folded
    return broken


def _command(state: Game, events: Sequence[Event], at: int) -> tuple[AnyCommand, int | None] | None:
    """The command (and the seat that sent it, None for the server's) whose decision the
    event at `at` begins."""
    match events[at]:
        case GameStarted(seats=seats, rules=rules, seed=seed, rematch_of=rematch_of):
            later = events[at + 1 : at + 3]
            chosen = next((e for e in later if isinstance(e, DealerChosen)), None)
            dealer = None if chosen is None or chosen.by == "lot" else chosen.seat
            later_on = (events[i] for i in range(at + 1, len(events)))
            dealt = next((e for e in later_on if isinstance(e, DealStarted)), None)
            deck = dealt.deck if dealt is not None and dealt.explicit else None
            start = StartGame(
                seats=seats,
                rules=rules,
                seed=seed or "",
                dealer=dealer,
                deck=deck,
                rematch_of=rematch_of,
            )
            return start, None
        case SeedSent(seat=seat, value=value) if value is not None:
            return Seed(value), seat
        case SeedingClosed(at=closed) if closed is not None:
            return CloseSeeding(at=closed), None
        case CardsLed(seat=seat, cards=cards):
            return Lead(cards), seat
        case CardsResponded(seat=seat, cards=cards) if cards is not None:
            return Respond(cards), seat
        case CardDrawn(seat=seat):
            return Draw(), seat
        case PenaltyApplied(seat=seat, count=count, asked=asked, seen=seen):
            return Draw(asked if asked is not None else count, seen=seen), seat
        case Declared(seat=seat, claim=claim, seen=seen):
            return Declare(claim, seen=seen), seat
        case BuraShown(seat=seat):
            return Declare("bura"), seat
        case FourAcesShown(seat=seat):
            return Declare("four_aces"), seat
        case DaveOffered(seat=seat):
            return Dave(), seat
        case DaveAccepted(seat=seat):
            return DaveAnswer(True), seat
        case DaveDeclined(seat=seat):
            return DaveAnswer(False), seat
        case Passed(seat=seat):
            return Pass(), seat
        case Conceded(seat=seat):
            return Concede(), seat
        case TimedOut(seat=seat, at=judged, away_since=away, deserted=deserted):
            timed = TimeOut(
                seat=seat,
                version=state.version,
                at=judged,
                away_since=away,
                deserted=deserted is True,
            )
            return timed, None
        case PauseEnded(verdict=verdict):
            return EndPause(verdict), None
    return None


def _times(state: Game, events: Sequence[Event], at: int) -> Iterator[int | None]:
    """When the act may have been decided, as the record tells: the time of the clock it
    started, its timeout's or ruling's own, the time its seeding's deadline was counted
    from; else a time the table was waiting at (a decision that records no time): when its
    clock started, or its seeding opened."""
    seen: set[int | None] = set()
    rules = state.rules
    for i in range(at, len(events)):
        event = events[i]
        if i > at and _command(state, events, i) is not None:  # the next act's
            break
        match event:
            case TimedOut(at=judged) | PauseEnded(at=judged) if event is events[at]:
                when: int | None = judged
            case ClockStarted(at=started):
                when = started
            case SeedingOpened(deadline=deadline) if deadline is not None:
                when = deadline - rules.seeding_seconds * 1000
            case GameStarted(rules=started_with) if event is events[at]:
                rules = started_with
                continue
            case _:
                continue
        if when not in seen:
            seen.add(when)
            yield when
        if len(seen) >= 2:
            break
    clock = state.clock.started if state.clock is not None else None
    seeding = state.shuffle
    opened = (
        seeding.deadline - rules.seeding_seconds * 1000
        if seeding is not None and seeding.deadline is not None
        else None
    )
    for when in (clock, opened, None):
        if when not in seen:
            seen.add(when)
            yield when


def _as_recorded(decided: Event, recorded: Event) -> Event:
    """A decided event as a row written before a field existed holds it (the field's
    default, which such rows decode to)."""
    match decided, recorded:
        case PenaltyApplied(), PenaltyApplied(asked=None):
            return msgspec.structs.replace(decided, asked=None)
        case ClockStarted(), ClockStarted(unanswered=()):
            return msgspec.structs.replace(decided, unanswered=())
    return decided


def _named(event: Event) -> str:
    """An event as the rules decide it, for the message: its type and fields."""
    fields = msgspec.structs.asdict(event)
    shown = ", ".join(f"{k} {v!r}" for k, v in fields.items() if k not in ("deck",))
    return f"{event.__struct_config__.tag} ({shown})"
