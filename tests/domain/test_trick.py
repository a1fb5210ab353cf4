"""docs/rules.md §3: leads, responses, which set beats which, and who takes the trick."""

from domain.commands import Lead
from domain.events import CardsLed, CardsResponded, TrickTaken
from tests.domain.given import (
    act,
    current,
    lead,
    play,
    play_out,
    refused,
    respond,
    start,
    table,
    trick,
)

# Seat 0 leads (seat 1 dealt); hearts are trumps unless a test says otherwise.
HANDS = ["AS 6S QD", "7S 6H 8D"]


def test_a_higher_card_of_the_suit_led_takes_the_trick():
    given = act(table(["KS 6S QD", "10S 6H 8D"], trump="9H"), 0, lead("KS"))[0]
    _, events = act(given, 1, respond("10S"))
    assert events == [CardsResponded(seat=1, cards=("10S",), count=1, beat=True), TrickTaken(1)]


def test_a_trump_takes_an_ace():
    given = act(table(HANDS, trump="9H"), 0, lead("AS"))[0]
    _, events = act(given, 1, respond("6H"))
    assert events[-1] == TrickTaken(1)


def test_another_plain_suit_leaves_the_trick_to_the_leader():
    given = act(table(["6S 7S QD", "AD 6H 8D"], trump="9H"), 0, lead("6S"))[0]
    _, events = act(given, 1, respond("AD"))
    assert events == [CardsResponded(seat=1, cards=("AD",), count=1, beat=False), TrickTaken(0)]


def test_a_lower_card_of_the_suit_leaves_the_trick_to_the_leader():
    given = act(table(HANDS, trump="9H"), 0, lead("QD"))[0]
    assert act(given, 1, respond("8D"))[1][-1] == TrickTaken(0)


def test_a_two_card_lead_with_one_card_covered_goes_to_the_leader():
    given = act(table(HANDS, trump="9H"), 0, lead("AS 6S"))[0]
    _, events = act(given, 1, respond("7S 8D"))
    assert events[0].beat is False and events[-1] == TrickTaken(0)


def test_the_server_searches_the_pairing_that_covers_the_lead():
    # AS 6S answered by 7S 6H, hearts trump: 6H covers AS and 7S covers 6S.
    given = act(table(HANDS, trump="9H"), 0, lead("AS 6S"))[0]
    _, events = act(given, 1, respond("7S 6H"))
    assert events[0].beat is True and events[-1] == TrickTaken(1)


def test_three_of_one_suit_may_be_led_and_must_be_covered_card_by_card():
    given = act(table(["AS 10S 6S", "7S 6H 7H"], trump="9H"), 0, lead("AS 10S 6S"))[0]
    assert current(given).trick.led == ("AS", "10S", "6S")  # type: ignore[union-attr]
    assert act(given, 1, respond("7S 6H 7H"))[1][-1] == TrickTaken(1)


def test_there_is_no_duty_to_follow_suit_or_to_beat():
    given = act(table(["AS 10S 6S", "7S 6H 8D"], trump="9H"), 0, lead("6S"))[0]
    assert act(given, 1, respond("8D"))[1][-1] == TrickTaken(0)


def test_the_cards_of_the_trick_go_face_down_to_the_takers_pile_and_the_taker_leads():
    given = table(HANDS, trump="9H", short_stock="set_aside")
    after = trick(given, "AS 6S", "7S 6H")
    deal = current(after)
    assert deal.piles == ((), ("AS", "6S", "7S", "6H"))
    assert deal.tricks == (0, 1)
    assert deal.trick is None
    assert (deal.phase, deal.turn) == ("lead", 1)


# -- three seats: each response against the currently winning set --------------------------


def test_the_second_responder_over_beats_the_first_and_takes_the_trick():
    given = play(table(["QS 7D 7C", "KS 8D 8C", "AS 9D 9C"], trump="6H"), (0, lead("QS")))
    given, events = act(given, 1, respond("KS"))
    assert events == [CardsResponded(seat=1, cards=("KS",), count=1, beat=True)]
    _, events = act(given, 2, respond("AS"))
    assert events == [CardsResponded(seat=2, cards=("AS",), count=1, beat=True), TrickTaken(2)]


