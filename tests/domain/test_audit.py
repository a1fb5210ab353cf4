"""The arbiter's audit: every penalty and false declaration with the events that prove it."""

from domain.audit import RULE_TEXT, audit
from domain.commands import Declare, Draw
from domain.views import ARBITER, SPECTATOR
from tests.domain.given import act, dealing_order, lead, play, respond, start

HANDS = ["AS 6S QD", "7S 6H 8D"]  # seat 0 leads; hearts are trumps


def recorded(state_and_events, *steps):
    """Every event of a game: the start, then each (seat, command)."""
    state, events = state_and_events
    for seat, command in steps:
        state, new = act(state, seat, command)
        events = [*events, *new]
    return events


def start_table(**options):
    order = dealing_order(HANDS, "9H", "KC QC JC 10C", dealer=1)
    return start(2, dealer=1, order=order, **options)


def test_an_out_of_turn_draw_is_found_with_the_seat_due_and_the_card_taken():
    events = recorded(start_table(), (0, lead("AS")), (1, respond("6H")), (0, Draw()))
    [finding] = audit(events)
    assert (finding.rule, finding.seat, finding.due, finding.phase) == (
        "out_of_turn_draw",
        0,
        1,
        "draw",
    )
    assert finding.cards == ("KC",) and finding.deal == 1
    assert finding.hand_sizes == (2, 2) and finding.stock_count == 30
    assert finding.text == RULE_TEXT["out_of_turn_draw"]
    penalty_at = next(i for i, e in enumerate(events) if type(e).__name__ == "PenaltyApplied")
    assert finding.before_version == penalty_at
    assert finding.versions == (penalty_at + 1, penalty_at + 2)
    assert type(events[finding.versions[1] - 1]).__name__ == "DealLost"


def test_an_extra_card_is_found_with_no_seat_due():
    [finding] = audit(recorded(start_table(), (1, Draw())))
    assert (finding.rule, finding.seat, finding.due, finding.phase) == (
        "extra_card",
        1,
        None,
        "lead",
    )
    assert finding.hand_sizes == (3, 3)


def test_a_double_draw_is_found_with_both_cards():
    events = recorded(start_table(), (0, lead("AS")), (1, respond("6H")), (1, Draw(2)))
    [finding] = audit(events)
    assert finding.rule == "double_draw" and finding.cards == ("KC", "QC")


def a_false_31(**options):
    """Seat 0 takes AS and 7S (11 points), both draw, and seat 0 declares 31."""
    return recorded(
        start_table(**options),
        (0, lead("AS")),
        (1, respond("7S")),
        (0, Draw()),
        (1, Draw()),
        (0, Declare("thirty_one")),
    )


def test_a_false_declaration_of_31_is_found_with_the_tricks_counted():
    [finding] = audit(a_false_31())
    assert (finding.rule, finding.claim, finding.value, finding.needed) == (
        "false_declaration",
        "thirty_one",
        11,
        31,
    )
    assert finding.pile == ("AS", "7S") and finding.hand is None
    assert finding.seat == finding.due == 0


def test_a_false_31_says_the_compensation_counted_with_the_pile():
    """An open seat is given compensation by the other side: it counts toward 31 with the
    pile, and the finding says how much, so that `value` is explained (docs/rules.md §5)."""
    [finding] = audit(a_false_31(open_seats=(0,), compensation=10))
    assert (finding.value, finding.pile, finding.compensation) == (21, ("AS", "7S"), 10)
    assert finding.value == 11 + finding.compensation  # the pile's 11 and the 10 given
    [plain] = audit(a_false_31())
    assert plain.compensation == 0


def test_a_false_bura_is_found_with_the_hand_it_was_judged_on():
    [finding] = audit(recorded(start_table(), (0, Declare("bura"))))
    assert (finding.claim, finding.value, finding.needed) == ("bura", 0, 3)
    assert finding.hand == ("AS", "6S", "QD") and finding.pile is None


def test_a_true_declaration_and_a_true_bura_are_no_findings():
    order = dealing_order(["AH 10D 7C", "10H 6C 8C"], "9S", "6D 7D 8D 9D", dealer=1)
    events = recorded(
        start(2, dealer=1, order=order),
        (0, lead("AH")),
        (1, respond("10H")),
        (0, Draw()),
        (1, Draw()),
        (0, lead("10D")),
        (1, respond("6C")),
        (0, Draw()),
        (1, Draw()),
        (0, Declare("thirty_one")),
    )
    assert events[-4].true is True  # type: ignore[attr-defined]
    assert audit(events) == []
    order = dealing_order(["6H 7H 8H", "AS 10S KS"], "9H", dealer=1)
    assert audit(recorded(start(2, dealer=1, order=order), (0, Declare("bura")))) == []


def test_findings_are_made_in_every_deal_of_a_game():
    events = recorded(start_table(match_target=2), (1, Draw()))
    state = play(start_table(match_target=2)[0], (1, Draw()))
    seat = state.deal.turn  # type: ignore[union-attr]
    events = recorded((state, events), (1 - seat, Draw()))
    assert [f.deal for f in audit(events)] == [1, 2]


# -- what each viewer may see of the evidence -----------------------------------------------


def double_draw_by_seat_1(**options):
    return recorded(start_table(**options), (0, lead("AS")), (1, respond("6H")), (1, Draw(2)))


def test_cards_taken_by_a_faulty_draw_are_hidden_from_others_while_the_game_goes_on():
    events = double_draw_by_seat_1(match_target=2)
    assert audit(events, ARBITER)[0].cards == ("KC", "QC")
    assert audit(events, 1)[0].cards == ("KC", "QC")  # the drawer saw what it took
    assert audit(events, 0)[0].cards is None
    assert audit(events, SPECTATOR)[0].cards is None


def test_once_a_classic_game_is_over_everyone_may_see_the_cards_taken():
    events = double_draw_by_seat_1()
    assert type(events[-1]).__name__ == "GameFinished"
    assert audit(events, 0)[0].cards == ("KC", "QC")
    assert audit(events, SPECTATOR)[0].cards == ("KC", "QC")


def test_in_closed_discard_the_cards_taken_stay_hidden_after_the_game_too():
    events = double_draw_by_seat_1(closed_discard=True)
    assert type(events[-1]).__name__ == "GameFinished"
    assert audit(events, 1)[0].cards == ("KC", "QC")
    assert audit(events, 0)[0].cards is None
    assert audit(events, SPECTATOR)[0].cards is None
    assert audit(events, ARBITER)[0].cards == ("KC", "QC")


def test_the_hand_a_false_bura_was_judged_on_is_shown_as_the_hand_itself_would_be():
    events = recorded(start_table(closed_discard=True), (0, Declare("bura")))
    assert audit(events, 0)[0].hand == ("AS", "6S", "QD")
    assert audit(events, 1)[0].hand is None
    assert audit(events, SPECTATOR)[0].hand is None
    open_table = recorded(start_table(open_seats=(0,), match_target=2), (0, Declare("bura")))
    assert audit(open_table, 1)[0].hand == ("AS", "6S", "QD")  # an open hand is public
