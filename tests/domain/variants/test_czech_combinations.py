"""docs/rules.md §8, CZ (`combinations: "czech"`): bura, three aces and molodka may be led
out of turn at the start of a trick, the stronger first (bura > three aces > molodka), ties
to the seat that would lead earlier; a led bura wins the deal at once unless a responder's
own bura beats it."""

from domain.commands import Declare, Draw, Lead
from domain.events import (
    CardsLed,
    CardsResponded,
    DealWon,
    GameFinished,
    StakeSettled,
)
from domain.legal import claimants, legal_commands
from domain.views import SPECTATOR, view
from tests.domain.given import SEED, act, current, lead, play, refused, respond, table

CZECH = {"combinations": "czech"}


def three(*hands, **options):
    """Three seats, seat 0 leads, hearts are trumps."""
    return table(list(hands), trump="9H", **CZECH, **options)


def test_a_molodka_may_be_led_out_of_turn_at_the_start_of_a_trick():
    given = three("AS 7D 8C", "KC QC JC", "6S 7S 9D")
    given, events = act(given, 1, lead("KC QC JC"))
    assert events == [CardsLed(1, ("KC", "QC", "JC"), "molodka")]
    deal = current(given)
    assert (deal.leader, deal.turn, deal.phase) == (1, 2, "respond")
    assert view(given, SPECTATOR).trick.combination == "molodka"  # type: ignore[union-attr]


def test_out_of_turn_only_a_combination_may_be_led():
    given = three("AS 7D 8C", "KC QC JC", "6S 7S 9D")
    assert refused(given, 2, lead("6S")) == "not_your_turn"
    assert refused(given, 2, lead("6S 7S 9D")) == "not_your_turn"
    assert refused(given, 1, lead("KC QC")) == "not_your_turn"


def test_the_stronger_combination_takes_precedence():
    given = three("7S 7D 8H", "KC QC JC", "AS AD AC")
    assert refused(given, 1, lead("KC QC JC")) == "combination_outranked"
    _, events = act(given, 2, lead("AS AD AC"))
    assert events == [CardsLed(2, ("AS", "AD", "AC"), "three_aces")]


def test_between_equal_combinations_the_seat_that_would_lead_earlier_leads():
    given = three("7S 7D 8H", "KC QC JC", "KS QS JS")
    assert refused(given, 2, lead("KS QS JS")) == "combination_outranked"
    assert act(given, 1, lead("KC QC JC"))[1] == [CardsLed(1, ("KC", "QC", "JC"), "molodka")]


def test_the_leader_s_own_combination_comes_first_among_equals():
    given = three("KD QD JD", "KC QC JC", "6S 7S 9D")
    assert refused(given, 1, lead("KC QC JC")) == "combination_outranked"
    assert act(given, 0, lead("KD QD JD"))[1] == [CardsLed(0, ("KD", "QD", "JD"), "molodka")]


def test_the_leader_may_always_lead_an_ordinary_lead():
    given = three("7S 7D 8H", "KC QC JC", "AS AD AC")
    assert act(given, 0, lead("7S"))[1] == [CardsLed(0, ("7S",))]


def test_the_leader_s_molodka_gives_way_to_another_seat_s_bura():
    """«Pokud více hráčů má tyto kombinace, vynáší ten se silnější kombinací»: the seat due
    is no exception. Its three diamonds were taken as an ordinary lead, labelled a molodka,
    and the bura in seat 1 could then only answer them."""
    given = table(["7D 8D 9D", "7C 8C 9C"], trump="6C", **CZECH)
    assert refused(given, 0, lead("7D 8D 9D")) == "combination_outranked"
    assert Lead(("7D", "8D", "9D")) not in legal_commands(given, 0)
    assert act(given, 0, lead("7D 8D"))[1] == [CardsLed(0, ("7D", "8D"))]  # fewer: ordinary
    _, events = act(given, 1, lead("7C 8C 9C"))
    assert events[:2] == [CardsLed(1, ("7C", "8C", "9C"), "bura"), DealWon(1, "bura")]


def test_the_leader_s_molodka_gives_way_to_three_aces_and_leads_before_an_equal_one():
    assert refused(three("KD QD JD", "AS AD AC", "6S 7S 9C"), 0, lead("KD QD JD")) == (
        "combination_outranked"
    )
    given = three("KD QD JD", "KC QC JC", "6S 7S 9D")
    assert Lead(("KD", "QD", "JD")) in legal_commands(given, 0)
    assert act(given, 0, lead("KD QD JD"))[1] == [CardsLed(0, ("KD", "QD", "JD"), "molodka")]


def test_the_leader_s_bura_is_outranked_by_nothing():
    given = table(["6H 7H 8H", "AS AD AC", "KC QC JC"], trump="9H", **CZECH)
    assert act(given, 0, lead("6H 7H 8H"))[1][:2] == [
        CardsLed(0, ("6H", "7H", "8H"), "bura"),
        DealWon(0, "bura"),
    ]


