"""What the platform hears by webhook: which events become which webhook type, and the body
of each (a notice).

A notice leaves the server for a URL, so it holds what a spectator of the game may see and
no more: never a hidden card (the arbiter's full record stays behind the operator key, in
GET /events and the audit). It carries the table after the event (seats, score, status)
so a platform can pay out or rate without a second call.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, get_args

import msgspec

from domain.events import (
    DealLost,
    DealVoid,
    DealWon,
    Event,
    GameFinished,
    PenaltyApplied,
    StakeSettled,
    TimedOut,
)
from domain.evolve import evolve
from domain.state import NEW_GAME, Game
from domain.views import SPECTATOR, DealView, redact
from domain.vocabulary import ClockKind, OnTimeout, PenaltyRule, Reason, Status
from infra.ports.events import EventStore, RecordedEvent, checkpoint_text
from services.app.codec import from_recorded

log = logging.getLogger("bura.webhooks")

WebhookType = Literal["deal_ended", "game_finished", "penalty_applied", "timeout"]
WEBHOOK_TYPES: tuple[WebhookType, ...] = get_args(WebhookType)
# The event types each webhook type is sent for (`timed_out`: a seat's clock ran out).
WEBHOOK_OF: dict[str, WebhookType] = {
    "deal_won": "deal_ended",
    "deal_lost": "deal_ended",
    "deal_void": "deal_ended",
    "game_finished": "game_finished",
    "penalty_applied": "penalty_applied",
    "timed_out": "timeout",
}


class DealEnded(msgspec.Struct, frozen=True, kw_only=True):
    deal: int
    winners: tuple[int, ...]
    losers: tuple[int, ...]  # both empty for a void deal
    reason: Reason
    stake: int  # the table's stake times the multiplier
    multiplier: int
    payments: tuple[int, ...]  # each seat's change of score, pot fines included
    by: int | None = None  # the seat whose act ended the deal, when one seat's did


class GameEnded(msgspec.Struct, frozen=True, kw_only=True):
    winners: tuple[int, ...]
    reason: Reason
    deals: tuple[DealView, ...]


class PenaltyTaken(msgspec.Struct, frozen=True, kw_only=True):
    deal: int
    seat: int
    rule: PenaltyRule
    due: int | None  # the seat that was due to draw, None when none was
    count: int  # cards taken (which ones is for the audit)
    asked: int | None  # cards the draw asked for (a double draw of the last card: 2, count 1)


class ClockRanOut(msgspec.Struct, frozen=True, kw_only=True):
    """A seat's time ran out (docs/rules.md §13): `clock` "turn" (its turn and bank) or
    "abandon" (away too long while due), and what followed (`verdict`); times in ms since
    1970-01-01 UTC."""

    deal: int
    seat: int | None = None
    clock: ClockKind | None = None
    verdict: OnTimeout | None = None
    deadline: int | None = None
    at: int | None = None


# What each webhook type's `data` holds (the OpenAPI document's `webhooks` says so).
DATA_OF: dict[WebhookType, type[msgspec.Struct]] = {
    "deal_ended": DealEnded,
    "game_finished": GameEnded,
    "penalty_applied": PenaltyTaken,
    "timeout": ClockRanOut,
}


class Notice(msgspec.Struct, frozen=True, kw_only=True):
    """The body of a webhook delivery: the same bytes on every attempt."""

    id: str  # the delivery id, also in the Bura-Delivery header: the receiver's dedup key
    type: WebhookType
    game_id: str
    version: int  # the event's version in its game
    checkpoint: str  # the event's place in the global order (GET /events)
    recorded_at: datetime
    seats: tuple[str, ...]
    status: Status | None  # the game after the event
    score: tuple[int, ...]
    data: DealEnded | GameEnded | PenaltyTaken | ClockRanOut | None
    event: Any  # the event as a spectator sees it


_encode = msgspec.json.Encoder().encode


class Draft(msgspec.Struct, frozen=True):
    """A notice for one event, before it is addressed to an endpoint (which gives its id)."""

    row: RecordedEvent
    notice: Notice

    @property
    def type(self) -> WebhookType:
        return self.notice.type

    def body(self, delivery_id: str) -> bytes:
        return _encode(msgspec.structs.replace(self.notice, id=delivery_id))


async def drafts(store: EventStore, rows: Sequence[RecordedEvent]) -> list[Draft]:
    """A notice for each row that is a webhook, in the rows' order."""
    wanted = [r for r in rows if r.type in WEBHOOK_OF]
    by_game: dict[str, list[RecordedEvent]] = defaultdict(list)
    for row in wanted:
        by_game[row.stream_id].append(row)
    made: dict[tuple[str, int], Notice] = {}
    for game_id, mine in by_game.items():
        for row, notice in await _game_notices(store, game_id, mine):
            made[row.stream_id, row.version] = notice
    return [Draft(r, made[r.stream_id, r.version]) for r in wanted]


