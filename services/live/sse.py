"""Server-Sent Events framing of the live views: one message per version, its SSE `id` the
game version, its data the redacted event and the viewer's view (with the record's chain
head at that version, as in `GET /games/{id}`). The Structs below are the messages' data,
documented in the OpenAPI and AsyncAPI documents."""

from __future__ import annotations

from typing import Literal

import msgspec

from domain.events import AnyEvent, Event
from domain.state import Game
from domain.views import View, Viewer, redact, view
from services.app.results import with_head

_encode = msgspec.json.Encoder().encode


class ViewMessage(msgspec.Struct, frozen=True):
    """`event: view`: the game at `version` as the viewer sees it, and the event that made
    it (redacted the same way; null in the first message of a stream)."""

    version: int
    event: AnyEvent | None
    view: View


class EndMessage(msgspec.Struct, frozen=True):
    """`event: end`: the game is over; the stream closes."""

    reason: Literal["game_over"] = "game_over"


class ShutdownMessage(msgspec.Struct, frozen=True):
    """`event: shutdown`: this replica is stopping; reconnect with Last-Event-ID."""

    reason: Literal["server_shutdown"] = "server_shutdown"
    reconnect: bool = True


# event name -> the data it carries
MESSAGES: dict[str, type[msgspec.Struct]] = {
    "view": ViewMessage,
    "end": EndMessage,
    "shutdown": ShutdownMessage,
}

KEEPALIVE = b": keep-alive\n\n"
END = b"event: end\ndata: %s\n\n" % _encode(EndMessage())
SHUTDOWN = b"event: shutdown\ndata: %s\n\n" % _encode(ShutdownMessage())


def message(version: int, event: Event | None, state: Game, viewer: Viewer, head: bytes) -> bytes:
    """One SSE message: the version as its id, the redacted event and the viewer's view."""
    shown = redact(event, viewer, state.rules) if event is not None else None
    seen = with_head(view(state, viewer), state, viewer, head)
    data = _encode({"version": version, "event": shown, "view": seen})
    return b"id: %d\nevent: view\ndata: %s\n\n" % (version, data)
