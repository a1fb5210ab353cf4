"""A stream resuming far behind (Last-Event-ID: 1 on a long game) is rendered from the
store version by version. It held the event loop for the whole catch-up: every other
request of the replica (health probes, commands, Redis calls) waited seconds, a command
ran out its deadline as `outcome_unknown`, and a client that left did not stop it."""

from __future__ import annotations

import asyncio
import random

from domain.bots import random_bot
from domain.legal import claimants
from services.live.projector import TURN
from tests.api.conftest import Api

RULES = {"match_target": 12}


async def long_game(api: Api, chance: random.Random) -> tuple[str, int]:
    table = await api.create(rules=RULES, deck=None, dealer=None, seed="catch-up")
    state = await api.service.load(table.game_id)
    while not state.finished:
        assert state.deal is not None
        seat = next(iter(claimants(state)), state.deal.turn)
        await api.service.execute(table.game_id, seat, random_bot(state, seat, chance))
        state = await api.service.load(table.game_id)
    return table.game_id, state.version


async def test_a_long_catch_up_hands_the_loop_back_between_messages(api: Api) -> None:
    """Counted in turns of the loop, not in seconds (a busy machine stretches seconds): a
    task that only waits for its next turn gets one at least every TURN messages of the
    catch-up. Holding the loop for the whole catch-up, it got one a page of rows read."""
    game_id, version = await long_game(api, random.Random(5))
    assert version > 1500, version
    turns = 0
    done = asyncio.Event()

    async def ticking() -> None:  # another request's share of the loop
        nonlocal turns
        while not done.is_set():
            await asyncio.sleep(0)
            turns += 1

    ticker = asyncio.create_task(ticking())
    try:
        answer = await api.client.get(
            f"/games/{game_id}/stream",
            headers={
                "Authorization": f"Bearer {api.runtime.settings.operator_key}",
                "Last-Event-ID": "1",
            },
        )
    finally:
        done.set()
        await ticker
    ids = [int(line[4:]) for line in answer.text.splitlines() if line.startswith("id: ")]
    assert ids == list(range(2, version + 1)), (ids[:3], ids[-3:])
    assert "event: end" in answer.text
    assert turns >= (version - 1) // TURN, (turns, version)
