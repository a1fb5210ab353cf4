"""Bot games through decide and evolve, and the simulation summary built on them."""

import random

import pytest

from domain.bots import greedy_bot, random_bot
from domain.evolve import replay
from domain.rules import Rules
from domain.simulation import play_game
from services.cli.simulate import print_summary, simulate


@pytest.mark.parametrize("bot", [random_bot, greedy_bot])
@pytest.mark.parametrize("seats", [2, 3, 6])
def test_bots_play_whole_games_to_the_end(bot, seats):
    for n in range(10):
        state, events = play_game(f"g{n}", [bot] * seats, random.Random(n))
        assert state.finished and replay(events) == state


def test_a_game_is_determined_by_its_seed_and_the_bots_chance():
    first = play_game("same", [random_bot] * 2, random.Random(7), Rules(match_target=3))
    again = play_game("same", [random_bot] * 2, random.Random(7), Rules(match_target=3))
    assert first == again


def test_the_simulation_summary_counts_every_deal_and_event(capsys):
    summary = simulate(games=20, seats=3, seed=5, bot="greedy")
    assert summary["games"] == 20 and summary["seats"] == 3 and summary["bot"] == "greedy"
    assert sum(summary["deals_by_reason"].values()) == summary["deals"] >= 20
    events = summary["events_per_game"]
    assert 0 < events["median"] <= events["max"] and events["mean"] > 0
    assert summary["games_per_second"] > 0
    print_summary(summary)
    out = capsys.readouterr().out
    assert "games/s" in out and "events per game" in out


def test_the_simulation_is_reproducible_from_its_seed():
    first, again = simulate(10, 2, seed=3), simulate(10, 2, seed=3)
    for summary in (first, again):
        del summary["games_per_second"], summary["seconds"]
    assert first == again


def test_an_unknown_bot_is_refused():
    with pytest.raises(ValueError, match="bot"):
        simulate(1, 2, seed=1, bot="clever")
