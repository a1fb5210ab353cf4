"""What the game service answers: the same shapes the API sends, defined once."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, cast

import msgspec

from domain.audit import Finding
from domain.chain import ChainCheck, receipt, receipt_key
from domain.events import AnyEvent, Event
from domain.fairness import DealCheck
from domain.rules import Rules
from domain.state import Game
from domain.views import ARBITER, Result, ShuffleView, View, Viewer, disclosed_to
from domain.vocabulary import Status


class Recorded(msgspec.Struct, frozen=True):
    """One event of a game and the version it made."""

    version: int
    event: AnyEvent


def recorded(version: int, event: Event) -> Recorded:
    return Recorded(version, cast(AnyEvent, event))


class Outcome(msgspec.Struct, frozen=True):
    """What a command did: the game's version after it and its events as the caller may see
    them; `duplicate` when the command id had been used and nothing new happened; the
    record's `chain_head` at that version (when nothing in the record is hidden from the
    caller) and its `receipt` (docs/fairness.md §4): keep it, and the record can later be
    shown to hold what you were answered. `command_id` is the Idempotency-Key, or the id
    the server gave a command sent without one: either asks
    GET /games/{id}/commands/{command_id} what became of it. Every command's answer has
    it; only the operator's ruling on a pause (POST /games/{id}/resume, which takes no
    key) answers without it."""

    version: int
    duplicate: bool
    events: list[Recorded]
    chain_head: str | None
    receipt: str
    command_id: str | None = None


class TableView(View, frozen=True, kw_only=True):
    """The caller's view (docs/rules.md §9), and the record at its version (fairness.md §4)."""

    # hex SHA-256 of the row at `version`: for the arbiter, and for everyone once nothing in
    # the record is hidden from them (a game over whose seed is out)
    chain_head: str | None
    receipt: str  # HMAC-SHA256 of the head under the game's receipt key


def heads(game: Game, viewer: Viewer, head: bytes) -> tuple[str | None, str]:
    """(chain_head, receipt) as `viewer` may be given them. A raw hash would let a viewer
    test guesses at the cards hidden from it (domain/chain.py `receipt`), so only a viewer
    who may see the whole record of `game` gets it."""
    whole = disclosed_to(game, viewer) == ARBITER
    return (head.hex() if whole else None), receipt(receipt_key(game.seed), head)


def with_head(shown: View, game: Game, viewer: Viewer, head: bytes) -> TableView:
    """`shown` with the record's head at its version; `game` is the game as it is now,
    which says whether the viewer may see the raw head."""
    fields = {name: getattr(shown, name) for name in View.__struct_fields__}
    chain_head, sealed = heads(game, viewer, head)
    return TableView(**fields, chain_head=chain_head, receipt=sealed)


class CommandStatus(msgspec.Struct, frozen=True, kw_only=True):
    """What became of a command id: `applied` (by `seat`, bringing the game to `version`,
    with its events as the caller may see them, recorded at `recorded_at`), or `unknown`:
    no command of the caller's was applied under it (one still in flight may yet be; send
    it again with the same key, that is always safe)."""

    command_id: str
    status: Literal["applied", "unknown"]
    seat: int | None = None
    version: int | None = None
    events: list[Recorded] = []
    recorded_at: datetime | None = None


class EventPage(msgspec.Struct, frozen=True):
    version: int
    events: list[Recorded]


class SeatToken(msgspec.Struct, frozen=True):
    seat: int
    name: str
    token: str


class CreatedGame(msgspec.Struct, frozen=True):
    game_id: str
    version: int
    seats: list[SeatToken]
    spectator_token: str
    chain_head: str  # the record's hash at `version`
    receipt: str  # the receipt of that head, as the seats' answers carry (fairness.md §4)
    commitment: str | None  # shuffle "server": the first deal's, published before play
    shuffle: ShuffleView | None  # shuffle "seats": the server's commitment and the deadline
    rematch_of: str | None  # a rematch: the finished game it follows
    # true when an Idempotency-Key's retry found the game its first try created: the
    # answer is that try's, tokens and all, and no second game was dealt (no default:
    # every answer has it, and the document marks it required)
    duplicate: bool


class Replay(msgspec.Struct, frozen=True):
    version: int
    view: TableView


class AuditFinding(Finding, frozen=True, kw_only=True):
    """A finding with what the store recorded of the act: the request it came in (its
    X-Request-ID), when it was recorded (its commit, within the request's deadline) and,
    for the arbiter only, the command's Idempotency-Key (`bura-…` when the client sent
    none): a retry under the same key is never a second move, so a penalty under a new
    key was a new command the client sent (null for a seat, and for the server's own)."""

    request_id: str | None = None
    recorded_at: datetime | None = None
    command_id: str | None = None


class Audit(msgspec.Struct, frozen=True):
    game_id: str
    version: int
    findings: list[AuditFinding]


class PlaybackCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The record played back from its first row by the rules: every dealt, drawn and
    played card must be the one the table then held (a record whose hashes were all
    rewritten after an edit still fails here)."""

    ok: bool
    first_bad_version: int | None = None  # the first event that cannot apply
    problem: str | None = None  # why it cannot


class Verification(msgspec.Struct, frozen=True):
    """The record checked: its hash chain row by row, every deal against its commitments
    (docs/fairness.md), and the record played back by the rules. `ok` when all hold."""

    game_id: str
    ok: bool
    deals: list[DealCheck]
    chain: ChainCheck
    unreadable_version: int | None = None  # the first row whose payload is no event
    playback: PlaybackCheck = PlaybackCheck(ok=True)


class GameSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One game of the operator's list."""

    game_id: str
    seats: tuple[str, ...]  # the seats' names, in seat order
    rules: Rules
    version: int
    status: Status
    result: Result | None  # once finished: the winners and the reason
    created: datetime
    updated: datetime  # when its last event was recorded, or its rematch made if later
    rematch_of: str | None  # always sent (null: none), so the document requires both
    rematch: str | None


class GamePage(msgspec.Struct, frozen=True):
    games: list[GameSummary]
    next_cursor: str | None  # pass it as `cursor` for the next page; null on the last
