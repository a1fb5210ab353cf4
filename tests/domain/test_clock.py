"""docs/rules.md §13: the table's clock, each policy of on_timeout in each phase, the time
bank, abandonment, the pause and its ruling, and a timeout that comes too late.

Times are milliseconds since 1970-01-01 UTC; the server passes them to decide, so here
they are plain numbers: the table is dealt at T0.
"""

from __future__ import annotations

import msgspec
import pytest

from domain.audit import audit
from domain.bots import safest_act
from domain.clock import due_since
from domain.commands import Dave, Draw, EndPause, TimeOut
from domain.errors import BadOption
from domain.events import (
    CardDrawn,
    CardsLed,
    CardsResponded,
    ClockStarted,
    DaveDeclined,
    DealerChosen,
    DealLost,
    DealVoid,
    DealWon,
    Event,
    GameFinished,
    Passed,
    PauseEnded,
    StakeSettled,
    TimedOut,
    TrickTaken,
)
from domain.evolve import fold
from domain.rules import Rules, check
from domain.settlement import rematch_dealer
from domain.state import Clock, Game
from domain.table import lead_limit
from domain.views import Presence, view
from tests.domain.given import (
    HANDS,
    act,
    current,
    draw_all,
    lead,
    play_out,
    record,
    refused,
    respond,
    table,
    table_and_events,
)

T0 = 1_700_000_000_000
TURN = 10_000  # turn_seconds: 10


def clocked(**options: object) -> Game:
    """The two-seat table of tests/domain/given.py, with a 10-second clock, dealt at T0:
    seat 0 ("AS 6S QD") leads, seat 1 holds "7S 6H 8D", hearts are trumps."""
    options.setdefault("turn_seconds", 10)
    return table(HANDS, trump="9H", stock="KC QC JC 10C", now=T0, **options)


def timed_out(state: Game, at: int | None = None) -> tuple[Game, list[Event]]:
    """The server's timeout of the seat due, judged `at` (by default its deadline)."""
    assert state.clock is not None
    clock = state.clock
    command = TimeOut(seat=clock.seat, version=state.version, at=at or clock.deadline)
    return act(state, None, command)


def in_phase(phase: str, **options: object) -> Game:
    """The clocked table with the seat due in `phase`: lead (seat 0), respond (seat 1),
    draw (seat 1 took the trick), dave_answer (seat 1), declare_or_pass (hands played out)."""
    state = clocked(**options)
    match phase:
        case "lead":
            return state
        case "respond":
            return act(state, 0, lead("AS"))[0]
        case "draw":
            state = act(state, 0, lead("AS"))[0]
            return act(state, 1, respond("6H"))[0]
        case "dave_answer":
            return act(state, 0, Dave())[0]
        case "declare_or_pass":
            state = play_out(state)
            assert lead_limit(current(state)) == 0
            return state
    raise AssertionError(phase)


PHASES = ["lead", "respond", "draw", "dave_answer", "declare_or_pass"]


def test_a_clocked_table_starts_the_clock_for_the_first_leader_when_it_is_dealt() -> None:
    state = clocked(time_bank_seconds=30)
    assert state.clock == Clock(
        seat=0,
        started=T0,
        turn_ends=T0 + TURN,
        deadline=T0 + TURN + 30_000,
        banks=(30_000,) * 2,
        version=state.version,
    )


def test_every_act_starts_the_clock_again_for_the_seat_due() -> None:
    given = clocked()
    _, events = act(given, 0, lead("AS"), now=T0 + 3_000)
    assert events == [
        CardsLed(0, ("AS",)),
        ClockStarted(
            seat=1, at=T0 + 3_000, turn_ends=T0 + 13_000, deadline=T0 + 13_000, banks=(0, 0)
        ),
    ]


def test_a_table_without_a_clock_records_no_clock_and_refuses_a_timeout() -> None:
    given = table(HANDS, trump="9H")
    _, events = act(given, 0, lead("AS"))
    assert not any(isinstance(e, ClockStarted) for e in events) and given.clock is None
    assert refused(given, None, TimeOut(seat=0, version=given.version, at=T0)) == "no_clock"
    # the operator's ruling on a pause: there is none to rule on, as on a running clock
    assert refused(given, None, EndPause("play_on")) == "not_paused"


# -- on_timeout, in every phase ----------------------------------------------------------------


