"""Rules engine speed: replaying recorded games, and bots playing whole games in one process.

Targets (printed, never asserted): replay >= 200,000 events/s; two-seat random-bot games
>= 500 games/s. `python -m bench.domain` prints the figures; `run()` returns them.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

from bench import sized
from domain.bots import greedy_bot, random_bot
from domain.events import Event
from domain.evolve import replay
from domain.simulation import Bot, play_game

RECORDED_GAMES = int(sized(300, 60))
REPETITIONS = int(sized(5, 3))
TARGETS = {"replay_events_per_second": 200_000, "random_games_per_second": 500}


def record(games: int, bot: Bot = random_bot, seed: int = 1) -> list[list[Event]]:
    chance = random.Random(seed)
    return [play_game(f"bench/{n}", [bot, bot], chance)[1] for n in range(games)]


def replay_rate(games: list[list[Event]]) -> float:
    """Events per second replaying every recorded game from scratch, median of REPETITIONS runs."""
    count = sum(len(events) for events in games)
    times = []
    for _ in range(REPETITIONS):
        started = time.perf_counter()
        for events in games:
            replay(events)
        times.append(time.perf_counter() - started)
    return count / statistics.median(times)


def games_rate(bot: Bot, games: int, seats: int = 2, seed: int = 2) -> float:
    chance = random.Random(seed)
    started = time.perf_counter()
    for n in range(games):
        play_game(f"bench/{bot.__name__}/{n}", [bot] * seats, chance)
    return games / (time.perf_counter() - started)


def run() -> dict[str, Any]:
    games = record(RECORDED_GAMES)
    # greedy bots play most deals out to a declaration: more tricks and draws per game
    whole = record(RECORDED_GAMES, greedy_bot)
    return {
        "recorded_games": len(games),
        "recorded_events": sum(len(events) for events in games),
        "replay_events_per_second": round(replay_rate(games)),
        "replay_events_per_second_greedy_games": round(replay_rate(whole)),
        "random_games_per_second": round(games_rate(random_bot, 1_000)),
        "greedy_games_per_second": round(games_rate(greedy_bot, 500)),
        "targets": TARGETS,
    }


def main() -> None:
    figures = run()
    print(
        f"domain: {figures['recorded_games']} recorded games, {figures['recorded_events']} events"
    )
    for name in (
        "replay_events_per_second",
        "replay_events_per_second_greedy_games",
        "random_games_per_second",
        "greedy_games_per_second",
    ):
        target = TARGETS.get(name)
        note = f"  (target >= {target:,})" if target else ""
        print(f"  {name:<38} {figures[name]:>10,}{note}")


if __name__ == "__main__":
    main()
