"""The presence port: which seats have a live stream open, across every replica.

A stream arrives when a seat opens it and leaves when it closes; while it stays open its
replica renews it every RENEW_MS. A stream not renewed for LAPSE_MS (its replica died)
no longer counts, and its seat is away since it was last renewed. Presence is the server's
observation, never a game event; the abandonment rule (docs/rules.md §13.5) reads it.

Every adapter keeps, per game, one entry per open stream (`s:<seat>:<stream>` -> when it
was last renewed) and one per seat (`since:<seat>` -> when it last connected or left), and
reads them with `seen` below, so they agree to the millisecond. A stream that left keeps its
entry a lapse longer as a tombstone (minus when it left), so that a renewal already on its
way does not bring it back.

The board may lose its entries while their streams stay open (Redis restarted empty, failed
over, or evicted the game; the in-process board forgot the game): a renewal of a stream
whose entry is gone, not left, writes it again, and dates the seat's connection from when
the stream opened if the board has no date for it (a seat whose stream stayed open all
along was never away). The renewal also marks the game `restored` (when it did); a seat
with no entry at all in a restored game is not known to be away before a lapse after that
(its stream may live on a replica that has not renewed since), and `Seen.unknown_until`
says so: abandonment is never judged from the loss of the board's state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import msgspec

RENEW_MS = 5_000
LAPSE_MS = 15_000


class Seen(msgspec.Struct, frozen=True):
    """A seat's presence at some moment (ms since 1970-01-01 UTC)."""

    connected: bool
    since: int | None = None  # when it connected, or since when it has been away; None: never
    until: int | None = None  # connected: when it lapses unless one of its streams is renewed
    # not connected, and nothing says since when (the board lost its state a moment ago):
    # its absence is not known before this, so it counts from here (docs/deploy.md)
    unknown_until: int | None = None


class PresenceUnavailable(Exception):
    """The board cannot be reached: presence is unknown for now (views show none, and no
    abandonment is judged until it is back)."""


class OpenStream(msgspec.Struct, frozen=True):
    game_id: str
    seat: int
    stream: str
    since: int | None = None  # when it opened: the seat's connection if the board lost it


class PresenceBoard(Protocol):
    # Whether its entries outlive the process (Redis: yes; the in-process board: no)
    lasting: bool

    async def arrive(self, game_id: str, seat: int, stream: str, now: int) -> None: ...

    async def leave(self, game_id: str, seat: int, stream: str, now: int) -> None: ...

    async def renew(self, streams: Sequence[OpenStream], now: int) -> None:
        """Streams still open on this replica; one that already left stays gone, one whose
        entry the board lost is written again."""
        ...

    async def seats(self, game_id: str, count: int, now: int) -> list[Seen]:
        """Each seat of the game, 0 to count - 1, as of `now`."""
        ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...


def stream_key(seat: int, stream: str) -> str:
    return f"s:{seat}:{stream}"


def since_key(seat: int) -> str:
    return f"since:{seat}"


RESTORED = "restored"  # when a renewal first wrote again an entry the board had lost


def left(at: int) -> int:
    """A stream entry's tombstone: it left at `at`."""
    return -at


def stale(value: int, now: int, lapse: int = LAPSE_MS) -> bool:
    """A tombstone no renewal on its way can race any more."""
    return value < 0 and -value <= now - lapse


def live(entries: Mapping[str, int], seat: int, now: int, lapse: int = LAPSE_MS) -> list[int]:
    """When each live stream of the seat was last renewed."""
    prefix = f"s:{seat}:"
    return [at for key, at in entries.items() if key.startswith(prefix) and at > now - lapse]


def seen(
    entries: Mapping[str, int],
    count: int,
    now: int,
    lapse: int = LAPSE_MS,
    unknown_until: int | None = None,
) -> list[Seen]:
    """Each seat's presence from a game's entries. `unknown_until`: the board itself may
    have lost entries before then (the adapter knows); a seat with no entry at all is not
    known away before it, nor before a lapse after the game was restored."""
    restored = entries.get(RESTORED)
    floors = [*([unknown_until] if unknown_until is not None else [])]
    if restored is not None:
        floors.append(restored + lapse)
    floor = max(floors, default=None)
    board = []
    for seat in range(count):
        renewed = live(entries, seat, now, lapse)
        since = entries.get(since_key(seat))
        if renewed:
            board.append(Seen(True, since, max(renewed) + lapse))
            continue
        prefix = f"s:{seat}:"
        lapsed = [at for key, at in entries.items() if key.startswith(prefix) and at >= 0]
        last = max([*lapsed, *([since] if since is not None else [])], default=None)
        board.append(Seen(False, last, unknown_until=floor if last is None else None))
    return board
