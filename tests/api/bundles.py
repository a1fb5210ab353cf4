"""Games of every variant recorded straight into an event store, as the service records
them: each command appended with its events, command id, seat and request id."""

from __future__ import annotations

import random
import time
import uuid

from domain.bots import greedy_bot, random_bot
from domain.commands import CloseSeeding, StartGame
from domain.decide import decide
from domain.evolve import fold
from domain.legal import claimants, seeding_seats
from domain.rules import Rules
from domain.state import NEW_GAME
from infra.ports.events import EventStore, Metadata
from services.app.codec import to_new
from tests.domain.variants.test_bots_play_every_variant import VARIANTS as BOT_VARIANTS

VARIANTS: dict[str, tuple[int, Rules]] = {
    "classic": (2, Rules()),
    **BOT_VARIANTS,
    "seats_shuffle_with_a_missing_seed": (3, Rules(shuffle="seats", match_target=2)),
}


async def record(store: EventStore, variant: str) -> str:
    """A bot game of the variant appended command by command, as the service appends
    them: each with its command id, seat and request id.

    The game's clock starts now, so its deadlines (a seeding window, a turn clock) lie
    ahead of the wall clock: a test app's timers, scanning the same store, must find
    nothing due and never move the table while it is being recorded."""
    seats, rules = VARIANTS[variant]
    game_id = f"bundle-{uuid.uuid4().hex[:12]}"
    chance = random.Random(variant)
    bots = [greedy_bot, random_bot] * 3
    now = time.time_ns() // 1_000_000
    start = StartGame(seats=tuple(f"p{i}" for i in range(seats)), rules=rules, seed=variant)
    events = decide(NEW_GAME, start, None, now)
    await store.append(game_id, 0, [to_new(e) for e in events], Metadata(correlation_id="new"))
    state = fold(NEW_GAME, events)
    for n in range(1, 20_000):
        if state.finished:
            return game_id
        now += 1_000
        waiting = seeding_seats(state)
        seeding = state.seeding
        if seeding is not None and variant.endswith("missing_seed") and len(waiting) < seats:
            assert seeding.deadline is not None  # one seed is in: the others come too late
            events = decide(state, CloseSeeding(at=seeding.deadline), None, now)
            meta = Metadata(correlation_id="seeding")
        else:
            if waiting:
                seat = waiting[0]
            else:
                assert state.deal is not None
                seat = next(iter(claimants(state)), state.deal.turn)
            events = decide(state, bots[seat](state, seat, chance), seat, now)
            meta = Metadata(command_id=f"{seat}-{n}", actor=seat, correlation_id=f"req-{n}")
        await store.append(game_id, state.version, [to_new(e) for e in events], meta)
        state = fold(state, events)
    raise AssertionError(f"{variant}: the game did not end")
