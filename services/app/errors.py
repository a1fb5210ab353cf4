"""What the application layer refuses, beyond the domain's own errors (domain/errors.py)."""

from __future__ import annotations


class GameNotFound(Exception):
    """No game has this id."""

    def __init__(self, game_id: str) -> None:
        super().__init__(f"no game {game_id}")
        self.game_id = game_id


class Unauthorized(Exception):
    """No token, or one nobody issued."""


class Forbidden(Exception):
    """A real token, but not for this game or this act."""


class BadCursor(ValueError):
    """A list cursor this server did not give."""
