"""docs/rules.md §1: the packs, the order within a suit, points, notation, and what beats what."""

import pytest

from domain.cards import POINTS, beats, covers, deck, parse_card, parse_cards, points
from domain.errors import BadCard, RuleViolation
from tests.domain.given import act, lead, table


def test_the_ten_beats_the_king():
    assert beats("10S", "KS", trump="H")
    assert not beats("KS", "10S", trump="H")


def test_the_order_within_a_suit_is_a_ten_king_queen_jack_nine_to_two():
    high_to_low = ["A", "10", "K", "Q", "J", "9", "8", "7", "6", "5", "4", "3", "2"]
    for i, higher in enumerate(high_to_low):
        for lower in high_to_low[i + 1 :]:
            assert beats(higher + "D", lower + "D", trump="S")
            assert not beats(lower + "D", higher + "D", trump="S")


def test_a_card_does_not_beat_itself():
    assert not beats("AS", "AS", trump="S")


def test_a_trump_beats_an_ace():
    assert beats("6H", "AS", trump="H")


def test_a_trump_is_beaten_only_by_a_higher_trump():
    assert beats("7H", "6H", trump="H")
    assert not beats("6H", "7H", trump="H")
    assert not beats("AS", "6H", trump="H")


def test_another_plain_suit_never_beats():
    assert not beats("AS", "6D", trump="H")
    assert not beats("AD", "6S", trump="H")


def test_points_ace_11_ten_10_king_4_queen_3_jack_2_the_rest_0():
    assert [POINTS[r + "C"] for r in ("A", "10", "K", "Q", "J", "9", "8", "7", "6")] == [
        11,
        10,
        4,
        3,
        2,
        0,
        0,
        0,
        0,
    ]
    assert [POINTS[r + "C"] for r in ("5", "4", "3", "2")] == [0, 0, 0, 0]


@pytest.mark.parametrize("size", [36, 32, 52])
def test_every_pack_holds_120_points(size):
    assert points(deck(size)) == 120


def test_the_36_card_pack_is_six_to_ace_in_four_suits():
    pack = deck(36)
    assert len(pack) == len(set(pack)) == 36
    assert {c[:-1] for c in pack} == {"6", "7", "8", "9", "10", "J", "Q", "K", "A"}
    assert {c[-1] for c in pack} == {"S", "H", "D", "C"}
    assert deck() == pack


def test_the_32_card_pack_drops_the_sixes():
    assert set(deck(32)) == set(deck(36)) - {"6S", "6H", "6D", "6C"}


def test_the_52_card_pack_adds_two_to_five_below_the_six():
    extra = set(deck(52)) - set(deck(36))
    assert extra == {r + s for r in "2345" for s in "SHDC"}
    assert all(beats("6S", c, trump="H") for c in extra if c.endswith("S"))


def test_no_other_pack_size():
    with pytest.raises(BadCard, match="40"):
        deck(40)


@pytest.mark.parametrize(
    ("text", "card"), [("10h", "10H"), ("as", "AS"), ("qD", "QD"), ("6C", "6C"), ("2s", "2S")]
)
def test_input_is_case_insensitive_and_output_upper_case(text, card):
    assert parse_card(text) == card


@pytest.mark.parametrize(
    "text",
    ["", "1H", "11H", "10", "H", "AX", "ZS", "A S", "10HH", "T H", " QD", "AS ", "as\t", "\u00a0AS",
     "a\u017f"],  # space around it, and a long s that upper-cases to S
)  # fmt: skip
def test_a_bad_code_is_refused_with_a_message_naming_it(text):
    with pytest.raises(BadCard) as refused:
        parse_card(text)
    assert repr(text) in str(refused.value)
    assert "rank then suit" in str(refused.value)


def test_parse_cards_keeps_the_order():
    assert parse_cards(["10h", "as"]) == ("10H", "AS")


def test_covers_searches_every_pairing():
    # docs/rules.md §3: `A♠ 6♠` answered by `7♠ 6♥` (trump ♥) is beaten.
    assert covers(("7S", "6H"), ("AS", "6S"), trump="H")
    assert covers(("6H", "7S"), ("AS", "6S"), trump="H")
    assert not covers(("7S", "6D"), ("AS", "6S"), trump="H")
    assert not covers(("7S",), ("AS", "6S"), trump="H")


def test_three_cards_are_covered_only_if_each_gets_its_own_beater():
    assert covers(("KH", "7S", "6H"), ("AS", "QS", "6S"), trump="H")
    assert not covers(("KH", "7S", "8S"), ("AS", "QS", "6S"), trump="H")


# -- through the engine --------------------------------------------------------------------


def test_the_engine_takes_cards_in_their_canonical_code_only():
    # cards are parsed once, where input enters (the API); to the engine "10s" or "1OS" is
    # simply no card in the hand
    given = table(["10S AS KS", "QH 6H 7H"], trump="9D")
    for text in ("10s", "1OS"):
        with pytest.raises(RuleViolation) as refused:
            act(given, 0, lead(text))
        assert refused.value.code == "card_not_in_hand"
        assert text in refused.value.detail