@pytest.mark.parametrize("phase", PHASES)
def test_lose_deal_a_seat_whose_time_runs_out_loses_the_deal_like_a_penalty(phase: str) -> None:
    given = in_phase(phase, on_timeout="lose_deal")
    seat, deadline = current(given).turn, given.clock.deadline  # type: ignore[union-attr]
    due = "lead" if phase == "declare_or_pass" else phase
    after, events = timed_out(given, at=deadline + 250)
    assert events[:2] == [
        TimedOut(
            seat=seat,
            clock="turn",
            phase=due,
            deadline=deadline,
            at=deadline + 250,
            verdict="lose_deal",
        ),
        DealLost(seat, "timeout"),
    ]
    assert isinstance(events[2], StakeSettled) and events[2].payments[seat] == -1
    assert isinstance(events[-1], GameFinished) and after.reason == "timeout"
    assert after.clock is None


def expected_auto_play(phase: str) -> list[object]:
    """docs/rules.md §13.3, on the table of `clocked`: the lowest single card (6S, not the
    trump-free QD worth 3), the cheapest answer that beats (6H, a trump, on AS), the due
    draw, the dave declined, and a pass with the hands played out."""
    match phase:
        case "lead":
            return [CardsLed(0, ("6S",))]
        case "respond":
            return [CardsResponded(seat=1, cards=("6H",), count=1, beat=True), TrickTaken(1)]
        case "draw":
            return [CardDrawn(1, "KC")]
        case "dave_answer":
            return [DaveDeclined(1), DealWon(0, "dave_declined")]
    raise AssertionError(phase)


@pytest.mark.parametrize("phase", PHASES)
def test_auto_play_the_server_makes_the_safest_act_the_table_waits_for(phase: str) -> None:
    given = in_phase(phase, on_timeout="auto_play", match_target=2)
    seat, deadline = current(given).turn, given.clock.deadline  # type: ignore[union-attr]
    after, events = timed_out(given)
    assert isinstance(events[0], TimedOut) and events[0].verdict == "auto_play"
    assert events[0].seat == seat
    if phase == "declare_or_pass":
        assert events[1:3] == [Passed(seat), DealVoid("no_claim")]
    else:
        played = expected_auto_play(phase)
        assert events[1 : 1 + len(played)] == played
    clock = events[-1]
    assert isinstance(clock, ClockStarted)
    assert clock.at == deadline and clock.seat == current(after).turn


@pytest.mark.parametrize("phase", PHASES)
def test_pause_a_timeout_stops_the_clock_and_judges_nothing(phase: str) -> None:
    given = in_phase(phase, on_timeout="pause")
    seat, deadline = current(given).turn, given.clock.deadline  # type: ignore[union-attr]
    after, events = timed_out(given, at=deadline + 10)
    assert events == [
        TimedOut(
            seat=seat,
            clock="turn",
            phase="lead" if phase == "declare_or_pass" else phase,
            deadline=deadline,
            at=deadline + 10,
            verdict="pause",
        )
    ]
    assert after.clock is not None and after.clock.paused
    assert current(after) == current(given) and after.score == given.score
    shown = view(after, seat, now=deadline + 60_000)
    assert shown.clock is not None and shown.clock.paused and shown.clock.deadline is None
    assert shown.seats[seat].deadline is None and shown.seats[seat].time_left is None


# -- the pause, and the operator's ruling ------------------------------------------------------


def test_the_operator_ends_a_pause_with_a_fresh_turn_for_the_seat_due() -> None:
    paused, _ = timed_out(clocked(on_timeout="pause"))
    later = T0 + 90_000
    after, events = act(paused, None, EndPause("play_on"), now=later)
    assert events == [
        PauseEnded(seat=0, verdict="play_on", at=later),
        ClockStarted(seat=0, at=later, turn_ends=later + TURN, deadline=later + TURN, banks=(0, 0)),
    ]
    assert after.clock is not None and not after.clock.paused


def test_the_operator_may_rule_the_paused_deal_lost_on_time() -> None:
    paused, _ = timed_out(clocked(on_timeout="pause"))
    later = T0 + 90_000
    after, events = act(paused, None, EndPause("lose_deal"), now=later)
    assert events[:2] == [PauseEnded(seat=0, verdict="lose_deal", at=later), DealLost(0, "timeout")]
    assert after.reason == "timeout"


def test_a_seat_that_acts_during_a_pause_ends_it() -> None:
    paused, _ = timed_out(clocked(on_timeout="pause", time_bank_seconds=5))
    later = T0 + 90_000
    after, events = act(paused, 0, lead("AS"), now=later)
    assert events[-1] == ClockStarted(
        seat=1, at=later, turn_ends=later + TURN, deadline=later + TURN + 5_000, banks=(0, 5_000)
    )
    assert after.clock is not None and not after.clock.paused


