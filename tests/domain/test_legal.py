"""legal_commands: what bots and property tests may send; faulty draws are never listed."""

from domain.commands import Concede, Dave, DaveAnswer, Declare, Draw, Lead, Pass, Respond
from domain.legal import legal_commands
from tests.domain.given import act, current, lead, play, play_out, respond, start, table

HANDS = ["AS 6S QD", "7S 6H 8D"]  # seat 0 leads; hearts are trumps


def test_the_leader_may_lead_one_suit_claim_dave_or_concede():
    given = table(HANDS, trump="9H")
    assert legal_commands(given, 0) == [
        Lead(("AS",)),
        Lead(("6S",)),
        Lead(("QD",)),
        Lead(("AS", "6S")),
        Declare("bura"),
        Declare("thirty_one"),
        Dave(),
        Concede(),
    ]
    assert legal_commands(given, 1) == []


def test_a_responder_may_answer_with_any_cards_show_bura_or_concede():
    given = act(table(HANDS, trump="9H"), 0, lead("AS 6S"))[0]
    assert legal_commands(given, 1) == [
        Respond(("7S", "6H")),
        Respond(("7S", "8D")),
        Respond(("6H", "8D")),
        Declare("bura"),
        Concede(),
    ]


def test_declare_on_any_turn_lists_31_while_responding():
    given = act(table(HANDS, trump="9H", declare_on="any_turn"), 0, lead("AS"))[0]
    assert Declare("thirty_one") in legal_commands(given, 1)


def test_only_the_seat_due_to_draw_may_draw_and_only_one_card():
    given = play(table(HANDS, trump="9H"), (0, lead("AS")), (1, respond("6H")))
    assert legal_commands(given, 1) == [Draw(1), Concede()]
    assert legal_commands(given, 0) == []


def test_a_pending_dave_lists_the_two_answers():
    given = act(table(HANDS, trump="9H"), 0, Dave())[0]
    assert legal_commands(given, 1) == [DaveAnswer(True), DaveAnswer(False), Concede()]
    assert legal_commands(given, 0) == []


def test_no_dave_is_listed_for_the_seat_without_the_cube():
    given = play(table(HANDS, trump="9H"), (0, Dave()), (1, DaveAnswer(True)))
    assert Dave() not in legal_commands(given, 0)


def test_no_dave_is_listed_over_the_limit():
    given = play(
        table(HANDS, trump="9H", dave_max_multiplier=2),
        (0, Dave()),
        (1, DaveAnswer(True)),
        (0, lead("AS")),
        (1, respond("6H")),
        (1, Draw()),
        (0, Draw()),
    )
    assert current(given).turn == 1 and current(given).cube == 1
    assert Dave() not in legal_commands(given, 1)


def test_the_empty_handed_last_taker_may_claim_pass_or_concede():
    given = play_out(start(2, dealer=1, dave=False)[0])
    assert legal_commands(given, current(given).turn) == [
        Declare("bura"),
        Declare("thirty_one"),
        Pass(),
        Concede(),
    ]


def test_nothing_is_legal_once_the_game_is_over():
    given = act(table(["6H 7H 8H", "AS 10S KS"], trump="9H"), 0, Declare("bura"))[0]
    assert legal_commands(given, 0) == legal_commands(given, 1) == []
