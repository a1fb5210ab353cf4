"""The hint bus port: wake-ups sent after a commit. At most once: a hint may be lost, so
whoever is woken reads what it lacks from the event store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

import msgspec


class Hint(msgspec.Struct, frozen=True):
    """A wake-up sent after a commit: game `game_id` has reached `version`."""

    game_id: str
    version: int


class HintBus(Protocol):
    async def publish(self, hint: Hint) -> None:
        """Send the hint to every listener of every process; never waits on the network."""
        ...

    def hints(self) -> AsyncIterator[Hint | None]:
        """Hints as they arrive; None when some may have been missed (a (re)subscribe)."""
        ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...
