"""The table's clock (docs/rules.md §13): whose time runs, until when, and each seat's bank.

Time never comes from a clock here: the server passes the moment it decided an act
(milliseconds since 1970-01-01 UTC), and `clock_started` records what follows from it, so
a replay shows the deadlines the players had and a restarted server finds them again.
"""

from __future__ import annotations

from collections.abc import Sequence

from domain.errors import RuleViolation
from domain.events import ClockStarted, Event, TimedOut
from domain.evolve import fold
from domain.rules import Rules
from domain.state import Clock, Game


def ms(seconds: int) -> int:
    return seconds * 1000


def bank_left(clock: Clock, now: int) -> int:
    """The bank of the seat the clock runs for, at `now`: whole until its turn time ends,
    then running down to nothing at the deadline."""
    return max(0, clock.banks[clock.seat] - max(0, now - clock.turn_ends))


def running(state: Game) -> Clock | None:
    """The clock, while it runs: a table with a clock, a game on, no pause."""
    clock = state.clock
    if clock is None or clock.paused or state.finished:
        return None
    return clock


def ticking(state: Game) -> Clock | None:
    """The clock as a view shows it running: at the version its clock_started made. At the
    versions between an act and the clock that follows it (the events of one command: a
    trick taken, a deal ending and the next one dealt) it still holds the last seat's
    deadline, which no seat is racing."""
    clock = running(state)
    return clock if clock is not None and clock.version == state.version else None


def due_since(clock: Clock) -> int:
    """Since when the seat the clock runs for has been due without acting itself: this
    turn's start, or, when the server played its turns before for it (auto_play), the
    start of the first of them."""
    carried = clock.unanswered[clock.seat] if clock.seat < len(clock.unanswered) else None
    return carried if carried is not None else clock.started


def abandon_deadline(rules: Rules, clock: Clock, away_since: int) -> int | None:
    """When a seat away since `away_since` has been away abandon_seconds while due (its
    turns played for it by the server count as one: docs/rules.md §13.5)."""
    if rules.abandon_seconds is None:
        return None
    return max(away_since, due_since(clock)) + ms(rules.abandon_seconds)


def check_in_time(state: Game, now: int) -> None:
    """An act after the deadline of the seat due is not taken: the timeout comes first,
    whoever the act is from (docs/rules.md §13.2)."""
    clock = running(state)
    if clock is not None and now >= clock.deadline:
        late = (now - clock.deadline) / 1000
        raise RuleViolation(
            "out_of_time",
            f"seat {clock.seat}'s time ran out {late:.1f} s ago: the timeout is judged first",
        )


def restart(before: Game, events: Sequence[Event], now: int) -> list[Event]:
    """After an act on a table with a clock: the clock for the seat now due. Nothing when
    the game is over, or when the act was a timeout that paused the table."""
    after = fold(before, events)
    rules = after.rules
    if rules.turn_seconds is None or after.finished or after.deal is None:
        return []
    if any(isinstance(e, TimedOut) and e.verdict == "pause" for e in events):
        return []
    banks = _banks(before, after, now)
    seat = after.deal.turn
    turn_ends = now + ms(rules.turn_seconds)
    return [
        ClockStarted(
            seat=seat,
            at=now,
            turn_ends=turn_ends,
            deadline=turn_ends + banks[seat],
            banks=banks,
            unanswered=_unanswered(before, events, len(after.seats)),
        )
    ]


def _unanswered(before: Game, events: Sequence[Event], seats: int) -> tuple[int | None, ...]:
    """ClockStarted.unanswered after `events`: the seat the last clock ran for keeps (or
    starts) its run of turns without an act of its own when the server played its turn
    (auto_play); any other end of its turn (its own act, a ruling, a lost deal) ends it."""
    clock = before.clock
    if clock is None:
        return ()
    kept: list[int | None] = list(clock.unanswered) or [None] * seats
    played_for = any(
        isinstance(e, TimedOut) and e.seat == clock.seat and e.verdict == "auto_play"
        for e in events
    )
    kept[clock.seat] = due_since(clock) if played_for else None
    return tuple(kept) if any(t is not None for t in kept) else ()


def _banks(before: Game, after: Game, now: int) -> tuple[int, ...]:
    """Each seat's bank: whole at the start of every deal; otherwise as it was, less what
    the seat the clock ran for used of its own."""
    assert after.deal is not None
    full = (ms(after.rules.time_bank_seconds),) * len(after.seats)
    clock = before.clock
    if clock is None or before.deal is None or before.deal.number != after.deal.number:
        return full
    left = bank_left(clock, now)
    return tuple(left if s == clock.seat else b for s, b in enumerate(clock.banks))
