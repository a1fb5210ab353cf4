"""The presence port: which seats have a live stream open, across every replica.

A stream arrives when a seat opens it and leaves when it closes; while it stays open its
replica renews it every RENEW_MS. A stream not renewed for LAPSE_MS (its replica died)
no longer counts, and its seat is away since it was last renewed. Presence is the server's
observation, never a game event; the abandonment rule (docs/rules.md §13.5) reads it.

Every adapter keeps, per game, one entry per open stream (`s:<seat>:<stream>` -> when it
was last renewed) and one per seat (`since:<seat>` -> when it last connected or left), and
reads them with `seen` below, so they agree to the millisecond.
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


class PresenceUnavailable(Exception):
    """The board cannot be reached: presence is unknown for now (views show none, and no
    abandonment is judged until it is back)."""


class OpenStream(msgspec.Struct, frozen=True):
    game_id: str
    seat: int
    stream: str


class PresenceBoard(Protocol):
    async def arrive(self, game_id: str, seat: int, stream: str, now: int) -> None: ...

    async def leave(self, game_id: str, seat: int, stream: str, now: int) -> None: ...

    async def renew(self, streams: Sequence[OpenStream], now: int) -> None:
        """Streams still open on this replica; one that already left stays gone."""
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


def live(entries: Mapping[str, int], seat: int, now: int, lapse: int = LAPSE_MS) -> list[int]:
    """When each live stream of the seat was last renewed."""
    prefix = f"s:{seat}:"
    return [at for key, at in entries.items() if key.startswith(prefix) and at > now - lapse]


def seen(entries: Mapping[str, int], count: int, now: int, lapse: int = LAPSE_MS) -> list[Seen]:
    """Each seat's presence from a game's entries."""
    board = []
    for seat in range(count):
        renewed = live(entries, seat, now, lapse)
        since = entries.get(since_key(seat))
        if renewed:
            board.append(Seen(True, since, max(renewed) + lapse))
            continue
        prefix = f"s:{seat}:"
        lapsed = [at for key, at in entries.items() if key.startswith(prefix)]
        last = max([*lapsed, *([since] if since is not None else [])], default=None)
        board.append(Seen(False, last))
    return board
