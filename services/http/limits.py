"""Rate limits, as pure ASGI in front of the routes: per token and per client address, for
three classes of request counted apart (commands, game creation, reads), in fixed windows
shared by every replica when Redis is configured (infra/ports/limits.py).

Answers carry the IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers):
`RateLimit-Policy: "commands-token";q=100;w=10, ...` names every policy of the request's
class, `RateLimit: "commands-token";r=97;t=8` the one closest to its limit (on a 429, the
one that refused it); a 429 adds `Retry-After`. Health and metrics are never limited: a
probe must never be refused."""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import re
from dataclasses import dataclass
from typing import Any, Literal, cast

import msgspec
from litestar.enums import ScopeType
from litestar.types import ASGIApp, HTTPResponseStartEvent, Message, Receive, Scope, Send

from infra.ports.limits import Hit
from infra.throttle import Throttled
from services.config import Settings
from services.http.deps import token_in
from services.http.paths import nowhere
from services.http.problems import PROBLEM_JSON, details, instance_of
from services.metrics import Metrics

log = logging.getLogger("bura.http")

Kind = Literal["commands", "create", "reads"]
_COMMANDS = re.compile(r"^/games/[^/]+/commands/?$")
_REMATCH = re.compile(r"^/games/[^/]+/rematch/?$")  # deals a new game, as POST /games
_EXEMPT = ("/health/", "/metrics")
_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True)
class Policy:
    name: str  # e.g. "commands-token"
    quota: int
    window: float
    by_token: bool = False  # else by client address


def kind_of(method: str, path: str) -> Kind | None:
    """Which limit a request counts against; None: never limited."""
    if method == "OPTIONS" or path.startswith(_EXEMPT):
        return None
    if method == "POST" and (path.rstrip("/") == "/games" or _REMATCH.match(path)):
        return "create"
    if method == "POST" and _COMMANDS.match(path):
        return "commands"
    return "reads"


def policies(settings: Settings) -> dict[Kind, list[Policy]]:
    window = settings.rate_window_seconds
    quotas: dict[Kind, tuple[int, int]] = {
        "commands": (settings.rate_commands_per_token, settings.rate_commands_per_address),
        "create": (settings.rate_create_per_token, settings.rate_create_per_address),
        "reads": (settings.rate_reads_per_token, settings.rate_reads_per_address),
    }
    return {
        kind: [
            Policy(f"{kind}-{who}", quota, window, who == "token")
            for who, quota in (("token", by_token), ("address", by_address))
            if quota > 0
        ]
        for kind, (by_token, by_address) in quotas.items()
    }


def _token(scope: Scope) -> str | None:
    """The bearer token or the stream ticket: whatever names the caller."""
    for name, raw in scope["headers"]:
        if name == b"authorization" and (token := token_in(raw.decode("latin-1"))):
            return token
    query: bytes = scope.get("query_string", b"")
    for pair in query.decode("latin-1").split("&"):
        key, _, value = pair.partition("=")
        if key == "ticket" and value:
            return value
    return None


@functools.lru_cache(maxsize=4096)
def _counter(name: str, window: float, quota: int, key: str) -> Hit:
    # Counters are named by a hash: a token is a secret and never goes to Redis. The same
    # few tokens and addresses come again and again: each counter is named once while in
    # use.
    return Hit(f"{name}:{hashlib.sha256(key.encode()).hexdigest()[:32]}", window, quota)


@dataclass(slots=True)
class Counted:
    """A request counted against its limits: the RateLimit fields its answer carries, and
    the policy it broke (with the seconds until its window ends), if any."""

    fields: list[tuple[bytes, bytes]]
    refused: tuple[float, Policy] | None = None


# The counters could not be reached: the request is served, without RateLimit fields.
UNCOUNTED = Counted([])
WARN_EVERY = 10.0  # seconds between two log lines saying the counters cannot be reached
# Where a request already counted (services/http/front.py) carries its count, in the
# scope's state, so that the middleware does not count it again.
COUNTED = "bura.counted"


