"""Server-Sent Events framing of the live views: one message per version, its SSE `id` the
game version, its data the redacted event and the viewer's view."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from domain.events import Event
from domain.state import Game
from domain.views import Presence, Viewer, redact, view

_encode = msgspec.json.Encoder().encode

KEEPALIVE = b": keep-alive\n\n"
END = b'event: end\ndata: {"reason":"game_over"}\n\n'
SHUTDOWN = b'event: shutdown\ndata: {"reason":"server_shutdown","reconnect":true}\n\n'


def message(
    version: int,
    event: Event | None,
    state: Game,
    viewer: Viewer,
    now: int | None = None,
    presence: Sequence[Presence] | None = None,
) -> bytes:
    """One SSE message: the version as its id, the redacted event and the viewer's view
    (with the clock as of `now` and the seats' presence)."""
    shown = redact(event, viewer, state.rules) if event is not None else None
    seen = view(state, viewer, now=now, presence=presence)
    data = _encode({"version": version, "event": shown, "view": seen})
    return b"id: %d\nevent: view\ndata: %s\n\n" % (version, data)


def presence_message(
    state: Game, viewer: Viewer, now: int, presence: Sequence[Presence] | None
) -> bytes:
    """A seat connected or went away: each seat's presence (and, for the seat due while
    away, when it will be abandoned). No id: it is no version of the game, so a client
    resuming with Last-Event-ID is not moved by it."""
    seats = view(state, viewer, now=now, presence=presence).seats
    data = _encode(
        {
            "version": state.version,
            "now": now,
            "seats": [
                {
                    "seat": s.seat,
                    "connected": s.connected,
                    "connected_since": s.connected_since,
                    "away_since": s.away_since,
                    "abandon_at": s.abandon_at,
                }
                for s in seats
            ],
        }
    )
    return b"event: presence\ndata: %s\n\n" % data
