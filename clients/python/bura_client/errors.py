"""Errors the server answered: RFC 9457 problem details, as exceptions."""

from __future__ import annotations

from typing import Any

import httpx

from bura_client.retries import retry_after


class ApiError(Exception):
    """An error answer. `code` names it (the server's /problems/<code> documents it).
    `command_id`: for a command's answer, the Idempotency-Key it was sent with (after a
    503 `outcome_unknown`, a 500 or a 502/504, send it again with that key, or look it up:
    Seat.lookup); for a creation's, its key (create_game again with `key=` and the same
    options); None for any other request."""

    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        self.status = status
        self.body = body
        self.headers = headers
        self.code: str = str(body.get("code", "error"))
        self.detail: str = str(body.get("detail", ""))
        self.type: str = str(body.get("type", ""))
        self.title: str = str(body.get("title", ""))
        version = body.get("version")
        self.version: int | None = version if isinstance(version, int) else None
        command_id = body.get("command_id")
        self.command_id: str | None = command_id if isinstance(command_id, str) else None
        super().__init__(f"{status} {self.code}: {self.detail}")


class Refused(ApiError):
    """409 or 422: the rules or the game's state refused the command."""


class RateLimited(ApiError):
    """429: wait `retry_after` seconds."""

    @property
    def retry_after(self) -> float:
        seconds = retry_after(self.headers.get("retry-after"))
        return 1.0 if seconds is None else seconds


class Unavailable(ApiError):
    """503: the event store or the server is not available now."""


class OutcomeUnknown(httpx.TransportError):
    """A command that got no answer (a connection lost or refused, a timeout) to the end of
    its retries: it may have been applied. `command_id` is the Idempotency-Key it was sent
    with: send it again with `key=command_id` (applied at most once; an applied one answers
    `duplicate`), or ask Seat.lookup(command_id). `error` is the last httpx error (also its
    `__cause__`). A TransportError, so code that catches httpx's errors still does.

    `body` is a seat's command as it was sent, its `seen` included: a process that starts
    again (a new Seat, which knows nothing of the lost try) keeps it with the key and
    resends it whole, `Seat.send(body, key=command_id)`; rebuilt, its `seen` would differ
    and the key would be refused as another command's (422)."""

    body: dict[str, Any] | None = None

    def __init__(self, command_id: str, error: httpx.TransportError) -> None:
        try:
            request: httpx.Request | None = error.request
        except RuntimeError:  # an error raised without its request
            request = None
        super().__init__(
            f"no answer to command {command_id!r} ({type(error).__name__}: {error}); "
            "it may have been applied: send it again with this key, or look it up",
            request=request,
        )
        self.command_id = command_id
        self.error = error


class StreamEnded(Exception):
    """A live stream that kept closing before the game's end (and not for a server's
    `shutdown`), to the end of its reconnects: a proxy that cuts it, say."""


def error_of(status: int, body: dict[str, Any], headers: dict[str, str]) -> ApiError:
    if status in (409, 422):
        return Refused(status, body, headers)
    if status == 429:
        return RateLimited(status, body, headers)
    if status == 503:
        return Unavailable(status, body, headers)
    return ApiError(status, body, headers)
