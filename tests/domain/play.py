"""Random games for the property tests: legal moves chosen by a Hypothesis-driven Random,
now and then a claim, a concession or a faulty draw, and checks after every command.

A table may have a clock (docs/rules.md §13): then time passes between commands by random
steps, and whenever the seat due's deadline has passed the game's timer times it out first,
as the server's would; now and then an absent seat is judged abandoned, and a pause is ended
by the operator or by the seat's own act."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import event
from hypothesis import strategies as st
from msgspec.structs import replace

from domain.bots import greedy_bot, random_bot
from domain.cards import Card
from domain.clock import abandon_deadline, running
from domain.commands import (
    AnyCommand,
    CloseSeeding,
    Concede,
    DaveAnswer,
    Draw,
    EndPause,
    Lead,
    PlayerCommand,
    Respond,
    Seed,
    StartGame,
    TimeOut,
)
from domain.decide import decide
from domain.errors import RuleViolation
from domain.events import CardsLed, Event, TimedOut
from domain.evolve import fold
from domain.legal import claimants, legal_commands, seeding_seats
from domain.rules import Rules, check, hand_sizes
from domain.state import NEW_GAME, Deal, Game

MAX_COMMANDS = 20_000  # a random game ends well within this (long ones: teams to 41, Kozel)
T0 = 1_700_000_000_000  # when a random game is dealt (ms since 1970)
# How long a player takes over an act, in ms: mostly quick, now and then far too long.
THINKING = (0, 0, 40, 300, 900, 2_500, 6_000, 40_000)


SEATS = st.integers(2, 6)

# docs/rules.md §8, one name each; `tables(variant=...)` forces one on, over random other options.
VARIANTS = (
    "closed_discard",
    "pay_pot",
    "open_seat",
    "open_both",
    "hand_size",
    "no_trumps",
    "czech",
    "deck_32",
    "teams",
    "kozel",
    "seats_shuffle",
)


@st.composite
def tables(
    draw: st.DrawFn, seats: st.SearchStrategy[int] = SEATS, variant: str | None = None
) -> StartGame:
    """A new game with 2-6 seats, any options of docs/rules.md §1-7 and any valid mix of
    the section 8 variants; with `variant`, that one surely on and the other variants off."""
    forced = {"open_both": st.just(2), "teams": st.sampled_from([4, 6]), "kozel": st.integers(2, 5)}
    n = draw(forced.get(variant or "", seats))
    kozel = variant == "kozel" or (variant is None and n <= 5 and draw(st.integers(0, 3)) == 0)

    def on(name: str) -> bool:
        return variant == name or (variant is None and draw(st.booleans()))

    teams = None
    target = 31
    if not kozel and n in (4, 6) and on("teams"):
        teams = (tuple(range(0, n, 2)), tuple(range(1, n, 2)))
        teams = teams if draw(st.booleans()) else (teams[1], teams[0])
        target = draw(st.sampled_from([31, 41, 51]))
        size = 52
    else:
        size = 32 if variant == "deck_32" else draw(st.sampled_from([36, 32, 52]))
    trumps = not (variant == "no_trumps" or (variant is None and draw(st.integers(0, 3)) == 0))
    closed = variant in ("closed_discard", "pay_pot") or on("closed_discard")
    pay_pot = closed and not kozel and (variant == "pay_pot" or draw(st.booleans()))
    if variant == "open_both":
        open_seats: tuple[int, ...] = (0, 1)
    elif variant in ("open_seat", "hand_size"):
        open_seats = (draw(st.integers(0, n - 1)),)
    else:
        open_seats = tuple(sorted(draw(st.sets(st.integers(0, n - 1), max_size=n))))
    sizes = None
    if not kozel and open_seats and (variant == "hand_size" or on("hand_size")):
        sizes = tuple(4 if s in open_seats else 3 for s in range(n))
    flc = 0 if trumps else draw(st.integers(0, 30))
    compensation = 0
    if 0 < len(open_seats) < n:  # a side may not start a deal holding its target already
        most = max(
            sum(1 for s in side if s in open_seats)
            for side in teams or tuple((s,) for s in range(n))
        )
        compensation = draw(st.integers(0, min(30, (target - 1 - flc) // most)))
    rules = Rules(
        game="kozel" if kozel else "bura",
        deck=size,  # type: ignore[arg-type]
        hand_size=sizes,
        trumps=trumps,
        first_lead_compensation=flc,
        penalties=draw(st.sampled_from(["enforce", "reject"])),
        short_stock=draw(st.sampled_from(["draw_in_order", "set_aside"])),
        declare_on=draw(st.sampled_from(["lead", "any_turn"])),
        no_claim=draw(st.sampled_from(["void", "most_points"])),
        show_own_points=False if closed else draw(st.booleans()),
        dave=draw(st.sampled_from([None, False, True] if n == 2 else [None, False])),
        dave_max_multiplier=draw(st.sampled_from([2, 4, 8, 64])),
        stake=draw(st.integers(1, 3)),
        # a team match is a zero-sum walk between two sides: kept short
        match_target=draw(st.integers(1, 2 if teams else 4)),
        closed_discard=closed,
        false_declaration="pay_pot" if pay_pot else "lose",
        open_seats=open_seats,
        compensation=compensation,
        combinations="czech" if not kozel and (variant == "czech" or on("czech")) else "none",
        teams=teams,
        target_points=target,
        # a quarter of the random tables have their seats shuffle
        shuffle="seats"
        if variant == "seats_shuffle" or (variant is None and draw(st.integers(0, 3)) == 0)
        else "server",
        **draw(clocks()),
    )
    if rules.shuffle == "seats":
        rules = replace(rules, seeding_seconds=draw(st.sampled_from([1, 30, 600])))
    return StartGame(
        seats=tuple(f"p{i}" for i in range(n)),
        rules=check(rules, n),
        seed=draw(st.text(min_size=1, max_size=8)),
        dealer=draw(st.none() | st.integers(0, n - 1)),
    )


@st.composite
def clocks(draw: st.DrawFn) -> dict[str, object]:
    """No clock (half the tables), or a clock of 1 to 30 s, a bank, a policy, abandonment."""
    turn = draw(st.sampled_from([None, None, 1, 3, 30]))
    if turn is None:
        return {}
    return {
        "turn_seconds": turn,
        "time_bank_seconds": draw(st.sampled_from([0, 0, 2, 20])),
        "on_timeout": draw(st.sampled_from(["lose_deal", "auto_play", "pause"])),
        "abandon_seconds": draw(st.sampled_from([None, 1, 5])),
    }


@dataclass(frozen=True)
class Style:
    """How the players behave: greedy or random, how often they claim, how clumsy they are."""

    bot: str  # "greedy" or "random" (the domain's bots) or "mixed" (the chooser below)
    claims: float  # chance of a claim, dave, pass or concession when a card could be played
    faults: float  # chance, before each command, that some seat draws when it should not


styles = st.builds(
    Style,
    bot=st.sampled_from(["mixed", "greedy", "random"]),
    claims=st.sampled_from([0.0, 0.005, 0.02, 0.1]),
    faults=st.sampled_from([0.0, 0.0, 0.005, 0.03]),
)

Check = Callable[[Game, list[Event]], None]


@dataclass
class Played:
    start: StartGame
    state: Game = NEW_GAME
    events: list[Event] = field(default_factory=list)
    states: list[Game] = field(default_factory=list)  # after each command, for replays
    faulty_draws: int = 0
    now: int = T0


def choose(state: Game, seat: int, style: Style, chance: random.Random) -> PlayerCommand:
    if style.bot == "greedy":
        return greedy_bot(state, seat, chance)
    if style.bot == "random":
        return random_bot(state, seat, chance)
    moves = legal_commands(state, seat)
    play = [m for m in moves if isinstance(m, Lead | Respond | Draw | DaveAnswer)]
    claims = [m for m in moves if m not in play and not isinstance(m, Concede)]
    if not play or (claims and chance.random() < style.claims):
        # a concession now and then; otherwise a claim, true or false, a dave or a pass
        if not claims or chance.random() < 0.05:
            return Concede()
        return chance.choice(claims)
    return chance.choice(play)


def expected_fault(state: Game, seat: int, count: int) -> str | None:
    """docs/rules.md §4 read directly: what a draw by this seat is, or None for a due draw."""
    deal = state.deal
    assert deal is not None
    due = deal.draws[0] if deal.phase == "draw" else None
    if not deal.stock:
        return "stock_empty"
    if count >= 2:
        return "double_draw"
    if len(deal.hands[seat]) >= hand_sizes(state.rules, len(state.seats))[seat]:
        return "extra_card"
    if due != seat:
        return "out_of_turn_draw"
    return None


def play_game(start: StartGame, style: Style, chance: random.Random, check: Check) -> Played:
    played = Played(start)
    played.events = decide(NEW_GAME, start, None, T0)
    played.state = fold(NEW_GAME, played.events)
    check(played.state, played.events)
    seats = len(start.seats)
    for _ in range(MAX_COMMANDS):
        state = played.state
        if state.finished:
            return played
        if state.seeding is not None:
            played.now, new = seeding(state, chance, played.now + 1_000)
            played.state = fold(state, new)
            played.events += new
            played.states.append(played.state)
            check(played.state, played.events)
            continue
        deal = state.deal
        assert deal is not None
        # a clocked table's players take their (random) time; elsewhere a second an act
        played.now += chance.choice(THINKING) if state.clock is not None else 1_000
        now = played.now
        server = server_command(state, now, chance)
        if server is not None:
            new = decide(state, server, None, now=now)
            for timed in new[:1]:
                if isinstance(timed, TimedOut):
                    event(f"timed out ({timed.clock}): {timed.verdict} in {timed.phase}")
        elif style.faults and chance.random() < style.faults:
            seat, count = chance.randrange(seats), chance.choice([1, 1, 2])
            new = faulty_draw(state, seat, count, now)
            if not new:
                continue
            played.faulty_draws += 1
        else:
            # a seat may lead a combination out of turn (Czech), or leave the lead to the leader
            waiting = claimants(state)
            seat = waiting[0] if waiting and chance.random() < 0.7 else deal.turn
            for other in range(seats):
                if other != deal.turn:
                    moves = legal_commands(state, other)
                    assert (other in waiting) == bool(moves)
                    assert all(isinstance(m, Lead) and len(m.cards) == 3 for m in moves)
            new = decide(state, choose(state, seat, style, chance), seat, now)
            for led in new:
                if isinstance(led, CardsLed) and led.combination:
                    where = "in turn" if seat == deal.turn else "out of turn"
                    event(f"{led.combination} led {where}")
        played.state = fold(state, new)
        played.events += new
        played.states.append(played.state)
        clock_runs_for_the_seat_due(played.state)
        check(played.state, played.events)
    raise AssertionError(f"the game did not end within {MAX_COMMANDS} commands")


def seeding(state: Game, chance: random.Random, now: int) -> tuple[int, list[Event]]:
    """One step of a deal waiting for seeds: a seat sends its seed (after trying, now and
    then, to play or to send a second one: refused), or the clock runs past the deadline
    and the server closes the seeding with the seeds still missing counted as empty."""
    shuffle = state.seeding
    assert shuffle is not None and shuffle.deadline is not None
    waiting = seeding_seats(state)
    if now >= shuffle.deadline or chance.random() < 0.15:
        late = max(now, shuffle.deadline + chance.randrange(0, 5_000))
        assert refused_as(state, chance.choice(waiting), Seed("late"), late) == "seed_too_late"
        event(f"seeding closed at the deadline, {len(waiting)} seed(s) missing")
        return late, decide(state, CloseSeeding(at=late), None, late)
    if shuffle.sent and chance.random() < 0.1:
        assert (
            refused_as(state, chance.choice(shuffle.sent), Seed("again"), now)
            == "seed_already_sent"
        )
    if chance.random() < 0.1:
        assert refused_as(state, chance.choice(waiting), Draw(1), now) == "seeds_pending"
        assert refused_as(state, None, CloseSeeding(at=now), now) == "deadline_not_passed"
    seat = chance.choice(waiting)
    if len(waiting) == 1:
        event("seeding closed with every seed in")
    bot = chance.choice([greedy_bot, random_bot])
    return now, decide(state, bot(state, seat, chance), seat, now)


def refused_as(
    state: Game, seat: int | None, command: PlayerCommand | CloseSeeding, now: int
) -> str:
    try:
        decide(state, command, seat, now)
    except RuleViolation as refusal:
        return refusal.code
    raise AssertionError(f"{command} by seat {seat} was accepted")


def server_command(state: Game, now: int, chance: random.Random) -> AnyCommand | None:
    """What the server does first, if anything: time out the seat due once its deadline has
    passed (or, now and then, once an absent seat has been away too long); rule on a pause
    half the times, leaving the other half to the seat's own act."""
    clock = state.clock
    if clock is None:
        return None
    if clock.paused:
        if chance.random() < 0.5:
            return EndPause(chance.choice(["play_on", "lose_deal"]))
        return None
    if now >= clock.deadline:
        return TimeOut(seat=clock.seat, version=state.version, at=now)
    away = now - chance.choice(THINKING)
    gone = abandon_deadline(state.rules, clock, away)
    if gone is not None and now >= gone and chance.random() < 0.1:
        return TimeOut(seat=clock.seat, version=state.version, at=now, away_since=away)
    return None


