"""/games/{id}/commands: a seat's move, and what became of one."""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, get, post
from litestar.di import NamedDependency
from litestar.exceptions import ValidationException
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath, HeaderParameter, JSONBody
from litestar.types import ASGIApp, Receive, Scope, Send

from domain.cards import parse_cards
from domain.commands import Lead, PlayerCommand, Respond
from services.app.callers import Caller
from services.app.errors import Forbidden
from services.app.results import CommandStatus, Outcome
from services.bootstrap import Runtime
from services.http.deps import token_in
from services.http.errors import responses
from services.http.middleware import request_id
from services.http.schemas import strictly, too_deep

# What an Idempotency-Key may be; the lookup's path segment is held to the same.
KEY_PATTERN = r"^[\x20-\x7e]+$"
KEY_MAX = 200
_KEY = re.compile(KEY_PATTERN)


def key_fits(key: str) -> bool:
    """An Idempotency-Key, or a lookup's key, as KEY_PATTERN and KEY_MAX allow it."""
    return len(key) <= KEY_MAX and _KEY.fullmatch(key) is not None


# The one place the route's own work is skipped (see `straight`); tests switch it off to
# hold the two ways to the same answers.
STRAIGHT = True
_encode = msgspec.json.Encoder().encode
_READ = frozenset({b"authorization", b"idempotency-key", b"content-length", b"content-type"})
_FAILED = "bura.command_failed"  # scope key: what the straight way raised, for the route


def straight(app: ASGIApp) -> ASGIApp:
    """A seat's well-formed command, sent the way clients send it, goes straight to the
    game service, past the framework's per-request work for a route (its signature model,
    dependency injection, the lenient decode of `data` that `command` then does again
    strictly, the response object). It runs where the route would, inside the request id,
    deadline and rate limit middleware, and answers what the route answers, byte for byte.

    Anything else is the route's: a request this does not recognise as plainly valid (a
    missing or repeated header, a key out of pattern, a body too big, too deep or not a
    command, an unknown token, a spectator or the operator) goes on to `command`
    untouched, since nothing has happened yet. Once the command is sent, there is no
    going back: if the game service raises, the exception is handed to the route, which
    raises it as its own, so the error is rendered by the one set of handlers."""

    async def handle(scope: Scope, receive: Receive, send: Send) -> None:
        if not STRAIGHT:  # the route's own middleware: only its POSTs come here
            await app(scope, receive, send)
            return
        given: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            if name in _READ:
                if name in given:  # said twice: which one counts is the route's to say
                    await app(scope, receive, send)
                    return
                given[name] = value
        handler = scope["route_handler"]
        length, kind = given.get(b"content-length", b""), given.get(b"content-type")
        limit = (
            handler.resolve_request_max_body_size() or 0
            if isinstance(handler, HTTPRouteHandler)
            else 0
        )
        if not (length.isdigit() and int(length) <= limit) or (
            kind is not None and not kind.lower().startswith(b"application/json")
        ):
            await app(scope, receive, send)
            return
        runtime: Runtime = scope["app"].state.runtime
        game_id: str = scope["path_params"]["game_id"]
        command_id = None
        if (key := given.get(b"idempotency-key")) is not None:
            command_id = key.decode("latin-1")
            if not key_fits(command_id):
                await app(scope, receive, send)
                return
        raw = await Request[Any, Any, Any](scope, receive).body()  # kept for the route
        try:
            token = token_in(given.get(b"authorization", b"").decode("latin-1"))
            if token is None or too_deep(raw) is not None:
                raise LookupError
            caller = await runtime.seating.caller(token, game_id)
            if caller.seat is None:
                raise LookupError
            command: PlayerCommand = canonical(strictly(raw, PlayerCommand))
        except Exception:
            await app(scope, receive, send)
            return
        try:
            outcome = await runtime.games.execute(
                game_id,
                caller.seat,
                command,
                command_id=command_id,
                correlation_id=request_id.get(),
            )
        except Exception as failed:
            scope.setdefault("state", {})[_FAILED] = failed
            await app(scope, receive, send)
            return
        body = _encode(outcome)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body, "more_body": False})

    return handle


