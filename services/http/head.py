"""HEAD: every resource a GET reads answers HEAD too, with the status and headers the GET
would give and no body (RFC 9110 §9.3.2), so that an uptime monitor, a load balancer's
check or a cache asking HEAD gets the truth instead of a 405.

The request goes to the app as the GET it mirrors (the same token checks, rate limit and
errors; the request log and the timing metrics count it as that GET); only the body is
left out on the way back. The two live streams are the
exception: a game's stream and the operator feed stay open for as long as the client
listens, and opening one tells the table a seat has come (presence) or spends a stream
ticket, all to show nothing. There HEAD stays a 405 whose `Allow` lists GET, and only there
does an `Allow` header that lists GET leave HEAD out."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from litestar.types import HTTPScope, Message, Send

from services.http.paths import pattern

_STREAM = re.compile(r"^/games/[^/]+/stream/?$")
_FEED = ("/events", "/events/")


def live(path: str) -> bool:
    """Whether `path` is one of the live streams, which HEAD does not open."""
    return path in _FEED or _STREAM.match(path) is not None


def as_get(scope: HTTPScope) -> HTTPScope:
    """The GET a HEAD of `scope` mirrors (the server keeps its own scope, which says HEAD)."""
    mirrored = scope.copy()
    mirrored["method"] = "GET"
    return mirrored


def bodiless(send: Send) -> Send:
    """`send` with every part of the body left out; the headers (Content-Length
    included: what the GET would send) go as they are."""

    async def send_head(message: Message) -> None:
        if message["type"] == "http.response.body":
            more = message.get("more_body", False)
            await send({"type": "http.response.body", "body": b"", "more_body": more})
            return
        await send(message)

    return send_head


def allowing_head(path: str, allow: str) -> str:
    """An `Allow` value for `path` that names HEAD wherever it names GET (not on the live
    streams), the methods in alphabetical order whatever order the router kept."""
    methods = {m.strip() for m in allow.split(",") if m.strip()}
    if "GET" in methods and not live(path):
        methods.add("HEAD")
    return ", ".join(sorted(methods))


def allow_head_in(path: str, send: Send, methods: set[str] | None = None) -> Send:
    """`send` with HEAD added to the `Allow` header of the answer (an OPTIONS request's);
    given the path's `methods`, those (the framework's own OPTIONS answer names only the
    methods of one of the path's handlers)."""

    async def send_allow(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [
                (name, allowing_head(path, allowed(value)).encode("latin-1"))
                if name.lower() == b"allow"
                else (name, value)
                for name, value in message.get("headers", ())
            ]
            message = {**message, "headers": headers}
        await send(message)

    def allowed(value: bytes) -> str:
        return ", ".join(methods) if methods else value.decode("latin-1")

    return send_allow


def route_methods(routes: Iterable[Any]) -> Callable[[str], set[str]]:
    """The methods each path of the app answers, by its routes' templates: of the templates
    a path matches, those the router takes it by, a fixed segment before a parameter at
    the first place they differ (`/webhooks/deliveries` is not `/webhooks/{endpoint_id}`,
    whose DELETE it does not answer)."""
    table = [
        (_precedence(route.path), re.compile(pattern(route.path)), set(route.methods))
        for route in routes
        if isinstance(getattr(route, "methods", None), set)
    ]

    def methods(path: str) -> set[str]:
        matching = [(rank, ms) for rank, pattern, ms in table if pattern.match(path)]
        if not matching:
            return set()
        first = min(rank for rank, _ in matching)
        return {m for rank, ms in matching if rank == first for m in ms}

    return methods


def _precedence(template: str) -> tuple[bool, ...]:
    """A template's segments, each True where it is a parameter: the router tries a fixed
    segment first, so the smaller tuple is the route a path both match goes to."""
    return tuple("{" in segment for segment in template.strip("/").split("/"))
