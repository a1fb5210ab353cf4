"""Server-Sent Events framing of the live views: one message per version, its SSE `id` the
game version, its data the redacted event and the viewer's view (with the record's chain
head at that version, as in `GET /games/{id}`)."""

from __future__ import annotations

import msgspec

from domain.events import Event
from domain.state import Game
from domain.views import Viewer, redact, view
from services.app.results import with_head

_encode = msgspec.json.Encoder().encode

KEEPALIVE = b": keep-alive\n\n"
END = b'event: end\ndata: {"reason":"game_over"}\n\n'
SHUTDOWN = b'event: shutdown\ndata: {"reason":"server_shutdown","reconnect":true}\n\n'


def message(version: int, event: Event | None, state: Game, viewer: Viewer, head: bytes) -> bytes:
    """One SSE message: the version as its id, the redacted event and the viewer's view."""
    shown = redact(event, viewer, state.rules) if event is not None else None
    seen = with_head(view(state, viewer), state, viewer, head)
    data = _encode({"version": version, "event": shown, "view": seen})
    return b"id: %d\nevent: view\ndata: %s\n\n" % (version, data)
