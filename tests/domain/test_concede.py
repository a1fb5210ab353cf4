"""docs/rules.md §5: a player who ends the deal early on their turn loses it."""

import pytest

from domain.commands import Concede
from domain.errors import RuleViolation
from domain.events import Conceded, DealerChosen, DealLost, StakeSettled
from tests.domain.given import act, current, lead, play, respond, table

HANDS = ["AS 6S QD", "7S 6H 8D"]


def test_conceding_on_ones_lead_loses_the_deal():
    _, events = act(table(HANDS, trump="9H"), 0, Concede())
    assert events[:3] == [
        Conceded(0),
        DealLost(0, "conceded"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(-1, 1)),
    ]


def test_conceding_when_due_to_respond_or_to_draw_loses_the_deal():
    given = act(table(HANDS, trump="9H"), 0, lead("AS"))[0]
    assert act(given, 1, Concede())[1][1] == DealLost(1, "conceded")
    given = act(given, 1, respond("6H"))[0]
    assert current(given).phase == "draw"
    assert act(given, 1, Concede())[1][1] == DealLost(1, "conceded")


def test_conceding_out_of_turn_is_refused():
    with pytest.raises(RuleViolation) as refused:
        act(table(HANDS, trump="9H"), 1, Concede())
    assert refused.value.code == "not_your_turn"


def test_with_three_seats_the_conceding_seat_pays_every_other_seat():
    given = play(table(["QS 7D 7C", "KS 8D 8C", "AS 9D 9C"], trump="6H", stake=2), (0, lead("QS")))
    _, events = act(given, 1, Concede())
    assert events[2] == StakeSettled(deal=1, stake=2, multiplier=1, payments=(2, -4, 2))


def test_with_three_seats_the_same_dealer_redeals_after_a_concession():
    # No single winner: docs/rules.md §2 names only the winner of a deal as the next dealer.
    given = table(["QS 7D 7C", "KS 8D 8C", "AS 9D 9C"], trump="6H", match_target=3)
    _, events = act(given, 0, Concede())
    assert events[3] == DealerChosen(2, "same_dealer")
