"""docs/rules.md §2: the dealer by lot, dealing order, the explicit deck, the seeded shuffle."""

import hashlib

import pytest

from domain.cards import deck
from domain.commands import Lead, StartGame
from domain.decide import decide
from domain.errors import BadSetup, RuleViolation
from domain.events import CardDealt, DealerChosen, DealStarted, GameStarted, TrumpTurned
from domain.rules import Rules
from domain.shuffle import commitment, deal_seed, draw_lot, shuffled
from domain.state import NEW_GAME
from tests.domain.given import current, start

# The fixed pack order turned so that the low clubs come first: 9C 8C 7C 6C AS 10S KS ...
ORDER_36 = (*deck(36)[-4:], *deck(36)[:-4])


@pytest.mark.parametrize(("seats", "dealer"), [(2, 0), (2, 1), (3, 0), (3, 2), (4, 1), (6, 5)])
def test_an_explicit_deck_goes_c0_to_the_seat_after_the_dealer_round_by_round(seats, dealer):
    given, events = start(seats, dealer=dealer, order=ORDER_36)
    dealt = [e for e in events if isinstance(e, CardDealt)]
    expected = [CardDealt((dealer + 1 + i) % seats, ORDER_36[i]) for i in range(3 * seats)]
    assert dealt == expected
    deal = current(given)
    for seat in range(seats):
        assert deal.hands[seat] == tuple(ORDER_36[(seat - dealer - 1) % seats :: seats][:3])


@pytest.mark.parametrize("seats", [2, 3, 5])
def test_the_next_card_is_the_trump_and_lies_last_under_the_stock(seats):
    given, events = start(seats, dealer=0, order=ORDER_36)
    turned = ORDER_36[3 * seats]
    assert TrumpTurned(turned) in events
    deal = current(given)
    assert deal.trump == turned[-1]
    assert deal.trump_card == turned
    assert deal.stock == (*ORDER_36[3 * seats + 1 :], turned)


def test_dealing_is_one_card_at_a_time_clockwise_then_the_trump_turned():
    _, events = start(3, dealer=1, order=ORDER_36)
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "GameStarted",
        "DealerChosen",
        "DealStarted",
        *["CardDealt"] * 9,
        "TrumpTurned",
    ]
    assert [e.seat for e in events if isinstance(e, CardDealt)] == [2, 0, 1] * 3


def test_the_seat_after_the_dealer_leads_the_first_trick():
    for dealer in range(4):
        deal = current(start(4, dealer=dealer, order=ORDER_36)[0])
        assert (deal.phase, deal.turn, deal.leader) == ("lead", (dealer + 1) % 4, (dealer + 1) % 4)


def test_the_first_dealer_is_chosen_by_lot_and_recorded():
    _, events = start(3, seed="lot-1")
    assert events[1] == DealerChosen(draw_lot("lot-1", 3), "lot")
    assert isinstance(events[2], DealStarted) and events[2].dealer == events[1].seat


def test_the_lot_follows_the_seed_and_can_fall_on_any_seat():
    assert start(4, seed="s")[1][1] == start(4, seed="s")[1][1]
    dealers = {start(4, seed=f"s{i}")[1][1].seat for i in range(60)}  # type: ignore[attr-defined]
    assert dealers == {0, 1, 2, 3}


def test_an_operator_may_fix_the_first_dealer():
    _, events = start(2, dealer=1)
    assert events[1] == DealerChosen(1, "operator")


def test_a_dealer_that_is_not_a_seat_is_refused():
    with pytest.raises(BadSetup) as refused:
        start(2, dealer=2)
    assert refused.value.code == "bad_dealer"


def test_the_shuffle_is_seeded_and_committed_before_play():
    _, events = start(2, dealer=0, seed="fair")
    started = events[2]
    assert isinstance(started, DealStarted) and not started.explicit
    seed = deal_seed("fair", 1)
    assert started.deck == shuffled(seed, deck(36))
    assert started.commitment == commitment(seed, started.deck)
    expected = hashlib.sha256(f"{seed}|{' '.join(started.deck)}".encode()).hexdigest()
    assert started.commitment == expected
    assert start(2, dealer=0, seed="fair")[1] == events
    assert start(2, dealer=0, seed="other")[1][2] != started


def test_the_shuffle_is_a_permutation_of_the_pack():
    for size in (32, 36, 52):
        order = shuffled("x", deck(size))
        assert sorted(order) == sorted(deck(size)) and order != deck(size)


def test_the_game_started_event_records_rules_and_seed():
    _, events = start(2, dealer=0, seed="abc", stake=2)
    assert events[0] == GameStarted(seats=("seat0", "seat1"), rules=Rules(stake=2), seed="abc")


@pytest.mark.parametrize(("size", "stock"), [(36, 30), (32, 26), (52, 46)])
def test_every_pack_size_deals_three_each_and_stocks_the_rest(size, stock):
    deal = current(start(2, dealer=0, deck=size)[0])
    assert [len(h) for h in deal.hands] == [3, 3]
    assert len(deal.stock) == stock
    assert sorted(deal.deck) == sorted(deck(size))


def test_six_seats_deal_eighteen_cards():
    deal = current(start(6, dealer=0)[0])
    assert [len(h) for h in deal.hands] == [3] * 6 and len(deal.stock) == 18


@pytest.mark.parametrize(
    "order",
    [
        ORDER_36[:-1],  # a card short
        (*ORDER_36[:-1], "9C"),  # a card twice
        (*ORDER_36[:-1], "XX"),  # not a card
        (*ORDER_36, "2S"),  # a card of another pack
    ],
)
def test_an_explicit_deck_must_be_the_full_pack(order):
    with pytest.raises(BadSetup) as refused:
        start(2, dealer=0, order=order)
    assert refused.value.code == "bad_deck"


def test_an_explicit_deck_must_match_the_pack_size_option():
    with pytest.raises(BadSetup, match="32-card"):
        start(2, dealer=0, order=ORDER_36, deck=32)


def test_a_game_starts_once():
    given, _ = start(2)
    with pytest.raises(RuleViolation) as refused:
        decide(given, StartGame(seats=("a", "b"), seed="again"), None)
    assert refused.value.code == "already_started"


def test_nothing_is_played_before_the_start():
    with pytest.raises(RuleViolation) as refused:
        decide(NEW_GAME, Lead(("AS",)), 0)
    assert refused.value.code == "not_started"


def test_a_seat_that_does_not_play_here_is_refused():
    given, _ = start(2, dealer=1)
    for actor in (2, -1, None):
        with pytest.raises(RuleViolation) as refused:
            decide(given, Lead(("AS",)), actor)
        assert refused.value.code == "not_a_seat"
