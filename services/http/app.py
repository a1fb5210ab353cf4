"""The Litestar app: controllers, dependencies, error mapping, middleware, CORS, OpenAPI.
The application behind it is built by services/bootstrap.py in the app's lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar
from litestar.config.cors import CORSConfig
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme

from services import bootstrap
from services.config import Settings
from services.http.commands import CommandsController
from services.http.deps import DEPENDENCIES
from services.http.docs import ProblemsController, assets, render_plugins
from services.http.errors import HANDLERS
from services.http.feed import FeedController
from services.http.games import GamesController
from services.http.health import HealthController, prometheus
from services.http.limits import rate_limit_middleware
from services.http.middleware import request_middleware
from services.http.reviews import ReviewsController
from services.http.streams import StreamController
from services.http.webhooks import WebhooksController
from services.metrics import Metrics

DESCRIPTION = """Event-sourced server for the card game Bura («бура», «тридцать одно»).

Create a game with the operator key, hand each seat its token, and let each player send
commands as `Authorization: Bearer <seat token>`. Every error is RFC 9457 problem details
(`application/problem+json`): `type` is a page under `/problems/` that documents its
`code`, and `code`, `detail` (and `option`, `errors`, `version` where they help) are
members a client can rely on. 400 malformed input, 401 no or unknown token, 403 wrong game
or role, 404 unknown game, 409 a broken rule (the code names it, e.g. `not_your_turn`),
413 body too large, 429 rate limited (`Retry-After`, `RateLimit`, `RateLimit-Policy`),
503 the event store is unreachable (nothing was written; retry with the same
Idempotency-Key).

Live views are Server-Sent Events (`GET /games/{game_id}/stream`, described for
generators at `/schema/asyncapi.json`); a browser opens them with a stream ticket
(`POST /games/{game_id}/stream-tickets`, then `?ticket=`).
"""

# What a browser page may send and read (CORS): the headers this API defines.
REQUEST_HEADERS = [
    "Authorization",
    "Content-Type",
    "Idempotency-Key",
    "Last-Event-ID",
    "X-Request-ID",
]
RESPONSE_HEADERS = ["X-Request-ID", "Retry-After", "RateLimit", "RateLimit-Policy", "Allow"]


def cors(settings: Settings) -> CORSConfig | None:
    origins = settings.allowed_origins
    if not origins:
        return None
    return CORSConfig(
        allow_origins=origins,
        allow_methods=["GET", "POST", "OPTIONS"],
        allow_headers=REQUEST_HEADERS,
        expose_headers=RESPONSE_HEADERS,
        allow_credentials=False,  # tokens travel in headers or tickets, never in cookies
        max_age=600,
    )


def create_app(settings: Settings, adapters: bootstrap.Adapters | None = None) -> Litestar:
    """The app. Without adapters it opens those the settings name, on the server's own
    event loop, and closes them at shutdown; given adapters are left open for the caller."""
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        async with bootstrap.running(settings, adapters, metrics) as runtime:
            app.state.runtime = runtime
            yield

    return Litestar(
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
        ],
        dependencies=DEPENDENCIES,
        middleware=[request_middleware(metrics), rate_limit_middleware(settings, metrics)],
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
