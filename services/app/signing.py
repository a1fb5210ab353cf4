"""Webhook signatures, as Stripe writes them: `Bura-Signature: t=<unix time>,v1=<hex>`,
the hex an HMAC-SHA256 with the endpoint's secret over "<t>.<body>". The timestamp is
the attempt's, so a receiver can refuse an old message replayed to it."""

from __future__ import annotations

import hashlib
import hmac
import time

HEADER = "Bura-Signature"
TOLERANCE = 300  # seconds a receiver should accept between t and its own clock


def digest(secret: str, timestamp: int, body: bytes) -> str:
    signed = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def signature(secret: str, timestamp: int, body: bytes) -> str:
    return f"t={timestamp},v1={digest(secret, timestamp, body)}"


def verify(
    secret: str, header: str, body: bytes, tolerance: int = TOLERANCE, now: float | None = None
) -> bool:
    """What a receiver does: the header's timestamp is recent and one of its v1 digests is
    the body's."""
    fields = [part.strip().partition("=") for part in header.split(",")]
    stamps = [value for name, _, value in fields if name == "t"]
    digests = [value for name, _, value in fields if name == "v1"]
    if len(stamps) != 1 or not stamps[0].isdigit() or not digests:
        return False
    timestamp = int(stamps[0])
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    expected = digest(secret, timestamp, body)
    return any(hmac.compare_digest(expected, d) for d in digests)
