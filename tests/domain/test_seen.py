"""docs/rules.md §4: a command may name the version of the table its player acted on
(`seen`); it is then judged on exactly that table, or refused as `table_changed`, so a
move legal on the table a player saw is never judged as a penalty on one it did not."""

import pytest
from msgspec.structs import replace

from domain.audit import audit
from domain.commands import Concede, Dave, DaveAnswer, Declare, Draw, Pass, PlayerCommand
from domain.decide import decide
from domain.errors import RuleViolation, TableChanged
from domain.events import Declared, PenaltyApplied
from tests.domain.given import (
    act,
    current,
    given_table,
    lead,
    play,
    refused,
    respond,
    table_and_events,
)

# After this trick seat 1 (the taker) draws first, then seat 0.
AFTER_TRICK = ((0, lead("6S")), (1, respond("7S")))


def test_a_command_naming_the_current_version_is_judged_as_usual():
    given = given_table()
    _, events = act(given, 0, replace(lead("AS"), seen=given.version))
    assert events == decide(given, lead("AS"), 0)


def test_a_command_naming_an_older_version_is_refused_and_says_where_the_game_is():
    given = play(given_table(), *AFTER_TRICK)
    with pytest.raises(TableChanged) as refusal:
        decide(given, Draw(seen=given.version - 1), 1)
    assert refusal.value.code == "table_changed"
    assert (refusal.value.seen, refusal.value.version) == (given.version - 1, given.version)


def test_a_draw_made_on_a_table_that_has_moved_on_is_no_penalty():
    """Seat 1 drew; seat 0's client, still showing seat 1 due, draws too: without `seen`
    that is an out-of-turn draw and loses the deal, with it the draw is not judged."""
    shown = play(given_table(), *AFTER_TRICK)  # what seat 0 saw: seat 1 due to draw
    moved = play(shown, (1, Draw()))
    assert current(moved).draws[0] == 0  # seat 0 is due now: a draw would be legal, but
    # seat 0 acted on the older table, where it was not
    assert refused(moved, 0, Draw(seen=shown.version)) == "table_changed"
    assert isinstance(decide(shown, Draw(), 0)[0], PenaltyApplied)


def test_a_version_the_game_has_not_reached_is_refused_too():
    given = given_table()
    assert refused(given, 0, replace(lead("AS"), seen=given.version + 1)) == "table_changed"


COMMANDS: list[PlayerCommand] = [
    Draw(),
    Draw(2),
    lead("AS"),
    respond("7S"),
    Declare("thirty_one"),
    Declare("bura"),
    Dave(),
    DaveAnswer(True),
    Pass(),
    Concede(),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: type(c).__name__)
@pytest.mark.parametrize("seat", [0, 1])
def test_every_command_of_either_seat_is_refused_on_a_changed_table(seat, command):
    given = given_table()
    assert refused(given, seat, replace(command, seen=given.version - 1)) == "table_changed"


def test_on_a_finished_game_a_stale_version_is_table_changed_and_a_current_one_game_over():
    over = play(given_table(), (0, Concede()))
    assert over.finished
    assert refused(over, 0, Draw(seen=over.version - 1)) == "table_changed"
    assert refused(over, 0, Draw(seen=over.version)) == "game_over"


def test_a_penalty_records_the_version_the_drawer_acted_on():
    given = play(given_table(), *AFTER_TRICK)
    _, events = act(given, 0, Draw(seen=given.version))
    assert events[0] == PenaltyApplied(
        seat=0, rule="out_of_turn_draw", due=1, cards=("KC",), count=1, seen=given.version, asked=1
    )


def test_a_penalty_without_a_version_records_none():
    given = play(given_table(), *AFTER_TRICK)
    penalty = act(given, 0, Draw())[1][0]
    assert isinstance(penalty, PenaltyApplied) and penalty.seen is None


def test_a_false_declaration_records_the_version_the_declarer_acted_on():
    given = given_table()
    _, events = act(given, 0, Declare("thirty_one", seen=given.version))
    assert events[0] == Declared(
        seat=0, claim="thirty_one", value=0, needed=31, true=False, seen=given.version
    )


def test_the_audit_shows_the_version_seen_and_whether_the_command_named_one():
    state, events = table_and_events(["AS 6S QD", "7S 6H 8D"], "9H", "KC QC JC 10C")
    for seat, command in AFTER_TRICK:
        state, new = act(state, seat, command)
        events += new
    seen = state.version
    events += act(state, 0, Draw(seen=seen))[1]
    [finding] = audit(events)
    assert (finding.rule, finding.due, finding.before_version) == ("out_of_turn_draw", 1, seen)
    assert (finding.seen, finding.seen_carried) == (seen, True)


def test_the_audit_says_so_when_a_penalised_command_named_no_version():
    given, events = table_and_events(["AS 6S QD", "7S 6H 8D"], "9H", "KC QC JC 10C")
    events += act(given, 1, Draw())[1]
    [finding] = audit(events)
    assert (finding.seen, finding.seen_carried) == (None, False)


def test_a_table_changed_refusal_is_a_rule_violation_like_any_other():
    given = given_table()
    with pytest.raises(RuleViolation):
        decide(given, Concede(seen=0), 0)
