"""docs/rules.md §8 «снос взакрытую» (`closed_discard: true`): an answer that does not beat is
played face down, and nobody else ever sees it; `false_declaration: "pay_pot"`."""

import random

import pytest

from domain.audit import audit
from domain.bots import greedy_bot
from domain.commands import Concede, Declare, Lead, Pass
from domain.errors import BadOption
from domain.events import (
    CardsResponded,
    DealLost,
    DealVoid,
    Declared,
    GameFinished,
    PotPaid,
    StakeSettled,
)
from domain.rules import Rules, check
from domain.table import claim_points, known_points
from domain.views import ARBITER, SPECTATOR, redact, review, view
from tests.domain.given import (
    SEED,
    act,
    current,
    lead,
    play,
    play_out,
    record,
    refused,
    respond,
    table,
    table_and_events,
    trick,
)

HANDS = ["AS AD 7C", "10D 10S 8C"]  # seat 0 leads; hearts are trumps
THIRTY_ONE = Declare("thirty_one")


def closed_table(**options):
    return table(HANDS, trump="9H", stock="QS JS 9S 8S", closed_discard=True, **options)


def test_an_answer_that_does_not_beat_is_played_face_down():
    _, events = act(act(closed_table(), 0, lead("AS"))[0], 1, respond("10D"))
    assert events[0] == CardsResponded(seat=1, cards=("10D",), count=1, beat=False, face_down=True)


def test_an_answer_that_beats_is_played_face_up():
    _, events = act(act(closed_table(), 0, lead("7C"))[0], 1, respond("8C"))
    assert events[0] == CardsResponded(seat=1, cards=("8C",), count=1, beat=True, face_down=False)


def test_without_the_variant_every_answer_is_face_up():
    given = table(HANDS, trump="9H")
    _, events = act(act(given, 0, lead("AS"))[0], 1, respond("10D"))
    assert events[0] == CardsResponded(seat=1, cards=("10D",), count=1, beat=False)


def test_a_face_down_answer_on_the_table_is_seen_by_its_player_and_the_arbiter_only():
    given = table(["AS KD 7C", "10D 6S 8C", "QC JC 9C"], trump="9H", closed_discard=True)
    given = play(given, (0, lead("AS")), (1, respond("10D")))
    for viewer in (0, 2, SPECTATOR):
        answer = view(given, viewer).trick.responses[0]  # type: ignore[union-attr]
        assert (answer.cards, answer.face_down, answer.count, answer.beat) == (None, True, 1, False)
    for viewer in (1, ARBITER):
        assert view(given, viewer).trick.responses[0].cards == ("10D",)  # type: ignore[union-attr]


def test_a_face_down_answer_is_hidden_in_the_events_of_every_other_viewer():
    given = act(closed_table(), 0, lead("AS"))[0]
    answer = act(given, 1, respond("10D"))[1][0]
    rules = given.rules
    hidden = CardsResponded(seat=1, cards=None, count=1, beat=False, face_down=True)
    assert redact(answer, 0, rules) == hidden
    assert redact(answer, SPECTATOR, rules) == hidden
    assert redact(answer, 1, rules) == answer
    assert redact(answer, ARBITER, rules) == answer


def test_the_taker_does_not_know_what_it_won():
    given = trick(closed_table(), "AS", "10D")
    deal = current(given)
    assert deal.piles[0] == ("AS", "10D")
    assert claim_points(given, deal, 0) == 21  # what the arbiter judges a 31 by
    assert known_points(given, deal, 0) == 11  # what seat 0 could see
    assert view(given, 0).seats[0].pile is None
    assert view(given, ARBITER).seats[0].pile == ("AS", "10D")


def test_show_own_points_would_tell_the_taker_and_is_refused():
    with pytest.raises(BadOption) as refusal:
        check(Rules(closed_discard=True, show_own_points=True), 2)
    assert refusal.value.option == "show_own_points"


def test_the_greedy_bot_does_not_count_face_down_cards_it_never_saw():
    given = trick(closed_table(), "AS", "10D")
    given = trick(given, "AD", "10S")  # seat 0 holds 42 points but saw only 22
    assert claim_points(given, current(given), 0) == 42
    assert isinstance(greedy_bot(given, 0, random.Random(1)), Lead)
    open_play = trick(
        trick(table(HANDS, trump="9H", stock="QS JS 9S 8S"), "AS", "10D"), "AD", "10S"
    )
    assert greedy_bot(open_play, 0, random.Random(1)) == THIRTY_ONE


def test_a_declaration_is_judged_on_the_whole_pile_face_down_cards_included():
    given = trick(trick(closed_table(), "AS", "10D"), "AD", "10S")
    _, events = act(given, 0, THIRTY_ONE)
    assert events[0] == Declared(seat=0, claim="thirty_one", value=42, needed=31, true=True)


