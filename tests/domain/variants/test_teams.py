"""docs/rules.md §8, CZ «Týmová varianta» (`deck: 52`, `teams`, `target_points: 41 | 51`):
two teams of 2 or 3 seated alternately, their trick points pooled for a declaration."""

import pytest

from domain.cards import deck, points
from domain.commands import Concede, Declare, Draw
from domain.errors import BadOption
from domain.events import DealerChosen, DealLost, DealWon, Declared, StakeSettled
from domain.rules import Rules, check
from tests.domain.given import act, current, lead, play, respond, table, trick

TEAMS = {"deck": 52, "teams": ((0, 2), (1, 3))}
# seat 0 leads (seat 3 deals); hearts are trumps
HANDS = ["AS 10D 2C", "3S 4D 5C", "10S AD 2D", "5S 5D 3C"]


def team_table(**options):
    return table(HANDS, trump="9H", **TEAMS, **options)


def after_two_tricks(**options):
    given = trick(team_table(**options), "AS", "3S", "10S", "5S")  # seat 0 takes 21
    return trick(given, "10D", "4D", "AD", "5D")  # seat 2 beats with AD and takes 21


def test_the_52_card_pack_adds_2_to_5_worth_nothing():
    assert len(deck(52)) == 52 and points(deck(52)) == 120


def test_a_declaration_counts_the_team_s_pooled_points():
    given = after_two_tricks(target_points=41)
    deal = current(given)
    assert (deal.turn, deal.phase) == (2, "lead")
    _, events = act(given, 2, Declare("thirty_one"))
    assert events[:2] == [
        Declared(seat=2, claim="thirty_one", value=42, needed=41, true=True),
        DealWon(2, "thirty_one"),
    ]


def test_the_team_s_target_is_41_or_51_points():
    given = after_two_tricks(target_points=51)
    _, events = act(given, 2, Declare("thirty_one"))
    assert events[:2] == [
        Declared(seat=2, claim="thirty_one", value=42, needed=51, true=False),
        DealLost(2, "false_declaration"),
    ]


def test_a_deal_is_settled_team_against_team():
    given = after_two_tricks(target_points=41, stake=2)
    given, events = act(given, 2, Declare("thirty_one"))
    assert StakeSettled(deal=1, stake=2, multiplier=1, payments=(2, -2, 2, -2)) in events
    assert (given.deals[0].winners, given.deals[0].losers) == ((0, 2), (1, 3))
    assert given.deals[0].by == 2  # the declarer, of the winning team


def test_the_winning_team_s_seat_deals_next():
    given = after_two_tricks(target_points=41, match_target=3)
    _, events = act(given, 2, Declare("thirty_one"))
    assert DealerChosen(2, "winner") in events


def test_after_a_penalty_the_same_dealer_deals_again():
    # a team's loss has no single winner: the dealer of the lost deal deals the next one
    given = play(
        team_table(match_target=3),
        (0, lead("AS")),
        (1, respond("3S")),
        (2, respond("10S")),
        (3, respond("5S")),
    )  # seat 0 takes, draws first
    assert current(given).draws[0] == 0 and current(given).dealer == 3
    given, events = act(given, 1, Draw())  # seat 1 draws before seat 0: out of turn
    assert events[0].rule == "out_of_turn_draw"  # type: ignore[attr-defined]
    assert events[1] == DealLost(1, "out_of_turn_draw")
    assert StakeSettled(deal=1, stake=1, multiplier=1, payments=(1, -1, 1, -1)) in events
    assert DealerChosen(3, "same_dealer") in events
    assert current(given).dealer == 3 and current(given).number == 2
    # the record names the whole team as losers and the one seat that drew out of turn
    assert (given.deals[0].losers, given.deals[0].by) == ((1, 3), 1)


def test_after_a_false_declaration_or_a_concession_the_same_dealer_deals_again():
    given = after_two_tricks(target_points=51, match_target=3)
    _, events = act(given, 2, Declare("thirty_one"))  # 42 of 51: false
    assert DealerChosen(3, "same_dealer") in events
    given = team_table(match_target=3)
    _, events = act(given, 0, Concede())
    assert DealerChosen(3, "same_dealer") in events


def test_teams_of_three_play_with_six_seats():
    rules = check(Rules(deck=52, teams=((0, 2, 4), (1, 3, 5)), target_points=51), 6)
    assert rules.teams == ((0, 2, 4), (1, 3, 5))


@pytest.mark.parametrize(
    ("options", "seats", "option"),
    [
        ({"teams": ((0, 2), (1, 3))}, 4, "teams"),  # without the 52-card pack
        ({"deck": 52, "teams": ((0, 1), (2, 3))}, 4, "teams"),  # not seated alternately
        ({"deck": 52, "teams": ((0, 2), (1,))}, 3, "teams"),
        ({"deck": 52, "teams": ((0,), (1,))}, 2, "teams"),
        ({"deck": 52, "teams": ((0, 2), (1, 3))}, 6, "teams"),  # seats 4 and 5 left out
        ({"deck": 52, "teams": ((0, 2), (1, 3)), "target_points": 45}, 4, "target_points"),
        ({"target_points": 41}, 4, "target_points"),  # 41 or 51 belong to the team game
        # no points at all: named as the target, not as a compensation measured by it
        ({"target_points": 0}, 2, "target_points"),
        ({"target_points": -5}, 2, "target_points"),
        ({"deck": 52, "teams": ((0, 2), (1, 3)), "target_points": 0}, 4, "target_points"),
        ({"deck": 52, "teams": ((0, 2), (1, 3)), "game": "kozel"}, 4, "teams"),
    ],
)
def test_a_bad_team_table_is_refused_naming_the_option(options, seats, option):
    with pytest.raises(BadOption) as refusal:
        check(Rules(**options), seats)
    assert refusal.value.option == option
