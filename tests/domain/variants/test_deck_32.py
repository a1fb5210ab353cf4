"""docs/rules.md §8 and CZ «hra s 32 kartami bez šestek» (`deck: 32`): the pack without sixes."""

import random

from domain.bots import greedy_bot
from domain.cards import deck, points
from domain.events import CardDealt, CardDrawn, DealStarted
from domain.rules import Rules
from domain.simulation import play_game
from tests.domain.given import current, lead, refused, start, table
from tests.domain.play import cards_in_play


def test_the_32_card_pack_has_no_sixes_and_still_120_points():
    pack = deck(32)
    assert len(pack) == len(set(pack)) == 32
    assert not [c for c in pack if c.startswith("6")]
    assert points(pack) == 120


def test_a_deal_uses_the_32_cards_only():
    given, events = start(3, dealer=0, deck=32)
    deal = current(given)
    assert sorted(cards_in_play(deal)) == sorted(deck(32))
    assert len(deal.stock) == 32 - 9
    started = next(e for e in events if isinstance(e, DealStarted))
    assert started.deck is not None and sorted(started.deck) == sorted(deck(32))


def test_an_operator_s_deck_must_be_the_32_card_pack():
    given, _ = start(2, dealer=1, deck=32, order=deck(32))
    assert len(current(given).stock) == 32 - 6
    try:
        start(2, dealer=1, deck=32, order=deck(36))
    except Exception as refusal:
        assert getattr(refusal, "code", None) == "bad_deck"
    else:
        raise AssertionError("a 36-card deck was accepted for a 32-card table")


def test_a_six_is_not_a_card_of_this_game():
    given = table(["AS 7D 8C", "KC QC JC"], trump="9H", deck=32)
    assert refused(given, 0, lead("6S")) == "card_not_in_hand"


def test_whole_games_never_see_a_six():
    for n in range(10):
        _, events = play_game(f"32-{n}", [greedy_bot] * 4, random.Random(n), Rules(deck=32))
        seen = [e.card for e in events if isinstance(e, CardDealt | CardDrawn)]
        assert seen and not [c for c in seen if c and c.startswith("6")]