def test_a_false_declaration_loses_the_deal_by_default():
    given = trick(closed_table(), "AS", "10D")
    _, events = act(given, 0, THIRTY_ONE)
    assert events[:2] == [
        Declared(seat=0, claim="thirty_one", value=21, needed=31, true=False),
        DealLost(0, "false_declaration"),
    ]


# -- the seed, replays and the audit: "nobody else ever sees those cards" ----------------------


def finished(**options):
    given = trick(closed_table(**options), "AS", "10D")
    return act(given, 0, Concede())


def test_the_seed_of_a_closed_discard_game_stays_with_the_arbiter():
    # the seed gives the deck order, and the order with the draws gives every face-down card
    given, events = finished()
    end = events[-1]
    assert isinstance(end, GameFinished) and end.seed == SEED
    assert redact(end, 0, given.rules) == GameFinished(winners=(1,), reason="conceded", seed=None)
    assert view(given, 0).seed is None and view(given, SPECTATOR).seed is None
    assert view(given, ARBITER).seed == SEED


def test_after_the_game_a_seat_replays_only_what_it_saw_at_the_time():
    given, _ = finished()
    assert review(given, 0) == view(given, 0)
    assert review(given, ARBITER) == view(given, ARBITER)
    classic = act(trick(table(HANDS, trump="9H"), "AS", "10D"), 0, Concede())[0]
    assert review(classic, 0) == view(classic, ARBITER)


def test_the_audit_leaves_face_down_cards_out_of_the_evidence_for_other_seats():
    given, events = table_and_events(HANDS, trump="9H", stock="QS JS 9S 8S", closed_discard=True)
    given = record(given, events, (0, lead("AS")), (1, respond("10D")))
    given = record(given, events, (0, lead("7C")), (1, respond("JS")))
    record(given, events, (0, THIRTY_ONE))
    assert audit(events)[0].pile == ("AS", "10D", "7C", "JS")  # 23: a false 31
    seen_by_0 = audit(events, 0)[0]
    assert (seen_by_0.pile, seen_by_0.hidden) == (("AS", "7C"), 2)
    assert audit(events, 1)[0].pile == ("AS", "10D", "7C", "JS")  # seat 1 played them
    assert audit(events, SPECTATOR)[0].hidden == 2


# -- pay_pot: «доставляет кон» --------------------------------------------------------------


def test_pay_pot_belongs_to_the_closed_discard_variant():
    with pytest.raises(BadOption) as refusal:
        check(Rules(false_declaration="pay_pot"), 2)
    assert refusal.value.option == "false_declaration"


def test_with_pay_pot_a_false_31_adds_a_stake_to_the_pot_and_the_deal_goes_on():
    given = trick(closed_table(false_declaration="pay_pot", stake=2), "AS", "10D")
    given, events = act(given, 0, THIRTY_ONE)
    assert events == [
        Declared(seat=0, claim="thirty_one", value=21, needed=31, true=False),
        PotPaid(0, 2),
    ]
    deal = current(given)
    assert (deal.phase, deal.turn, deal.pot) == ("lead", 0, (2, 0))
    assert view(given, 1).pot == (2, 0)


def test_the_false_declarer_may_not_declare_again_before_another_trick():
    given = trick(closed_table(false_declaration="pay_pot"), "AS", "10D")
    given = act(given, 0, THIRTY_ONE)[0]
    assert refused(given, 0, THIRTY_ONE) == "already_declared"
    given = trick(given, "AD", "10S")
    _, events = act(given, 0, THIRTY_ONE)
    assert events[0] == Declared(seat=0, claim="thirty_one", value=42, needed=31, true=True)


def test_the_pot_is_settled_with_the_deal_to_every_other_seat():
    given = table(
        ["AS AD 7C", "10D 10S 8C", "QC JC 9C"],
        trump="9H",
        closed_discard=True,
        false_declaration="pay_pot",
    )
    given = trick(given, "AS", "10D", "QC")
    given = act(given, 0, THIRTY_ONE)[0]  # 24: false, seat 0 owes 1 to each other seat
    given = trick(given, "AD", "10S", "JC")  # seat 0 holds 50 now
    _, events = act(given, 0, THIRTY_ONE)
    # the deal's stake from each of the two losers, less the fine to each of them
    assert StakeSettled(deal=1, stake=1, multiplier=1, payments=(0, 0, 0)) in events


def test_the_pot_is_settled_even_when_the_deal_ends_void():
    given = trick(closed_table(false_declaration="pay_pot"), "AS", "10D")
    given = act(given, 0, THIRTY_ONE)[0]
    given = play_out(given)
    _, events = act(given, current(given).turn, Pass())
    assert events[1:3] == [
        DealVoid("no_claim"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(-1, 1)),
    ]
