"""Request ids, deadlines and access logs, as pure ASGI: every request gets an id (the
caller's X-Request-ID or a new one), echoed in the response, carried into command metadata
and into every log line; and a deadline (BURA_REQUEST_DEADLINE_SECONDS) that bounds every
store call it makes. Live streams, which are meant to last, have none: a route opts out
with `opt={"deadline": False}`.

This runs for every request, so it does only what is kept: the header is found without
copying the headers, a new id is a counter under a random prefix of this process, the
timing histogram's child is looked up once per (method, route, status), and a success's
access line (logged at debug) is built only when debug is on."""

from __future__ import annotations

import itertools
import logging
import secrets
import time
from typing import Any

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from infra.deadline import within
from services.logs import request_id
from services.metrics import Metrics

__all__ = ["new_request_id", "request_id", "request_middleware"]

log = logging.getLogger("bura.http")

_PREFIX = secrets.token_hex(8)
_COUNT = itertools.count(1)


def new_request_id() -> str:
    """32 hex digits, unique to this process's run (random prefix, counter)."""
    return f"{_PREFIX}{next(_COUNT):016x}"


def _given(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == b"x-request-id":
            given = value.decode("latin-1")
            # Kept only if it is sane text: it goes into logs and the event store.
            if given.strip() and given.isascii() and given.isprintable() and len(given) <= 200:
                return given
            break
    return new_request_id()


def request_middleware(metrics: Metrics, deadline_seconds: float) -> Any:
    timings: dict[tuple[str, str, int], Any] = {}

    def timing(method: str, route: str, status: int) -> Any:
        key = (method, route, status)
        child = timings.get(key)
        if child is None:
            child = timings[key] = metrics.http.labels(method, route, str(status))
        return child

    def middleware(app: ASGIApp) -> ASGIApp:
        async def handle(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP:
                await app(scope, receive, send)
                return
            rid = _given(scope)
            header = (b"x-request-id", rid.encode("latin-1"))
            token = request_id.set(rid)
            started = time.perf_counter()
            status = 500

            async def send_with_id(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                    message["headers"] = [*message.get("headers", ()), header]
                await send(message)

            handler = scope.get("route_handler")
            bounded = handler is None or handler.opt.get("deadline", True)
            try:
                if bounded:
                    with within(deadline_seconds):
                        await app(scope, receive, send_with_id)
                else:
                    await app(scope, receive, send_with_id)
            finally:
                elapsed = time.perf_counter() - started
                route = scope.get("path_template") or "unmatched"
                timing(scope["method"], route, status).observe(elapsed)
                # Successes at debug: the command log already records every move.
                level = logging.INFO if status >= 400 else logging.DEBUG
                if log.isEnabledFor(level):
                    log.log(
                        level,
                        "%s %s %d",
                        scope["method"],
                        scope["path"],
                        status,
                        extra={
                            "method": scope["method"],
                            "path": scope["path"],
                            "status": status,
                            "duration_ms": round(elapsed * 1000, 2),
                            "request_id": rid,
                        },
                    )
                request_id.reset(token)

        return handle

    return middleware
