"""docs/rules.md §5 and §7: settling the stake, who deals next, and playing deals to the target."""

import pytest

from domain.cards import deck
from domain.commands import Concede, Declare, Draw, Lead, Pass
from domain.errors import RuleViolation
from domain.events import (
    DealerChosen,
    DealStarted,
    DealWon,
    GameFinished,
    StakeSettled,
)
from domain.shuffle import deal_seed, shuffled
from tests.domain.given import SEED, act, current, play_out, start, table

BURA = Declare("bura")


def test_two_seats_the_loser_pays_the_stake_to_the_winner():
    _, events = act(table(["6H 7H 8H", "AS 10S KS"], trump="9H", stake=5), 0, BURA)
    assert events[2] == StakeSettled(deal=1, stake=5, multiplier=1, payments=(5, -5))


def test_three_or_more_seats_a_single_winner_is_paid_by_every_other_seat():
    given = table(["6H 7H 8H", "AS 10S KS", "AD 10D KD", "AC 10C KC"], trump="9H", stake=2)
    _, events = act(given, 0, BURA)
    assert events[2] == StakeSettled(deal=1, stake=2, multiplier=1, payments=(6, -2, -2, -2))


def test_three_or_more_seats_an_offender_pays_every_other_seat():
    given = table(["6H 7D 8H", "AS 10S KS", "AD 10D KD", "AC 10C KC"], trump="9H")
    _, events = act(given, 0, BURA)  # a false bura
    assert events[2] == StakeSettled(deal=1, stake=1, multiplier=1, payments=(-3, 1, 1, 1))


def test_the_winner_deals_the_next_deal():
    given = table(["AS 10S KS", "6H 7H 8H"], trump="9H", match_target=2)  # seat 1 dealt
    after, events = act(given, 0, Concede())
    assert events[3] == DealerChosen(1, "winner")
    deal = current(after)
    assert (deal.number, deal.dealer, deal.turn, deal.phase) == (2, 1, 0, "lead")
    given = table(["6H 7H 8H", "AS 10S KS"], trump="9H", match_target=2, dealer=1)
    after, events = act(given, 0, BURA)
    assert events[3] == DealerChosen(0, "winner")
    assert isinstance(events[4], DealStarted) and events[4].dealer == 0
    assert current(after).turn == 1  # the seat after the new dealer leads


def test_with_three_seats_the_winner_deals_too():
    given = table(["6H 7H 8H", "AS 10S KS", "AD 10D KD"], trump="9H", match_target=3, dealer=1)
    given = act(given, 2, Lead(("AD",)))[0]  # seat 2 leads, seat 0 answers with bura
    after, events = act(given, 0, BURA)
    assert events[1:4] == [
        DealWon(0, "bura"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(2, -1, -1)),
        DealerChosen(0, "winner"),
    ]
    assert (current(after).dealer, current(after).turn) == (0, 1)


def test_the_next_deals_are_shuffled_from_the_seed():
    after = act(table(["AS 10S KS", "6H 7H 8H"], trump="9H", match_target=2), 0, Concede())[0]
    assert current(after).deck == shuffled(deal_seed(SEED, 2), deck(36))


def concede_deals(given, loser: int, deals: int):
    """The loser concedes each deal as soon as it is due to act; the other plays a card."""
    for _ in range(deals):
        number = current(given).number
        while current(given).number == number and not given.finished:
            deal = current(given)
            if deal.turn == loser:
                given = act(given, loser, Concede())[0]
            elif deal.phase == "draw":
                given = act(given, deal.turn, Draw())[0]
            else:
                given = act(given, deal.turn, Lead(deal.hands[deal.turn][:1]))[0]
    return given


def test_a_game_to_three_is_played_over_several_deals():
    given = start(2, dealer=1, match_target=3)[0]
    given = concede_deals(given, loser=1, deals=2)
    assert not given.finished and given.score == (2, -2)
    assert [d.winners for d in given.deals] == [(0,), (0,)]
    given = concede_deals(given, loser=1, deals=1)
    assert given.finished and given.winners == (0,) and given.reason == "conceded"
    assert given.score == (3, -3) and len(given.deals) == 3


def test_a_deal_lost_then_won_back_keeps_the_game_going():
    given = start(2, dealer=1, match_target=2)[0]
    given = concede_deals(given, loser=1, deals=1)
    given = concede_deals(given, loser=0, deals=1)
    assert given.score == (0, 0) and not given.finished
    given = concede_deals(given, loser=0, deals=2)
    assert given.winners == (1,)


def test_void_deals_are_redealt_and_do_not_count():
    given = play_out(start(2, dealer=1, match_target=1)[0])
    after = act(given, current(given).turn, Pass())[0]
    assert not after.finished and after.score == (0, 0)
    assert current(after).number == 2 and current(after).dealer == 1


def test_the_game_ends_when_a_seat_reaches_the_target_and_reveals_the_seed():
    _, events = act(table(["6H 7H 8H", "AS 10S KS"], trump="9H", match_target=1), 0, BURA)
    assert events[-1] == GameFinished(winners=(0,), reason="bura", seed=SEED)


def test_an_offender_at_three_seats_can_put_two_seats_over_the_target_together():
    given = table(["6H 7D 8H", "AS 10S KS", "AD 10D KD"], trump="9H")
    after, events = act(given, 0, BURA)
    assert events[-1] == GameFinished(winners=(1, 2), reason="false_declaration", seed=SEED)
    assert after.winners == (1, 2)


@pytest.mark.parametrize("command", [Lead(("AS",)), Draw(), Concede(), Pass(), BURA])
def test_after_the_end_every_command_is_refused_with_game_over(command):
    after = act(table(["6H 7H 8H", "AS 10S KS"], trump="9H"), 0, BURA)[0]
    for seat in (0, 1):
        with pytest.raises(RuleViolation) as refused:
            act(after, seat, command)
        assert refused.value.code == "game_over"
