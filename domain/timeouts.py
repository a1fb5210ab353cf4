"""docs/rules.md §13: a timeout and an abandonment judged against the table's clock, and the
operator's end of a pause. These are the server's commands, never a player's."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import msgspec

from domain.bots import safest_act
from domain.clock import abandon_deadline, restart
from domain.commands import EndPause, PlayerCommand, TimeOut
from domain.errors import RuleViolation
from domain.events import Event, GameFinished, PauseEnded, TimedOut
from domain.settlement import end_deal
from domain.state import Clock, Game
from domain.vocabulary import Due

# The rules of play without the clock: what an auto-played act is judged by.
Play = Callable[[Game, PlayerCommand, int], list[Event]]


def time_out(state: Game, command: TimeOut, play: Play) -> list[Event]:
    """The seat due let its time run out, or was away too long while due: judged on the
    table at `command.version` only, so a timeout that comes after the seat acted (or after
    any other change) is refused, `table_changed`, and nothing happens."""
    rules = state.rules
    clock = _clock(state)
    if command.version != state.version:
        raise RuleViolation(
            "table_changed",
            f"the timeout was judged on version {command.version}; the table is at {state.version}",
        )
    if clock.paused and command.away_since is None:
        # a paused table still judges a seat that is gone (docs/rules.md §13.5)
        raise RuleViolation(
            "clock_paused", "the clock is paused after a timeout: the operator decides"
        )
    if command.seat != clock.seat:
        raise RuleViolation("not_due", f"the clock runs for seat {clock.seat}, not {command.seat}")
    deal = state.deal
    assert deal is not None
    phase = cast(Due, deal.phase)
    seat, at = command.seat, command.at
    events: list[Event]
    if command.away_since is None:
        _ran_out(seat, clock.deadline, at)
        timed = TimedOut(
            seat=seat,
            clock="turn",
            phase=phase,
            deadline=clock.deadline,
            at=at,
            verdict=rules.on_timeout,
        )
        match rules.on_timeout:
            case "lose_deal":
                events = [timed, *end_deal(state, deal, loser=seat, reason="timeout")]
            case "auto_play":
                events = [timed, *play(state, safest_act(state, seat), seat)]
            case "pause":
                events = [timed]
    else:
        gone = abandon_deadline(rules, clock, command.away_since)
        if gone is None:
            raise RuleViolation("no_abandonment", "this table does not judge abandonment")
        _ran_out(seat, gone, at)
        ended = end_deal(state, deal, loser=seat, reason="abandoned")
        # a table every seat left ends with the deal (§13.5): said so only where that
        # ended the game, which would otherwise have gone on
        deserted = command.deserted and not isinstance(ended[-1], GameFinished)
        if deserted:
            ended = end_deal(state, deal, loser=seat, reason="abandoned", last=True)
        timed = TimedOut(
            seat=seat,
            clock="abandon",
            phase=phase,
            deadline=gone,
            at=at,
            verdict="lose_deal",
            away_since=command.away_since,
            deserted=True if deserted else msgspec.UNSET,
        )
        events = [timed, *ended]
    return events + restart(state, events, at)


def end_pause(state: Game, command: EndPause, now: int) -> list[Event]:
    clock = state.clock
    if clock is None or not clock.paused:
        # a table without a clock has no pause either: the operator's ruling is refused as
        # one on a clock that is not paused (no_clock is the server's own timeout's)
        why = (
            "this table has no clock (rules.turn_seconds)"
            if state.rules.turn_seconds is None
            else "the clock is not paused"
        )
        raise RuleViolation("not_paused", f"{why}: no timeout awaits a ruling")
    deal = state.deal
    assert deal is not None
    ended = PauseEnded(seat=clock.seat, verdict=command.verdict, at=now)
    events: list[Event] = [ended]
    if command.verdict == "lose_deal":
        events += end_deal(state, deal, loser=clock.seat, reason="timeout")
    return events + restart(state, events, now)


def _clock(state: Game) -> Clock:
    if state.clock is None:
        raise RuleViolation("no_clock", "this table has no clock (rules.turn_seconds)")
    return state.clock


def _ran_out(seat: int, deadline: int, at: int) -> None:
    if at < deadline:
        raise RuleViolation(
            "still_in_time", f"seat {seat} still has {(deadline - at) / 1000:.1f} s to act"
        )