def test_legal_commands_offer_the_out_of_turn_lead_to_the_seat_with_precedence_only():
    given = three("AS 7D 8C", "KC QC JC", "KS QS JS")
    assert claimants(given) == [1]
    assert legal_commands(given, 1) == [Lead(("KC", "QC", "JC"))]
    assert legal_commands(given, 2) == []


def test_three_aces_are_a_lead_of_mixed_suits_only_as_a_combination():
    hands = ["AS AD AC", "7S 6C 8C"]
    _, events = act(table(hands, trump="9H", **CZECH), 0, lead("AS AD AC"))
    assert events == [CardsLed(0, ("AS", "AD", "AC"), "three_aces")]
    assert refused(table(hands, trump="9H"), 0, lead("AS AD AC")) == "mixed_suits"


def test_three_aces_give_way_to_a_bura():
    given = table(["AS AD AC", "6H 7H 8H"], trump="9H", **CZECH)
    assert refused(given, 0, lead("AS AD AC")) == "combination_outranked"


def test_three_aces_are_a_trick_like_any_other_and_not_a_win():
    # only three trumps could beat them, and a seat holding those would have led its bura
    given = table(["AS AD AC", "6H 7H 7S"], trump="9H", stock="6D 7D 8D 9D", **CZECH)
    given = act(given, 0, lead("AS AD AC"))[0]
    given, events = act(given, 1, respond("6H 7H 7S"))
    assert [type(e).__name__ for e in events] == ["CardsResponded", "TrickTaken"]
    assert current(given).piles[0] == ("AS", "AD", "AC", "6H", "7H", "7S")
    assert not given.deals


def test_a_led_bura_wins_the_deal_at_once_when_no_responder_can_beat_it():
    given = table(["6H 7H 8H", "AS 10S KS"], trump="9H", **CZECH)
    _, events = act(given, 0, lead("6H 7H 8H"))
    assert events == [
        CardsLed(0, ("6H", "7H", "8H"), "bura"),
        DealWon(0, "bura"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(1, -1)),
        GameFinished(winners=(0,), reason="bura", seed=SEED),
    ]


def test_a_bura_led_out_of_turn_wins_too():
    given = table(["AS 10S KS", "6H 7H 8H"], trump="9H", **CZECH)
    _, events = act(given, 1, lead("6H 7H 8H"))
    assert events[:2] == [CardsLed(1, ("6H", "7H", "8H"), "bura"), DealWon(1, "bura")]


def test_with_two_buras_the_seat_that_would_lead_earlier_leads_and_a_higher_bura_wins():
    given = table(["6H 7H 8H", "10H KH AH"], trump="9H", **CZECH)
    assert refused(given, 1, lead("10H KH AH")) == "combination_outranked"
    given, events = act(given, 0, lead("6H 7H 8H"))
    assert events == [CardsLed(0, ("6H", "7H", "8H"), "bura")]  # seat 1 could beat it
    _, events = act(given, 1, respond("10H KH AH"))
    assert events[:2] == [
        CardsResponded(seat=1, cards=("10H", "KH", "AH"), count=3, beat=True),
        DealWon(1, "bura"),
    ]


def test_a_responder_who_does_not_beat_the_bura_leaves_the_deal_to_its_leader():
    given = table(
        ["6H 7H 8H", "AS 10S KS", "10H KH AH 6C"],
        trump="9H",
        hand_size=(3, 3, 4),
        open_seats=(2,),
        **CZECH,
    )
    given = play(given, (0, lead("6H 7H 8H")), (1, respond("AS 10S KS")))
    _, events = act(given, 2, respond("10H KH 6C"))
    assert events[:2] == [
        CardsResponded(seat=2, cards=("10H", "KH", "6C"), count=3, beat=False),
        DealWon(0, "bura"),
    ]


def test_bura_is_shown_by_leading_it_not_by_declaring():
    given = table(["6H 7H 8H", "AS 10S KS"], trump="9H", **CZECH)
    assert refused(given, 0, Declare("bura")) == "lead_the_bura"
    assert Declare("bura") not in legal_commands(given, 0)


def test_a_combination_is_led_out_of_turn_only_at_the_start_of_a_trick():
    given = three("AS 7D 8C", "KC QC JC", "6S 7S 9D")
    given = act(given, 0, lead("AS"))[0]  # the trick has begun
    assert refused(given, 2, lead("6S 7S 9D")) == "not_your_turn"
    given = act(given, 1, respond("KC"))[0]
    given = act(given, 2, respond("6S"))[0]  # seat 0 takes; the draws are due
    assert current(given).phase == "draw"
    assert refused(given, 1, lead("QC JC 6D")) in ("not_your_turn", "card_not_in_hand")
    assert claimants(given) == []
    assert act(given, 0, Draw())[0]


def test_without_czech_combinations_nobody_leads_out_of_turn():
    given = table(["AS 7D 8C", "KC QC JC", "6S 7S 9D"], trump="9H")
    assert refused(given, 1, lead("KC QC JC")) == "not_your_turn"
    assert claimants(given) == []