def test_nothing_to_rule_when_the_clock_is_not_paused_and_no_timeout_while_it_is() -> None:
    given = clocked(on_timeout="pause")
    assert refused(given, None, EndPause()) == "not_paused"
    paused, _ = timed_out(given)
    late = T0 + 60_000
    assert refused(paused, None, TimeOut(seat=0, version=paused.version, at=late)) == "clock_paused"


# -- a timeout judged on the table it saw --------------------------------------------------------


def test_a_timeout_that_arrives_after_the_seat_acted_is_refused_the_table_changed() -> None:
    given = clocked()
    judged_on = given.version
    moved, _ = act(given, 0, lead("AS"), now=T0 + 9_999)
    late = T0 + TURN + 1
    assert refused(moved, None, TimeOut(seat=0, version=judged_on, at=late)) == "table_changed"


def test_a_timeout_before_the_deadline_is_refused_the_seat_still_has_time() -> None:
    given = clocked()
    early = TimeOut(seat=0, version=given.version, at=T0 + TURN - 1)
    assert refused(given, None, early) == "still_in_time"
    other = TimeOut(seat=1, version=given.version, at=T0 + TURN)
    assert refused(given, None, other) == "not_due"


def test_an_act_after_the_deadline_is_refused_the_timeout_is_judged_first() -> None:
    given = clocked()
    assert refused(given, 0, lead("AS"), now=T0 + TURN) == "out_of_time"
    assert refused(given, 1, Draw(), now=T0 + TURN + 5) == "out_of_time"  # no penalty either
    _, events = act(given, 0, lead("AS"), now=T0 + TURN - 1)
    assert events[0] == CardsLed(0, ("AS",))


# -- the time bank ------------------------------------------------------------------------------


def test_a_seat_past_its_turn_time_spends_its_bank_and_keeps_the_rest() -> None:
    given = clocked(time_bank_seconds=30)
    after, events = act(given, 0, lead("AS"), now=T0 + TURN + 12_000)  # 12 s of its bank
    assert events[-1] == ClockStarted(
        seat=1,
        at=T0 + 22_000,
        turn_ends=T0 + 32_000,
        deadline=T0 + 62_000,
        banks=(18_000, 30_000),
    )
    after, _ = act(after, 1, respond("7S"), now=T0 + 23_000)  # in its turn time: bank kept
    assert after.clock is not None and after.clock.banks == (18_000, 30_000)
    after = draw_all(after)
    assert after.clock is not None and after.clock.seat == 0
    assert after.clock.deadline == after.clock.turn_ends + 18_000


def test_the_timeout_comes_only_when_turn_and_bank_are_both_spent() -> None:
    given = clocked(time_bank_seconds=30)
    in_bank = TimeOut(seat=0, version=given.version, at=T0 + TURN + 29_999)
    assert refused(given, None, in_bank) == "still_in_time"
    _, events = timed_out(given)
    assert isinstance(events[0], TimedOut) and events[0].deadline == T0 + TURN + 30_000


def test_every_deal_gives_each_seat_its_whole_bank_again() -> None:
    given = clocked(time_bank_seconds=30, match_target=3)
    spent, _ = act(given, 0, lead("AS"), now=T0 + TURN + 30_000 - 1)  # seat 0's bank nearly gone
    assert spent.clock is not None and spent.clock.banks == (1, 30_000)
    next_deal, events = timed_out(spent)  # seat 1 loses the deal on time: a new deal is dealt
    assert current(next_deal).number == 2
    assert isinstance(events[-1], ClockStarted) and events[-1].banks == (30_000, 30_000)


# -- abandonment --------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["lose_deal", "auto_play", "pause"])
def test_a_seat_away_abandon_seconds_while_due_loses_the_deal_whatever_on_timeout_says(
    policy: str,
) -> None:
    given = clocked(turn_seconds=60, abandon_seconds=20, on_timeout=policy)
    away = T0 + 5_000  # its stream closed 5 s into its turn
    early = TimeOut(seat=0, version=given.version, at=away + 19_999, away_since=away)
    assert refused(given, None, early) == "still_in_time"
    after, events = act(
        given, None, TimeOut(seat=0, version=given.version, at=away + 20_000, away_since=away)
    )
    assert events[:2] == [
        TimedOut(
            seat=0,
            clock="abandon",
            phase="lead",
            deadline=away + 20_000,
            at=away + 20_000,
            verdict="lose_deal",
            away_since=away,
        ),
        DealLost(0, "abandoned"),
    ]
    assert after.reason == "abandoned"


