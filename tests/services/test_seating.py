"""Who a token is: a game's token hashes are read from the store once per process, and not
at all by the process that issued them."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest

from infra.ports.tokens import SeatTokens
from services.app.callers import Seating
from services.bootstrap import Adapters


class Counting:
    """The seat tokens, with every read of a game's hashes counted."""

    def __init__(self, tokens: SeatTokens) -> None:
        self.tokens = tokens
        self.reads = 0

    async def save(self, stream_id: str, token_hashes: Sequence[bytes]) -> None:
        await self.tokens.save(stream_id, token_hashes)

    async def hashes(self, stream_id: str) -> list[bytes]:
        self.reads += 1
        return await self.tokens.hashes(stream_id)


@pytest.fixture
def counted(adapters: Adapters) -> Counting:
    return Counting(adapters.tokens)


async def test_the_issuing_process_knows_the_tokens_without_reading_them(
    counted: Counting,
) -> None:
    seating = Seating(counted, "operator")
    game_id = uuid.uuid4().hex
    seats, spectator = await seating.issue(game_id, 3)
    assert [await seating.seat_of(game_id, t) for t in seats] == [0, 1, 2]
    assert await seating.seat_of(game_id, spectator) == -1
    assert await seating.seat_of(game_id, f"{game_id}.not-a-token") is None
    assert counted.reads == 0


async def test_another_process_reads_them_once(counted: Counting) -> None:
    game_id = uuid.uuid4().hex
    seats, spectator = await Seating(counted, "operator").issue(game_id, 2)
    other = Seating(counted, "operator")
    assert [await other.seat_of(game_id, t) for t in [*seats, spectator]] == [0, 1, -1]
    assert counted.reads == 1
