"""/games: create a game, the caller's view of it, its events."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, Parameter

from domain.cards import parse_cards
from domain.views import view
from services.app.callers import Caller
from services.app.games import GameService
from services.app.results import CreatedGame, EventPage, TableView, with_head
from services.http.errors import responses
from services.http.middleware import request_id
from services.http.schemas import LAST_VERSION, CreateGame


class GamesController(Controller):
    path = "/games"
    tags = ("games",)
    security = [{"bearer": []}]  # noqa: RUF012 (Litestar reads it per controller)

    @post(
        "/",
        operation_id="createGame",
        responses=responses(400, 401, 403, 413, 429, 503),
        status_code=201,
        summary="Create a game (operator key)",
    )
    async def create_game(
        self,
        operator: NamedDependency[Caller],
        games: NamedDependency[GameService],
        data: JSONBody[CreateGame],
    ) -> CreatedGame:
        """Deals the first deal (with `shuffle: "seats"`, opens it for the seats' seeds: the
        answer's `shuffle` holds the server's commitment and the deadline). Returns one
        secret token per seat and a spectator token: hand each to its player; only their
        hashes are stored."""
        deck = list(parse_cards(data.deck)) if data.deck is not None else None
        return await games.create(
            [s.name for s in data.seats],
            data.rules,
            seed=data.seed,
            dealer=data.dealer,
            deck=deck,
            correlation_id=request_id.get(),
        )

    @get(
        "/{game_id:str}",
        operation_id="getView",
        responses=responses(400, 401, 403, 404, 429, 503),
        summary="The caller's view of the table",
    )
    async def get_game(
        self,
        game_id: FromPath[str],
        caller: NamedDependency[Caller],
        games: NamedDependency[GameService],
    ) -> TableView:
        """`chain_head` is the record's hash at `version`, for whoever may see the whole
        record; everyone gets its `receipt` (docs/fairness.md §4)."""
        state, head = await games.current(game_id)
        return with_head(view(state, caller.viewer), state, caller.viewer, head)

    @get(
        "/{game_id:str}/events",
        operation_id="listEvents",
        responses=responses(400, 401, 403, 404, 429, 503),
        summary="Events after a version, redacted for the caller",
    )
    async def get_events(
        self,
        game_id: FromPath[str],
        caller: NamedDependency[Caller],
        games: NamedDependency[GameService],
        after: Annotated[
            int,
            Parameter(ge=0, le=LAST_VERSION, description="Only the events after this version"),
        ] = 0,
    ) -> EventPage:
        return await games.page(game_id, caller.viewer, after)
