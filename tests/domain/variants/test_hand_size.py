"""docs/rules.md §8 «на 3-х закрытых против 4-х открытых» (`hand_size: [4, 3]`): one entry per
seat; the seat with the extra card plays open."""

import pytest

from domain.commands import Draw, Lead
from domain.errors import BadOption
from domain.events import CardDealt, DealLost, PenaltyApplied
from domain.legal import legal_commands
from domain.rules import Rules, check
from tests.domain.given import (
    act,
    current,
    draw_all,
    lead,
    play_out,
    refused,
    respond,
    start,
    table,
    trick,
)

FOUR_OPEN = {"hand_size": (4, 3), "open_seats": (0,)}


def four_open_table(**options):
    # seat 0 (open) holds four, seat 1 three; hearts are trumps
    return table(
        ["AS KS 7S 8D", "10S 6C 8C"], trump="9H", stock="QC JC 9C 7C 6D", **FOUR_OPEN, **options
    )


def test_each_seat_is_dealt_its_own_hand_size_one_card_at_a_time():
    _, events = start(2, dealer=1, order=None, **FOUR_OPEN)
    assert [e.seat for e in events if isinstance(e, CardDealt)] == [0, 1, 0, 1, 0, 1, 0]
    deal = current(four_open_table())
    assert [len(h) for h in deal.hands] == [4, 3]
    assert len(deal.stock) == 36 - 7


def test_each_seat_draws_back_up_to_its_own_size():
    given = act(four_open_table(), 0, lead("AS"))[0]
    given = act(given, 1, respond("6C"))[0]  # seat 0 takes; 3 cards each now
    assert current(given).draws == (0, 1)
    given = draw_all(given)
    assert [len(h) for h in current(given).hands] == [4, 3]


def test_a_lead_of_three_cards_leaves_the_four_card_seat_two_draws():
    given = act(four_open_table(), 0, lead("AS KS 7S"))[0]
    given = act(given, 1, respond("10S 6C 8C"))[0]  # not beaten: seat 0 takes
    assert current(given).draws == (0, 1, 0, 1, 0, 1)  # seat 0 needs 3 to 4, seat 1 3 to 3
    given = draw_all(given)
    assert [len(h) for h in current(given).hands] == [4, 3]


def test_drawing_with_a_full_hand_is_judged_by_the_seat_s_own_size():
    given = trick(four_open_table(match_target=3), "AS", "6C")
    # both full again: seat 1 with three cards holds its full hand
    _, events = act(given, 1, Draw())
    assert events[:2] == [
        PenaltyApplied(seat=1, rule="extra_card", due=None, cards=("9C",), count=1, asked=1),
        DealLost(1, "extra_card"),
    ]


def test_three_cards_are_not_a_full_hand_for_the_four_card_seat():
    given = act(act(four_open_table(), 0, lead("AS"))[0], 1, respond("6C"))[0]
    given = act(given, 0, Draw())[0]  # seat 0 back to 4; seat 1 is due
    assert current(given).draws == (1,)
    _, events = act(given, 0, Draw())  # a fifth card: extra for seat 0
    assert isinstance(events[0], PenaltyApplied) and events[0].rule == "extra_card"
    given = act(act(four_open_table(), 0, lead("AS"))[0], 1, respond("6C"))[0]
    given = act(given, 0, Draw())[0]
    _, events = act(given, 1, Draw())
    assert [type(e).__name__ for e in events] == ["CardDrawn"]


def test_a_lead_is_still_three_cards_at_most_with_four_in_hand():
    given = table(["AS KS 7S 8S", "10S 6C 8C"], trump="9H", **FOUR_OPEN)
    assert refused(given, 0, lead("AS KS 7S 8S")) == "wrong_card_count"
    leads = [m for m in legal_commands(given, 0) if isinstance(m, Lead)]
    assert max(len(m.cards) for m in leads) == 3
    assert Lead(("AS", "KS", "7S")) in leads


def test_a_lead_is_no_larger_than_the_smallest_hand_can_answer():
    given = play_out(four_open_table(), stop=lambda d: not d.stock and len(d.hands[1]) == 2)
    deal = current(given)
    assert len(deal.hands[1]) == 2 < len(deal.hands[0])
    leads = [m for m in legal_commands(given, deal.turn) if isinstance(m, Lead)]
    assert leads and max(len(m.cards) for m in leads) <= 2


@pytest.mark.parametrize(
    ("options", "seats"),
    [
        ({"hand_size": (4, 3, 3)}, 2),  # one entry per seat
        ({"hand_size": (4,)}, 2),
        ({"hand_size": (5, 3), "open_seats": (0,)}, 2),
        ({"hand_size": (2, 2)}, 2),
    ],
)
def test_a_bad_hand_size_is_refused_naming_the_option(options, seats):
    with pytest.raises(BadOption) as refusal:
        check(Rules(**options), seats)
    assert refusal.value.option == "hand_size"


@pytest.mark.parametrize(
    ("options", "seats", "opened"),
    [
        ({"hand_size": (4, 3)}, 2, (0,)),  # the whole variant, as RULES give it
        ({"hand_size": (3, 4)}, 2, (1,)),
        ({"hand_size": (4, 3), "open_seats": (0,)}, 2, (0,)),
        ({"hand_size": (4, 3), "open_seats": (1,)}, 2, (1, 0)),  # both open, as asked
        ({"hand_size": (3, 4, 4)}, 3, (1, 2)),
        ({"hand_size": (3, 4, 4), "open_seats": (2,)}, 3, (2, 1)),
        ({"hand_size": (4, 4)}, 2, ()),  # equal hands need no open seat
        ({"hand_size": (4, 3), "compensation": 5}, 2, (0,)),  # paid to the open seat
    ],
)
def test_a_seat_dealt_the_extra_card_plays_open_named_or_not(options, seats, opened):
    assert check(Rules(**options), seats).open_seats == opened


def test_a_seat_opened_by_its_hand_is_open_in_play():
    named = four_open_table()
    unnamed = table(
        ["AS KS 7S 8D", "10S 6C 8C"], trump="9H", stock="QC JC 9C 7C 6D", hand_size=(4, 3)
    )
    assert current(unnamed).hands == current(named).hands
    assert unnamed.rules == named.rules
