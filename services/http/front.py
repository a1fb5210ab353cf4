"""The front door: a seat's well-formed command, and the operator's well-formed creation of
a game, sent the way clients send them, are taken before the framework routes them, and
answered with what the route would answer, byte for byte and header for header.

The framework's per-request work for one route (its scope set-up, its exception
middleware, its router, the request id and rate limit middleware, each with a wrapper
around `send`, then the route's signature model, dependency injection, lenient decode of
`data` and response object) was most of what a command cost above the game itself. Here
it is one function: the request id and deadline, the rate limits, the seat's token (or the
operator key), the strict decode, the game service, one `send` with every header. A
creation through the framework cost about three commands; here it costs what dealing and
writing a game does.

Anything else is the framework's, and goes to it as if this were not here:

- before the limits are counted, a request this does not recognise as plainly valid (not
  a POST to /games/{id}/commands or to /games, a repeated header, a query string of more
  than one parameter, a command's key out of pattern, a body too big or not JSON, no
  bearer token, a CORS request) goes on untouched;
- after they are counted, what is refused (429) or is not plainly valid (for a command:
  an unknown token, a spectator or the operator, a body too deep or not a command; for a
  creation: any token but the operator key, a body too deep, not a game's options or with
  a card that is no card) goes on with its request id and its count (the middlewares use
  them and count nothing again) and its body to be read again;
- once the command is sent, or the game is being dealt, there is no going back: if the
  game service raises, the route raises it as its own, so every error is rendered by the
  one set of handlers."""

from __future__ import annotations

import logging
import time
from typing import Any

import msgspec
from litestar.types import HTTPRequestEvent, Receive, ReceiveMessage, Scope, Send

from domain.commands import PlayerCommand
from infra.deadline import within
from services.app.jsontext import named_twice
from services.app.results import CreatedGame, Outcome
from services.bootstrap import Runtime
from services.config import Settings
from services.http import commands
from services.http.created import game_location
from services.http.deps import token_in
from services.http.games import create, dealt_deck
from services.http.limits import COUNTED, Counted, Kind, Limits
from services.http.middleware import REQUEST_ID, STARTED, given_request_id, timing
from services.http.schemas import CreateGame, strictly, too_deep
from services.logs import request_id
from services.metrics import Metrics

log = logging.getLogger("bura.http")

# the routes' path formats, as the metrics name them
COMMANDS = "/games/{game_id}/commands"
GAMES = "/games"
_READ = frozenset(
    {b"authorization", b"idempotency-key", b"content-length", b"content-type", b"origin"}
)
_JSON = [(b"content-type", b"application/json")]
_encode = msgspec.json.Encoder().encode


def game_of(path: str) -> str | None:
    """The game id of /games/{id}/commands, or None for any other path."""
    if not path.startswith("/games/") or not path.endswith("/commands"):
        return None
    game_id = path[7:-9]
    return game_id if game_id and "/" not in game_id else None