def test_an_absence_counts_only_from_the_moment_the_seat_became_due() -> None:
    given = clocked(turn_seconds=60, abandon_seconds=20)
    gone_before = T0 - 300_000  # away long before its turn began
    early = TimeOut(seat=0, version=given.version, at=T0 + 19_999, away_since=gone_before)
    assert refused(given, None, early) == "still_in_time"
    on_time = TimeOut(seat=0, version=given.version, at=T0 + 20_000, away_since=gone_before)
    _, events = act(given, None, on_time)
    assert isinstance(events[0], TimedOut) and events[0].deadline == T0 + 20_000


def test_turns_the_server_plays_for_a_seat_do_not_restart_its_absence() -> None:
    """auto_play plays a slow seat's turn; a seat that is gone is not slow: its absence
    counts from the first turn it left unanswered, across the turns played for it, so a
    table left to auto_play still judges it abandoned (docs/rules.md §13.5)."""
    given = clocked(turn_seconds=10, abandon_seconds=15, on_timeout="auto_play")
    state, events = timed_out(given)  # seat 0's lead, played for it at T0 + 10 s
    started = events[-1]
    assert isinstance(started, ClockStarted) and started.unanswered == (T0, None)
    now = T0 + TURN
    while state.clock is not None and state.clock.seat != 0:  # the others act themselves
        now += 500
        seat = state.clock.seat
        state, _ = act(state, seat, safest_act(state, seat), now=now)
    clock = state.clock
    assert clock is not None and clock.started > T0 and due_since(clock) == T0
    never_seen = due_since(clock)  # as the timers pass a seat never seen connected
    early = TimeOut(seat=0, version=state.version, at=T0 + 14_999, away_since=never_seen)
    assert refused(state, None, early) == "still_in_time"
    _, judged = act(
        state, None, TimeOut(seat=0, version=state.version, at=T0 + 15_000, away_since=T0)
    )
    assert isinstance(judged[0], TimedOut) and judged[0].clock == "abandon"
    assert judged[0].deadline == T0 + 15_000 and judged[1] == DealLost(0, "abandoned")
    shown = view(state, 1, now=now, presence=[Presence(False, None), Presence(True, T0)])
    assert shown.seats[0].abandon_at == T0 + 15_000


def test_a_seat_that_acts_itself_starts_its_absence_afresh() -> None:
    given = clocked(turn_seconds=10, abandon_seconds=15, on_timeout="auto_play")
    state, _ = timed_out(given)
    while state.clock is not None and state.clock.seat != 0:
        seat = state.clock.seat
        state, _ = act(state, seat, safest_act(state, seat))
    assert state.clock is not None and state.clock.unanswered[0] == T0
    # seat 0 acts itself: whatever comes next, it is no longer carried
    acted, events = act(state, 0, safest_act(state, 0))
    started = events[-1]
    assert isinstance(started, ClockStarted) and started.unanswered == ()
    assert acted.clock is not None and acted.clock.unanswered == ()


def test_a_paused_table_still_judges_a_seat_that_is_gone() -> None:
    """pause waits for a ruling on a slow seat; a seat away abandon_seconds while due is
    judged abandoned all the same, and the paused view says when."""
    given = clocked(turn_seconds=10, abandon_seconds=30, on_timeout="pause", time_bank_seconds=5)
    paused, _ = timed_out(given)  # at T0 + 15 s, its bank spent
    assert paused.clock is not None and paused.clock.paused
    # the turn itself is not timed out again while paused
    again = TimeOut(seat=0, version=paused.version, at=T0 + 40_000)
    assert refused(paused, None, again) == "clock_paused"
    shown = view(paused, 1, now=T0 + 20_000, presence=[Presence(False, T0), Presence(True, T0)])
    due, other = shown.seats
    assert due.abandon_at == T0 + 30_000 and due.deadline is None
    assert due.time_bank == 0 and other.time_bank == 5_000  # its bank was spent, not refilled
    early = TimeOut(seat=0, version=paused.version, at=T0 + 29_999, away_since=T0)
    assert refused(paused, None, early) == "still_in_time"
    after, events = act(
        paused, None, TimeOut(seat=0, version=paused.version, at=T0 + 30_000, away_since=T0)
    )
    assert isinstance(events[0], TimedOut) and events[0].clock == "abandon"
    assert events[1] == DealLost(0, "abandoned") and after.reason == "abandoned"


