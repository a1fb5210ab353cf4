"""The Litestar app: controllers, dependencies, error mapping, middleware, OpenAPI. The
application behind it is built by services/bootstrap.py in the app's lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme

from services import bootstrap
from services.config import Settings
from services.http.commands import CommandsController
from services.http.deps import DEPENDENCIES
from services.http.errors import HANDLERS
from services.http.feed import FeedController
from services.http.games import GamesController
from services.http.health import HealthController, prometheus
from services.http.middleware import request_middleware
from services.http.reviews import ReviewsController
from services.http.streams import StreamController
from services.http.webhooks import WebhooksController
from services.metrics import Metrics

DESCRIPTION = """Event-sourced server for the card game Bura («бура», «тридцать одно»).

Create a game with the operator key, hand each seat its token, and let each player send
commands as `Authorization: Bearer <seat token>`. Every error body is
`{"code": ..., "detail": ...}`: 400 malformed input, 401 no or unknown token, 403 wrong game
or role, 404 unknown game, 409 a broken rule (the code names it, e.g. `not_your_turn`),
413 body too large, 503 the event store is unreachable (nothing was written; retry with the
same Idempotency-Key).
"""


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
            prometheus,
        ],
        dependencies=DEPENDENCIES,
        middleware=[request_middleware(metrics)],
        exception_handlers=HANDLERS,
        lifespan=[lifespan],
        request_max_body_size=settings.max_body_bytes,
        openapi_config=OpenAPIConfig(
            title="Bura server",
            version="1.0",
            description=DESCRIPTION,
            path="/schema",
            use_handler_docstrings=True,
            security=[{"bearer": []}],
            components=Components(
                security_schemes={
                    "bearer": SecurityScheme(
                        type="http",
                        scheme="bearer",
                        description="The operator key, a seat token, or the spectator token",
                    )
                }
            ),
        ),
        debug=False,
        logging_config=None,
    )
