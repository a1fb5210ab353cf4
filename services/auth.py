"""Who is calling: the operator (the arbiter's full view), a seat, or a spectator."""

from __future__ import annotations

import hmac
from typing import Any

import msgspec
from litestar import Request
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException

from domain.views import ARBITER, SPECTATOR, Viewer
from services.games import SPECTATOR_SEAT, GameService


class Caller(msgspec.Struct, frozen=True):
    role: str  # "operator" | "seat" | "spectator"
    seat: int | None = None

    @property
    def viewer(self) -> Viewer:
        if self.role == "operator":
            return ARBITER
        if self.seat is None:
            return SPECTATOR
        return self.seat


def bearer(request: Request[Any, Any, Any]) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise NotAuthorizedException("send 'Authorization: Bearer <operator key or seat token>'")
    return token.strip()


def is_operator(token: str, operator_key: str) -> bool:
    return hmac.compare_digest(token.encode(), operator_key.encode())


async def require_operator(
    request: Request[Any, Any, Any], service: GameService, operator_key: str
) -> None:
    """401 for an unknown token, 403 for a seat's or spectator's."""
    token = bearer(request)
    if is_operator(token, operator_key):
        return
    if await service.seat_of(token.partition(".")[0], token) is None:
        raise NotAuthorizedException("unknown token")
    raise PermissionDeniedException("only the operator key creates games")


async def caller_for(
    request: Request[Any, Any, Any], game_id: str, service: GameService,
    operator_key: str,
) -> Caller:
    token = bearer(request)
    if is_operator(token, operator_key):
        return Caller("operator")
    owner, dot, _ = token.partition(".")
    if dot and owner != game_id:
        # Only say "wrong game" for a token that is real for its own game.
        if await service.seat_of(owner, token) is not None:
            raise PermissionDeniedException("this token belongs to another game")
        raise NotAuthorizedException("unknown token")
    seat = await service.seat_of(game_id, token)
    if seat is None:
        raise NotAuthorizedException("unknown token")
    if seat == SPECTATOR_SEAT:
        return Caller("spectator")
    return Caller("seat", seat)
