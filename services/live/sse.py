"""Server-Sent Events framing of the live views: one message per version, its SSE `id` the
game version, its data the redacted event and the viewer's view (with the record's chain
head at that version, as in `GET /games/{id}`). The Structs below are the messages' data,
documented in the OpenAPI and AsyncAPI documents."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from domain.events import AnyEvent, Event
from domain.state import Game
from domain.views import Presence, Viewer, redact, view
from services.app.results import TableView, with_head

_encode = msgspec.json.Encoder().encode


class ViewMessage(msgspec.Struct, frozen=True):
    """`event: view`: the game at `version` as the viewer sees it, and the event that made
    it (redacted the same way; null in the first message of a stream). `latest` is false
    when the server already had a newer version as it sent this one (one command can
    record several events, and a resumed stream sends every version missed): the next
    message follows at once, so act on a message whose `latest` is true."""

    version: int
    event: AnyEvent | None
    view: TableView  # with the record's head at `version`, as GET /games/{id} gives it
    latest: bool


class EndMessage(msgspec.Struct, frozen=True):
    """`event: end`: the game is over; the stream closes."""

    reason: Literal["game_over"] = "game_over"


class ShutdownMessage(msgspec.Struct, frozen=True):
    """`event: shutdown`: this replica is stopping; reconnect with Last-Event-ID."""

    reason: Literal["server_shutdown"] = "server_shutdown"
    reconnect: bool = True


class SeatPresence(msgspec.Struct, frozen=True, kw_only=True):
    """One seat's presence, times in ms since 1970-01-01 UTC: a live stream of it open
    (`connected`; null while presence is unknown), since when it is connected or away, and
    for the seat due while away, when it will be abandoned (docs/rules.md §13.5)."""

    seat: int
    connected: bool | None
    connected_since: int | None
    away_since: int | None
    abandon_at: int | None


class PresenceMessage(msgspec.Struct, frozen=True, kw_only=True):
    """`event: presence`: a seat connected or went away. No SSE id: it is no version of the
    game (`version` is the one it was judged at), so Last-Event-ID is not moved by it."""

    version: int
    now: int  # the server's clock when it was sent, ms since 1970-01-01 UTC
    seats: tuple[SeatPresence, ...]


# event name -> the data it carries
MESSAGES: dict[str, type[msgspec.Struct]] = {
    "view": ViewMessage,
    "presence": PresenceMessage,
    "end": EndMessage,
    "shutdown": ShutdownMessage,
}

KEEPALIVE = b": keep-alive\n\n"
END = b"event: end\ndata: %s\n\n" % _encode(EndMessage())
SHUTDOWN = b"event: shutdown\ndata: %s\n\n" % _encode(ShutdownMessage())


def message(
    version: int,
    event: Event | None,
    state: Game,
    viewer: Viewer,
    head: bytes,
    now: int | None = None,
    presence: Sequence[Presence] | None = None,
    *,
    latest: bool = True,
) -> bytes:
    """One SSE message: the version as its id, the redacted event and the viewer's view
    (with the record's chain head at that version, the clock as of `now` and the seats'
    presence), and whether the server knew of no newer version as it sent it."""
    shown = redact(event, viewer, state.rules) if event is not None else None
    seen = with_head(view(state, viewer, now=now, presence=presence), state, viewer, head)
    data = _encode({"version": version, "event": shown, "view": seen, "latest": latest})
    return b"id: %d\nevent: view\ndata: %s\n\n" % (version, data)


def presence_message(
    state: Game, viewer: Viewer, now: int, presence: Sequence[Presence] | None
) -> bytes:
    """A seat connected or went away: each seat's presence (and, for the seat due while
    away, when it will be abandoned). No id: it is no version of the game, so a client
    resuming with Last-Event-ID is not moved by it."""
    seats = view(state, viewer, now=now, presence=presence).seats
    data = _encode(
        PresenceMessage(
            version=state.version,
            now=now,
            seats=tuple(
                SeatPresence(
                    seat=s.seat,
                    connected=s.connected,
                    connected_since=s.connected_since,
                    away_since=s.away_since,
                    abandon_at=s.abandon_at,
                )
                for s in seats
            ),
        )
    )
    return b"event: presence\ndata: %s\n\n" % data
