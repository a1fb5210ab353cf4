"""docs/rules.md §8 «бура без козырей» (`trumps: false`): no trump card is turned, and the first
leader gives the other seat `first_lead_compensation` points (0-30) for the lead."""

import pytest

from domain.commands import Concede, Declare
from domain.errors import BadOption
from domain.events import CardsResponded, CompensationGiven, Declared, TrumpTurned
from domain.legal import legal_commands
from domain.rules import Rules, check
from domain.views import SPECTATOR, view
from tests.domain.given import (
    act,
    current,
    lead,
    record,
    refused,
    respond,
    start,
    table,
    table_and_events,
    trick,
)

HANDS = ["7S 10D 7C", "AS 6C 8C"]  # seat 0 leads (seat 1 deals)


def compensations(events):
    return [e for e in events if isinstance(e, CompensationGiven)]


def test_no_trump_card_is_turned_the_stock_is_the_rest_of_the_pack():
    given, events = table_and_events(HANDS, trump=None, stock="QH JH")
    assert not any(isinstance(e, TrumpTurned) for e in events)
    deal = current(given)
    assert (deal.trump, deal.trump_card, deal.phase, deal.turn) == (None, None, "lead", 0)
    assert deal.stock[:2] == ("QH", "JH") and len(deal.stock) == 30
    seen = view(given, SPECTATOR)
    assert (seen.trump, seen.trump_suit, seen.stock_count) == (None, None, 30)


def test_the_first_leader_gives_the_other_seat_the_compensation():
    given, events = table_and_events(HANDS, trump=None, first_lead_compensation=12)
    assert compensations(events) == [CompensationGiven(1, 12, "first_lead")]
    assert current(given).bonus == (0, 12)


def test_each_deal_s_first_leader_pays_for_that_deal():
    given, events = table_and_events(HANDS, trump=None, first_lead_compensation=12, match_target=2)
    given = record(given, events, (0, lead("7S")), (1, Concede()))  # seat 0 deals the next
    assert (current(given).number, current(given).turn) == (2, 1)
    assert compensations(events)[-1] == CompensationGiven(0, 12, "first_lead")


def test_with_three_seats_each_other_seat_receives_it():
    _, events = start(3, dealer=2, trumps=False, first_lead_compensation=5)
    assert compensations(events) == [
        CompensationGiven(1, 5, "first_lead"),
        CompensationGiven(2, 5, "first_lead"),
    ]


def test_in_a_team_game_the_other_team_receives_it_once_as_its_points_are_pooled():
    _, events = start(
        4, dealer=3, trumps=False, first_lead_compensation=5, deck=52, teams=((0, 2), (1, 3))
    )
    assert compensations(events) == [CompensationGiven(1, 5, "first_lead")]


def test_the_compensation_counts_toward_31():
    given = table(HANDS, trump=None, stock="QH JH", first_lead_compensation=20)
    given = trick(given, "7S", "AS")  # seat 1 takes 11: 31 with the compensation
    _, events = act(given, 1, Declare("thirty_one"))
    assert events[0] == Declared(seat=1, claim="thirty_one", value=31, needed=31, true=True)


def test_without_trumps_only_a_higher_card_of_the_suit_led_beats():
    given = act(table(["7S 10D 7C", "6H 8S 8C"], trump=None), 0, lead("7S"))[0]
    assert act(given, 1, respond("6H"))[1][0] == CardsResponded(
        seat=1, cards=("6H",), count=1, beat=False
    )
    assert act(given, 1, respond("8S"))[1][0] == CardsResponded(
        seat=1, cards=("8S",), count=1, beat=True
    )


def test_there_is_no_bura_without_trumps():
    given = table(["7S 10S AS", "6H 8H 8C"], trump=None)
    assert refused(given, 0, Declare("bura")) == "no_trumps"
    assert Declare("bura") not in legal_commands(given, 0)


@pytest.mark.parametrize(
    "options",
    [
        {"first_lead_compensation": 10},  # with trumps
        {"trumps": False, "first_lead_compensation": 31},
        {"trumps": False, "first_lead_compensation": -1},
    ],
)
def test_a_bad_compensation_for_the_lead_is_refused(options):
    with pytest.raises(BadOption) as refusal:
        check(Rules(**options), 2)
    assert refusal.value.option == "first_lead_compensation"
