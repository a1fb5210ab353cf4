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
    """A new game: its tokens, and the record at its first version. `receipt` (and
    `chain_head`, the record's hash) can be kept and checked against the record later
    (the server's docs/fairness.md); `commitment` is the first deal's shuffle commitment
    (a table the server shuffles), `shuffle` the server's commitment and the seeding
    deadline (`"shuffle": "seats"`), `rematch_of` the finished game a rematch follows.
    Each is None when the server leaves it out. `duplicate`: a retry under the creation's
    Idempotency-Key found the game its first try made."""

    game_id: str
    version: int
    seats: list[SeatToken]
    spectator_token: str
    chain_head: str | None = None
    receipt: str | None = None
    commitment: str | None = None
    shuffle: JSON | None = None
    rematch_of: str | None = None
    duplicate: bool = False  # a retry under the key found the game its first try made

    @classmethod
    def of(cls, body: JSON) -> CreatedGame:
        return cls(
            body["game_id"],
            body["version"],
            [SeatToken(s["seat"], s["name"], s["token"]) for s in body["seats"]],
            body["spectator_token"],
            chain_head=body.get("chain_head"),
            receipt=body.get("receipt"),
            commitment=body.get("commitment"),
            shuffle=body.get("shuffle"),
            rematch_of=body.get("rematch_of"),
            duplicate=body.get("duplicate", False),
        )


@dataclass(frozen=True)
class Outcome:
    """What a command did: the version after it and its events as the seat may see them;
    `duplicate` when the key had been used and this is the first answer again.
    `command_id` is the server's name for the command (the key), `receipt` the record's
    receipt at `version`, a player's to keep and check against the record once the seed
    is out, and `chain_head` the record's raw hash there, given only to whoever may see
    the whole record; each None when the server leaves it out."""

    version: int
    duplicate: bool
    events: list[Recorded]
    key: str  # the Idempotency-Key it was sent with
    command_id: str | None = None
    receipt: str | None = None
    chain_head: str | None = None

    @classmethod
    def of(cls, body: JSON, key: str) -> Outcome:
        return cls(
            body["version"],
            body["duplicate"],
            body["events"],
            key,
            command_id=body.get("command_id"),
            receipt=body.get("receipt"),
            chain_head=body.get("chain_head"),
        )


@dataclass(frozen=True)
class CommandStatus:
    """What became of a command (GET /games/{id}/commands/{key}): `applied` by `seat`,
    bringing the game to `version`, with its `events` as the caller may see them, recorded
    at `recorded_at` (ISO 8601); or `unknown`: nothing was applied under the key by the
    caller (one still in flight may yet be: sending it again with the key is safe)."""

    command_id: str
    status: str  # "applied" or "unknown"
    seat: int | None = None
    version: int | None = None
    events: list[Recorded] = field(default_factory=list)
    recorded_at: str | None = None

    @property
    def applied(self) -> bool:
        return self.status == "applied"

    @classmethod
    def of(cls, body: JSON) -> CommandStatus:
        return cls(
            body["command_id"],
            body["status"],
            seat=body.get("seat"),
            version=body.get("version"),
            events=body.get("events") or [],
            recorded_at=body.get("recorded_at"),
        )


@dataclass(frozen=True)
class StreamTicket:
    ticket: str
    expires_in: int
    expires_at: int  # ms since 1970-01-01 UTC
    stream: str


@dataclass(frozen=True)
class StreamMessage:
    """One message of a live stream: `view` (with `id` the version, and the seat's view in
    `view`), `presence` (a seat connected or went away: `data` holds who, no `id`), `end`
    (the game is over) or `shutdown` (the server is going; `follow()` reconnects). Only a
    `view` message has a `view`; for the others it is `{}`."""

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

    @property
    def latest(self) -> bool:
        """False for a `view` the server had already moved on from as it sent it (one
        command can record several events; a resumed stream sends every version missed):
        the next message follows at once, so act on a latest one."""
        return self.data.get("latest", True) is not False
