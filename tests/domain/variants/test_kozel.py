"""docs/rules.md §8, CZ «Kozel» (`game: "kozel"`): up to 5 seats, 4 cards each, leads of 1
or 3 cards of one suit; bura or four aces win at once, otherwise the deal is played out and
the highest trick total wins."""

import pytest
from msgspec.structs import replace

from domain.cards import points
from domain.commands import Declare, Lead, Respond
from domain.decide import decide
from domain.errors import BadOption, RuleViolation
from domain.events import (
    BuraShown,
    CardDealt,
    DealLost,
    DealVoid,
    DealWon,
    Declared,
    FourAcesShown,
)
from domain.legal import legal_commands
from domain.rules import Rules, check
from domain.settlement import count_up
from domain.table import lead_limit
from tests.domain.given import (
    act,
    current,
    in_time,
    lead,
    play_out,
    refused,
    start,
    table,
)

KOZEL = {"game": "kozel"}
HANDS = ["AS 10S KS 7D", "QC JC 8C 6D"]  # seat 0 leads; hearts are trumps


def kozel_table(hands=HANDS, **options):
    return table(hands, trump="9H", **KOZEL, **options)


def test_every_seat_is_dealt_four_cards():
    given, events = start(5, dealer=4, **KOZEL)
    assert len([e for e in events if isinstance(e, CardDealt)]) == 20
    assert [len(h) for h in current(given).hands] == [4] * 5


def test_a_lead_is_one_or_three_cards_of_one_suit():
    given = kozel_table()
    assert refused(given, 0, lead("AS 10S")) == "wrong_card_count"
    assert refused(given, 0, lead("AS 10S KS 7D")) == "wrong_card_count"
    assert {len(m.cards) for m in legal_commands(given, 0) if isinstance(m, Lead)} == {1, 3}
    assert act(given, 0, lead("AS 10S KS"))[0]


@pytest.mark.parametrize("cards", ["AS 10S", "AS 10S KS 7D", ""])
def test_a_wrong_count_is_told_the_kozel_way_whatever_was_led(cards):
    """Four cards led are refused as two are: "1 or 3", never the classic "1 to 3", which
    would invite a lead of 2."""
    with pytest.raises(RuleViolation) as refusal:
        decide(kozel_table(), lead(cards), 0, 0)
    assert (refusal.value.code, refusal.value.detail) == (
        "wrong_card_count",
        "in Kozel a lead is 1 or 3 cards of one suit",
    )


def test_once_a_hand_holds_fewer_than_three_a_kozel_lead_is_one_card():
    given = play_out(kozel_table(), stop=lambda deal: lead_limit(deal) < 3)
    deal = current(given)
    assert lead_limit(deal) == 2
    with pytest.raises(RuleViolation) as refusal:
        decide(given, Lead(deal.hands[deal.turn][:2]), deal.turn, in_time(given))
    assert refusal.value.detail.endswith("3 only while every seat holds 3: lead 1")
    assert {len(m.cards) for m in legal_commands(given, deal.turn) if isinstance(m, Lead)} == {1}


def test_there_is_no_declaration_of_31_in_kozel():
    given = kozel_table()
    assert refused(given, 0, Declare("thirty_one")) == "no_thirty_one"
    assert Declare("thirty_one") not in legal_commands(given, 0)


def test_three_trumps_among_the_four_cards_are_a_bura_and_win():
    given = kozel_table(["6H 7H 8H AS", "QC JC 8C 6D"])
    _, events = act(given, 0, Declare("bura"))
    assert events[:2] == [BuraShown(0, ("6H", "7H", "8H")), DealWon(0, "bura")]


def test_four_aces_win_at_once():
    given = kozel_table(["AS AD AC AH", "QC JC 8C 6D"])
    _, events = act(given, 0, Declare("four_aces"))
    assert events[:2] == [FourAcesShown(0, ("AS", "AD", "AC", "AH")), DealWon(0, "four_aces")]


def test_four_aces_may_be_shown_on_the_turn_to_respond():
    given = act(kozel_table(["7S 7D 8D 9D", "AS AD AC AH"]), 0, lead("7S"))[0]
    _, events = act(given, 1, Declare("four_aces"))
    assert events[1] == DealWon(1, "four_aces")


def test_claiming_four_aces_without_them_is_a_false_declaration():
    _, events = act(kozel_table(), 0, Declare("four_aces"))
    assert events[:2] == [
        Declared(seat=0, claim="four_aces", value=1, needed=4, true=False),
        DealLost(0, "false_declaration"),
    ]


def test_four_aces_are_no_claim_in_bura():
    assert (
        refused(table(["AS AD AC", "QC JC 8C"], trump="9H"), 0, Declare("four_aces")) == "not_kozel"
    )


def test_otherwise_the_deal_is_played_out_and_the_highest_total_wins():
    given = kozel_table()
    while not given.deals:
        deal = current(given)
        seat = deal.turn
        if deal.phase == "draw":
            command = legal_commands(given, seat)[0]
        elif deal.phase == "lead":
            command = Lead(deal.hands[seat][:1])
        else:
            command = Respond(deal.hands[seat][:1])
        given, events = act(given, seat, command)
    deal = current(given)
    assert not deal.stock and not any(deal.hands)  # stock and hands exhausted
    totals = [points(p) for p in deal.piles]
    assert sum(totals) == 120 and totals[0] != totals[1]
    best = totals.index(max(totals))
    assert DealWon(best, "most_points") in events


def test_a_tie_for_the_highest_total_is_void():
    given = kozel_table()
    deal = current(given)
    even = replace(deal, piles=(("AS", "10S"), ("AD", "10D")))
    assert count_up(given, even)[0] == DealVoid("no_claim")
    ahead = replace(deal, piles=(("AS", "10S"), ("AD", "KD")))
    assert count_up(given, ahead)[0] == DealWon(0, "most_points")


@pytest.mark.parametrize(
    ("options", "seats", "option"),
    [
        ({}, 6, "game"),  # at most five seats
        ({"combinations": "czech"}, 2, "combinations"),
        ({"hand_size": (3, 3)}, 2, "hand_size"),
        ({"closed_discard": True, "false_declaration": "pay_pot"}, 2, "false_declaration"),
    ],
)
def test_a_bad_kozel_table_is_refused_naming_the_option(options, seats, option):
    with pytest.raises(BadOption) as refusal:
        check(Rules(game="kozel", **options), seats)
    assert refusal.value.option == option


@pytest.mark.parametrize(
    ("options", "seats"),
    [
        (
            {"open_seats": (0,), "compensation": 30, "trumps": False, "first_lead_compensation": 1},
            2,
        ),
        (
            {
                "open_seats": (0,),
                "compensation": 16,
                "trumps": False,
                "first_lead_compensation": 15,
            },
            3,
        ),
    ],
)
def test_compensation_up_to_31_is_taken_in_kozel_where_31_wins_nothing(options, seats):
    """§8.2 refuses compensation that reaches a side's 31 before a card is played, since no
    deal would be played; in Kozel 31 wins nothing and every deal is played out and counted,
    so such a table is taken (it was refused, naming a target Kozel does not have)."""
    rules = check(Rules(game="kozel", **options), seats)
    assert rules.compensation == options["compensation"]
    with pytest.raises(BadOption) as refusal:  # the same in Bura: no deal would be played
        check(Rules(**options), seats)
    assert refusal.value.option == "compensation"
