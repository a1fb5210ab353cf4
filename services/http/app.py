"""The Litestar app: controllers, dependencies, error mapping, middleware, CORS, OpenAPI.
The application behind it is built by services/bootstrap.py in the app's lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

from litestar import Litestar, Request
from litestar.config.cors import CORSConfig
from litestar.enums import ScopeType
from litestar.exceptions import NotFoundException, ValidationException
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme
from litestar.types import (
    HTTPScope,
    LifeSpanReceive,
    LifeSpanScope,
    LifeSpanSend,
    Receive,
    Scope,
    Send,
)

from services import bootstrap
from services.app.jsontext import named_twice
from services.config import Settings
from services.http.commands import CommandsController
from services.http.contract import HEADERS
from services.http.cutoff import answered_if_cut_off
from services.http.deps import DEPENDENCIES
from services.http.docs import ProblemsController, assets, render_plugins
from services.http.errors import HANDLERS
from services.http.feed import FeedController
from services.http.front import FrontDoor
from services.http.games import GamesController
from services.http.head import allow_head_in, as_get, bodiless, live, route_methods
from services.http.health import HealthController, prometheus
from services.http.limits import Limits, rate_limit_middleware
from services.http.middleware import request_middleware
from services.http.pages import PagesController, static
from services.http.paths import documented, nowhere
from services.http.preflight import as_plain_options, preflight, preflight_answer
from services.http.queries import Kinds, kinds_of, mistyped
from services.http.reviews import ReviewsController
from services.http.schemas import MAX_NESTING, asked_twice, given_twice, invalid, too_deep
from services.http.streams import StreamController
from services.http.vary import varying_by_origin
from services.http.webhooks import WebhooksController
from services.metrics import Metrics

DESCRIPTION = """Event-sourced server for the card game Bura («бура», «тридцать одно»).

