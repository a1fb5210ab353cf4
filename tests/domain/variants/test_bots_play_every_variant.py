"""Both bots finish whole games of every variant of docs/rules.md §8, and replays rebuild them."""

import random

import pytest

from domain.bots import greedy_bot, random_bot
from domain.evolve import replay
from domain.rules import Rules
from domain.simulation import play_game

GAMES = 50
VARIANTS = {
    "closed_discard": (2, Rules(closed_discard=True)),
    "pay_pot": (3, Rules(closed_discard=True, false_declaration="pay_pot", match_target=3)),
    "open_seat": (2, Rules(open_seats=(0,), compensation=10)),
    "open_both": (2, Rules(open_seats=(0, 1))),
    "hand_size": (2, Rules(hand_size=(4, 3), open_seats=(0,), compensation=5)),
    "no_trumps": (2, Rules(trumps=False, first_lead_compensation=15)),
    "czech": (4, Rules(combinations="czech")),
    "deck_32": (3, Rules(deck=32)),
    "teams": (4, Rules(deck=52, teams=((0, 2), (1, 3)), target_points=41)),
    "teams_of_3": (6, Rules(deck=52, teams=((0, 2, 4), (1, 3, 5)), target_points=51)),
    "kozel": (5, Rules(game="kozel")),
    "seats_shuffle": (3, Rules(shuffle="seats", match_target=3)),
    "seats_shuffle_closed": (2, Rules(shuffle="seats", closed_discard=True, match_target=2)),
}


@pytest.mark.parametrize("bot", [random_bot, greedy_bot], ids=["random", "greedy"])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_both_bots_finish_games_of_every_variant(variant, bot):
    seats, rules = VARIANTS[variant]
    reasons = set()
    for n in range(GAMES):
        state, events = play_game(f"{variant}{n}", [bot] * seats, random.Random(n), rules)
        assert state.finished and state.rules == rules
        reasons |= {d.reason for d in state.deals}
        if n % 10 == 0:
            assert replay(events) == state
    assert reasons  # every game was decided by some deal
