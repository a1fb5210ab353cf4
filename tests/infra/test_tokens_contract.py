"""The SeatTokens contract: every adapter (SQLite, PostgreSQL) passes this same module."""

from __future__ import annotations

import uuid

from infra.ports.tokens import SeatTokens
from services.bootstrap import Adapters


def game() -> str:
    return f"game-{uuid.uuid4()}"


async def test_hashes_are_kept_per_seat_in_order_and_replaced_whole(adapters: Adapters) -> None:
    tokens: SeatTokens = adapters.tokens
    stream = game()
    assert await tokens.hashes(stream) == []

    await tokens.save(stream, [b"\x00hash-0", b"\xffhash-1"])
    assert await tokens.hashes(stream) == [b"\x00hash-0", b"\xffhash-1"]

    await tokens.save(stream, [b"a", b"b", b"c"])
    assert await tokens.hashes(stream) == [b"a", b"b", b"c"]
    await tokens.save(stream, [b"x"])  # fewer seats: the ones past them are gone
    assert await tokens.hashes(stream) == [b"x"]
    assert await tokens.hashes(game()) == []


async def test_games_keep_their_own_hashes(adapters: Adapters) -> None:
    one, two = game(), game()
    await adapters.tokens.save(one, [b"1", b"2"])
    await adapters.tokens.save(two, [b"3"])
    assert await adapters.tokens.hashes(one) == [b"1", b"2"]
    assert await adapters.tokens.hashes(two) == [b"3"]
