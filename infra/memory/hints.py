"""The in-process bus of the embedded default: hints fan out to this process's listeners."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from infra.ports.hints import Hint, Listener, tell


class InProcessHintBus:
    shared = False  # other processes writing the same file are never heard here

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self.errors = 0
        self._closed = False

    @property
    def subscribed(self) -> bool:
        return True  # one process hears its own hints as they are published

    async def publish(self, hint: Hint, urgent: bool = True) -> None:
        tell(self._listeners, hint)  # one process: every hint is told at once

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Hints as they are published; never a None (one process misses none of its own)."""
        self._listeners = [*self._listeners, listener]

        def stop() -> None:
            self._listeners = [f for f in self._listeners if f is not listener]

        return stop

    async def hints(self) -> AsyncIterator[Hint | None]:
        """Hints as they come; None marks a possible gap (never, in one process)."""
        queue: asyncio.Queue[Hint | None] = asyncio.Queue()
        stop = self.listen(queue.put_nowait)
        try:
            while not self._closed:
                hint = await queue.get()
                if hint is None and self._closed:
                    return
                yield hint
        finally:
            stop()

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._closed = True
        tell(self._listeners, None)
