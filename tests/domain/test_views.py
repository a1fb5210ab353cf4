"""docs/rules.md §3 (face-down tricks) and docs/rules.md §9: what each viewer may see."""

import msgspec

from domain.commands import Declare, Draw
from domain.events import (
    CardDealt,
    CardDrawn,
    CardsLed,
    DealLost,
    DealStarted,
    GameFinished,
    GameStarted,
    PenaltyApplied,
    TrumpTurned,
)
from domain.evolve import fold
from domain.rules import Rules
from domain.state import NEW_GAME
from domain.views import ARBITER, SPECTATOR, redact, redact_all, view
from tests.domain.given import (
    HANDS,
    act,
    current,
    given_table,
    lead,
    play,
    play_out,
    respond,
    start,
    table,
    table_and_events,
    trick,
)


def test_a_seat_sees_its_own_hand_and_only_the_count_of_the_others():
    seen = view(given_table(), 0)
    assert (seen.viewer, seen.seat, seen.hand) == ("seat", 0, ("AS", "6S", "QD"))
    assert [(s.cards, s.hand) for s in seen.seats] == [(3, ("AS", "6S", "QD")), (3, None)]
    assert seen.stock is None and seen.seed is None


def test_everyone_sees_the_turned_trump_the_stock_count_and_whose_turn_it_is():
    for viewer in (0, 1, SPECTATOR, ARBITER):
        seen = view(given_table(), viewer)
        assert (seen.trump, seen.trump_suit, seen.stock_count) == ("9H", "H", 30)
        assert (seen.phase, seen.turn, seen.status) == ("lead", 0, "in_progress")
    assert view(given_table(), 0).due == "lead"
    assert view(given_table(), 1).due is None


def test_a_spectator_sees_no_hand():
    seen = view(given_table(), SPECTATOR)
    assert seen.viewer == "spectator" and seen.hand is None
    assert all(s.hand is None and s.pile is None and s.points is None for s in seen.seats)


def test_the_arbiter_sees_everything():
    given = trick(given_table(), "AS", "6H")
    seen = view(given, ARBITER)
    deal = current(given)
    assert [s.hand for s in seen.seats] == list(deal.hands)
    assert seen.stock == deal.stock and seen.seed == given.seed
    assert seen.seats[1].pile == ("AS", "6H") and seen.seats[1].points == 11


def test_the_cards_on_the_table_are_seen_by_all():
    given = play(given_table(), (0, lead("AS 6S")))
    for viewer in (0, 1, SPECTATOR):
        assert view(given, viewer).trick.led == ("AS", "6S")  # type: ignore[union-attr]
    given = act(given, 1, respond("7S 8D"))[0]
    assert view(given, SPECTATOR).trick is None  # taken: face down in the pile


def test_tricks_are_face_down_a_seat_sees_how_many_not_their_points():
    given = trick(given_table(), "AS", "6H")
    for viewer in (0, 1, SPECTATOR):
        seen = view(given, viewer)
        assert [s.tricks for s in seen.seats] == [0, 1]
        assert all(s.points is None and s.pile is None for s in seen.seats)


def test_show_own_points_shows_a_seat_its_own_points_only():
    given = trick(given_table(show_own_points=True), "AS", "6H")
    assert [s.points for s in view(given, 1).seats] == [None, 11]
    assert [s.points for s in view(given, 0).seats] == [0, None]
    assert [s.points for s in view(given, SPECTATOR).seats] == [None, None]


def test_once_the_trump_card_is_drawn_only_its_suit_stays_on_show():
    given = play_out(start(2, dealer=1)[0], stop=lambda d: not d.stock)
    seen = view(given, SPECTATOR)
    assert seen.trump is None and seen.trump_suit == current(given).trump


def test_a_finished_game_shows_the_result_and_reveals_the_seed():
    given = act(table(["6H 7H 8H", "AS 10S KS"], trump="9H"), 0, Declare("bura"))[0]
    seen = view(given, 1)
    assert (seen.status, seen.phase, seen.turn) == ("finished", "finished", None)
    assert seen.result is not None and seen.result.winners == (0,)
    assert seen.result.reason == "bura" and seen.seed == given.seed
    assert seen.deals[0].reason == "bura" and seen.score == (1, -1)


def test_a_view_encodes_to_json():
    assert b'"hand":["AS","6S","QD"]' in msgspec.json.encode(view(given_table(), 0))


# -- redacted events ---------------------------------------------------------------------------


def started_events():
    return start(2, dealer=1, seed="secret")[1]


def test_a_seat_sees_its_own_dealt_cards_and_not_the_others():
    events = redact_all(started_events(), 0, Rules())
    dealt = [e for e in events if isinstance(e, CardDealt)]
    assert all((e.card is None) == (e.seat != 0) for e in dealt)
    assert len(dealt) == 6


def test_a_spectator_sees_no_dealt_card_the_arbiter_every_one():
    events = started_events()
    assert all(
        e.card is None for e in redact_all(events, SPECTATOR, Rules()) if isinstance(e, CardDealt)
    )
    assert redact_all(events, ARBITER, Rules()) == events


def test_the_deck_order_and_the_seed_are_hidden_the_commitment_and_trump_are_not():
    events = redact_all(started_events(), 1, Rules())
    started = next(e for e in events if isinstance(e, GameStarted))
    dealt = next(e for e in events if isinstance(e, DealStarted))
    assert started.seed is None and dealt.deck is None and len(dealt.commitment) == 64
    assert any(isinstance(e, TrumpTurned) for e in events)


def test_a_drawn_card_is_hidden_from_the_others_unless_it_is_the_face_up_trump():
    hidden = CardDrawn(1, "KC")
    assert redact(hidden, 0, Rules()) == CardDrawn(1, None)
    assert redact(hidden, 1, Rules()) == hidden
    trump = CardDrawn(1, "9H", face_up=True)
    assert redact(trump, 0, Rules()) == trump
    assert redact(trump, SPECTATOR, Rules()) == trump


def test_the_cards_taken_by_a_faulty_draw_are_hidden_from_the_others():
    penalty = act(given_table(match_target=3), 1, Draw())[1][0]
    assert isinstance(penalty, PenaltyApplied) and penalty.cards == ("KC",)
    assert redact(penalty, 0, Rules()) == PenaltyApplied(
        seat=1, rule="extra_card", due=None, cards=None, count=1, asked=1
    )
    assert redact(penalty, 1, Rules()) == penalty


def test_played_cards_and_the_end_of_the_game_are_public():
    led = CardsLed(0, ("AS",))
    assert redact(led, 1, Rules()) == led
    finished = GameFinished(winners=(0,), reason="bura", seed="secret")
    assert redact(finished, SPECTATOR, Rules()) == finished


def test_a_deal_lost_while_seats_were_due_to_draw_shows_nobody_due_to_draw():
    """A penalty in the draw phase ends the deal with its queue of draws still in the
    state: the view at that version (phase "over") listed seats due to draw, under a line
    that waits for nobody."""
    state, events = table_and_events(HANDS, trump="9H", stock="KC QC JC 10C")
    for seat, command in ((0, lead("AS")), (1, respond("7S"))):
        state, new = act(state, seat, command)
        events = [*events, *new]
    assert view(state, ARBITER).draws == (0, 1)
    state, new = act(state, 1, Draw())  # bob draws before ann, who took the trick
    events = [*events, *new]
    lost = next(v for v, e in enumerate(events, start=1) if isinstance(e, DealLost))
    over = view(fold(NEW_GAME, events[:lost]), ARBITER)
    assert over.phase == "over" and over.draws == ()
