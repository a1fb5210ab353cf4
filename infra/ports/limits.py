"""The rate-counter port: how many requests a key has made in its current window.

A window opens with a key's first request and lasts `window_seconds`; every replica counts
into the same window when the counters are shared (Redis)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class RateCounters(Protocol):
    async def hit(self, key: str, window_seconds: float) -> tuple[int, float]:
        """Count one request of `key`: the requests in its window so far (this one
        included) and the seconds until the window closes."""
        ...

    async def hit_all(self, keys: Sequence[tuple[str, float]]) -> list[tuple[int, float]]:
        """hit() for each (key, window_seconds), in order, in one call (one round trip)."""
        ...

    async def close(self) -> None: ...
