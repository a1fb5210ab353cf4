"""Bot against bot: whole games played through decide and evolve."""

from __future__ import annotations

from collections.abc import Callable

from domain.bots import Chance
from domain.commands import PlayerCommand, StartGame
from domain.decide import decide
from domain.events import Event
from domain.evolve import fold
from domain.legal import claimants, seeding_seats
from domain.rules import Rules
from domain.state import NEW_GAME, Game

Bot = Callable[[Game, int, Chance], PlayerCommand]


def play_game(
    seed: str,
    bots: list[Bot],
    chance: Chance,
    rules: Rules | None = None,
    max_commands: int = 100_000,
) -> tuple[Game, list[Event]]:
    """Plays one game to its end; returns the final state and every event."""
    start = StartGame(
        seats=tuple(f"bot{i}" for i in range(len(bots))), rules=rules or Rules(), seed=seed
    )
    events = decide(NEW_GAME, start, None)
    state = fold(NEW_GAME, events)
    for _ in range(max_commands):
        if state.finished:
            return state, events
        waiting = seeding_seats(state)
        if waiting:  # a seat-shuffled deal: every seat sends its seed, in seat order
            seat = waiting[0]
        else:
            assert state.deal is not None
            # a seat that may lead a combination out of turn does so before the leader leads
            seat = next(iter(claimants(state)), state.deal.turn)
        new = decide(state, bots[seat](state, seat, chance), seat)
        state = fold(state, new)
        events += new
    raise RuntimeError(f"game {seed} did not end within {max_commands} commands")