def clock_runs_for_the_seat_due(state: Game) -> None:
    """docs/rules.md §13: while the game is on, the clock runs for the seat due, its
    deadline its turn time and its own bank, no bank ever below nothing."""
    if not state.rules.turn_seconds:
        assert state.clock is None
        return
    if state.finished or state.seeding is not None:
        # over, or the next deal waits for the seats' seeds: no turn runs
        assert state.clock is None and running(state) is None
        return
    clock, deal = state.clock, state.deal
    assert clock is not None and deal is not None
    assert clock.seat == deal.turn
    assert clock.turn_ends == clock.started + state.rules.turn_seconds * 1000
    assert clock.deadline == clock.turn_ends + clock.banks[clock.seat]
    assert all(0 <= b <= state.rules.time_bank_seconds * 1000 for b in clock.banks)


def faulty_draw(state: Game, seat: int, count: int, now: int) -> list[Event]:
    """A draw by any seat: judged exactly as docs/rules.md §4 says, or refused."""
    fault = expected_fault(state, seat, count)
    try:
        new = decide(state, Draw(count), seat, now)
    except RuleViolation as refused:
        assert fault is not None and refused.code == fault
        assert fault == "stock_empty" or state.rules.penalties == "reject"
        return []
    if fault is None:
        assert type(new[0]).__name__ == "CardDrawn"  # in Kozel the last draw may end the deal
        return new
    assert state.rules.penalties == "enforce" and fault != "stock_empty"
    penalty, lost = new[0], new[1]
    assert type(penalty).__name__ == "PenaltyApplied" and penalty.rule == fault  # type: ignore[attr-defined]
    assert type(lost).__name__ == "DealLost" and lost.reason == fault  # type: ignore[attr-defined]
    return new


# -- what the checks look at --------------------------------------------------------------------


def cards_in_play(deal: Deal) -> list[Card]:
    """Every card of the deal wherever it lies: hands, stock, the table, the trick piles."""
    table: list[Card] = []
    if deal.trick is not None:
        table += deal.trick.led
        for response in deal.trick.responses:
            table += response.cards
    return [
        *(c for hand in deal.hands for c in hand),
        *deal.stock,
        *table,
        *(c for pile in deal.piles for c in pile),
    ]
