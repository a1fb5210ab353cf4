"""docs/rules.md §8 «на открытых» (`open_seats`, `compensation`): listed seats play with their
hand shown to all, and receive points toward 31 for it; «открытые на открытые»: both open."""

import pytest

from domain.commands import Declare
from domain.errors import BadOption
from domain.events import CardDealt, CardDrawn, CompensationGiven, DealStarted, Declared
from domain.rules import Rules, check
from domain.views import SPECTATOR, redact_all, view
from tests.domain.given import (
    act,
    current,
    lead,
    record,
    respond,
    table,
    table_and_events,
    trick,
)

HANDS = ["AH 10D 7C", "10H 6C 8C"]  # seat 0 leads; spades are trumps


def test_an_open_seat_s_hand_is_seen_by_every_viewer():
    given = table(HANDS, trump="9S", open_seats=(0,))
    for viewer in (0, 1, SPECTATOR):
        seats = view(given, viewer).seats
        assert seats[0].open and seats[0].hand == ("AH", "10D", "7C")
    assert view(given, 0).seats[1].hand is None  # the closed seat stays closed
    assert view(given, SPECTATOR).seats[1].hand is None


def test_an_open_seat_s_dealt_and_drawn_cards_are_public_in_the_events():
    given, events = table_and_events(HANDS, trump="9S", stock="6D 7D", open_seats=(0,))
    record(given, events, (0, lead("AH")), (1, respond("6C")))  # 0 draws 6D, then 1 draws 7D
    for viewer in (1, SPECTATOR):
        seen = redact_all(events, viewer, given.rules)
        dealt = [e for e in seen if isinstance(e, CardDealt)]
        assert [e.card for e in dealt if e.seat == 0] == ["AH", "10D", "7C"]
        assert [e.card for e in dealt if e.seat == 1] == (
            ["10H", "6C", "8C"] if viewer == 1 else [None] * 3
        )
        assert [e for e in seen if isinstance(e, CardDrawn)] == [
            CardDrawn(0, "6D"),
            CardDrawn(1, "7D" if viewer == 1 else None),
        ]
        assert not any(isinstance(e, DealStarted) and e.deck for e in seen)


def test_the_other_side_gives_the_open_seat_its_compensation_every_deal():
    options = {"open_seats": (0,), "compensation": 10, "match_target": 2}
    given, events = table_and_events(HANDS, trump="9S", **options)
    given_to = [e for e in events if isinstance(e, CompensationGiven)]
    assert given_to == [CompensationGiven(0, 10, "open_seat")]
    assert current(given).bonus == (10, 0)  # nothing is taken from the closed seat's tricks
    given = record(given, events, (0, Declare("thirty_one")))  # 10 points: false, next deal
    assert current(given).number == 2 and current(given).bonus == (10, 0)
    assert len([e for e in events if isinstance(e, CompensationGiven)]) == 2


def test_a_declaration_with_tricks_and_compensation_reaching_31_is_true():
    given = table(
        ["AH 10D 7C", "KH 6C 8C"], trump="9S", stock="6D 7D 8D 9D", open_seats=(0,), compensation=10
    )
    given = trick(given, "AH", "6C")  # seat 0 takes 11: 21 with the compensation
    given = trick(given, "10D", "8C")  # and 10 more: 31
    _, events = act(given, 0, Declare("thirty_one"))
    assert events[0] == Declared(seat=0, claim="thirty_one", value=31, needed=31, true=True)


def test_without_the_compensation_the_same_tricks_are_a_false_declaration():
    given = table(["AH 10D 7C", "KH 6C 8C"], trump="9S", stock="6D 7D 8D 9D", open_seats=(0,))
    given = trick(trick(given, "AH", "6C"), "10D", "8C")
    _, events = act(given, 0, Declare("thirty_one"))
    assert events[0] == Declared(seat=0, claim="thirty_one", value=21, needed=31, true=False)


def test_both_seats_open_every_hand_is_public():
    given = table(HANDS, trump="9S", open_seats=(0, 1))
    for viewer in (0, 1, SPECTATOR):
        assert [s.hand for s in view(given, viewer).seats] == [
            ("AH", "10D", "7C"),
            ("10H", "6C", "8C"),
        ]
    assert current(given).bonus == (0, 0)


@pytest.mark.parametrize(
    ("options", "seats", "option"),
    [
        ({"compensation": 5}, 2, "compensation"),  # nobody open to receive it
        ({"open_seats": (0, 1), "compensation": 5}, 2, "compensation"),  # nobody closed to pay
        ({"open_seats": (2,)}, 2, "open_seats"),
        ({"open_seats": (0, 0)}, 2, "open_seats"),
        ({"open_seats": (0,), "compensation": 31}, 2, "compensation"),
        ({"open_seats": (0,), "compensation": -1}, 2, "compensation"),
        # a team of two open seats would start every deal with 40 of its 31
        (
            {"deck": 52, "teams": ((0, 2), (1, 3)), "open_seats": (0, 2), "compensation": 20},
            4,
            "compensation",
        ),
    ],
)
def test_bad_open_seat_options_are_refused_naming_the_option(options, seats, option):
    with pytest.raises(BadOption) as refusal:
        check(Rules(**options), seats)
    assert refusal.value.option == option
