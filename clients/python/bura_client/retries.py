"""Which answers are retried, and how long to wait: the one place the rules live."""

from __future__ import annotations

import random
from dataclasses import dataclass

import httpx

# Answers after which the same request (with the same Idempotency-Key) is safe and useful
# to send again: the server was busy or down, or it failed before it could answer.
RETRIED_STATUSES = {429, 500, 502, 503, 504}
RETRIED_CODES = {"busy"}  # 409 busy: the game changed too often while deciding


@dataclass(frozen=True)
class Retries:
    attempts: int = 4  # sends in all, the first included
    base_delay: float = 0.1
    max_delay: float = 5.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(self.max_delay * 4, max(0.0, retry_after))
        backoff = min(self.max_delay, self.base_delay * 2.0**attempt)
        return float(backoff * (0.5 + random.random() / 2))


def retried(status: int, code: str | None) -> bool:
    return status in RETRIED_STATUSES or (status == 409 and code in RETRIED_CODES)


def transient(error: Exception) -> bool:
    """No answer came (a connection refused or dropped, a timeout): send it again. A URL
    no request can be sent to (no http:// or https://) never will be."""
    return isinstance(error, httpx.TransportError) and not isinstance(
        error, httpx.UnsupportedProtocol
    )
