"""The in-process bus of the embedded default: hints fan out to this process's listeners."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

from infra.records import Hint


class InProcessBus:
    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[Hint | None]] = set()
        self._views: dict[tuple[str, str], tuple[int, bytes]] = {}
        self.errors = 0
        self._closed = False

    async def publish(self, hint: Hint) -> None:
        for queue in self._queues:
            queue.put_nowait(hint)

    async def hints(self) -> AsyncIterator[Hint | None]:
        """Hints as they come; None marks a possible gap (never, in one process)."""
        queue: asyncio.Queue[Hint | None] = asyncio.Queue()
        self._queues.add(queue)
        try:
            while not self._closed:
                hint = await queue.get()
                if hint is None and self._closed:
                    return
                yield hint
        finally:
            self._queues.discard(queue)

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._closed = True
        for queue in self._queues:
            queue.put_nowait(None)

    async def put_view(self, game_id: str, viewer: str, version: int, view: bytes,
                       ttl_seconds: int = 86_400) -> bool:
        old = self._views.get((game_id, viewer))
        if old is not None and old[0] >= version:
            return False
        self._views[(game_id, viewer)] = (version, view)
        return True

    async def put_views(self, game_id: str, version: int, views: Mapping[str, bytes],
                        ttl_seconds: int = 86_400) -> bool:
        for viewer, shown in views.items():
            await self.put_view(game_id, viewer, version, shown, ttl_seconds)
        return True

    async def get_view(self, game_id: str, viewer: str) -> tuple[int, bytes] | None:
        return self._views.get((game_id, viewer))
