"""The hash chain of a game's record: every event row is hashed onto the one before it, so
an edited, removed or reordered row breaks every hash after it.

    hash(v) = SHA-256(hash(v - 1) || canonical(v)),   hash(0) = 32 zero bytes

canonical(v) is every recorded field of the row, each written as a 4-byte big-endian
length then its bytes (NULL: the length ffffffff and no bytes), in the order of `canonical`
below; numbers are decimal text, text is UTF-8, the time is whole microseconds since
1970-01-01 UTC. The PostgreSQL store computes the same in SQL (bura_link)."""

from __future__ import annotations

import hashlib

GENESIS = bytes(32)
_NULL = b"\xff\xff\xff\xff"


def _field(value: bytes | str | int | None) -> bytes:
    if value is None:
        return _NULL
    raw = value if isinstance(value, bytes) else str(value).encode()
    return len(raw).to_bytes(4, "big") + raw


def canonical(
    stream_id: str,
    version: int,
    type: str,
    schema_version: int,
    data: bytes,
    command_id: str | None,
    actor: int | None,
    correlation_id: str | None,
    recorded_at: int,
) -> bytes:
    """The row's fields in chain order; recorded_at in whole microseconds since the epoch."""
    fields = (stream_id, version, type, schema_version, data, command_id, actor,
              correlation_id, recorded_at)  # fmt: skip
    return b"".join(_field(v) for v in fields)


def link(previous: bytes, record: bytes) -> bytes:
    return hashlib.sha256(previous + record).digest()
