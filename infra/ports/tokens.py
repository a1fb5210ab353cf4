"""The seat token port: the hashes of the secret tokens handed out when a game is created."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class SeatTokens(Protocol):
    """One SHA-256 hash per seat of a game (the spectator's last); the tokens themselves
    are never stored."""

    async def save(self, stream_id: str, token_hashes: Sequence[bytes]) -> None:
        """Keep token_hashes[i] for seat i of the game, replacing any it had."""
        ...

    async def hashes(self, stream_id: str) -> list[bytes]:
        """The game's hashes in seat order; empty for a game nobody created."""
        ...
