"""Rate counters in this process's memory, for the embedded default (one process)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from infra.ports.limits import Hit

SWEEP_EVERY = 1024  # hits between sweeps of closed windows


class InProcessRateCounters:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._windows: dict[str, tuple[float, int]] = {}  # key -> (closes at, hits)
        self._hits = 0

    async def hit(self, key: str, window_seconds: float, quota: int = 0) -> tuple[int, float]:
        # one process: every hit is counted here, exactly, whatever the quota
        now = self.clock()
        self._hits += 1
        if self._hits % SWEEP_EVERY == 0:
            self._windows = {k: v for k, v in self._windows.items() if v[0] > now}
        closes, hits = self._windows.get(key, (0.0, 0))
        if closes <= now:
            closes, hits = now + window_seconds, 0
        self._windows[key] = (closes, hits + 1)
        return hits + 1, closes - now

    async def hit_all(self, keys: Sequence[Hit | tuple[str, float]]) -> list[tuple[int, float]]:
        return [await self.hit(key[0], key[1]) for key in keys]

    async def close(self) -> None:
        self._windows.clear()
