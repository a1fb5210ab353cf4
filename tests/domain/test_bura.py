"""docs/rules.md §5: bura, three trumps shown on one's turn, wins the deal at once."""

from domain.commands import Declare, Draw
from domain.events import BuraShown, DealLost, DealWon, Declared, GameFinished, StakeSettled
from tests.domain.given import SEED, act, current, lead, refused, respond, table, trick

BURA = Declare("bura")


def test_bura_shown_on_the_first_lead_wins_whatever_the_points():
    given = table(["6H 7H 8H", "AS 10S KS"], trump="9H")
    _, events = act(given, 0, BURA)
    assert events == [
        BuraShown(0, ("6H", "7H", "8H")),
        DealWon(0, "bura"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(1, -1)),
        GameFinished(winners=(0,), reason="bura", seed=SEED),
    ]


def test_bura_wins_even_against_a_seat_holding_more_than_31():
    given = table(["10S 10D JC", "AS AD 7C"], trump="9H", stock="8D 6H 9D 7H 8H 6D")
    given = trick(given, "10S", "AS")  # seat 1 takes 21
    given = trick(given, "AD", "10D")  # seat 1 leads and takes 21 more: 42, undeclared
    given = trick(given, "7C", "JC")  # seat 0 takes and draws 8H last
    deal = current(given)
    assert (deal.turn, deal.phase, deal.hands[0]) == (0, "lead", ("6H", "7H", "8H"))
    _, events = act(given, 0, BURA)
    assert events[:3] == [
        BuraShown(0, ("6H", "7H", "8H")),
        DealWon(0, "bura"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(1, -1)),
    ]


def test_bura_may_be_shown_while_responding():
    given = act(table(["AS 10S KS", "6H 7H 8H"], trump="9H"), 0, lead("AS"))[0]
    _, events = act(given, 1, BURA)
    assert events[:2] == [BuraShown(1, ("6H", "7H", "8H")), DealWon(1, "bura")]


def test_bura_while_responding_needs_no_any_turn_option():
    given = act(table(["AS 10S KS", "6H 7H 8H"], trump="9H", declare_on="lead"), 0, lead("AS"))[0]
    assert act(given, 1, BURA)[1][1] == DealWon(1, "bura")


def test_a_false_bura_loses_the_deal():
    given = table(["6H 7H 8D", "AS 10S KS"], trump="9H")
    _, events = act(given, 0, BURA)
    assert events[:3] == [
        Declared(seat=0, claim="bura", value=2, needed=3, true=False),
        DealLost(0, "false_declaration"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(-1, 1)),
    ]


def test_bura_out_of_turn_is_refused():
    assert refused(table(["AS 10S KS", "6H 7H 8H"], trump="9H"), 1, BURA) == "not_your_turn"


def test_bura_is_refused_while_a_draw_is_due():
    given = table(["AS 10S KS", "6H 7H 8H"], trump="9H")
    given = act(act(given, 0, lead("AS"))[0], 1, respond("6H"))[0]  # seat 1 takes, draws first
    assert current(given).phase == "draw"
    assert refused(given, 1, BURA) == "not_your_turn"
    assert act(given, 1, Draw())[0] is not None
