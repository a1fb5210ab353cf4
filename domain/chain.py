"""The hash chain of a game's record: every event row is hashed onto the one before it, so
an edited, removed or reordered row breaks every hash after it.

    hash(v) = SHA-256(hash(v - 1) || canonical(v)),   hash(0) = 32 zero bytes

canonical(v) is every recorded field of the row, each written as a 4-byte big-endian
length then its bytes (NULL: the length ffffffff and no bytes), in the order of `canonical`
below; numbers are decimal text, text is UTF-8, the time is whole microseconds since
1970-01-01 UTC. The PostgreSQL store computes the same in SQL (bura_link); docs/fairness.md
gives test vectors."""

from __future__ import annotations

import functools
import hashlib
import hmac
import re
import struct
from collections.abc import Iterable

import msgspec

GENESIS = bytes(32)
# A link as files write it: one spelling only (64 lower-case hex digits), so that no byte
# of a bundle or an export can change unseen.
HASH_HEX = re.compile("[0-9a-f]{64}")
_NULL = b"\xff\xff\xff\xff"
_length = struct.Struct(">I").pack  # a field's length, 4 bytes big-endian


def field(value: bytes | str | int | None) -> bytes:
    """One framed field: its length (4 bytes, big-endian) and its bytes; NULL is ffffffff."""
    if value is None:
        return _NULL
    raw = value if isinstance(value, bytes) else str(value).encode()
    return _length(len(raw)) + raw


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
    return b"".join(field(v) for v in fields)


def link(previous: bytes, record: bytes) -> bytes:
    return hashlib.sha256(previous + record).digest()


def links(
    previous: bytes,
    stream_id: str,
    first_version: int,
    events: Iterable[tuple[str, int, bytes]],
    command_id: str | None,
    actor: int | None,
    correlation_id: str | None,
    recorded_at: int,
) -> list[bytes]:
    """The hashes of one append's rows, chained onto `previous`: the rows are `events`
    (type, schema_version, data) from first_version on, all with the same metadata and
    time. The same as link(previous, canonical(...)) row by row (a test holds them
    equal), with the fields the rows share framed once and each event type's framing
    kept: a store computes this on every append."""
    head = field(stream_id)
    tail = field(command_id) + field(actor) + field(correlation_id) + field(recorded_at)
    sha256, hashes = hashlib.sha256, []
    for version, (type, schema_version, data) in enumerate(events, first_version):
        v = b"%d" % version
        previous = sha256(
            b"".join((previous, head, _length(len(v)), v, _kind(type, schema_version),
                      _length(len(data)), data, tail))
        ).digest()  # fmt: skip
        hashes.append(previous)
    return hashes


@functools.lru_cache(maxsize=256)
def _kind(type: str, schema_version: int) -> bytes:
    """Fields 3 and 4 of canonical, framed: one per event type and schema version."""
    return field(type) + field(schema_version)


def receipt_key(game_seed: str) -> bytes:
    """The key of a game's receipts: secret while its seed is, revealed with it."""
    return hashlib.sha256(f"bura/receipt/{game_seed}".encode()).digest()


def receipt(key: bytes, head: bytes) -> str:
    """What a viewer who may not see the whole record is given instead of the chain head.

    A raw hash is a test for guesses: a row hiding a card from the viewer has little else
    it does not know (the time, often the keys), so with the hashes before and after it the
    card could be found by trying each. The receipt, HMAC-SHA256 of the head under a key
    derived from the game's secret seed, tests nothing until the seed is out; then anyone
    checks it against the record (docs/fairness.md §4)."""
    return hmac.new(key, head, hashlib.sha256).hexdigest()


class Row(msgspec.Struct, frozen=True, kw_only=True):
    """One event row as the chain sees it."""

    stream_id: str
    version: int
    type: str
    schema_version: int
    data: bytes
    command_id: str | None
    actor: int | None
    correlation_id: str | None
    recorded_at: int  # microseconds since 1970-01-01 UTC
    hash: bytes


class ChainCheck(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool
    rows: int
    head: str | None  # hex hash of the last row (None: withheld from this viewer)
    first_bad_version: int | None = None  # the first version that does not hold
    problem: str | None = None  # what is wrong there


def check_chain(stream_id: str, rows: Iterable[Row]) -> ChainCheck:
    """Recompute every link from the first row on. The first version that breaks it is
    named: a row that was edited, removed, moved or rehashed, or one missing before it."""
    previous, expected, count = GENESIS, 1, 0

    def broken(version: int, problem: str) -> ChainCheck:
        return ChainCheck(
            ok=False,
            rows=count,
            head=previous.hex(),
            first_bad_version=version,
            problem=problem,
        )

    for row in rows:
        if row.version != expected:
            if row.version > expected:
                missing = (
                    f"versions {expected}-{row.version - 1} are"
                    if row.version > expected + 1
                    else f"version {expected} is"
                )
                return broken(expected, f"{missing} missing: the next row is version {row.version}")
            return broken(expected, f"version {expected} is given as {row.version}, again")
        if row.stream_id != stream_id:
            return broken(row.version, f"the row belongs to game {row.stream_id}, not {stream_id}")
        if len(row.hash) != 32:
            return broken(row.version, "the recorded hash is not a SHA-256 digest")
        record = canonical(
            row.stream_id,
            row.version,
            row.type,
            row.schema_version,
            row.data,
            row.command_id,
            row.actor,
            row.correlation_id,
            row.recorded_at,
        )
        if link(previous, record) != row.hash:
            return broken(
                row.version,
                "the row does not hash to its recorded hash: it, or the hash of the row "
                "before it, was changed",
            )
        previous, expected, count = row.hash, expected + 1, count + 1
    return ChainCheck(ok=True, rows=count, head=previous.hex())
