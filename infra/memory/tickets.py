"""Stream tickets in this process's memory: the embedded default runs one process, so
single use holds there. Expired tickets are swept as new ones are issued."""

from __future__ import annotations

import time
from collections.abc import Callable


class InProcessStreamTickets:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._grants: dict[str, tuple[float, bytes]] = {}

    async def issue(self, ticket_id: str, grant: bytes, ttl_seconds: float) -> None:
        now = self.clock()
        self._grants = {k: v for k, v in self._grants.items() if v[0] > now}
        self._grants[ticket_id] = (now + ttl_seconds, grant)

    async def redeem(self, ticket_id: str) -> bytes | None:
        # No await between the read and the removal: one event loop, so it is atomic.
        found = self._grants.pop(ticket_id, None)
        if found is None or found[0] <= self.clock():
            return None
        return found[1]

    async def close(self) -> None:
        self._grants.clear()
