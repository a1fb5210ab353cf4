"""Every error answer is problem details (services/http/problems.py): the exceptions of the
lower layers mapped once to their code, with the headers their status calls for."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.enums import ParamType
from litestar.exceptions import (
    HTTPException,
    NotFoundException,
    SerializationException,
    ValidationException,
)
from litestar.params import ParameterKwarg
from litestar.types import ExceptionHandlersMap

from domain.errors import BadSetup, RuleViolation
from domain.evolve import RecordBroken
from infra.ports.events import OutcomeUnknown, StoreUnavailable
from infra.throttle import Throttled
from services.app.codec import RecordChanged
from services.app.errors import (
    BadCheckpoint,
    BadCursor,
    BadParameter,
    Forbidden,
    GameNotFound,
    KeyReused,
    NotFound,
    Refused,
    TicketInvalid,
    Unauthorized,
    VersionNotFound,
)
from services.http.head import allowing_head
from services.http.middleware import given_request_id
from services.http.paths import sent_path
from services.http.problems import (
    FALLBACK,
    PROBLEMS,
    FieldError,
    ProblemDetails,
    instance_of,
    problem,
    responses,
)
from services.logs import request_id
from services.wording import in_words

__all__ = ["HANDLERS", "error", "responses"]

log = logging.getLogger("bura.http")

# An outage's cause in full is for the log (once a period), not for whoever asked.
OUTAGE_WARN_EVERY = 10.0
_outage = Throttled(log, OUTAGE_WARN_EVERY)

# RFC 6750: a 401 says which scheme it wants; a token that was sent and refused says so.
CHALLENGE = 'Bearer realm="bura"'
REFUSED_TOKEN = 'Bearer realm="bura", error="invalid_token"'


def error(status: int, code: str, detail: str, **extra: Any) -> Response[ProblemDetails]:
    """An error answer of any status and code (the code's row in PROBLEMS gives the rest)."""
    return problem(code, detail, status=status, **extra)


def _instance(request: Request[Any, Any, Any]) -> str:
    return instance_of(request.scope)


# A command lookup's path whose key is slashes alone (as sent, `/` or `%2F`), which routing
# reads as /games/{id}/commands itself.
_UNNAMED_KEY = re.compile(r"^/games/[^/]+/commands/(?:/|%2[Ff])*$")


def _http(request: Request[Any, Any, Any], exc: HTTPException) -> Response[ProblemDetails]:
    extra: dict[str, Any] = {}
    headers = {k: str(v) for k, v in (exc.headers or {}).items()}
    status = exc.status_code
    code = FALLBACK.get(status, "bad_request" if status < 500 else "internal_error")
    detail = exc.detail
    if isinstance(exc, ValidationException) and exc.extra:
        wire = _wire_names(request)
        errors = [_on_the_wire(e, wire) for e in exc.extra if isinstance(e, dict)]
        extra["errors"] = [
            FieldError(
                key=str(e.get("key", "")),
                message=in_words(str(e.get("message", "")), str(e.get("key", ""))),
                # the framework's source may be its enum (ParamType.QUERY): its value
                source=str(getattr(e.get("source"), "value", e.get("source") or "")),
            )
            for e in errors
        ] or None
        detail = "; ".join(f"{e.key}: {e.message}" for e in extra["errors"] or ()) or exc.detail
        if extra["errors"] and all(e.key == "data" for e in extra["errors"]):
            # about the whole body, which the framework calls `data`: no field of the
            # client's to name, so the key is empty (an empty body is no JSON at all)
            extra["errors"] = [msgspec.structs.replace(e, key="") for e in extra["errors"]]
            detail = "; ".join(e.message for e in extra["errors"])
            if detail == EMPTY_BODY:
                code, extra["errors"] = "malformed_json", None
    elif isinstance(exc.__cause__, SerializationException):
        code, detail = "malformed_json", f"the body is not valid JSON: {exc.detail}"
    if request.scope.get("route_handler") is None:
        # refused before any route took it (404 no such path, 405 no such method): no
        # middleware ran to give it its id, nor to write its access line
        rid = given_request_id(request.scope)
        headers.setdefault("X-Request-ID", rid)
        method, path = request.scope["method"], request.scope["path"]
        fields = {"method": method, "path": path, "status": status, "request_id": rid}
        log.info("%s %s %d", method, path, status, extra=fields)
    if status == 401:
        headers.setdefault("WWW-Authenticate", CHALLENGE)
    if (
        status == 405
        and request.method in ("GET", "HEAD")
        and _UNNAMED_KEY.match(sent_path(request.scope) or "")
    ):
        # a lookup whose key is slashes alone: routing read its path as the end of
        # /games/{id}/commands, which only POST answers; it is refused as any key no
        # command can have (with no key at all, the path is that one: a 405)
        from services.http.commands import KEY_MAX  # (it imports this module)

        message = (
            f"1 to {KEY_MAX} printable ASCII characters, as in Idempotency-Key, "
            "and not slashes alone"
        )
        field = FieldError(key="command_id", message=message, source="path")
        return problem(
            "bad_request",
            f"command_id: {message}",
            headers=headers,
            instance=_instance(request),
            errors=[field],
        )
    if status == 405:  # HEAD is served wherever GET is (services/http/head.py)
        allow = next((k for k in headers if k.lower() == "allow"), None)
        if allow is not None:
            headers[allow] = allowing_head(_instance(request), headers[allow])
    return problem(
        code, detail, status=status, headers=headers, instance=_instance(request), **extra
    )


def _wire_names(request: Request[Any, Any, Any]) -> dict[str, str]:
    """The names the client sent, by the names the route's code gives them: a query
    parameter or a header whose Python name differs (`state`, not `kind`; a header by its
    name as it arrives, `idempotency-key`), from the route's signature and its
    dependencies'."""
    handler = request.scope.get("route_handler")
    if handler is None:
        return {}
    signatures = [handler.parsed_fn_signature] + [
        signature
        for provider in handler.resolve_dependencies().values()
        if (signature := getattr(provider, "parsed_fn_signature", None)) is not None
    ]
    names: dict[str, str] = {}
    for signature in signatures:
        for field, definition in signature.parameters.items():
            given = definition.kwarg_definition
            if isinstance(given, ParameterKwarg) and given.name:
                if given.param_type == ParamType.QUERY:
                    names[field] = given.name
                elif given.param_type == ParamType.HEADER:
                    names[field] = given.name.lower()
    return names


EMPTY_BODY = "the body is empty: this operation takes a JSON object"


def _on_the_wire(error: dict[str, Any], wire: dict[str, str]) -> dict[str, Any]:
    """A validation error keyed by the name the client sent (Litestar keys it by the
    route's Python name)."""
    key = error.get("key")
    if error.get("source") in ("query", "header") and isinstance(key, str) and key in wire:
        return {**error, "key": wire[key]}
    if error.get("source") == "body" and error.get("message") == f"'{key}'":
        # Litestar's word for a body that is required and was not sent: the missing key
        return {**error, "message": EMPTY_BODY}
    if error.get("source") == "body" and key in ("", "data"):
        return {**error, **_at_the_top(str(error.get("message", "")))}
    found = _MISSING.match(str(error.get("message", "")))
    if error.get("source") == "body" and isinstance(key, str) and found:
        # a field missing or unknown inside an object: keyed by the field, as a value of
        # the wrong type is (`rules.stake2`, not `rules`)
        return {**error, "key": f"{key}.{found['key']}"}
    return error


# The decoder's words for a field of the body's top object, which it keys by no path (the
# framework then names the whole body, `data`); and a check of the whole object that says
# which field it is about ("value: ...").
_MISSING = re.compile(r"^Object (?:missing required|contains unknown) field `(?P<key>[^`]+)`$")
_NAMED = re.compile(r"^(?P<key>[a-z][a-z_]*): (?P<message>.+)$", re.DOTALL)


def _at_the_top(message: str) -> dict[str, str]:
    """The key of a top-level field an error is about, where the message names one."""
    if found := _MISSING.match(message):
        return {"key": found["key"]}
    if found := _NAMED.match(message):
        return {"key": found["key"], "message": found["message"]}
    return {}


def _no_file(request: Request[Any, Any, Any], exc: NotFoundException) -> Response[ProblemDetails]:
    """A static file that is not there: said so, never as the file router words it (the
    absolute path it looked in: the install's directory, its Python's version)."""
    return problem("not_found", "no such file", instance=_instance(request))


# The exception handlers of a router of static files (the pages' assets, the reference's).
NO_FILE: ExceptionHandlersMap = {NotFoundException: _no_file}


def _bad_parameter(
    request: Request[Any, Any, Any], code: str, exc: BadParameter
) -> Response[ProblemDetails]:
    """Named in `errors` as a malformed parameter is, with the code of what is wrong."""
    field = FieldError(key=exc.key, message=exc.message, source=exc.source)
    return problem(code, str(exc), instance=_instance(request), errors=[field])


def _setup(request: Request[Any, Any, Any], exc: BadSetup) -> Response[ProblemDetails]:
    return problem(exc.code, exc.detail, status=400, option=exc.option, instance=_instance(request))


def _refused(request: Request[Any, Any, Any], exc: RuleViolation) -> Response[ProblemDetails]:
    status = PROBLEMS[exc.code].status if exc.code in PROBLEMS else 409
    return problem(
        exc.code,
        exc.detail,
        status=status,
        version=getattr(exc, "version", None),
        instance=_instance(request),
    )


def _unauthorized(request: Request[Any, Any, Any], exc: Unauthorized) -> Response[ProblemDetails]:
    challenge = CHALLENGE if exc.no_token else REFUSED_TOKEN
    return problem(
        "unauthorized",
        str(exc),
        headers={"WWW-Authenticate": challenge},
        instance=_instance(request),
    )


def _ticket(request: Request[Any, Any, Any], exc: TicketInvalid) -> Response[ProblemDetails]:
    return problem(
        "stream_ticket_invalid",
        str(exc),
        headers={"WWW-Authenticate": REFUSED_TOKEN},
        instance=_instance(request),
    )


# A second or so is enough for a pool to recover or a failover to finish; the client may
# take longer, never less.
RETRY_AFTER = {"Retry-After": "1"}


def _counted(request: Request[Any, Any, Any]) -> None:
    """bura_store_errors_total, for a store failure that becomes a 503: counted here, the
    one place every such failure passes (a command's, a token's lookup, a read, a
    creation), so each once."""
    runtime = getattr(request.app.state, "runtime", None)
    if runtime is not None:
        runtime.metrics.store_errors.inc()


def _unavailable(request: Request[Any, Any, Any], exc: StoreUnavailable) -> Response[Any]:
    """What to do depends on the request: a read is asked again; a write, sent again (under
    its key, if it came with one)."""
    _counted(request)
    if request.method in ("GET", "HEAD"):
        advice = ": ask again in a moment"
    elif request.headers.get("idempotency-key") is not None:
        advice = "; nothing was written: send it again with the same Idempotency-Key"
    else:
        advice = "; nothing was written: send it again"
    _outage.warn(
        "the event store cannot be reached: %s", exc, extra={"request_id": request_id.get()}
    )
    return problem(
        "store_unavailable",
        f"the event store cannot be reached ({exc.said}){advice}",
        headers=RETRY_AFTER,
        instance=_instance(request),
    )


def _unknown(request: Request[Any, Any, Any], exc: OutcomeUnknown) -> Response[Any]:
    """A command's outcome is found by sending it again under its key, or by the lookup;
    a creation's or a rematch's only by sending it again (no lookup names a game the
    client has no id of)."""
    _counted(request)
    key = exc.command_id
    path = str(request.scope.get("path", ""))  # never the URL: a bad Host cannot build one
    if key is None:  # an operator's ruling, recorded under no key: the game tells
        advice = "Read the game to see whether it was, before sending it again"
    elif request.method == "POST" and path.endswith("/commands"):
        advice = (
            f"Send it again, the same body with Idempotency-Key {key!r}, or ask GET {path}/{key}"
        )
    else:
        advice = (
            f"Send it again, the same body with Idempotency-Key {key!r}: the answer is the "
            "one the first try would have had"
        )
    return problem(
        "outcome_unknown",
        f"the command reached the event store but its answer was lost ({exc}): it may have "
        f"been applied. {advice}",
        headers=RETRY_AFTER,
        command_id=key,
        instance=_instance(request),
    )


def _internal(request: Request[Any, Any, Any], exc: Exception) -> Response[ProblemDetails]:
    rid = request_id.get()
    log.exception(
        "unexpected error in %s %s",
        request.method,
        request.scope.get("path", ""),  # not request.url: a Host it cannot read raises again
        exc_info=exc,
        extra={"request_id": rid},
    )
    detail = "the server failed unexpectedly" + (f"; quote request id {rid}" if rid else "")
    return problem("internal_error", detail, instance=_instance(request))


def _broken(request: Request[Any, Any, Any], exc: RecordBroken) -> Response[ProblemDetails]:
    """A game whose stored events do not fold: its record was changed outside the server.
    Logged as the integrity incident it is; the answer says where to look."""
    game_id = request.path_params.get("game_id", "")
    log.log(
        logging.ERROR,
        "game %s's record is broken: %s",
        game_id,
        exc,
        exc_info=exc,
        extra={"request_id": request_id.get(), "game_id": game_id},
    )
    what = (
        exc.why
        if isinstance(exc, RecordChanged)
        else f"event {exc.version} ({exc.event_type}) {exc.why}"
    )
    return problem(
        "record_broken",
        f"the record of game {game_id} is broken: {what}, so the record was changed outside "
        f"the server; GET /games/{game_id}/verify names the first row that does not hold",
        instance=_instance(request),
    )


Handler = Callable[[Request[Any, Any, Any], Any], Response[Any]]

HANDLERS: dict[Any, Handler] = {
    HTTPException: _http,
    RuleViolation: _refused,
    BadSetup: _setup,
    GameNotFound: lambda r, e: problem("game_not_found", str(e), instance=_instance(r)),
    VersionNotFound: lambda r, e: problem(
        "version_not_found", str(e), version=e.last, instance=_instance(r)
    ),
    NotFound: lambda r, e: problem(e.code, str(e), instance=_instance(r)),
    Refused: lambda r, e: problem(e.code, str(e), instance=_instance(r)),
    BadCursor: lambda r, e: _bad_parameter(r, "bad_cursor", e),
    BadCheckpoint: lambda r, e: _bad_parameter(r, "bad_checkpoint", e),
    Unauthorized: _unauthorized,
    TicketInvalid: _ticket,
    Forbidden: lambda r, e: problem("forbidden", str(e), instance=_instance(r)),
    KeyReused: lambda r, e: problem("idempotency_key_reused", str(e), instance=_instance(r)),
    StoreUnavailable: _unavailable,
    OutcomeUnknown: _unknown,
    RecordBroken: _broken,
    Exception: _internal,
}
