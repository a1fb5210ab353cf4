"""Bot-against-bot simulation: how deals end, how long games are, how fast the engine plays.

The clock is read here, outside the pure domain. `simulate --games --seats --seed --bot`.
"""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from domain.bots import greedy_bot, random_bot
from domain.rules import Rules, check
from domain.simulation import Bot, play_game

BOTS: dict[str, Bot] = {"random": random_bot, "greedy": greedy_bot}


def simulate(
    games: int,
    seats: int,
    seed: int,
    bot: str = "random",
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Plays `games` games of `seats` identical bots; every game's deck and every bot
    choice follow from `seed`, so a summary can be reproduced (except its timings)."""
    if bot not in BOTS:
        raise ValueError(f"unknown bot {bot!r}: choose {' or '.join(BOTS)}")
    if games < 1:
        raise ValueError(f"games must be at least 1, not {games}")
    check(Rules(), seats)  # "seats: a table has 2 to 6 seats, not -1": the number given
    chance = random.Random(seed)
    reasons: Counter[str] = Counter()
    lengths: list[int] = []
    wins: Counter[int] = Counter()
    started = time.perf_counter()
    for n in range(games):
        state, events = play_game(f"{seed}/{n}", [BOTS[bot]] * seats, chance)
        lengths.append(len(events))
        reasons.update(deal.reason for deal in state.deals)
        wins.update(state.winners or ())
        if progress is not None:
            progress(n + 1)
    seconds = time.perf_counter() - started
    return {
        "games": games,
        "seats": seats,
        "seed": seed,
        "bot": bot,
        "deals": sum(reasons.values()),
        "deals_by_reason": dict(reasons.most_common()),
        "games_won_by_seat": {seat: wins[seat] for seat in range(seats)},
        "events_per_game": {
            "mean": statistics.fmean(lengths),
            "median": statistics.median(lengths),
            "max": max(lengths),
        },
        "seconds": seconds,
        "games_per_second": games / seconds if seconds > 0 else float("inf"),
    }


def print_summary(summary: dict[str, Any]) -> None:
    print(
        f"{summary['games']} games, {summary['seats']} seats, {summary['bot']} bots, "
        f"seed {summary['seed']}: {summary['deals']} deals"
    )
    print("deals by result:")
    for reason, count in summary["deals_by_reason"].items():
        print(f"  {reason:<18} {count:>7}  {count / summary['deals']:6.1%}")
    print(
        "games won by seat: "
        + ", ".join(f"{seat}: {won}" for seat, won in summary["games_won_by_seat"].items())
    )
    events = summary["events_per_game"]
    print(
        f"events per game: mean {events['mean']:.1f}, median {events['median']:g}, "
        f"max {events['max']}"
    )
    print(f"{summary['games_per_second']:,.0f} games/s ({summary['seconds']:.2f} s)")
