"""Request ids, deadlines and access logs, as pure ASGI: every request gets an id (the
caller's X-Request-ID or a new one), echoed in the response, carried into command metadata
and into every log line; and a deadline (BURA_REQUEST_DEADLINE_SECONDS) that bounds every
store call it makes. Live streams, which are meant to last, have none: a route opts out
with `opt={"deadline": False}`."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from infra.deadline import within
from services.logs import request_id
from services.metrics import Metrics

__all__ = ["request_id", "request_middleware"]

log = logging.getLogger("bura.http")


def request_middleware(metrics: Metrics, deadline_seconds: float) -> Any:
    def middleware(app: ASGIApp) -> ASGIApp:
        async def handle(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP:
                await app(scope, receive, send)
                return
            given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
            # Kept only if it is sane text: it goes into logs and the event store.
            usable = given.strip() and given.isascii() and given.isprintable() and len(given) <= 200
            rid = given if usable else uuid.uuid4().hex
            token = request_id.set(rid)
            started = time.perf_counter()
            status = 500

            async def send_with_id(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                    message["headers"] = [
                        *message.get("headers", []),
                        (b"x-request-id", rid.encode("latin-1")),
                    ]
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
                metrics.http.labels(scope["method"], route, str(status)).observe(elapsed)
                # Successes at debug: the command log already records every move.
                log.log(
                    logging.INFO if status >= 400 else logging.DEBUG,
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
