"""What handlers are given (Litestar `Provide`): the runtime's parts and the caller."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, QueryParameter

from services.app.callers import Caller
from services.app.games import GameService
from services.app.listing import Listing
from services.app.reviews import Reviews
from services.app.tickets import Tickets
from services.app.webhooks import Webhooks
from services.bootstrap import Runtime
from services.live.attendance import Attendance
from services.live.projector import Projector
from services.live.timeline import Timeline


def bearer(request: Request[Any, Any, Any]) -> str | None:
    """The token of `Authorization: Bearer <token>`, or None."""
    return token_in(request.headers.get("authorization", ""))


def token_in(authorization: str) -> str | None:
    """The token of an Authorization header's value `Bearer <token>`, or None."""
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def _runtime(state: State) -> Runtime:
    runtime: NamedDependency[Runtime] = state.runtime
    return runtime


def _games(runtime: NamedDependency[Runtime]) -> GameService:
    return runtime.games


def _reviews(runtime: NamedDependency[Runtime]) -> Reviews:
    return runtime.reviews


def _projector(runtime: NamedDependency[Runtime]) -> Projector:
    return runtime.projector


def _timeline(runtime: NamedDependency[Runtime]) -> Timeline:
    return runtime.timeline


def _webhooks(runtime: NamedDependency[Runtime]) -> Webhooks:
    return runtime.webhooks


def _listing(runtime: NamedDependency[Runtime]) -> Listing:
    return runtime.listing


def _attendance(runtime: NamedDependency[Runtime]) -> Attendance:
    return runtime.attendance


async def _caller(
    request: Request[Any, Any, Any], game_id: FromPath[str], runtime: NamedDependency[Runtime]
) -> Caller:
    """Who the bearer token is at the game named in the path (401 or 403 otherwise)."""
    return await runtime.seating.caller(bearer(request), game_id)


def _tickets(runtime: NamedDependency[Runtime]) -> Tickets:
    return runtime.tickets


class Watcher:
    """Who watches a stream, told only when asked: a ticket is spent by the asking, so the
    stream asks once the request is known to be good (a request refused for a bad `after`
    leaves the ticket for the mended one)."""

    def __init__(self, request: Request[Any, Any, Any], runtime: Runtime, game_id: str,
                 ticket: str | None) -> None:  # fmt: skip
        self.request, self.runtime, self.game_id, self.ticket = request, runtime, game_id, ticket

    async def caller(self) -> Caller:
        """The ticket's viewer (spent on this use), else the bearer's."""
        if self.ticket is not None:
            return await self.runtime.tickets.redeem(self.game_id, self.ticket)
        return await self.runtime.seating.caller(bearer(self.request), self.game_id)


def _watcher(
    request: Request[Any, Any, Any],
    game_id: FromPath[str],
    runtime: NamedDependency[Runtime],
    ticket: Annotated[
        str | None,
        QueryParameter(
            name="ticket",
            min_length=1,
            max_length=100,
            description="A stream ticket (POST /games/{game_id}/stream-tickets), for "
            "clients that cannot send an Authorization header, such as a browser's "
            "EventSource: valid once, for a few seconds",
        ),
    ] = None,
) -> Watcher:
    return Watcher(request, runtime, game_id, ticket)


async def _operator(request: Request[Any, Any, Any], runtime: NamedDependency[Runtime]) -> Caller:
    return await runtime.seating.operator(bearer(request))


DEPENDENCIES: dict[str, Provide] = {
    "runtime": Provide(_runtime, sync_to_thread=False),
    "games": Provide(_games, sync_to_thread=False),
    "reviews": Provide(_reviews, sync_to_thread=False),
    "projector": Provide(_projector, sync_to_thread=False),
    "timeline": Provide(_timeline, sync_to_thread=False),
    "webhooks": Provide(_webhooks, sync_to_thread=False),
    "listing": Provide(_listing, sync_to_thread=False),
    "attendance": Provide(_attendance, sync_to_thread=False),
    "caller": Provide(_caller),
    "watcher": Provide(_watcher, sync_to_thread=False),
    "tickets": Provide(_tickets, sync_to_thread=False),
    "operator": Provide(_operator),
}
