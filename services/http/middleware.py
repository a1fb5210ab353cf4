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

import logging
import os
import time
from collections.abc import Callable
from typing import Any

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from infra.deadline import within
from services.logs import request_id
from services.metrics import Metrics

__all__ = ["REQUEST_ID", "given_request_id", "new_request_id", "request_id", "request_middleware"]

log = logging.getLogger("bura.http")


def new_request_id() -> str:
    """32 random hex digits. Not a counter: every answer carries its id, to any caller,
    and ids in sequence told a seat how many requests the server had served between two
    of its own (other tables' activity)."""
    return os.urandom(16).hex()


# Where a request whose id was made before the middleware (services/http/front.py) keeps it,
# in the scope's state.
REQUEST_ID = "bura.request_id"
# When the front door (services/http/front.py) began a request it hands on to the routes:
# their timing and access line count from then, not from the hand-over.
STARTED = "bura.started"


def given_request_id(scope: Scope) -> str:
    """The request's id: the one it was given already, the caller's X-Request-ID if it is
    sane text, or a new one."""
    made = scope.get("state", {}).get(REQUEST_ID)
    if isinstance(made, str):
        return made
    for name, value in scope["headers"]:
        if name == b"x-request-id":
            # The spaces around a header's value are none of it (RFC 9110 §5.5): a client
            # reads `abc   ` back as `abc`, which is what the logs and events keep too.
            given = value.decode("latin-1").strip(" \t")
            # Kept only if it is sane text: it goes into logs and the event store.
            if given and given.isascii() and given.isprintable() and len(given) <= 200:
                return given
            break
    return new_request_id()


def timing(metrics: Metrics) -> Callable[[str, str, int], Any]:
    """The request timing histogram's child of (method, route, status), each looked up
    once."""
    timings: dict[tuple[str, str, int], Any] = {}

    def child(method: str, route: str, status: int) -> Any:
        key = (method, route, status)
        found = timings.get(key)
        if found is None:
            found = timings[key] = metrics.http.labels(method, route, str(status))
        return found

    return child


def request_middleware(metrics: Metrics, deadline_seconds: float) -> Any:
    timed = timing(metrics)

    def middleware(app: ASGIApp) -> ASGIApp:
        async def handle(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP:
                await app(scope, receive, send)
                return
            rid = given_request_id(scope)
            header = (b"x-request-id", rid.encode("latin-1"))
            token = request_id.set(rid)
            started = scope.get("state", {}).get(STARTED) or time.perf_counter()
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
                timed(scope["method"], route, status).observe(elapsed)
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
