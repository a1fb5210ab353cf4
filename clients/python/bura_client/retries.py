"""Which answers are retried, and how long to wait: the one place the rules live."""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

import httpx

# Answers after which the same request (with the same Idempotency-Key) is safe and useful
# to send again: the server was busy or down, or it failed before it could answer, or the
# request did not arrive whole (408 request_timeout).
RETRIED_STATUSES = {408, 429, 500, 502, 503, 504}
RETRIED_CODES = {"busy"}  # 409 busy: the game changed too often while deciding

# Answers that say nothing was done (the server's README, "Errors"): the only ones after
# which a request without an Idempotency-Key (POST /games) is sent again. A 500, a 502 or
# 504 from a proxy, or a 503 `outcome_unknown` may come after the request was carried out.
# rate_limited: refused before anything was done; request_timeout: the request did not
# arrive whole, so nothing was done with it
UNDONE_STATUSES = {408, 429}
UNDONE_CODES = {"store_unavailable", "shutting_down"}  # 503: nothing was written
# Failures before the request could be sent: no connection, so nothing reached the server.
UNSENT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class Retries:
    attempts: int = 4  # sends in all, the first included
    base_delay: float = 0.1
    max_delay: float = 5.0
    # the longest Retry-After waited out as said; a longer one is waited this long (a
    # server's rate window is 10 s by default, BURA_RATE_WINDOW_SECONDS)
    longest_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(self.longest_retry_after, max(0.0, retry_after))
        backoff = min(self.max_delay, self.base_delay * 2.0**attempt)
        return float(backoff * (0.5 + random.random() / 2))


def retried(status: int, code: str | None, *, once: bool = False) -> bool:
    """Whether to send again after this answer; `once`: a request that carries no
    Idempotency-Key, sent again only when the answer says nothing was done."""
    if once:
        return status in UNDONE_STATUSES or (status == 503 and code in UNDONE_CODES)
    return status in RETRIED_STATUSES or (status == 409 and code in RETRIED_CODES)


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """A Retry-After header's seconds: delay-seconds or an HTTP-date (RFC 9110 §10.2.3);
    None when absent or unreadable (the normal backoff then applies)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def transient(error: Exception, *, once: bool = False) -> bool:
    """No answer came (a connection refused or dropped, a timeout): send it again. A
    request that cannot be sent as it is never will be: a URL without http:// or https://,
    or a header value HTTP does not allow (a token with a space at either end: httpx's
    LocalProtocolError)."""
    if once:  # no Idempotency-Key: only when the request cannot have reached the server
        return isinstance(error, UNSENT_ERRORS)
    return isinstance(error, httpx.TransportError) and not isinstance(
        error, httpx.UnsupportedProtocol | httpx.LocalProtocolError
    )
