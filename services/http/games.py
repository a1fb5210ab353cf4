"""/games: create a game, the operator's list, the caller's view of a game, its events, a
rematch, and the ruling on a clock pause."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import (
    FromPath,
    JSONBody,
    Parameter,
    QueryParameter,
)

from domain.cards import parse_cards
from domain.rules import in_effect
from domain.views import view
from domain.vocabulary import Status
from infra.ports.events import LAST_VERSION
from services.app.callers import Caller
from services.app.games import GameService
from services.app.listing import Listing
from services.app.results import CreatedGame, EventPage, GamePage, Outcome, TableView, with_head
from services.bootstrap import Runtime
from services.http.commands import FAILED, key_header
from services.http.created import created, game_location
from services.http.errors import responses
from services.http.middleware import request_id
from services.http.problems import JSON_BODY
from services.http.schemas import (
    CreateGame,
    EndPauseBody,
    RematchBody,
    invalid,
    strictly,
)

_DATED = re.compile(r"[0-9]{4}-")  # a time msgspec read from RFC 3339 begins with its date


def _since(request: Request[Any, Any, Any], name: str, at: datetime | None) -> datetime | None:
    """A time filter as sent: RFC 3339 only (the framework would also read a number as
    seconds since 1970), without a zone read as UTC, and a time UTC can write (year 1 at
    00:30+01:00 is not: it would be refused by the store, as a failure of the server)."""
    if at is None:
        return None
    if not _DATED.match(request.query_params.get(name, "")):
        raise invalid(name, "Invalid RFC3339 encoded datetime", "query")
    try:
        return at.astimezone(UTC) if at.tzinfo is not None else at.replace(tzinfo=UTC)
    except OverflowError:
        raise invalid(name, "a time between years 1 and 9999 once read as UTC", "query") from None


def dealt_deck(wanted: CreateGame) -> list[str] | None:
    """The deck the creation asks to deal, each card in its one code; a 400 for anything
    that is no card."""
    return list(parse_cards(wanted.deck)) if wanted.deck is not None else None


def creation_fingerprint(wanted: CreateGame, deck: list[str] | None) -> str:
    """What a creation asks for, as a hash: its canonical JSON (every option, defaults
    included and those that depend on the seats spelled out, as a view's `rules` gives
    them, cards in their one code), so that a retry spelled another way (`"dave": true`
    at two seats for no `dave`) is the same creation and any other option is another."""
    spelled = msgspec.structs.replace(wanted, rules=in_effect(wanted.rules, len(wanted.seats)))
    return creation_fingerprint_as_sent(spelled, deck)


def creation_fingerprint_as_sent(wanted: CreateGame, deck: list[str] | None) -> str:
    """The fingerprint of releases that kept the seat-dependent defaults as sent (`null`):
    what a creation recorded by one carries, so that its exact retry is still known."""
    canonical = msgspec.structs.replace(wanted, deck=deck)
    return hashlib.sha256(msgspec.json.encode(canonical)).hexdigest()


async def create(
    games: GameService,
    wanted: CreateGame,
    deck: list[str] | None,
    correlation_id: str | None,
    key: str | None = None,
) -> CreatedGame:
    """The game `wanted` dealt (under the operator's Idempotency-Key `key`, if given): by
    the route, and by the front door (services/http/front.py)."""
    return await games.create(
        [s.name for s in wanted.seats],
        wanted.rules,
        seed=wanted.seed,
        dealer=wanted.dealer,
        deck=deck,
        correlation_id=correlation_id,
        key=key,
        # always: a creation sent without a key is made under one of the server's, which a
        # retry after an unknown outcome sends with the same body
        said=creation_fingerprint(wanted, deck),
        said_as_sent=creation_fingerprint_as_sent(wanted, deck),
    )


class GamesController(Controller):
    path = "/games"
    tags = ("games",)
    security = [{"bearer": []}]  # noqa: RUF012 (Litestar reads it per controller)

    @post(
        "/",
        operation_id="createGame",
        responses=responses(
            400,
            401,
            403,
            413,
            422,
            429,
            503,
            only={
                400: (*JSON_BODY, "bad_card", "bad_option", "bad_deck", "bad_dealer", "bad_setup")
            },
        ),
        status_code=201,
        summary="Create a game (operator key)",
    )
    async def create_game(
        self,
        request: Request[Any, Any, Any],
        operator: NamedDependency[Caller],
        games: NamedDependency[GameService],
        data: JSONBody[CreateGame],
        idempotency_key: Annotated[
            str | None,
            key_header(
                "Any text you choose, one per game: a retry with the same key answers with "
                "the game the first try created, never a second game"
            ),
        ] = None,
    ) -> Response[CreatedGame]:
        """Deals the first deal (with `shuffle: "seats"`, opens it for the seats' seeds: the
        answer's `shuffle` holds the server's commitment and the deadline). Returns one
        secret token per seat and a spectator token: hand each to its player; only their
        hashes are stored. Table options are decoded strictly: `"stake": "3"` or
        `"dave": 1` is a 400 naming the option.

        Send an Idempotency-Key to make a retry safe: the same key and options answer
        (201) with the game the first try created, its tokens and the version it was
        dealt at, `duplicate: true`; the same key with other options is 422
        `idempotency_key_reused`. A key is the operator's: it holds while the operator
        key (BURA_OPERATOR_KEY) is unchanged."""
        failed = request.scope.get("state", {}).pop(FAILED, None)
        if failed is not None:  # raised on the front door's way, once the deal was begun
            raise failed
        data = strictly(await request.body(), CreateGame)
        assert isinstance(data, CreateGame)
        made = await create(games, data, dealt_deck(data), request_id.get(), idempotency_key)
        return created(made, game_location(made.game_id))

    @get(
        "/",
        operation_id="listGames",
        responses=responses(400, 401, 403, 429, 503, only={400: ("bad_request", "bad_cursor")}),
        summary="List games (operator key)",
    )
    async def list_games(
        self,
        request: Request[Any, Any, Any],
        operator: NamedDependency[Caller],
        listing: NamedDependency[Listing],
        status: Annotated[
            Status | None,
            QueryParameter(description="Only games in this status; every game if left out"),
        ] = None,
        created_since: Annotated[
            datetime | None,
            QueryParameter(
                description="Only games created at or after this time (RFC 3339; a time "
                "without a zone is UTC)"
            ),
        ] = None,
        updated_since: Annotated[
            datetime | None,
            QueryParameter(
                description="Only games whose last event was recorded at or after this time "
                "(RFC 3339; a time without a zone is UTC): a few seconds before your last "
                "sync began"
            ),
        ] = None,
        cursor: Annotated[
            str | None,
            QueryParameter(
                min_length=1,
                max_length=200,
                description="The `next_cursor` of the page before, as it was given (opaque, "
                "sealed by the server); the first page if left out",
            ),
        ] = None,
        limit: Annotated[
            int, QueryParameter(ge=1, le=200, description="Games on one page at most")
        ] = 50,
    ) -> GamePage:
        """Games in the order they were created, each with its seats, rules, version,
        status, result, when it was created and last changed, and its rematch links.
        Filters: `status`, `created_since`, `updated_since` (RFC 3339; a time without a zone
        is UTC). A page holds `limit` games; pass its `next_cursor` as `cursor` for the next
        (null on the last page). To follow what changed, keep the time of your last sync and
        list with `updated_since` from a few seconds before it. An entry's status and result
        are those of its last event."""
        return await listing.page(
            status=status,
            created_since=_since(request, "created_since", created_since),
            updated_since=_since(request, "updated_since", updated_since),
            cursor=cursor,
            limit=limit,
        )

    @get(
        "/{game_id:str}",
        operation_id="getView",
        responses=responses(400, 401, 403, 404, 429, 500, 503),
        summary="The caller's view of the table",
    )
    async def get_game(
        self,
        game_id: FromPath[str],
        caller: NamedDependency[Caller],
        runtime: NamedDependency[Runtime],
        seen: Annotated[
            int,
            Parameter(
                ge=0,
                le=LAST_VERSION,
                description="The last version the caller has seen (a command's answer, a "
                "stream message): the view is never older than it. Behind a load balancer "
                "another replica may not yet have heard of a command just answered; this "
                "makes it read the store first. A version the game has not reached gives "
                "the current table.",
            ),
        ] = 0,
    ) -> TableView:
        """The table as the caller may see it, with the clock as of the view's `now` (each
        seat's `deadline`, `time_left`, `time_bank`), each seat's presence, and the
        rematch links. `chain_head` is the record's hash at `version`, for whoever may see
        the whole record; everyone gets its `receipt` (docs/fairness.md §4)."""
        # the runtime, not its parts, as dependencies: Litestar resolves dependencies of
        # one level together in a task group, which costs a command more than it saves
        games = runtime.games
        state, head = await games.current(game_id, seen)
        now = games.now()
        presence = await runtime.attendance.presence(game_id, state, now)
        rematch = await runtime.listing.rematch(game_id, state)
        shown = view(state, caller.viewer, now=now, presence=presence, rematch=rematch)
        return with_head(shown, state, caller.viewer, head)

    @get(
        "/{game_id:str}/events",
        operation_id="listEvents",
        responses=responses(400, 401, 403, 404, 429, 500, 503),
        summary="Events after a version, redacted for the caller",
    )
    async def get_events(
        self,
        game_id: FromPath[str],
        caller: NamedDependency[Caller],
        runtime: NamedDependency[Runtime],
        after: Annotated[
            int,
            Parameter(ge=0, le=LAST_VERSION, description="Only the events after this version"),
        ] = 0,
    ) -> EventPage:
        """Every event after `after`, in version order, each as the caller may see it: a
        card another seat holds is left out of a seat's or the spectator's copy (the
        operator's is the whole record). `version` is the game's version as of this page,
        never older than its last event; poll again with `after` set to it."""
        return await runtime.games.page(game_id, caller.viewer, after)

    @post(
        "/{game_id:str}/rematch",
        operation_id="startRematch",
        responses=responses(
            400,
            401,
            403,
            404,
            409,
            413,
            422,
            429,
            500,
            503,
            only={400: JSON_BODY, 409: ("game_not_finished", "rematch_exists")},
        ),
        status_code=201,
        summary="Start the rematch of a finished game (operator key)",
    )
    async def rematch(
        self,
        game_id: FromPath[str],
        operator: NamedDependency[Caller],  # its 401 asks for the operator key alone
        games: NamedDependency[GameService],
        data: JSONBody[RematchBody | None] = None,
        idempotency_key: Annotated[
            str | None,
            key_header(
                "Any text you choose: a retry with the same key answers with the rematch "
                "the first try started"
            ),
        ] = None,
    ) -> Response[CreatedGame]:
        """A new game with the same seats and rules, dealt by the winner (of several
        winners, the first clockwise from the last dealer), linked both ways: its
        `rematch_of` names this game, and this game's view and list entry name it as
        `rematch`. New tokens for every seat. 409 `game_not_finished` while the game is
        on, 409 `rematch_exists` once it has its rematch. Under an Idempotency-Key, a retry
        with the same key (and `seed`) answers with the rematch the first try started, its
        tokens and all, `duplicate: true`; the key with another seed or game, or one used
        by `POST /games`, is 422 `idempotency_key_reused`."""
        made = await games.rematch(
            game_id,
            seed=data.seed if data else None,
            correlation_id=request_id.get(),
            key=idempotency_key,
        )
        return created(made, game_location(made.game_id))

    @post(
        "/{game_id:str}/resume",
        operation_id="resumeGame",
        responses=responses(
            400,
            401,
            403,
            404,
            409,
            413,
            429,
            500,
            503,
            only={400: JSON_BODY, 409: ("not_paused", "game_over", "busy")},
        ),
        status_code=200,
        summary="Rule on a clock paused by a timeout (operator key)",
    )
    async def resume(
        self,
        game_id: FromPath[str],
        operator: NamedDependency[Caller],  # its 401 asks for the operator key alone
        games: NamedDependency[GameService],
        data: JSONBody[EndPauseBody | None] = None,
    ) -> Outcome:
        """At a table with `on_timeout: "pause"` a timeout stops the clock and judges
        nothing. `{"verdict": "play_on"}` (the default) gives the seat due a fresh turn;
        `{"verdict": "lose_deal"}` rules the deal lost on time (reason `timeout`). A seat
        that acts during the pause ends it too. 409 `not_paused` when no timeout awaits a
        ruling."""
        verdict = data.verdict if data else "play_on"
        return await games.end_pause(game_id, verdict, correlation_id=request_id.get())
