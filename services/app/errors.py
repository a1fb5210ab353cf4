"""What the application layer refuses, beyond the domain's own errors (domain/errors.py)."""

from __future__ import annotations


class GameNotFound(Exception):
    """No game has this id."""

    def __init__(self, game_id: str) -> None:
        super().__init__(f"no game {game_id}")
        self.game_id = game_id


class Unauthorized(Exception):
    """No token, or one nobody issued."""

    def __init__(self, detail: str, *, no_token: bool = False) -> None:
        super().__init__(detail)
        self.no_token = no_token  # nothing was sent, rather than a token refused


class TicketInvalid(Exception):
    """A stream ticket that is unknown, used, expired or for another game."""


class Forbidden(Exception):
    """A real token, but not for this game or this act."""


class KeyReused(Exception):
    """An idempotency key already names another command: one of another seat, or with
    another body. Answering it with that command's outcome would tell the client a move
    happened that it never sent."""


class VersionNotFound(Exception):
    """A version the game has not reached."""

    def __init__(self, game_id: str, version: int, last: int) -> None:
        super().__init__(f"game {game_id} has versions 1 to {last}, not {version}")
        self.version = version
        self.last = last


class NotFound(Exception):
    """No such webhook endpoint or delivery: `code` says which."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code


class Refused(Exception):
    """An operator's request that cannot be done as asked (409): `code` says why."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code


class BadParameter(ValueError):
    """A parameter written right that names nothing this server gave: its problem names it
    in `errors` (`key` as a malformed one's is keyed, from `source`), and in its detail as
    the client spelled it (`named`)."""

    def __init__(self, named: str, key: str, source: str, message: str) -> None:
        super().__init__(f"{named}: {message}")
        self.key, self.source, self.message = key, source, message


class BadCheckpoint(BadParameter):
    """A feed checkpoint this store did not give."""


class BadCursor(BadParameter):
    """A list cursor this server did not give."""