Create a game with the operator key, hand each seat its token, and let each player send
commands as `Authorization: Bearer <seat token>`, each with the version it acted on
(`seen`) and an `Idempotency-Key`. Every error is RFC 9457 problem details
(`application/problem+json`; the one exception is the readiness probe's 503, which lists
its checks as `/health/ready`'s 200 does): `type` is a page under `/problems/` that documents its
`code`, and `code`, `detail` (and `option`, `errors`, `version`, `command_id` where they
help) are members a client can rely on. Bodies are decoded strictly: a value of another
JSON type is never coerced, and an `integer` is written as one (`2.0` is a 400, though JSON
Schema's `integer` admits it). 400 malformed input (a name twice in one object, or
`Authorization`, `Idempotency-Key`, `Last-Event-ID` or a query parameter twice with two
values, included),
401 no or unknown token, 403 wrong game or role, 404 unknown game or version (or path),
405 `method_not_allowed` for a method the path does not have (its `Allow` header lists
those it has; not repeated under each operation), 408 a request
too slow to arrive, 409 a broken rule (the code names it, e.g. `not_your_turn`) or
`table_changed`, 413 body too large, 422 `idempotency_key_reused`, 429 rate limited
(`Retry-After`, `RateLimit`, `RateLimit-Policy`), 431 headers too large, 500
`internal_error` or `record_broken` (the game's record was changed outside the server:
GET /games/{id}/verify names the row), 503 `store_unavailable` (nothing was written) or
`outcome_unknown` (it may have been applied: retry with the same Idempotency-Key, or ask
GET /games/{id}/commands/{key}).

Live views are Server-Sent Events (`GET /games/{game_id}/stream`, described for
generators at `/schema/asyncapi.json`); a browser opens them with a stream ticket
(`POST /games/{game_id}/stream-tickets`, then `?ticket=`).

Operations: `/health/live` and `/health/ready` are below; `/metrics` (Prometheus text
format, no token, never rate limited) is left out of this document, as it is no API.
"""

# What a browser page may send and read (CORS): the headers this API defines.
REQUEST_HEADERS = [
    "Authorization",
    "Content-Type",
    "Idempotency-Key",
    "Last-Event-ID",
    "X-Request-ID",
]
# A page reads every header the document says answers carry (a 201's Location, a 401's
# WWW-Authenticate among them), the Allow of an OPTIONS, and the file name a bundle's
# download suggests
RESPONSE_HEADERS = [*HEADERS, "Allow", "Content-Disposition"]


def cors(settings: Settings) -> CORSConfig | None:
    origins = settings.allowed_origins
    if not origins:
        return None
    return CORSConfig(
        allow_origins=origins,
        allow_methods=["GET", "HEAD", "POST", "DELETE", "OPTIONS"],
        allow_headers=REQUEST_HEADERS,
        expose_headers=RESPONSE_HEADERS,
        allow_credentials=False,  # tokens travel in headers or tickets, never in cookies
        max_age=600,
    )


def _query_kinds(app: Litestar) -> Kinds:
    """The app's typed query parameters, read from its OpenAPI document once."""
    kinds: Kinds | None = getattr(app, "query_kinds", None)
    if kinds is None:
        kinds = kinds_of(app.openapi_schema.to_schema())
        app.query_kinds = kinds  # type: ignore[attr-defined]
    return kinds


async def well_formed(request: Request[Any, Any, Any]) -> None:
    """Refuse a request that gives a header naming one thing twice, with two values (a
    token, a command's key, where a stream resumes), or a query parameter so; a body
    nested too deep, before anything decodes it (a decoder recursing a thousand levels
    down fails as a server error, before any token is even checked); and one with an
    object that gives a name twice (which of the two would count is anyone's guess:
    jsontext.named_twice)."""
    if nowhere(request.scope):
        raise NotFoundException()  # as any path the API lacks: problem details
    message = "given twice with different values: send it once"
    header = given_twice(request.scope["headers"])
    if header is not None:
        raise invalid(header, message, "header")
    parameter = asked_twice(request.scope["query_string"])
    if parameter is not None:
        raise invalid(parameter, message, "query")
    if request.scope["query_string"]:
        typed = _query_kinds(request.app).get(documented(request.scope.get("path_template") or ""))
        wrong = mistyped(typed, request.query_params.multi_items()) if typed else None
        if wrong is not None:
            raise invalid(*wrong, "query")
    if request.method in ("POST", "PUT", "PATCH"):
        body = await request.body()
        depth = too_deep(body)
        if depth is not None:
            why = f"the body nests {depth} levels deep; at most {MAX_NESTING} are accepted"
            raise ValidationException(
                detail=why, extra=[{"key": "data", "message": why, "source": "body"}]
            )
        name = named_twice(body)
        if name is not None:
            raise invalid(name, "named twice in one object: give each name once", "body")


class Bura(Litestar):
    """The app, with the front door for a seat's commands (services/http/front.py): what
    it does not answer, the framework does."""

    front: FrontDoor | None = None
    vary_origin = False  # some origins are allowed (CORS): every answer varies by Origin
    cors = False  # some origins are allowed: the CORS middleware answers preflights
    query_kinds: Kinds | None = None  # its typed query parameters (services/http/queries.py)
    methods: Callable[[str], set[str]] | None = None  # each path's (services/http/head.py)

    def _one_line_startup_failure(self, send: LifeSpanSend) -> LifeSpanSend:
        """A startup that failed for a known reason (the store cannot be reached) is told
        in one line, as the server logs it, not as the traceback the framework formats."""

        async def said(message: Any) -> None:
            failure = getattr(self.state, "startup_failure", None)
            if message["type"] == "lifespan.startup.failed" and failure is not None:
                message = {**message, "message": failure}
            await send(message)

        return said

    async def __call__(
        self,
        scope: Scope | LifeSpanScope,
        receive: Receive | LifeSpanReceive,
        send: Send | LifeSpanSend,
    ) -> None:
        if scope["type"] == "lifespan":
            send = self._one_line_startup_failure(cast("LifeSpanSend", send))
        elif scope["type"] == ScopeType.HTTP:
            # cut off at the end of the shutdown grace: a 503 in words, not a bare 500
            await answered_if_cut_off(
                scope, cast("Receive", receive), cast("Send", send), self._http, self._draining
            )
            return
        await super().__call__(scope, receive, send)

    def _draining(self) -> bool:
        runtime = getattr(self.state, "runtime", None)
        return runtime is not None and runtime.projector.draining.is_set()

    async def _http(self, http: HTTPScope, receive: Receive, send: Send) -> None:
        """The request as the API answers it: the front door, HEAD as GET, OPTIONS."""
        method = http["method"]
        if self.vary_origin:
            send = varying_by_origin(send)
        front = self.front
        if method == "POST" and front is not None:
            http["app"] = http["litestar_app"] = self
            if await front(http, receive, send, super().__call__):
                return
        elif method == "HEAD" and not live(http["path"]):  # the GET, without its body
            await super().__call__(as_get(http), receive, bodiless(send))
            return
        elif method == "OPTIONS":  # its Allow names every method, HEAD where GET
            if self.cors and preflight(http):
                send = preflight_answer(http, send)
            elif self.cors:
                as_plain_options(http)
            if self.methods is None:
                self.methods = route_methods(self.routes)
            send = allow_head_in(http["path"], send, self.methods(http["path"]))
        await super().__call__(http, receive, send)


def create_app(settings: Settings, adapters: bootstrap.Adapters | None = None) -> Litestar:
    """The app. Without adapters it opens those the settings name, on the server's own
    event loop, and closes them at shutdown; given adapters are left open for the caller."""
    metrics = Metrics()
    limits = Limits(settings, metrics)  # one for the routes and the front door

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        try:
            async with bootstrap.running(settings, adapters, metrics) as runtime:
                app.state.runtime = runtime
                _query_kinds(app)  # read from the OpenAPI document now, not on a request
                yield
        except Exception as e:
            why = bootstrap.refusal(e)
            if why is not None and getattr(app.state, "runtime", None) is None:
                app.state.startup_failure = f"cannot start: {why}"  # at startup: one line
            raise

    app = Bura(
        route_handlers=[
            GamesController,
            CommandsController,
            StreamController,
            ReviewsController,
            FeedController,
            WebhooksController,
            HealthController,
            ProblemsController,
            prometheus,
            assets(),
            PagesController,
            static(),
        ],
        dependencies=DEPENDENCIES,
        middleware=[
            request_middleware(metrics, settings.request_deadline_seconds),
            rate_limit_middleware(settings, limits),
        ],
        before_request=well_formed,
        exception_handlers=HANDLERS,
        cors_config=cors(settings),
        lifespan=[lifespan],
        request_max_body_size=settings.max_body_bytes,
        openapi_config=OpenAPIConfig(
            title="Bura server",
            version="1.0",
            description=DESCRIPTION,
            path="/schema",
            use_handler_docstrings=True,
            render_plugins=render_plugins(),
            components=Components(
                security_schemes={
                    "bearer": SecurityScheme(
                        type="http",
                        scheme="bearer",
                        description="The operator key, a seat token, or the spectator token",
                    ),
                    "ticket": SecurityScheme(
                        type="apiKey",
                        name="ticket",
                        security_scheme_in="query",
                        description="A stream ticket (POST /games/{game_id}/stream-tickets): "
                        "opens one stream, once",
                    ),
                }
            ),
        ),
        debug=False,
        logging_config=None,
    )
    app.front = FrontDoor(settings, metrics, limits)
    app.vary_origin = bool(settings.allowed_origins) and "*" not in settings.allowed_origins
    app.cors = bool(settings.allowed_origins)
    return app
