"""docs/rules.md §5: declaring 31, passing with an empty hand, and deals that end with no claim."""

import pytest

from domain.cards import points
from domain.commands import Dave, Declare, Pass
from domain.decide import decide
from domain.errors import RuleViolation
from domain.events import (
    DealerChosen,
    DealLost,
    DealStarted,
    DealVoid,
    DealWon,
    Declared,
    Passed,
    StakeSettled,
)
from domain.legal import legal_commands
from tests.domain.given import act, current, lead, play_out, refused, respond, start, table, trick

DECLARE = Declare("thirty_one")


def seat_0_with(total: int):
    """Seat 0 leads with 21 (AH 10H) plus either 10 (10D 6C) or 9 (KD QD JC 6C) in tricks."""
    if total == 31:
        given = table(["AH 10D 7C", "10H 6C 8C"], trump="9S", stock="6D 7D 8D 9D")
        return trick(trick(given, "AH", "10H"), "10D", "6C")
    given = table(["AH KD QD", "10H JC 6C"], trump="9S", stock="6D 7D 8D 9D")
    return trick(trick(given, "AH", "10H"), "KD QD", "JC 6C")


def test_declaring_with_exactly_31_wins_the_deal():
    given = seat_0_with(31)
    assert current(given).turn == 0 and current(given).phase == "lead"
    _, events = act(given, 0, DECLARE)
    assert events[:3] == [
        Declared(seat=0, claim="thirty_one", value=31, needed=31, true=True),
        DealWon(0, "thirty_one"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(1, -1)),
    ]


def test_declaring_with_30_is_a_false_declaration_and_loses():
    given = seat_0_with(30)
    _, events = act(given, 0, DECLARE)
    assert events[:3] == [
        Declared(seat=0, claim="thirty_one", value=30, needed=31, true=False),
        DealLost(0, "false_declaration"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(-1, 1)),
    ]


def test_reaching_31_does_not_end_the_deal_by_itself():
    given = seat_0_with(31)
    assert not given.deals and current(given).phase == "lead"
    assert act(given, 0, lead(current(given).hands[0][0]))[0].deals == ()


def test_a_declaration_is_made_on_ones_own_lead_only_by_default():
    given = act(seat_0_with(31), 0, lead("7C"))[0]  # seat 1 is due to respond
    assert refused(given, 1, DECLARE) == "not_your_turn"
    assert refused(given, 0, DECLARE) == "not_your_turn"


def test_declaring_out_of_turn_is_refused():
    assert refused(seat_0_with(31), 1, DECLARE) == "not_your_turn"


def test_declaring_is_refused_while_a_draw_is_due():
    given = table(["AH 10D 7C", "10H 6C 8C"], trump="9S")
    given = act(act(given, 0, lead("AH"))[0], 1, respond("10H"))[0]
    assert current(given).phase == "draw"
    assert refused(given, 0, DECLARE) == "not_your_turn"


def responder_with_31(**options):
    """Seat 1 takes 21 then 10, then loses a trick: seat 0 leads and seat 1 must answer."""
    given = table(["10H 6D 7C", "AH 10D 6C"], trump="9S", stock="8D 9D 8H 9H 7H 6H", **options)
    given = trick(trick(trick(given, "10H", "AH"), "10D", "6D"), "6C", "7C")
    assert current(given).turn == 0
    return act(given, 0, lead(current(given).hands[0][0]))[0]


def test_with_declare_on_any_turn_a_seat_may_declare_when_due_to_respond():
    given = responder_with_31(declare_on="any_turn")
    _, events = act(given, 1, DECLARE)
    assert events[:2] == [
        Declared(seat=1, claim="thirty_one", value=31, needed=31, true=True),
        DealWon(1, "thirty_one"),
    ]


def test_with_declare_on_lead_the_same_responder_may_not_declare():
    assert refused(responder_with_31(), 1, DECLARE) == "not_your_turn"


def test_the_refusal_of_a_responder_s_declaration_names_the_option_that_forbids_it():
    """ "seat 1 is due to respond" alone read as if its turn had allowed it."""
    with pytest.raises(RuleViolation) as refusal:
        decide(responder_with_31(), DECLARE, 1, 0)
    assert refusal.value.detail == (
        'seat 1 is due to respond; 31 is declared on a turn to lead (declare_on "lead")'
    )


def test_a_false_declaration_while_responding_loses_too():
    given = act(
        table(["AH 10D 7C", "10H 6C 8C"], trump="9S", declare_on="any_turn"), 0, lead("AH")
    )[0]
    assert act(given, 1, DECLARE)[1][1] == DealLost(1, "false_declaration")


# -- the last trick: declare or pass ----------------------------------------------------------


def played_out(**options):
    """A deal played to its end: the taker of the last trick leads with an empty hand."""
    given = play_out(start(2, dealer=1, seed="out", **options)[0])
    deal = current(given)
    assert not deal.stock and not any(deal.hands) and deal.phase == "lead"
    return given


def test_the_taker_of_the_last_trick_still_gets_the_lead_and_may_not_lead():
    given = played_out()
    assert refused(given, current(given).turn, lead("AS")) == "no_cards"


def test_a_pass_with_nobody_declaring_voids_the_deal_and_the_same_dealer_redeals():
    given = played_out()
    taker = current(given).turn
    after, events = act(given, taker, Pass())
    assert events[:3] == [Passed(taker), DealVoid("no_claim"), DealerChosen(1, "same_dealer")]
    assert isinstance(events[3], DealStarted) and events[3].dealer == 1 and events[3].number == 2
    assert not any(isinstance(e, StakeSettled) for e in events)
    assert after.score == (0, 0) and not after.finished
    assert after.deals[-1].winners == () and after.deals[-1].reason == "no_claim"


def test_the_last_taker_may_still_declare():
    given = played_out()
    taker = current(given).turn
    total = points(current(given).piles[taker])
    _, events = act(given, taker, DECLARE)
    assert events[0] == Declared(
        seat=taker, claim="thirty_one", value=total, needed=31, true=total >= 31
    )


def test_the_last_taker_may_not_offer_a_dave_with_nothing_left_to_play():
    given = played_out()
    taker = current(given).turn
    assert refused(given, taker, Dave()) == "dave_not_allowed"
    assert Dave() not in legal_commands(given, taker)
    assert {Pass(), DECLARE} <= set(legal_commands(given, taker))


def test_only_the_leader_may_pass():
    given = played_out()
    assert refused(given, 1 - current(given).turn, Pass()) == "not_your_turn"


def test_a_seat_holding_cards_may_not_pass():
    assert refused(table(["AH 10D 7C", "10H 6C 8C"], trump="9S"), 0, Pass()) == "cannot_pass"


def test_with_most_points_the_highest_trick_total_wins():
    given = played_out(no_claim="most_points")
    totals = [points(pile) for pile in current(given).piles]
    assert totals[0] != totals[1] and sum(totals) == 120
    best = totals.index(max(totals))
    taker = current(given).turn
    given, events = act(given, taker, Pass())
    assert events[:2] == [Passed(taker), DealWon(best, "most_points")]
    assert (given.deals[0].winners, given.deals[0].by) == ((best,), None)  # nobody's act


def test_with_most_points_a_tie_is_void():
    for n in range(500):
        given = play_out(start(2, dealer=1, seed=f"tie{n}", no_claim="most_points")[0])
        if [points(p) for p in current(given).piles] == [60, 60]:
            break
    else:
        pytest.fail("no 60-60 deal among the seeds tried")
    _, events = act(given, current(given).turn, Pass())
    assert events[1:3] == [DealVoid("no_claim"), DealerChosen(1, "same_dealer")]