class FrontDoor:
    def __init__(self, settings: Settings, metrics: Metrics, limits: Limits) -> None:
        self.settings = settings
        self.metrics = metrics
        self.limits = limits  # the routes' own (services/http/limits.py)
        self.timing = timing(metrics)

    async def __call__(self, scope: Scope, receive: Receive, send: Send, app: Any) -> bool:
        """True once the request is answered, here or by `app` after it was counted;
        False when it is `app`'s to answer, untouched."""
        path = scope["path"]
        if not commands.STRAIGHT:
            return False
        game_id = game_of(path)
        if game_id is not None:
            kind: Kind = "commands"
        elif path == "/games":
            kind = "create"
        else:
            return False
        given: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            if name in _READ:
                if name in given:  # said twice: which one counts is the route's to say
                    return False
                given[name] = value
        if b"origin" in given:  # a browser's: the CORS middleware answers it
            return False
        if b"&" in scope["query_string"]:  # a parameter may be given twice: the route says
            return False
        length, media = given.get(b"content-length", b""), given.get(b"content-type")
        if not (length.isdigit() and int(length) <= self.settings.max_body_bytes) or (
            media is not None and not media.lower().startswith(b"application/json")
        ):
            return False
        command_id = None
        if (key := given.get(b"idempotency-key")) is not None:
            command_id = key.decode("latin-1")
            if not commands.key_fits(command_id):
                return False
        token = token_in(given.get(b"authorization", b"").decode("latin-1"))
        if token is None:
            return False
        runtime = scope["app"].state.runtime
        rid = given_request_id(scope)
        state = scope.setdefault("state", {})
        state[REQUEST_ID] = rid
        started = state[STARTED] = time.perf_counter()  # the routes time it from here
        counted: Counted | None = None
        if self.limits.applies(scope, kind):
            counted = state[COUNTED] = await self.limits.count(scope, kind, token)
        raw = await _body(receive)
        replay = _replaying(raw, receive)
        if counted is not None and counted.refused is not None:
            await app(scope, replay, send)
            return True
        reset = request_id.set(rid)
        answer: Outcome | CreatedGame | None
        try:
            # the store's calls, the seat's lookup included, end within the deadline
            with within(self.settings.request_deadline_seconds):
                if game_id is not None:
                    answer = await _played(runtime, token, game_id, raw, command_id, rid)
                else:
                    answer = await _created(runtime, token, raw, command_id, rid)
        except Exception as failed:  # raised once the work was begun: the route raises it
            state[commands.FAILED] = failed
            answer = None
        finally:
            request_id.reset(reset)
        if answer is None:
            await app(scope, replay, send)
            return True
        body = _encode(answer)
        headers = [
            *_JSON,
            (b"content-length", str(len(body)).encode()),
            *(counted.fields if counted is not None else ()),
            (b"x-request-id", rid.encode("latin-1")),
        ]
        status = 200
        if isinstance(answer, CreatedGame):  # as the route answers it (services/http/games.py)
            status = 201
            headers.append((b"location", game_location(answer.game_id).encode("latin-1")))
        try:
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})
        finally:
            elapsed = time.perf_counter() - started
            self.timing("POST", COMMANDS if game_id is not None else GAMES, status).observe(elapsed)
            if log.isEnabledFor(logging.DEBUG):
                log.debug(
                    "POST %s %d",
                    path,
                    status,
                    extra={
                        "method": "POST",
                        "path": path,
                        "status": status,
                        "duration_ms": round(elapsed * 1000, 2),
                        "request_id": rid,
                    },
                )
        return True


async def _played(
    runtime: Runtime, token: str, game_id: str, raw: bytes, command_id: str | None, rid: str
) -> Outcome | None:
    """The command played, if it is a seat's plainly valid command; None, with nothing
    sent, if it is not."""
    try:
        if too_deep(raw) is not None or named_twice(raw) is not None:
            return None
        caller = await runtime.seating.caller(token, game_id)
        if caller.seat is None:
            return None
        command: PlayerCommand = commands.canonical(strictly(raw, PlayerCommand))
    except Exception:
        return None
    return await runtime.games.execute(
        game_id, caller.seat, command, command_id=command_id, correlation_id=rid
    )


async def _created(
    runtime: Runtime, token: str, raw: bytes, key: str | None, rid: str
) -> CreatedGame | None:
    """The game dealt, if this is the operator's plainly valid creation; None, with
    nothing done, if it is not."""
    try:
        if too_deep(raw) is not None or named_twice(raw) is not None:
            return None
        if not runtime.seating.is_operator(token):
            return None
        wanted: CreateGame = strictly(raw, CreateGame)
        deck = dealt_deck(wanted)
    except Exception:
        return None
    return await create(runtime.games, wanted, deck, rid, key)


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away: nothing to read
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """The body read here, once more, for the framework; then whatever comes next."""
    pending = True

    async def replay() -> ReceiveMessage:
        nonlocal pending
        if pending:
            pending = False
            again: HTTPRequestEvent = {"type": "http.request", "body": body, "more_body": False}
            return again
        return await receive()

    return replay