async def _game_notices(
    store: EventStore, game_id: str, rows: list[RecordedEvent]
) -> list[tuple[RecordedEvent, Notice]]:
    # One read of the game up to one past its last webhook: a deal's end is followed by
    # its stake_settled, whose payments the deal_ended notice gives.
    history = await store.read(game_id, until=rows[-1].version + 1)
    if any(r.version != n for n, r in enumerate(history, 1)):
        # A row missing (the record edited behind the server's back): folded, every state
        # after the hole would be off by one, and a notice could be had for no row at all.
        log.warning(
            "game %s's record has a version missing; its webhooks say only the type",
            game_id,
            extra={"game_id": game_id},
        )
        return [(r, _bare(r)) for r in rows]
    states: dict[int, Game] = {}
    try:
        events = [from_recorded(r) for r in history]
        state = NEW_GAME
        for event in events:
            state = evolve(state, event)
            states[state.version] = state
        notices = []
        for row in rows:
            state = states[row.version]
            event = events[row.version - 1]
            after = events[row.version] if row.version < len(events) else None
            notices.append((row, _notice(row, state, event, after)))
    except Exception:
        # An event this server cannot read, or a record that does not fold (a row edited
        # behind the server's back): this game's notices say only their type, and every
        # other game's are delivered as ever, never held up behind it.
        log.warning(
            "game %s holds an event this server cannot read or fold; its webhooks say only "
            "the type",
            game_id,
            extra={"game_id": game_id},
            exc_info=True,
        )
        return [(r, _bare(r)) for r in rows]
    return notices


def _notice(row: RecordedEvent, state: Game, event: Event, after: Event | None) -> Notice:
    settled = after if isinstance(after, StakeSettled) else None
    score = state.score
    if settled is not None:
        score = tuple(a + b for a, b in zip(score, settled.payments, strict=True))
    deal = state.deal.number if state.deal is not None else 0
    data: DealEnded | GameEnded | PenaltyTaken | ClockRanOut | None
    match event:
        case DealWon() | DealLost() | DealVoid():
            result = state.deals[-1]
            data = DealEnded(
                deal=result.number,
                winners=result.winners,
                losers=result.losers,
                reason=result.reason,
                stake=result.stake,
                multiplier=settled.multiplier if settled else _multiplier(state),
                payments=settled.payments if settled else (0,) * len(state.seats),
                by=result.by,
            )
        case GameFinished(winners=winners, reason=reason):
            data = GameEnded(
                winners=winners,
                reason=reason,
                deals=tuple(
                    DealView(
                        number=d.number,
                        winners=d.winners,
                        losers=d.losers,
                        reason=d.reason,
                        stake=d.stake,
                        by=d.by,
                    )
                    for d in state.deals
                ),
            )
        case PenaltyApplied(seat=seat, rule=rule, due=due, count=count, asked=asked):
            data = PenaltyTaken(deal=deal, seat=seat, rule=rule, due=due, count=count, asked=asked)
        case TimedOut(seat=seat, clock=clock, verdict=verdict, deadline=deadline, at=at):
            data = ClockRanOut(
                deal=deal, seat=seat, clock=clock, verdict=verdict, deadline=deadline, at=at
            )
        case _:
            data = ClockRanOut(deal=deal)
    return Notice(
        id="",
        type=WEBHOOK_OF[row.type],
        game_id=row.stream_id,
        version=row.version,
        checkpoint=checkpoint_text((row.tx_id, row.position)),
        recorded_at=row.recorded_at,
        seats=state.seats,
        status="finished" if state.finished else "in_progress",
        score=score,
        data=data,
        event=redact(event, SPECTATOR, state.rules),
    )


def _multiplier(state: Game) -> int:
    return state.deal.multiplier if state.deal is not None else 1


def _bare(row: RecordedEvent) -> Notice:
    """A notice for an event this server version cannot read (a newer replica wrote it):
    its type and place, nothing of its payload, which might hold a secret."""
    return Notice(
        id="",
        type=WEBHOOK_OF[row.type],
        game_id=row.stream_id,
        version=row.version,
        checkpoint=checkpoint_text((row.tx_id, row.position)),
        recorded_at=row.recorded_at,
        seats=(),
        status=None,
        score=(),
        data=None,
        event={"type": row.type},
    )
