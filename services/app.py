"""The composition root: settings -> store, bus, service -> the Litestar app."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from litestar import Litestar, MediaType, Request, Response, get
from litestar.exceptions import HTTPException, SerializationException, ValidationException
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme

from domain.errors import BadCard, BadOption, RuleViolation
from infra.records import StoreUnavailable
from services.api import BadGame, GamesController, HealthController, StreamController
from services.config import Settings
from services.games import GameNotFound, GameService
from services.metrics import CONTENT_TYPE_LATEST, Metrics
from services.ports import Bus, EventStore
from services.projector import Projector
from services.requests import request_middleware

log = logging.getLogger("bura")

DESCRIPTION = """Event-sourced server for the card game Bura («бура», «тридцать одно»).

Create a game with the operator key, hand each seat its token, and let each player send
commands as `Authorization: Bearer <seat token>`. Every error body is
`{"code": ..., "detail": ...}`: 400 malformed input, 401 no or unknown token, 403 wrong game
or role, 404 unknown game, 409 a broken rule (the code names it, e.g. `not_your_turn`),
413 body too large, 503 the event store is unreachable (nothing was written; retry with the
same Idempotency-Key).
"""


def _error(status: int, code: str, detail: str, **extra: Any) -> Response[dict[str, Any]]:
    return Response({"code": code, "detail": detail, **extra}, status_code=status,
                    media_type=MediaType.JSON)


def _http_error(request: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, Any]]:
    codes = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
             405: "method_not_allowed", 413: "body_too_large"}
    extra: dict[str, Any] = {}
    if isinstance(exc, ValidationException) and exc.extra:
        extra["errors"] = exc.extra
        detail = "; ".join(
            f"{e.get('key', '')}: {e.get('message', '')}" for e in exc.extra if isinstance(e, dict)
        ) or exc.detail
    elif isinstance(exc.__cause__, SerializationException):
        return _error(400, "malformed_json", f"the body is not valid JSON: {exc.detail}")
    else:
        detail = exc.detail
    return _error(exc.status_code, codes.get(exc.status_code, "error"), detail, **extra)


def _handlers() -> dict[Any, Callable[[Request[Any, Any, Any], Any], Response[Any]]]:
    return {
        HTTPException: _http_error,
        RuleViolation: lambda r, e: _error(409, e.code, e.detail),
        BadGame: lambda r, e: _error(400, e.code, e.detail),
        GameNotFound: lambda r, e: _error(404, "game_not_found", f"no game {e.args[0]}"),
        BadOption: lambda r, e: _error(400, "bad_option", e.detail, option=e.option),
        BadCard: lambda r, e: _error(400, "bad_card", str(e)),
        StoreUnavailable: lambda r, e: _error(
            503, "store_unavailable",
            f"the event store cannot be reached ({e}); nothing was written, send it again",
        ),
    }


def create_app(
    settings: Settings, adapters: tuple[EventStore, Bus] | None = None
) -> Litestar:
    """The app. Without adapters it opens those the settings name, on the server's own
    event loop, and closes them at shutdown; given adapters are left open for the caller."""

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        store, bus = adapters if adapters is not None else await open_adapters(settings)
        service = GameService(
            store, bus, retries=settings.command_retries, cache=settings.cache_games,
            metrics=metrics,
        )
        projector = Projector(service, bus, poll_seconds=settings.feed_poll_seconds,
                              keepalive_seconds=settings.sse_keepalive_seconds)
        metrics.open_streams.set_function(lambda: projector.open_streams)
        metrics.projector_lag.set_function(lambda: projector.lag)
        metrics.redis_errors.set_function(lambda: getattr(bus, "errors", 0))
        app.state.service = service
        app.state.projector = projector
        projector.start()
        try:
            yield
        finally:
            await projector.stop()
            if adapters is None:
                await bus.close()
                await store.close()

    metrics = Metrics()

    @get("/metrics", include_in_schema=False, media_type=CONTENT_TYPE_LATEST)
    async def prometheus() -> Response[bytes]:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    app = Litestar(
        route_handlers=[GamesController, StreamController, HealthController, prometheus],
        middleware=[request_middleware(metrics)],
        exception_handlers=_handlers(),
        lifespan=[lifespan],
        request_max_body_size=settings.max_body_bytes,
        openapi_config=OpenAPIConfig(
            title="Bura server", version="1.0", description=DESCRIPTION, path="/schema",
            use_handler_docstrings=True,
            security=[{"bearer": []}],
            components=Components(security_schemes={"bearer": SecurityScheme(
                type="http", scheme="bearer",
                description="The operator key, a seat token, or the spectator token",
            )}),
        ),
        debug=False,
        logging_config=None,
    )
    app.state.metrics = metrics
    app.state.operator_key = settings.operator_key
    app.state.settings = settings
    return app


async def open_adapters(settings: Settings) -> tuple[EventStore, Bus]:
    """PostgreSQL and Redis when configured, else the embedded SQLite file and in-process bus."""
    store: EventStore
    bus: Bus
    if settings.database_url:
        from infra.migrate import migrate
        from infra.postgres_store import PostgresEventStore

        await migrate(settings.database_url)
        store = await PostgresEventStore.open(settings.database_url)
    else:
        from infra.sqlite_store import SqliteEventStore

        directory = os.path.dirname(settings.sqlite_path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        store = await SqliteEventStore.open(settings.sqlite_path)
    if settings.redis_url:
        from infra.redis_bus import RedisBus

        bus = await RedisBus.open(settings.redis_url)
    else:
        from infra.memory_bus import InProcessBus

        bus = InProcessBus()
    return store, bus
