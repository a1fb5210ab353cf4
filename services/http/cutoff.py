"""A request cut off by the end of the shutdown grace: answered in words, not uvicorn's bare
`500 Internal Server Error`.

At SIGTERM the server stops taking connections and gives the requests in flight
BURA_SHUTDOWN_GRACE_SECONDS to end; then uvicorn cancels the ones still running. A command
cancelled so may have reached the store (its append sent, its answer not read): the honest
answer is `503 outcome_unknown`, with its key, so the client asks or resends under it. Any
other request is `503 shutting_down` (reconnect: another replica answers). A response
already begun (a stream) cannot be answered again: it is left to end as cut."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import msgspec
from litestar.types import HTTPScope, Receive, Send

from services.http.middleware import given_request_id
from services.http.problems import PROBLEM_JSON, details, instance_of

log = logging.getLogger("bura.http")
_encode = msgspec.json.Encoder().encode


async def answered_if_cut_off(
    scope: HTTPScope,
    receive: Receive,
    send: Send,
    app: Callable[[HTTPScope, Receive, Send], Awaitable[None]],
    draining: Callable[[], bool],
) -> None:
    """`app`'s answer; if the request is cancelled while the server drains, before any
    answer began, the 503 that says what may have become of it. (Whether one began is the
    server's to know: it refuses a second start, and then the cancellation goes on.)"""
    try:
        await app(scope, receive, send)
    except asyncio.CancelledError:
        if not draining():
            raise
        request_id = given_request_id(scope)  # the answer's and the line's: one id
        key = next((v for k, v in scope["headers"] if k == b"idempotency-key"), None)
        try:
            await _cut_off(scope, send, request_id, key)
        except Exception:  # an answer had begun, or the connection is gone
            raise asyncio.CancelledError from None
        log.warning(
            "%s %s cut off by the end of the shutdown grace",
            scope["method"],
            scope["path"],
            extra={
                "method": scope["method"],
                "path": scope["path"],
                "status": 503,
                "request_id": request_id,
                "command_id": key.decode("latin-1") if key is not None else None,
            },
        )


async def _cut_off(scope: HTTPScope, send: Send, request_id: str, key: bytes | None) -> None:
    if scope["method"] == "POST":
        body = details(
            "outcome_unknown",
            "the server shut down while this was being done: it may have been applied; "
            "send it again with the same Idempotency-Key, or ask GET "
            "/games/{id}/commands/{key}",
            instance=instance_of(scope),
            command_id=key.decode("latin-1") if key is not None else None,
        )
    else:
        body = details(
            "shutting_down",
            "the server shut down before this was answered; reconnect",
            instance=instance_of(scope),
        )
    data = _encode(body)
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", PROBLEM_JSON.encode()),
                (b"content-length", str(len(data)).encode()),
                (b"retry-after", b"1"),
                (b"x-request-id", request_id.encode("latin-1")),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data, "more_body": False})