def test_a_table_every_seat_left_ends_with_the_deal_its_due_seat_lost() -> None:
    """Both seats gone at an auto_play table of five deals: each deal lost by whoever was
    due went back and forth for ever. The timers say the table is deserted (every other
    seat away abandon_seconds too): the game ends, won on the score as it stands."""
    given = clocked(turn_seconds=60, abandon_seconds=20, on_timeout="auto_play", match_target=5)
    gone = TimeOut(seat=0, version=given.version, at=T0 + 20_000, away_since=T0)
    after, _ = act(given, None, gone)
    assert not after.finished and after.score == (-1, 1)  # the next deal, as ever
    after, events = act(given, None, msgspec.structs.replace(gone, deserted=True))
    timed = events[0]
    assert isinstance(timed, TimedOut) and timed.deserted is True
    assert events[1] == DealLost(0, "abandoned")
    assert events[-1] == GameFinished(winners=(1,), reason="abandoned", seed=given.seed)
    assert after.finished and after.score == (-1, 1)
    assert b'"deserted":true' in msgspec.json.encode(timed)


def test_a_deserted_table_whose_game_ends_anyway_records_nothing_more() -> None:
    """At match_target 1 the lost deal ends the game by itself: its timed_out is as any
    abandonment's, without `deserted`."""
    given = clocked(turn_seconds=60, abandon_seconds=20)
    gone = TimeOut(seat=0, version=given.version, at=T0 + 20_000, away_since=T0, deserted=True)
    _, events = act(given, None, gone)
    assert b"deserted" not in msgspec.json.encode(events[0])
    assert isinstance(events[-1], GameFinished)


def test_no_abandonment_is_judged_at_a_table_without_abandon_seconds() -> None:
    given = clocked()
    away = TimeOut(seat=0, version=given.version, at=T0 + 5_000, away_since=T0)
    assert refused(given, None, away) == "no_abandonment"


# -- what the views show ------------------------------------------------------------------------


def test_each_view_shows_the_deadline_time_left_and_bank_of_each_seat() -> None:
    given = clocked(time_bank_seconds=30)
    now = T0 + TURN + 4_000  # 4 s into seat 0's bank
    for viewer in (0, 1, "spectator", "arbiter"):
        shown = view(given, viewer, now=now)
        due, other = shown.seats
        assert (due.deadline, due.time_left, due.time_bank) == (T0 + 40_000, 26_000, 26_000)
        assert (other.deadline, other.time_left, other.time_bank) == (None, None, 30_000)
        assert shown.now == now and shown.clock is not None and shown.clock.seat == 0


def test_a_view_shows_presence_and_when_an_absent_seat_due_will_be_abandoned() -> None:
    given = clocked(turn_seconds=60, abandon_seconds=20)
    shown = view(given, 1, now=T0 + 1_000, presence=[Presence(False, T0 + 500), Presence(True, T0)])
    due, other = shown.seats
    assert (due.connected, due.away_since, due.abandon_at) == (False, T0 + 500, T0 + 20_500)
    assert (other.connected, other.connected_since, other.abandon_at) == (True, T0, None)


def test_a_finished_game_shows_no_clock() -> None:
    over, _ = timed_out(clocked())
    shown = view(over, 0, now=T0 + 60_000)
    assert shown.clock is None and all(s.deadline is None for s in shown.seats)


def test_three_seats_the_seat_that_times_out_pays_every_other_and_the_dealer_deals_again() -> None:
    given = table(
        ["AS 6S QD", "7S 6H 8D", "KD 9S 10C"], trump="9H", turn_seconds=5, match_target=2, now=T0
    )
    after, events = timed_out(given)
    assert events[1] == DealLost(0, "timeout")
    assert isinstance(events[2], StakeSettled) and events[2].payments == (-2, 1, 1)
    assert events[3] == DealerChosen(2, "same_dealer") and after.score == (-2, 1, 1)


