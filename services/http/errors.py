"""Every error answer is `{code, detail}`: the exceptions of the lower layers mapped once to
their status, and the OpenAPI description of each status."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, SerializationException, ValidationException
from litestar.openapi import ResponseSpec

from domain.errors import BadSetup, RuleViolation
from infra.ports.events import StoreUnavailable
from services.app.errors import (
    BadCursor,
    Forbidden,
    GameNotFound,
    NotFound,
    Refused,
    Unauthorized,
)


class ErrorBody(msgspec.Struct, frozen=True):
    """Every error answer: a stable machine code and a sentence saying what was wrong."""

    code: str
    detail: str
    option: str | None = None  # bad_option: the table option at fault
    errors: list[dict[str, Any]] | None = None  # bad_request: each field at fault


def _spec(text: str) -> ResponseSpec:
    return ResponseSpec(data_container=ErrorBody, description=text, generate_examples=False)


ERRORS: dict[int, ResponseSpec] = {
    400: _spec(
        "Malformed input: bad JSON (`malformed_json`), an unknown field or `type` "
        "(`bad_request`), a bad card (`bad_card`), option (`bad_option`), deck "
        "(`bad_deck`) or dealer (`bad_dealer`), a list cursor this server did not give "
        "(`bad_cursor`); the detail names it"
    ),
    401: _spec("No token, or a token nobody issued (`unauthorized`)"),
    403: _spec("A token of another game, or the wrong role (`forbidden`)"),
    404: _spec(
        "No such game (`game_not_found`), webhook endpoint (`webhook_not_found`) or "
        "delivery (`delivery_not_found`)"
    ),
    409: _spec(
        "A broken rule: the code names it (`not_your_turn`, `card_not_in_hand`, "
        "`wrong_card_count`, `mixed_suits`, `duplicate_cards`, `dave_pending`, "
        "`game_over`, `idempotency_key_reused`, `out_of_time`, `not_paused`, "
        "`game_not_finished`, `rematch_exists`, ...; for webhooks `webhook_configured`, "
        "`delivery_not_failed`)"
    ),
    413: _spec("Body larger than BURA_MAX_BODY_BYTES (`body_too_large`)"),
    503: _spec(
        "The event store cannot be reached (`store_unavailable`): nothing was "
        "written; send it again with the same Idempotency-Key"
    ),
}

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
}


def error(status: int, code: str, detail: str, **extra: Any) -> Response[dict[str, Any]]:
    return Response(
        {"code": code, "detail": detail, **extra}, status_code=status, media_type=MediaType.JSON
    )


def _http(request: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, Any]]:
    extra: dict[str, Any] = {}
    if isinstance(exc, ValidationException) and exc.extra:
        extra["errors"] = exc.extra
        detail = (
            "; ".join(
                f"{e.get('key', '')}: {e.get('message', '')}"
                for e in exc.extra
                if isinstance(e, dict)
            )
            or exc.detail
        )
    elif isinstance(exc.__cause__, SerializationException):
        return error(400, "malformed_json", f"the body is not valid JSON: {exc.detail}")
    else:
        detail = exc.detail
    return error(exc.status_code, _CODES.get(exc.status_code, "error"), detail, **extra)


def _setup(request: Request[Any, Any, Any], exc: BadSetup) -> Response[dict[str, Any]]:
    extra = {"option": exc.option} if exc.option is not None else {}
    return error(400, exc.code, exc.detail, **extra)


Handler = Callable[[Request[Any, Any, Any], Any], Response[Any]]

HANDLERS: dict[Any, Handler] = {
    HTTPException: _http,
    RuleViolation: lambda r, e: error(409, e.code, e.detail),
    BadSetup: _setup,
    GameNotFound: lambda r, e: error(404, "game_not_found", str(e)),
    NotFound: lambda r, e: error(404, e.code, str(e)),
    Refused: lambda r, e: error(409, e.code, str(e)),
    BadCursor: lambda r, e: error(400, "bad_cursor", str(e)),
    Unauthorized: lambda r, e: error(401, "unauthorized", str(e)),
    Forbidden: lambda r, e: error(403, "forbidden", str(e)),
    StoreUnavailable: lambda r, e: error(
        503,
        "store_unavailable",
        f"the event store cannot be reached ({e}); nothing was written, send it again",
    ),
}