class Limits:
    """The rate limits of every class of request, counted in the runtime's counters."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings, self.metrics = settings, metrics
        self.classes = policies(settings)
        self._unreachable = Throttled(log, WARN_EVERY)  # the counters cannot be reached
        # the same for every request of a class: made once
        self.named = {
            kind: (b"ratelimit-policy", ", ".join(_policy(p) for p in chosen).encode())
            for kind, chosen in self.classes.items()
        }

    def applies(self, scope: Scope, kind: Kind) -> bool:
        return (
            self.settings.rate_limits
            and bool(self.classes[kind])
            and getattr(scope["app"].state, "runtime", None) is not None
        )

    async def count(self, scope: Scope, kind: Kind, token: str | None) -> Counted:
        """One more request of `kind` from this token and address. Counters that cannot
        be reached serve rather than refuse everyone (UNCOUNTED): counted in the metrics
        for each request, said in the log at most every WARN_EVERY seconds (with how many
        were served so), so that an outage does not write a line a request."""
        client = scope.get("client")
        address = str(client[0]) if client else "unknown"
        counted: list[Policy] = []
        hits_of: list[Hit] = []
        for policy in self.classes[kind]:
            key = token if policy.by_token else address
            if key is not None:
                counted.append(policy)
                hits_of.append(_counter(policy.name, policy.window, policy.quota, key))
        try:
            found = await scope["app"].state.runtime.adapters.counters.hit_all(hits_of)
        except Exception as error:
            self.metrics.rate_errors.inc()
            self._unreachable.warn(
                "rate counters unavailable, requests are served uncounted: %s",
                error,
                extra={"error": repr(error)},
            )
            return UNCOUNTED
        tightest: tuple[int, float, Policy] | None = None  # remaining, reset, policy
        refused: tuple[float, Policy] | None = None
        for policy, (hits, left) in zip(counted, found, strict=True):
            remaining = policy.quota - hits
            if remaining < 0:
                remaining = 0
                if refused is None or left > refused[0]:
                    refused = (left, policy)
            if tightest is None or remaining < tightest[0]:
                tightest = (remaining, left, policy)
        if refused is not None:  # the answer names the policy that refused it
            tightest = (0, refused[0], refused[1])
        fields = [self.named[kind]]
        if tightest is not None:
            remaining, left, policy = tightest
            fields.append(
                (b"ratelimit", f'"{policy.name}";r={remaining};t={_seconds(left)}'.encode())
            )
        return Counted(fields, refused)


def rate_limit_middleware(settings: Settings, limits: Limits) -> Any:
    """The routes' limits; the front door counts its commands with the same `limits`, so
    that an outage of the counters is said once a period for both, with every request
    served uncounted in its count."""

    def middleware(app: ASGIApp) -> ASGIApp:
        async def handle(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP or not settings.rate_limits:
                await app(scope, receive, send)
                return
            kind = kind_of(str(scope.get("method", "")), str(scope.get("path", "")))
            if kind is None or nowhere(scope) or not limits.applies(scope, kind):
                await app(scope, receive, send)
                return
            counted = cast("Counted | None", scope.get("state", {}).get(COUNTED))
            if counted is None:
                counted = await limits.count(scope, kind, _token(scope))
            if counted is UNCOUNTED:
                await app(scope, receive, send)
                return
            fields = counted.fields
            if counted.refused is not None:
                left, policy = counted.refused
                limits.metrics.rate_limited.labels(kind, policy.name.rsplit("-", 1)[1]).inc()
                await _too_many(scope, send, policy, left, fields)
                return

            async def send_with_fields(message: Message) -> None:
                if message["type"] == "http.response.start":
                    message["headers"] = [*message.get("headers", []), *fields]
                await send(message)

            await app(scope, receive, send_with_fields)

        return handle

    return middleware


def _policy(policy: Policy) -> str:
    return f'"{policy.name}";q={policy.quota};w={_seconds(policy.window)}'


def _seconds(value: float) -> int:
    return max(1, math.ceil(value))


async def _too_many(
    scope: Scope, send: Send, policy: Policy, left: float, fields: list[tuple[bytes, bytes]]
) -> None:
    kind, who = policy.name.rsplit("-", 1)
    wait = _seconds(left)
    what = {"commands": "commands", "create": "games created", "reads": "reads"}[kind]
    body = _encode(
        details(
            "rate_limited",
            f'policy "{policy.name}": more than {policy.quota} {what} in '
            f"{_seconds(policy.window)} s from this "
            f"{'token' if who == 'token' else 'client address'}: retry after {wait} s",
            instance=instance_of(scope),
            retry_after=wait,
        )
    )
    start: HTTPResponseStartEvent = {
        "type": "http.response.start",
        "status": 429,
        "headers": [
            (b"content-type", PROBLEM_JSON.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"retry-after", str(wait).encode()),
            *fields,
        ],
    }
    await send(start)
    await send({"type": "http.response.body", "body": body, "more_body": False})