def canonical(command: PlayerCommand) -> PlayerCommand:
    """Cards in their one code (`10h` -> `10H`); anything that is no card is a 400 here,
    where input enters, and never reaches the rules."""
    if isinstance(command, Lead | Respond):
        return msgspec.structs.replace(command, cards=parse_cards(command.cards))
    return command


class CommandsController(Controller):
    path = "/games"
    tags = ("commands",)
    security = [{"bearer": []}]  # noqa: RUF012 (Litestar reads it per controller)

    @post(
        "/{game_id:str}/commands",
        operation_id="sendCommand",
        responses=responses(400, 401, 403, 404, 408, 409, 413, 422, 429, 431, 500, 503),
        status_code=200,
        summary="Send a command (seat token)",
        middleware=[straight],
    )
    async def command(
        self,
        request: Request[Any, Any, Any],
        game_id: FromPath[str],
        caller: NamedDependency[Caller],
        runtime: NamedDependency[Runtime],
        data: JSONBody[PlayerCommand],
        idempotency_key: Annotated[
            str | None,
            HeaderParameter(
                name="Idempotency-Key",
                min_length=1,
                max_length=KEY_MAX,
                pattern=KEY_PATTERN,
                required=False,
                description="Any text you choose, one per move: a retry with the same key "
                "returns the first answer and is never a second move",
            ),
        ] = None,
    ) -> Outcome:
        """Acts as the token's seat. Put the game version the player acted on in `seen`:
        the command is then judged on exactly that table, or refused with 409
        `table_changed` (and the current `version`) if the game has moved on. Send an
        Idempotency-Key: a retry with the same key and body returns the first answer and
        is never a second move (a second draw loses the deal); the same key with another
        body, or from another seat, is 422 `idempotency_key_reused`. A 503
        `outcome_unknown` may have been applied: retry with the same key, or ask
        GET /games/{id}/commands/{key}."""
        failed = request.scope.get("state", {}).pop(_FAILED, None)
        if failed is not None:  # raised on `straight`'s way, after the command was sent
            raise failed
        if caller.seat is None:
            raise Forbidden("only a seat token sends commands")
        # Decoded again, strictly: the framework coerces ("2" for 2, 0 for false), and a
        # coerced "count" is a double draw the player never sent.
        command: PlayerCommand = strictly(await request.body(), PlayerCommand)
        return await runtime.games.execute(
            game_id,
            caller.seat,
            canonical(command),
            command_id=idempotency_key,
            correlation_id=request_id.get(),
        )

    @get(
        "/{game_id:str}/commands/{command_id:path}",
        operation_id="getCommand",
        responses=responses(400, 401, 403, 404, 429, 503),
        summary="What became of a command (the seat that sent it, or the operator)",
    )
    async def command_status(
        self,
        game_id: FromPath[str],
        command_id: FromPath[str],
        caller: NamedDependency[Caller],
        runtime: NamedDependency[Runtime],
    ) -> CommandStatus:
        """`applied`, with the version it brought the game to and its events as the caller
        may see them; or `unknown`: nothing was applied under this key by the caller
        (another seat's key is unknown to it too). Keys stay valid for the life of the
        game. After a 503 `outcome_unknown`, ask this, or simply send the command again
        with the same key."""
        if caller.role == "spectator":
            raise Forbidden("only the seat that sent a command, or the operator, may ask")
        key = command_id.removeprefix("/")
        if not key_fits(key):
            raise ValidationException(
                f"command key: 1 to {KEY_MAX} printable ASCII characters, as in Idempotency-Key"
            )
        return await runtime.games.command(game_id, key, caller.viewer)
