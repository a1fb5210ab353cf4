"""docs/rules.md §6: dave, the offer to give up or to double, in two-seat games only."""

import pytest

from domain.commands import Concede, Dave, DaveAnswer, Declare, Draw
from domain.decide import decide
from domain.errors import BadOption, RuleViolation
from domain.events import (
    DaveAccepted,
    DaveDeclined,
    DaveOffered,
    DealerChosen,
    DealLost,
    DealWon,
    PenaltyApplied,
    StakeSettled,
)
from tests.domain.given import (
    act,
    current,
    given_table,
    lead,
    play,
    refused,
    respond,
    start,
    table,
    trick,
)

ACCEPT, DECLINE = DaveAnswer(True), DaveAnswer(False)


def offered(**options):
    return act(given_table(**options), 0, Dave())[0]


def accepted(**options):
    return play(given_table(**options), (0, Dave()), (1, ACCEPT))


def test_the_leader_may_say_dave_before_leading():
    given, events = act(given_table(), 0, Dave())
    assert events == [DaveOffered(0, 2)]
    deal = current(given)
    assert (deal.phase, deal.turn, deal.dave_from) == ("dave_answer", 1, 0)


def test_a_declined_dave_ends_the_deal_won_by_the_offerer_at_the_stake_before_doubling():
    given, events = act(offered(stake=3, match_target=10), 1, DECLINE)
    # won by the offerer, by the act of the seat that declined
    assert (given.deals[0].winners, given.deals[0].by) == ((0,), 1)
    assert events[:4] == [
        DaveDeclined(1),
        DealWon(0, "dave_declined"),
        StakeSettled(deal=1, stake=3, multiplier=1, payments=(3, -3)),
        DealerChosen(0, "winner"),
    ]


def test_an_accepted_dave_doubles_the_multiplier_and_gives_the_cube_to_the_acceptor():
    given, events = act(offered(), 1, ACCEPT)
    assert events == [DaveAccepted(1, 2)]
    deal = current(given)
    assert (deal.multiplier, deal.cube, deal.phase, deal.turn) == (2, 1, "lead", 0)


def test_play_goes_on_after_an_accepted_dave_and_the_deal_is_settled_doubled():
    given = act(accepted(stake=3), 0, lead("AS"))[0]
    _, events = act(given, 1, Concede())
    assert events[2] == StakeSettled(deal=1, stake=3, multiplier=2, payments=(6, -6))
    assert events[1] == DealLost(1, "conceded")


def test_after_an_accepted_dave_the_offerer_may_not_offer_the_next_one():
    assert refused(accepted(), 0, Dave()) == "dave_not_yours"


def test_the_acceptor_may_offer_the_next_dave_on_its_own_lead():
    given = trick(accepted(), "AS", "6H")  # seat 1 takes and leads
    assert current(given).turn == 1
    given, events = act(given, 1, Dave())
    assert events == [DaveOffered(1, 4)]
    given, events = act(given, 0, ACCEPT)
    assert events == [DaveAccepted(0, 4)]
    deal = current(given)
    assert (deal.multiplier, deal.cube, deal.turn) == (4, 0, 1)
    assert refused(given, 1, Dave()) == "dave_not_yours"


def test_a_second_dave_declined_pays_the_stake_doubled_once():
    given = trick(accepted(), "AS", "6H")
    given = act(given, 1, Dave())[0]
    _, events = act(given, 0, DECLINE)
    assert events[1:3] == [
        DealWon(1, "dave_declined"),
        StakeSettled(deal=1, stake=1, multiplier=2, payments=(-2, 2)),
    ]


def test_the_multiplier_stops_at_dave_max_multiplier():
    given = accepted(dave_max_multiplier=2)
    given = trick(given, "AS", "6H")
    assert refused(given, 1, Dave()) == "dave_limit"


def test_the_cube_passes_back_and_forth_up_to_the_limit():
    given = trick(accepted(dave_max_multiplier=4), "AS", "6H")  # x2, seat 1 leads
    given = play(given, (1, Dave()), (0, ACCEPT))  # x4, the cube to seat 0
    given = trick(given, "8D", "QD")  # seat 0 takes and leads
    assert (current(given).turn, current(given).cube) == (0, 0)
    assert refused(given, 0, Dave()) == "dave_limit"


def test_dave_is_offered_only_on_ones_turn_to_lead():
    assert refused(given_table(), 1, Dave()) == "not_your_turn"
    given = act(given_table(), 0, lead("AS"))[0]
    assert refused(given, 1, Dave()) == "not_your_turn"
    assert refused(given, 0, Dave()) == "not_your_turn"


def test_a_dave_refused_to_the_seat_due_for_another_act_says_when_a_dave_is_offered():
    given = act(given_table(), 0, lead("AS"))[0]
    with pytest.raises(RuleViolation) as refusal:
        decide(given, Dave(), 1, 0)
    assert refusal.value.detail == (
        "seat 1 is due to respond; a dave is offered on a turn to lead, before leading"
    )
    with pytest.raises(RuleViolation) as refusal:
        decide(given, Dave(), 0, 0)  # not due at all: who is, and nothing more
    assert refusal.value.detail == "seat 1 is due to respond"


@pytest.mark.parametrize(
    ("seat", "command"),
    [
        (0, lead("AS")),
        (0, Declare("thirty_one")),
        (0, Declare("bura")),
        (0, Dave()),
        (1, lead("7S")),
        (1, respond("7S")),
        (1, Declare("bura")),
        (1, Dave()),
    ],
)
def test_a_pending_dave_must_be_answered_before_anything_else(seat, command):
    assert refused(offered(), seat, command) == "dave_pending"


def test_only_the_offered_seat_answers_a_dave():
    assert refused(offered(), 0, ACCEPT) == "not_your_turn"


def test_an_answer_without_a_dave_is_refused():
    assert refused(given_table(), 1, ACCEPT) == "no_dave_pending"


def test_a_draw_while_a_dave_is_pending_is_judged_as_a_draw_when_none_is_due():
    # docs/rules.md §4 judges every physical draw: none is due while a dave waits for its answer.
    _, events = act(offered(), 1, Draw())
    assert events[0] == PenaltyApplied(
        seat=1, rule="extra_card", due=None, cards=("KC",), count=1, asked=1
    )


def test_conceding_instead_of_answering_loses_at_the_stake_before_doubling():
    _, events = act(offered(), 1, Concede())
    assert events[2] == StakeSettled(deal=1, stake=1, multiplier=1, payments=(1, -1))


def test_dave_false_switches_it_off():
    assert refused(given_table(dave=False), 0, Dave()) == "dave_off"


def test_dave_is_off_by_default_at_three_seats():
    given = table(["QS 7D 7C", "KS 8D 8C", "AS 9D 9C"], trump="6H")
    assert refused(given, 0, Dave()) == "dave_off"


def test_dave_true_at_three_seats_is_refused_when_the_game_is_created():
    with pytest.raises(BadOption) as refused_option:
        start(3, dave=True)
    assert refused_option.value.option == "dave"


@pytest.mark.parametrize("limit", [0, 1, 3, 48])
def test_dave_max_multiplier_must_be_a_power_of_two(limit):
    with pytest.raises(BadOption) as refused_option:
        start(2, dave_max_multiplier=limit)
    assert refused_option.value.option == "dave_max_multiplier"


def test_the_cube_does_not_carry_over_to_the_next_deal():
    given = play(given_table(match_target=5), (0, Dave()), (1, ACCEPT), (0, Concede()))
    deal = current(given)
    assert (deal.number, deal.multiplier, deal.cube) == (2, 1, None)
