"""The moves in a seat's view (domain/moves.py): legal_commands in the shape a client reads,
listing only what the seat can know (docs/rules.md §8.8 for the one rule on hidden cards)."""

from domain.commands import Concede, Dave, DaveAnswer, Declare, Draw, Lead, Pass, Respond
from domain.moves import NOTHING, CombinationLead, LeadGroup, Moves, commands
from domain.views import ARBITER, SPECTATOR, view
from tests.domain.given import act, current, lead, play, play_out, refused, respond, start, table

HANDS = ["AS 6S QD", "7S 6H 8D"]  # seat 0 leads; hearts are trumps


def moves_of(state, seat):
    shown = view(state, seat).moves
    assert shown is not None
    return shown


def test_the_leader_is_offered_its_suits_the_claims_dave_and_concede():
    given = table(HANDS, trump="9H")
    assert moves_of(given, 0) == Moves(
        lead=(
            LeadGroup(suit="S", cards=("AS", "6S"), counts=(1, 2)),
            LeadGroup(suit="D", cards=("QD",), counts=(1,)),
        ),
        declare=("bura", "thirty_one"),
        dave=True,
        concede=True,
    )
    assert moves_of(given, 1) == NOTHING


def test_the_groups_write_out_to_exactly_the_leads_legal_commands_lists():
    given = table(HANDS, trump="9H")
    assert commands(moves_of(given, 0), current(given).hands[0]) == [
        Lead(("AS",)),
        Lead(("6S",)),
        Lead(("AS", "6S")),
        Lead(("QD",)),
        Declare("bura"),
        Declare("thirty_one"),
        Dave(),
        Concede(),
    ]


def test_a_responder_is_offered_the_count_to_answer_with_any_cards():
    given = act(table(HANDS, trump="9H"), 0, lead("AS 6S"))[0]
    assert moves_of(given, 1) == Moves(respond=2, declare=("bura",), concede=True)
    assert commands(moves_of(given, 1), current(given).hands[1])[:3] == [
        Respond(("7S", "6H")),
        Respond(("7S", "8D")),
        Respond(("6H", "8D")),
    ]


def test_the_seat_due_to_draw_is_offered_one_card():
    given = play(table(HANDS, trump="9H"), (0, lead("AS")), (1, respond("6H")))
    assert moves_of(given, 1) == Moves(draw=True, concede=True)
    assert moves_of(given, 0) == NOTHING


def test_a_pending_dave_offers_its_answer():
    given = act(table(HANDS, trump="9H"), 0, Dave())[0]
    assert moves_of(given, 1) == Moves(dave_answer=True, concede=True)
    assert commands(moves_of(given, 1), ()) == [DaveAnswer(True), DaveAnswer(False), Concede()]


def test_the_played_out_leader_is_offered_the_claims_and_pass():
    given = play_out(start(2, dealer=1, dave=False)[0])
    seat = current(given).turn
    assert moves_of(given, seat) == Moves(declare=("bura", "thirty_one"), pass_=True, concede=True)
    assert Pass() in commands(moves_of(given, seat), ())


def test_no_lead_is_larger_than_the_smallest_hand_can_answer():
    given = table(["AS KS QS JS", "7H 8H 9H"], trump="6D", hand_size=[4, 3], open_seats=[0])
    (spades,) = moves_of(given, 0).lead
    assert spades == LeadGroup(suit="S", cards=("AS", "KS", "QS", "JS"), counts=(1, 2, 3))


def test_kozel_offers_one_or_three_cards():
    given = table(["AS KS QS 7D", "7H 8H 9H 6C"], trump="6D", game="kozel")
    assert moves_of(given, 0).lead[0] == LeadGroup(
        suit="S", cards=("AS", "KS", "QS"), counts=(1, 3)
    )
    assert moves_of(given, 0).declare == ("bura", "four_aces")


def test_a_finished_game_offers_nothing():
    given = act(table(["6H 7H 8H", "AS 10S KS"], trump="9H"), 0, Declare("bura"))[0]
    assert moves_of(given, 0) == moves_of(given, 1) == NOTHING