def test_the_audit_lists_a_deal_lost_on_time_with_its_deadline_and_the_moment_judged() -> None:
    given, events = table_and_events(
        HANDS, trump="9H", stock="KC QC JC 10C", turn_seconds=10, now=T0
    )
    state = record(given, events, (0, lead("AS")))
    deadline = state.clock.deadline  # type: ignore[union-attr]
    _, more = timed_out(state, at=deadline + 40)
    (finding,) = audit(events + more)
    assert (finding.rule, finding.seat, finding.due, finding.phase) == ("timeout", 1, 1, "respond")
    assert (finding.clock, finding.deadline, finding.at) == ("turn", deadline, deadline + 40)
    assert finding.judged_by == "clock"
    assert finding.before_version == state.version
    assert finding.versions == (state.version + 1, state.version + 2)


def test_the_audit_says_a_deal_lost_by_the_operators_ruling_was_ruled() -> None:
    """Judged by no clock and no player: the operator ruled the paused deal lost."""
    given, started = table_and_events(
        HANDS, trump="9H", stock="KC QC JC 10C", turn_seconds=10, on_timeout="pause", now=T0
    )
    paused, stopped = timed_out(given)
    later = T0 + 90_000
    _, ruled = act(paused, None, EndPause("lose_deal"), now=later)
    (finding,) = audit([*started, *stopped, *ruled])
    assert (finding.rule, finding.judged_by, finding.at) == ("timeout", "operator", later)


# -- the options --------------------------------------------------------------------------------


def test_the_clock_options_decode_from_json_and_default_to_no_clock() -> None:
    rules = msgspec.json.decode(
        b'{"turn_seconds": 20, "time_bank_seconds": 60, "on_timeout": "auto_play",'
        b' "abandon_seconds": 45}',
        type=Rules,
    )
    assert (rules.turn_seconds, rules.time_bank_seconds) == (20, 60)
    assert (rules.on_timeout, rules.abandon_seconds) == ("auto_play", 45)
    assert (Rules().turn_seconds, Rules().abandon_seconds) == (None, None)


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"turn_seconds": 0}, "turn_seconds"),
        ({"turn_seconds": 86_401}, "turn_seconds"),
        ({"turn_seconds": 10, "time_bank_seconds": -1}, "time_bank_seconds"),
        ({"turn_seconds": 10, "abandon_seconds": 0}, "abandon_seconds"),
        ({"time_bank_seconds": 30}, "time_bank_seconds"),
        ({"on_timeout": "pause"}, "on_timeout"),
        ({"abandon_seconds": 30}, "abandon_seconds"),
    ],
)
def test_a_clock_option_out_of_range_or_without_a_clock_is_refused_naming_it(
    options: dict[str, object], option: str
) -> None:
    with pytest.raises(BadOption) as refused_:
        check(Rules(**options), 2)  # type: ignore[arg-type]
    assert refused_.value.option == option


def test_the_rematch_is_dealt_by_the_winner_or_the_first_winner_from_the_last_dealer() -> None:
    two = timed_out(clocked())[0]  # seat 0 lost on time: seat 1 won
    assert rematch_dealer(two) == 1
    three = table(["AS 6S QD", "7S 6H 8D", "KD 9S 10C"], trump="9H", turn_seconds=5, now=T0)
    over = timed_out(three)[0]  # seat 0 lost: seats 1 and 2 won; seat 2 dealt
    assert over.winners == (1, 2) and over.dealer == 2 and rematch_dealer(over) == 2


def test_no_seat_races_a_clock_at_the_versions_before_its_clock_starts() -> None:
    """The events of one command are each a version a stream shows. Until the act's own
    clock_started, the table holds the last seat's deadline, which nobody races: a view
    shows no clock and no seat's deadline or abandonment there, and the clock once it runs
    for the seat due (a trick taken, and a deal ended and the next one dealt, alike)."""
    away = (Presence(connected=False, since=T0), Presence(connected=False, since=T0))
    state = act(clocked(abandon_seconds=60, match_target=10), 0, lead("AS"), now=T0 + 1_000)[0]
    now = T0 + 2_000
    # a response and the trick; the draws; then a double draw: the deal lost, the next dealt
    for seat, command in ((1, respond("6H")), (1, Draw()), (0, Draw()), (1, Draw(2))):
        events = act(state, seat, command, now=now)[1]
        assert isinstance(events[-1], ClockStarted)
        for n in range(1, len(events) + 1):
            shown = view(fold(state, events[:n]), "arbiter", now=now, presence=away)
            due = [s for s in shown.seats if s.deadline is not None or s.abandon_at is not None]
            if n < len(events):
                assert shown.clock is None and due == [], (n, events[n - 1])
            else:
                assert shown.clock is not None and shown.clock.seat == shown.turn
                assert [s.seat for s in due] == [shown.turn]
        state = fold(state, events)