def test_a_second_response_that_beats_the_lead_but_not_the_first_response_loses():
    given = play(table(["QS 7D 7C", "AS 8D 8C", "KS 9D 9C"], trump="6H"), (0, lead("QS")))
    given = act(given, 1, respond("AS"))[0]
    _, events = act(given, 2, respond("KS"))
    assert events == [CardsResponded(seat=2, cards=("KS",), count=1, beat=False), TrickTaken(1)]


def test_with_three_seats_nobody_beating_leaves_the_trick_to_the_leader():
    given = play(table(["AS 7D 7C", "KS 8D 8C", "QS 9D 9C"], trump="6H"), (0, lead("AS")))
    given = act(given, 1, respond("KS"))[0]
    assert act(given, 2, respond("QS"))[1][-1] == TrickTaken(0)


def test_a_response_that_fails_is_still_compared_with_the_lead_by_the_next_seat():
    given = play(
        table(["KS 7D 7C", "QS 8D 8C", "AS 9D 9C", "JS 6D 6C"], trump="6H"), (0, lead("KS"))
    )
    given = play(given, (1, respond("QS")), (2, respond("AS")))
    assert act(given, 3, respond("JS"))[1][-1] == TrickTaken(2)


def test_responses_go_clockwise_from_the_leader():
    given = table(["QS 7D 7C", "KS 8D 8C", "AS 9D 9C"], trump="6H", dealer=0)  # seat 1 leads
    given = act(given, 1, lead("KS"))[0]
    assert current(given).turn == 2
    assert refused(given, 0, respond("QS")) == "not_your_turn"
    given = act(given, 2, respond("AS"))[0]
    assert current(given).turn == 0


# -- what a lead or a response may be -------------------------------------------------------


def test_a_lead_of_four_cards_or_none_is_refused():
    given = table(["AS 10S KS QS", "7S 6H 8D 9D"], trump="9H", hand_size=(4, 4))
    assert refused(given, 0, lead("AS 10S KS QS")) == "wrong_card_count"
    assert refused(given, 0, lead("")) == "wrong_card_count"


def test_a_lead_of_mixed_suits_is_refused():
    assert refused(table(HANDS, trump="9H"), 0, lead("AS QD")) == "mixed_suits"


def test_a_card_named_twice_is_refused():
    assert refused(table(HANDS, trump="9H"), 0, lead("AS AS")) == "duplicate_cards"


def test_a_card_not_in_hand_is_refused():
    assert refused(table(HANDS, trump="9H"), 0, lead("KS")) == "card_not_in_hand"


def test_leading_out_of_turn_is_refused():
    assert refused(table(HANDS, trump="9H"), 1, lead("7S")) == "not_your_turn"


def test_responding_when_nobody_has_led_is_refused():
    assert refused(table(HANDS, trump="9H"), 1, respond("7S")) == "not_your_turn"


def test_leading_again_while_the_trick_waits_for_a_response_is_refused():
    given = act(table(HANDS, trump="9H"), 0, lead("AS"))[0]
    assert refused(given, 0, lead("6S")) == "not_your_turn"


def test_a_response_must_have_as_many_cards_as_were_led():
    given = act(table(HANDS, trump="9H"), 0, lead("AS 6S"))[0]
    assert refused(given, 1, respond("7S")) == "wrong_card_count"
    assert refused(given, 1, respond("7S 6H 8D")) == "wrong_card_count"


def test_a_response_from_cards_not_in_hand_or_twice_the_same_is_refused():
    given = act(table(HANDS, trump="9H"), 0, lead("AS 6S"))[0]
    assert refused(given, 1, respond("7S AD")) == "card_not_in_hand"
    assert refused(given, 1, respond("7S 7S")) == "duplicate_cards"


def test_the_lead_event_names_the_leader_and_the_cards():
    _, events = act(table(HANDS, trump="9H"), 0, lead("AS 6S"))
    assert events == [CardsLed(0, ("AS", "6S"))]


def test_nobody_leads_more_cards_than_every_seat_can_answer():
    # 32 cards, three seats: 23 in the stock, seven one-card tricks leave two, so after the
    # eighth only the taker and the next seat get a card back (draw_in_order).
    given = play_out(start(3, dealer=2, deck=32)[0], stop=lambda d: d.tricks_played == 8)
    deal = current(given)
    taker = deal.turn
    assert not deal.stock
    assert [len(h) for h in deal.hands] == [
        3 if s in (taker, (taker + 1) % 3) else 2 for s in range(3)
    ]
    assert refused(given, taker, Lead(deal.hands[taker][:3])) == "wrong_card_count"
