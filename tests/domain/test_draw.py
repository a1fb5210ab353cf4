"""docs/rules.md §4: drawing back up after a trick, one card per draw, in turn."""

from typing import Any

import pytest

from domain.audit import audit
from domain.commands import Draw
from domain.events import CardDrawn, Event, PenaltyApplied
from domain.rules import Rules
from domain.state import Game
from domain.table import draw_order
from domain.views import ARBITER
from tests.domain import given
from tests.domain.given import (
    act,
    current,
    draw_all,
    lead,
    play,
    play_out,
    refused,
    respond,
    start,
    table,
)

HANDS = ["AS 6S QD", "7S 6H 8D"]  # seat 0 leads; hearts are trumps


def after_trick(*plays: tuple[int, str], **options):
    """Seat 0 led, seat 1 answered; the stock starts KC QC JC 10C AC 9C."""
    given = table(HANDS, trump="9H", stock="KC QC JC 10C AC 9C", **options)
    (leader, led), (responder, answer) = plays
    return play(given, (leader, lead(led)), (responder, respond(answer)))


def test_after_a_trick_the_taker_draws_first_then_the_others_in_turn():
    given = after_trick((0, "AS"), (1, "6H"))  # seat 1 takes
    deal = current(given)
    assert (deal.phase, deal.turn, deal.draws) == ("draw", 1, (1, 0))


def test_one_card_per_draw_round_after_round_from_the_top_of_the_stock():
    given = after_trick((0, "AS 6S"), (1, "7S 6H"))  # seat 1 takes two cards' worth
    assert current(given).draws == (1, 0, 1, 0)
    drawn = []
    for seat in (1, 0, 1, 0):
        given, events = act(given, seat, Draw())
        drawn += events
    assert drawn == [
        CardDrawn(1, "KC"),
        CardDrawn(0, "QC"),
        CardDrawn(1, "JC"),
        CardDrawn(0, "10C"),
    ]
    deal = current(given)
    assert deal.hands == (("QD", "QC", "10C"), ("8D", "KC", "JC"))
    assert (deal.phase, deal.turn, deal.draws) == ("lead", 1, ())


def test_when_the_leader_takes_the_trick_the_leader_draws_first():
    given = after_trick((0, "QD"), (1, "8D"))
    assert current(given).draws == (0, 1)


def test_the_next_trick_starts_only_when_every_due_draw_is_done():
    given = act(after_trick((0, "AS"), (1, "6H")), 1, Draw())[0]
    assert refused(given, 1, lead("7S")) == "not_your_turn"
    assert refused(given, 0, lead("6S")) == "not_your_turn"
    given = act(given, 0, Draw())[0]
    assert act(given, 1, lead("7S"))[0] is not None


def test_three_seats_draw_from_the_taker_clockwise():
    given = table(["QS 7D 7C", "KS 8D 8C", "AS 9D 9C"], trump="6H")
    given = play(given, (0, lead("QS")), (1, respond("KS")), (2, respond("9D")))
    assert current(given).draws == (1, 2, 0)


def test_a_full_seat_is_skipped_and_the_others_draw_round_after_round():
    # Hands only differ once the stock has run short, so the rule is shown on the order
    # itself: seat 2 is full, seat 0 lacks two cards, seat 1 lacks one; seat 1 took.
    deal = current(table(["QS 7D 7C", "KS 8D 8C", "AS 9D 9C"], trump="6H"))
    hands = (("7D",), ("8D", "8C"), ("AS", "9D", "9C"))
    assert draw_order(Rules(), deal, hands, taker=1) == (1, 0, 0)
    assert draw_order(Rules(), deal, hands, taker=2) == (0, 1, 0)


def test_the_trump_card_is_drawn_last_and_face_up():
    given = play_out(start(2, dealer=1)[0], stop=lambda d: len(d.stock) == 2)
    trump_card = current(given).trump_card
    deal = current(given)
    given = play(given, (deal.turn, lead(deal.hands[deal.turn][0])))
    deal = current(given)
    given = act(given, deal.turn, respond(deal.hands[deal.turn][0]))[0]
    deal = current(given)
    first, second = deal.draws
    assert deal.stock[-1] == trump_card
    given, events = act(given, first, Draw())
    assert events[0].face_up is False  # type: ignore[attr-defined]
    given, events = act(given, second, Draw())
    assert events == [CardDrawn(second, trump_card, face_up=True)]
    assert trump_card in current(given).hands[second]
    assert not current(given).stock


