"""The in-process bus of the embedded default: hints fan out to this process's listeners."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from infra.ports.hints import Hint


class InProcessHintBus:
    shared = False  # other processes writing the same file are never heard here

    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[Hint | None]] = set()
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