def test_only_a_seat_is_offered_moves():
    given = table(HANDS, trump="9H")
    assert view(given, SPECTATOR).moves is None
    assert view(given, ARBITER).moves is None


# -- Czech combinations: precedence hangs on hands the seat may not see (docs/rules.md §8.8)


def three(*hands, **options):
    """Three seats, seat 0 leads, hearts are trumps, Czech combinations."""
    return table(list(hands), trump="9H", combinations="czech", **options)


def test_a_combination_is_offered_out_of_turn_as_contested_while_hands_are_hidden():
    given = three("AS 7D 8C", "KC QC JC", "6S 7S 9D")
    assert moves_of(given, 1) == Moves(
        combinations=(
            CombinationLead(cards=("KC", "QC", "JC"), combination="molodka", contested=True),
        )
    )
    assert act(given, 1, lead("KC QC JC"))[0].deal.trick is not None  # type: ignore[union-attr]


def test_a_contested_combination_may_be_refused_for_precedence():
    given = three("7S 7D 8H", "KC QC JC", "AS AD AC")
    offered = moves_of(given, 1).combinations
    assert offered == (
        CombinationLead(cards=("KC", "QC", "JC"), combination="molodka", contested=True),
    )
    assert refused(given, 1, lead("KC QC JC")) == "combination_outranked"


def test_the_offer_does_not_tell_whether_a_hidden_hand_holds_a_stronger_combination():
    outranked = three("7S 7D 8H", "KC QC JC", "AS AD AC")
    unopposed = three("7S 7D 8H", "KC QC JC", "AS AD 7C")
    assert moves_of(outranked, 1) == moves_of(unopposed, 1)


def test_an_open_hand_that_takes_precedence_withdraws_the_offer():
    given = three("7S 7D 8H", "KC QC JC", "AS AD AC", open_seats=[2])
    assert moves_of(given, 1) == NOTHING


def test_with_every_other_hand_open_the_offer_is_certain():
    given = three("7S 7D 8H", "KC QC JC", "6S 8S 9D", open_seats=[0, 2])
    assert moves_of(given, 1).combinations == (
        CombinationLead(cards=("KC", "QC", "JC"), combination="molodka", contested=False),
    )


def test_the_leader_s_three_aces_are_offered_as_a_combination():
    given = table(["AS AD AC", "7S 6C 8C"], trump="9H", combinations="czech")
    shown = moves_of(given, 0)
    assert (
        CombinationLead(cards=("AS", "AD", "AC"), combination="three_aces", contested=True)
        in shown.combinations
    )
    assert all(len(group.cards) == 1 for group in shown.lead)  # three suits, one card each
    assert Draw(1) not in commands(shown, ())


def test_the_leader_s_molodka_is_offered_as_a_contested_combination_not_an_ordinary_lead():
    """A hidden hand holding bura or three aces takes precedence over it (§8.8)."""
    given = three("KD QD JD", "7S 8C 9S", "6S 7C 10S")
    shown = moves_of(given, 0)
    assert shown.lead == (LeadGroup(suit="D", cards=("KD", "QD", "JD"), counts=(1, 2)),)
    assert shown.combinations == (
        CombinationLead(cards=("KD", "QD", "JD"), combination="molodka", contested=True),
    )
    assert moves_of(three("KD QD JD", "7S 8C 9S", "AS AC AH"), 0) == shown  # tells nothing


def test_the_leader_s_molodka_is_withdrawn_when_an_open_hand_outranks_it():
    given = three("KD QD JD", "6H 7H 8H", "6S 7C 10S", open_seats=[1])
    shown = moves_of(given, 0)
    assert shown.combinations == ()
    assert shown.lead == (LeadGroup(suit="D", cards=("KD", "QD", "JD"), counts=(1, 2)),)


def test_the_leader_s_bura_stays_an_ordinary_lead():
    given = three("6H 7H 8H", "7S 8C 9S", "6S 7C 10S")
    shown = moves_of(given, 0)
    assert shown.lead == (LeadGroup(suit="H", cards=("6H", "7H", "8H"), counts=(1, 2, 3)),)
    assert shown.combinations == ()
