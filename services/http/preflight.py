"""A browser's CORS preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`)
is answered by Litestar's CORS middleware before any route or middleware of ours runs;
an `OPTIONS` that is none goes to its route (`as_plain_options`). Its
answers are given what every other answer has: an `X-Request-ID`, and, for a preflight it
refuses, RFC 9457 problem details (`400 bad_request` naming the header at fault) in place
of its one line of plain text."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar.types import HTTPResponseStartEvent, HTTPScope, Message, Send

from services.http.middleware import REQUEST_ID, given_request_id
from services.http.problems import PROBLEM_JSON, FieldError, details, instance_of

_encode = msgspec.json.Encoder().encode

# What Litestar says, and what it means to the page's author: the header at fault.
_REFUSALS = {
    "Disallowed CORS Origin": (
        "origin",
        "this origin may not call the API: it is not one of BURA_CORS_ORIGINS",
    ),
    "Disallowed CORS headers": (
        "access-control-request-headers",
        "a page may send only Authorization, Content-Type, Idempotency-Key, Last-Event-ID "
        "and X-Request-ID",
    ),
    "Disallowed CORS method": (
        "access-control-request-method",
        "a page may use only GET, HEAD, POST, DELETE and OPTIONS",
    ),
}


def preflight(scope: HTTPScope) -> bool:
    """A CORS preflight: an OPTIONS with an Origin and an Access-Control-Request-Method."""
    if scope["method"] != "OPTIONS":
        return False
    names = {name for name, value in scope["headers"] if value.strip()}
    return b"origin" in names and b"access-control-request-method" in names


def as_plain_options(scope: HTTPScope) -> None:
    """An OPTIONS that is no preflight (an Origin but no method asked for: no browser sends
    one) answered as any OPTIONS is, its Allow and X-Request-ID: the CORS middleware takes
    every OPTIONS with an Origin for a preflight, and answered it without them (refusing
    the origin in plain text), so the Origin is left out of what it sees."""
    if scope["method"] == "OPTIONS" and not preflight(scope):
        scope["headers"] = [(name, value) for name, value in scope["headers"] if name != b"origin"]


def preflight_answer(scope: HTTPScope, send: Send) -> Send:
    """`send` for a preflight: the answer's X-Request-ID added, a refusal made problem
    details."""
    request_id = given_request_id(scope)
    scope.setdefault("state", {})[REQUEST_ID] = request_id
    held: dict[str, Any] = {}  # a refusal's start, and its text as it comes

    async def answer(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            if not any(name.lower() == b"x-request-id" for name, _ in headers):
                headers.append((b"x-request-id", request_id.encode()))
            kind = next((v for n, v in headers if n.lower() == b"content-type"), b"")
            if message["status"] == 400 and kind.startswith(b"text/plain"):
                held["start"], held["text"] = {**message, "headers": headers}, b""
                return
            await send({**message, "headers": headers})
            return
        if message["type"] == "http.response.body" and "start" in held:
            held["text"] += message.get("body", b"")
            if message.get("more_body", False):
                return
            await _refused(held["start"], held["text"].decode("utf-8", "replace"), scope, send)
            return
        await send(message)

    return answer


async def _refused(start: Any, text: str, scope: HTTPScope, send: Send) -> None:
    header, why = _REFUSALS.get(text.strip(), ("origin", text.strip() or "not allowed"))
    body = _encode(
        details(
            "bad_request",
            f"CORS preflight refused: {why}",
            instance=instance_of(scope),
            errors=[FieldError(key=header, message=why, source="header")],
        )
    )
    kept = [
        (name, value)
        for name, value in start["headers"]
        if name.lower() not in (b"content-type", b"content-length")
    ]
    headers = [
        *kept,
        (b"content-type", PROBLEM_JSON.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    started: HTTPResponseStartEvent = {
        "type": "http.response.start",
        "status": start["status"],
        "headers": headers,
    }
    await send(started)
    await send({"type": "http.response.body", "body": body, "more_body": False})