def test_drawing_from_an_empty_stock_is_refused_and_takes_nothing():
    given = play_out(start(2, dealer=1)[0], stop=lambda d: not d.stock)
    deal = current(given)
    for seat in (0, 1):
        for count in (1, 2):
            assert refused(given, seat, Draw(count)) == "stock_empty"
    assert current(given) == deal


def test_a_draw_of_no_cards_is_refused():
    given = after_trick((0, "AS"), (1, "6H"))
    assert refused(given, 1, Draw(0)) == "wrong_card_count"


# -- when the stock cannot refill every seat ------------------------------------------------


def five_seats_one_card_left(**options):
    """36 cards, five seats: 21 in the stock; four one-card tricks leave one."""
    given = start(5, dealer=4, **options)[0]
    return play_out(given, stop=lambda d: len(d.stock) == 1)


def one_plain_trick(given):
    deal = current(given)
    given = act(given, deal.turn, lead(deal.hands[deal.turn][0]))[0]
    while current(given).phase == "respond":
        deal = current(given)
        given = act(given, deal.turn, respond(deal.hands[deal.turn][0]))[0]
    return given


def test_draw_in_order_gives_the_last_cards_to_the_first_seats_due():
    given = one_plain_trick(five_seats_one_card_left())
    deal = current(given)
    taker = deal.leader
    assert deal.draws == (taker,)
    given = draw_all(given)
    sizes = [len(h) for h in current(given).hands]
    assert sizes == [3 if s == taker else 2 for s in range(5)]
    assert current(given).phase == "lead"


def test_set_aside_leaves_the_short_stock_undrawn():
    given = one_plain_trick(five_seats_one_card_left(short_stock="set_aside"))
    deal = current(given)
    assert deal.draws == ()
    assert (deal.phase, deal.turn) == ("lead", deal.leader)
    assert len(deal.stock) == 1 and deal.stock[0] == deal.trump_card
    assert [len(h) for h in deal.hands] == [2] * 5


def test_set_aside_still_draws_while_the_stock_refills_every_seat():
    given = after_trick((0, "AS"), (1, "6H"), short_stock="set_aside")
    assert current(given).draws == (1, 0)


def test_a_set_aside_stock_is_not_drawn_even_by_the_seat_that_took_the_trick():
    given = one_plain_trick(five_seats_one_card_left(short_stock="set_aside", penalties="reject"))
    taker = current(given).leader
    assert refused(given, taker, Draw()) == "out_of_turn_draw"


def test_a_double_draw_of_the_last_card_records_what_it_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two cards asked with one left: one is taken (`count` 1), and the record keeps the
    two it asked for (`asked`), the evidence of the double draw, for the audit too."""
    recorded: list[Event] = []

    def recording(*args: Any, **kwargs: Any) -> tuple[Game, list[Event]]:
        state, events = acting(*args, **kwargs)
        recorded.extend(events)
        return state, events

    acting = given.act
    monkeypatch.setattr(given, "act", recording)  # play_out's moves
    monkeypatch.setitem(globals(), "act", recording)  # one_plain_trick's, and the draw
    state, started = start(5, dealer=4)
    recorded.extend(started)
    before = one_plain_trick(play_out(state, stop=lambda d: len(d.stock) == 1))
    taker = current(before).leader
    events = act(before, taker, Draw(2))[1]
    penalty = events[0]
    assert isinstance(penalty, PenaltyApplied)
    assert (penalty.rule, penalty.count, penalty.asked) == ("double_draw", 1, 2)
    assert penalty.cards == current(before).stock
    (finding,) = audit(recorded, ARBITER)
    assert (finding.rule, finding.cards, finding.asked) == ("double_draw", penalty.cards, 2)
