"""What the server answers, typed. Views and events stay JSON objects (their shapes are in
the server's /schema/openapi.json); the envelopes around them are dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

JSON = dict[str, Any]


class Recorded(TypedDict):
    version: int
    event: JSON  # tagged by "type": card_drawn, cards_led, ... game_finished


@dataclass(frozen=True)
class SeatToken:
    seat: int
    name: str
    token: str


@dataclass(frozen=True)
class CreatedGame:
    game_id: str
    version: int
    seats: list[SeatToken]
    spectator_token: str

    @classmethod
    def of(cls, body: JSON) -> CreatedGame:
        return cls(
            body["game_id"],
            body["version"],
            [SeatToken(s["seat"], s["name"], s["token"]) for s in body["seats"]],
            body["spectator_token"],
        )


@dataclass(frozen=True)
class Outcome:
    """What a command did: the version after it and its events as the seat may see them;
    `duplicate` when the key had been used and this is the first answer again."""

    version: int
    duplicate: bool
    events: list[Recorded]
    key: str  # the Idempotency-Key it was sent with

    @classmethod
    def of(cls, body: JSON, key: str) -> Outcome:
        return cls(body["version"], body["duplicate"], body["events"], key)


@dataclass(frozen=True)
class StreamTicket:
    ticket: str
    expires_in: int
    expires_at: int  # ms since 1970-01-01 UTC
    stream: str


@dataclass(frozen=True)
class StreamMessage:
    """One message of a live stream: `view` (with `id` the version), `end` or `shutdown`."""

    event: str
    id: int | None
    data: JSON = field(default_factory=dict)

    @property
    def view(self) -> JSON:
        view: JSON = self.data.get("view") or {}
        return view

    @property
    def last_event(self) -> JSON | None:
        event: JSON | None = self.data.get("event")
        return event
