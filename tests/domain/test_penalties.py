"""docs/rules.md §4: faulty draws lose the deal under `penalties: enforce`, are refused under
`reject`; the first rule that applies names the penalty.

A retried request is not a second draw: that guarantee (idempotency keys) lives in the game
service and is covered by its tests; the domain only ever sees each command once.
"""

import pytest

from domain.commands import Draw
from domain.errors import RuleViolation
from domain.events import (
    DealerChosen,
    DealLost,
    DealStarted,
    GameFinished,
    PenaltyApplied,
    StakeSettled,
)
from tests.domain.given import SEED, act, current, given_table, lead, play, respond, table


def after_trick_taken_by_1(**options):
    """Seat 1 took the trick and is due to draw first, then seat 0."""
    return play(given_table(**options), (0, lead("AS")), (1, respond("6H")))


def test_drawing_two_cards_at_once_is_a_double_draw():
    given = after_trick_taken_by_1()
    _, events = act(given, 1, Draw(2))
    assert events[:3] == [
        PenaltyApplied(seat=1, rule="double_draw", due=1, cards=("KC", "QC"), count=2, asked=2),
        DealLost(1, "double_draw"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(1, -1)),
    ]


def test_drawing_with_a_full_hand_is_an_extra_card():
    given = given_table()  # nobody is due to draw, and seat 1 holds three cards
    _, events = act(given, 1, Draw())
    assert events[:2] == [
        PenaltyApplied(seat=1, rule="extra_card", due=None, cards=("KC",), count=1, asked=1),
        DealLost(1, "extra_card"),
    ]


def test_drawing_again_after_filling_up_is_an_extra_card():
    given = act(after_trick_taken_by_1(), 1, Draw())[0]  # seat 0 is due now
    _, events = act(given, 1, Draw())
    assert events[0] == PenaltyApplied(
        seat=1, rule="extra_card", due=0, cards=("QC",), count=1, asked=1
    )


def test_drawing_when_another_seat_is_due_is_an_out_of_turn_draw():
    given = after_trick_taken_by_1()
    _, events = act(given, 0, Draw())
    assert events[:2] == [
        PenaltyApplied(seat=0, rule="out_of_turn_draw", due=1, cards=("KC",), count=1, asked=1),
        DealLost(0, "out_of_turn_draw"),
    ]


def test_drawing_when_no_draw_is_due_is_an_out_of_turn_draw():
    given = act(given_table(), 0, lead("AS"))[0]  # seat 0 holds two cards, seat 1 must answer
    _, events = act(given, 0, Draw())
    assert events[0] == PenaltyApplied(
        seat=0, rule="out_of_turn_draw", due=None, cards=("KC",), count=1, asked=1
    )


def test_a_double_draw_comes_before_an_extra_card_and_an_out_of_turn_draw():
    given = given_table()  # seat 1: full hand, not due
    assert act(given, 1, Draw(2))[1][0].rule == "double_draw"  # type: ignore[attr-defined]
    assert act(given, 1, Draw(3))[1][0].count == 3  # type: ignore[attr-defined]


def test_an_extra_card_comes_before_an_out_of_turn_draw():
    given = given_table()
    assert act(given, 1, Draw())[1][0].rule == "extra_card"  # type: ignore[attr-defined]


def test_the_cards_taken_stay_with_the_offender_for_the_arbiter_to_see():
    given = after_trick_taken_by_1(match_target=2)
    deal = current(given)
    after, events = act(given, 0, Draw())
    finished = after.deals[-1]
    assert (finished.losers, finished.winners, finished.reason) == ((0,), (1,), "out_of_turn_draw")
    assert events[0].cards == (deal.stock[0],)  # type: ignore[attr-defined]


def test_a_penalty_ends_the_game_when_the_winner_reaches_the_target():
    _, events = act(after_trick_taken_by_1(), 0, Draw())
    assert events[-1] == GameFinished(winners=(1,), reason="out_of_turn_draw", seed=SEED)


def test_with_two_seats_the_other_seat_wins_and_deals_next():
    _, events = act(after_trick_taken_by_1(match_target=2), 0, Draw())
    assert events[2] == StakeSettled(deal=1, stake=1, multiplier=1, payments=(-1, 1))
    assert events[3] == DealerChosen(1, "winner")


def test_with_three_seats_the_offender_pays_every_other_seat_and_the_same_dealer_redeals():
    given = table(["QS 7D 7C", "KS 8D 8C", "AS 9D 9C"], trump="6H", match_target=4, stake=3)
    assert given.dealer == 2
    _, events = act(given, 1, Draw())
    assert events[1:4] == [
        DealLost(1, "extra_card"),
        StakeSettled(deal=1, stake=3, multiplier=1, payments=(3, -6, 3)),
        DealerChosen(2, "same_dealer"),
    ]
    assert isinstance(events[4], DealStarted) and events[4].dealer == 2 and events[4].number == 2


@pytest.mark.parametrize(
    ("seat", "count", "code"),
    [(1, 2, "double_draw"), (0, 1, "out_of_turn_draw")],
)
def test_under_reject_the_same_faults_are_refused_with_the_same_code(seat, count, code):
    given = after_trick_taken_by_1(penalties="reject")
    with pytest.raises(RuleViolation) as refused:
        act(given, seat, Draw(count))
    assert refused.value.code == code


def test_under_reject_an_extra_card_is_refused_and_nothing_changes():
    given = given_table(penalties="reject")
    with pytest.raises(RuleViolation) as refused:
        act(given, 1, Draw())
    assert refused.value.code == "extra_card"
    assert "refused" in refused.value.detail


def test_under_reject_the_due_draw_still_works():
    given = after_trick_taken_by_1(penalties="reject")
    assert act(given, 1, Draw())[1][0].card == "KC"  # type: ignore[attr-defined]
