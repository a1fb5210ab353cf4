"""/games/{id}/stream: Server-Sent Events of the caller's view; /stream-tickets: tickets
that open a stream without an Authorization header (a browser's EventSource)."""

from __future__ import annotations

import logging
from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.exceptions import ServiceUnavailableException
from litestar.params import FromPath, HeaderParameter, Parameter
from litestar.response import Stream
from litestar.types import ExceptionHandlersMap

from infra.ports.events import LAST_VERSION
from infra.ports.tickets import TicketsUnavailable
from infra.throttle import Throttled
from services.app.callers import Caller
from services.app.games import GameService
from services.app.tickets import StreamTicket, Tickets
from services.http.created import created
from services.http.deps import Watcher
from services.http.errors import OUTAGE_WARN_EVERY, RETRY_AFTER, responses
from services.http.problems import ProblemDetails, instance_of, problem
from services.live.projector import Projector
from services.wording import worded

BEARER: list[dict[str, list[str]]] = [{"bearer": []}]
log = logging.getLogger("bura.http")
_unreachable = Throttled(log, OUTAGE_WARN_EVERY)  # Redis out of reach, said now and then
# A version in at most 15 digits, every one a game can reach (LAST_VERSION has 16, and
# a pattern cannot say where below it they stop); blank, as if not sent.
LAST_EVENT_ID = worded(r"^ *[0-9]{0,15} *$", "a game version: a whole number of 15 digits at most")


def _resume_after(last_event_id: str | None, after: int | None) -> int | None:
    if last_event_id is None or not last_event_id.strip():
        return after
    return int(last_event_id)  # its pattern let digits alone through, 15 at most


def _tickets_unavailable(
    request: Request[Any, Any, Any], exc: TicketsUnavailable
) -> Response[ProblemDetails]:
    """Redis down is an outage, not a bug: a 503 the client retries (or it streams with
    an Authorization header, which needs no ticket)."""
    _unreachable.warn("stream tickets cannot be reached: %s", exc)
    # a timeout in our words; else its kind, as readiness says it: the driver's text names
    # Redis's host and port
    cause = exc.__cause__
    kind = str(exc) if isinstance(cause, TimeoutError) else type(cause or exc).__name__
    return problem(
        "stream_tickets_unavailable",
        f"stream tickets cannot be reached ({kind}): ask for a ticket again in a moment, or "
        "open the stream with an Authorization header",
        headers=RETRY_AFTER,
        instance=instance_of(request.scope),
    )


OUTAGES: ExceptionHandlersMap = {TicketsUnavailable: _tickets_unavailable}


class StreamController(Controller):
    path = "/games"
    tags = ("streams",)

    @post(
        "/{game_id:str}/stream-tickets",
        operation_id="createStreamTicket",
        responses=responses(400, 401, 403, 404, 413, 429, 500, 503),
        status_code=201,
        security=BEARER,
        exception_handlers=OUTAGES,
        summary="A ticket that opens one stream once (any token of the game)",
    )
    async def create_ticket(
        self,
        game_id: FromPath[str],
        caller: NamedDependency[Caller],
        games: NamedDependency[GameService],
        tickets: NamedDependency[Tickets],
    ) -> Response[StreamTicket]:
        """For clients that cannot send `Authorization` on a stream (a browser's
        EventSource): open `GET /games/{game_id}/stream?ticket=...` within `expires_in`
        seconds. The ticket opens one stream of this game, as the token's viewer, once; to
        reconnect, take a new ticket and pass the last id seen as `after`."""
        await games.load(game_id)
        ticket = await tickets.issue(game_id, caller)
        return created(ticket, ticket.stream)

    @get(
        "/{game_id:str}/stream",
        operation_id="streamView",
        responses=responses(
            400,
            401,
            403,
            404,
            429,
            500,
            503,
            only={401: ("unauthorized", "stream_ticket_invalid")},
        ),
        security=[*BEARER, {"ticket": []}],
        summary="Server-Sent Events of the caller's view",
        exception_handlers=OUTAGES,  # a ticket is redeemed as the stream opens
        opt={"deadline": False},  # a stream lasts; each read it makes has the store's bound
        response_description="text/event-stream: `event: view` messages whose `id` is the game "
        "version and whose data is {version, event, view, latest} (act only on a `latest` "
        "one: false while a command's later events or a catch-up follow); `event: presence` "
        "when a seat connects or goes away; `: keep-alive` comments; `event: end` when the "
        "game is over; `event: shutdown` when the server stops (reconnect with Last-Event-ID).",
    )
    async def stream(
        self,
        game_id: FromPath[str],
        watcher: NamedDependency[Watcher],
        games: NamedDependency[GameService],
        projector: NamedDependency[Projector],
        last_event_id: Annotated[
            str | None,
            HeaderParameter(
                name="Last-Event-ID",
                required=False,
                max_length=20,
                pattern=LAST_EVENT_ID,
                description="The last `id` received: the stream resumes after it",
            ),
        ] = None,
        after: Annotated[
            int | None,
            Parameter(
                ge=0,
                le=LAST_VERSION,
                schema_extra={"minimum": 0},  # Litestar drops a bound of 0 on an optional int
                description="Resume after this version, as Last-Event-ID does (for clients "
                "that cannot set the header); the header wins when both are sent",
            ),
        ] = None,
    ) -> Stream:
        """A new stream starts with the current view; a reconnect with Last-Event-ID (or
        `after`) first gets one message for every version it missed, none twice."""
        last = _resume_after(last_event_id, after)
        if projector.draining.is_set():
            raise ServiceUnavailableException("the server is shutting down; reconnect")
        caller = await watcher.caller()  # last: a ticket is spent only on a good request
        await games.load(game_id)
        return Stream(
            projector.stream(game_id, caller.viewer, last),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
