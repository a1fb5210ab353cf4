"""/games/{id}/stream: Server-Sent Events of the caller's view."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.exceptions import ServiceUnavailableException, ValidationException
from litestar.params import FromPath, HeaderParameter
from litestar.response import Stream

from services.app.callers import Caller
from services.app.games import GameService
from services.http.errors import ERRORS
from services.live.projector import Projector


def _resume_after(last_event_id: str | None) -> int | None:
    if last_event_id is None or not last_event_id.strip():
        return None
    try:
        last = int(last_event_id)
    except ValueError:
        raise ValidationException("Last-Event-ID must be a game version") from None
    if last < 0:
        raise ValidationException("Last-Event-ID must be a game version")
    return last


class StreamController(Controller):
    path = "/games"
    tags = ("streams",)

    @get(
        "/{game_id:str}/stream",
        responses=ERRORS,
        summary="Server-Sent Events of the caller's view",
        response_description="text/event-stream: `event: view` messages whose `id` is the game "
        "version and whose data is {version, event, view}; `: keep-alive` comments; "
        "`event: end` when the game is over; `event: shutdown` when the server stops "
        "(reconnect with Last-Event-ID).",
    )
    async def stream(
        self,
        game_id: FromPath[str],
        caller: NamedDependency[Caller],
        games: NamedDependency[GameService],
        projector: NamedDependency[Projector],
        last_event_id: Annotated[
            str | None, HeaderParameter(name="Last-Event-ID", required=False, max_length=20)
        ] = None,
    ) -> Stream:
        """A new stream starts with the current view; a reconnect with Last-Event-ID first
        gets one message for every version it missed, none twice."""
        last = _resume_after(last_event_id)
        if projector.draining.is_set():
            raise ServiceUnavailableException("the server is shutting down; reconnect")
        await games.load(game_id)
        return Stream(
            projector.stream(game_id, caller.viewer, last),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
