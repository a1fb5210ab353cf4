"""A 201's `Location`: where what was made is found (RFC 9110 §15.3.2). A game's is its
view, a webhook endpoint's its own URL; a stream ticket's is the stream it opens."""

from __future__ import annotations

from typing import TypeVar

from litestar import Response

T = TypeVar("T")


def game_location(game_id: str) -> str:
    return f"/games/{game_id}"  # game ids are URL-safe (services/app/callers.py GAME_ID)


def created(body: T, location: str) -> Response[T]:
    return Response(body, status_code=201, headers={"Location": location})
