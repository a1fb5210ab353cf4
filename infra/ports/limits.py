"""The rate-counter port: each request's number in its key's current window.

A window opens with a key's first request and lasts `window_seconds`; every replica counts
into the same window when the counters are shared (Redis). A hit may name the `quota` its
key is held to: a shared store may then hand a replica a few numbers at once, while the
quota is far off, so that most hits are numbered without a round trip (see
infra/redis/limits.py). Numbers stay unique across replicas, so no more than the quota
are ever numbered within it; without a quota (0), every hit is counted in the store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol


class Hit(NamedTuple):
    key: str
    window_seconds: float
    quota: int = 0  # the limit the key is held to; 0: none given


class RateCounters(Protocol):
    async def hit(self, key: str, window_seconds: float, quota: int = 0) -> tuple[int, float]:
        """Count one request of `key`: its number in the window (the requests in the window
        so far, this one included, when one process counts) and the seconds until the
        window closes."""
        ...

    async def hit_all(self, keys: Sequence[Hit | tuple[str, float]]) -> list[tuple[int, float]]:
        """hit() for each key, in order, in one call (one round trip at most)."""
        ...

    async def close(self) -> None: ...
