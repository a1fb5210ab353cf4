"""The webhook port: the operator's endpoints, the dispatcher's place in the global order,
and the deliveries (an outbox and its log).

The dispatcher that holds the lease turns events into deliveries and advances its
checkpoint in one transaction, and only while it still holds the lease, so every event
becomes its deliveries exactly once whichever replica delivers. A delivery keeps its id
and body for ever; the deliveries of one endpoint and game go out one at a time in the
global order of their events.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, Protocol

import msgspec

from infra.ports.events import Checkpoint

DeliveryState = Literal["pending", "delivered", "failed", "cancelled"]
# What an attempt came to: delivered; to be tried again; given up (failed).
Verdict = Literal["delivered", "retry", "failed"]
Source = Literal["api", "config"]


class Endpoint(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    url: str
    secret: str
    events: tuple[str, ...]  # the webhook types it hears of
    source: Source  # registered through the API, or named by the settings
    description: str | None = None
    created_at: datetime | None = None  # set by the store


class NewDelivery(msgspec.Struct, frozen=True, kw_only=True):
    """A delivery about to be queued: what to send where, and the event it tells of."""

    id: str  # stable: the same for every attempt, sent in a header and in the body
    endpoint_id: str
    url: str
    type: str  # the webhook type (deal_ended, ...)
    game_id: str
    version: int
    tx_id: int  # the event's place in the global order
    position: int
    recorded_at: datetime
    body: bytes


class Delivery(msgspec.Struct, frozen=True, kw_only=True):
    seq: int  # order of queueing: the delivery log pages by it
    id: str
    endpoint_id: str
    url: str
    type: str
    game_id: str
    version: int
    tx_id: int
    position: int
    recorded_at: datetime
    body: bytes
    state: DeliveryState
    attempts: int
    created_at: datetime
    next_attempt_at: datetime | None  # pending only
    last_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None
    delivered_at: datetime | None


class Attempt(msgspec.Struct, frozen=True, kw_only=True):
    number: int  # 1 for the first
    at: datetime  # when it was sent (the signature's timestamp)
    status: int | None  # the receiver's HTTP status; None when no answer came
    error: str | None  # why it did not count as delivered
    seconds: float  # how long the receiver took


class Tried(msgspec.Struct, frozen=True, kw_only=True):
    """An attempt just made, to be recorded."""

    at: datetime
    status: int | None
    error: str | None
    seconds: float
    verdict: Verdict
    retry_in: float = 0.0


class Due(msgspec.Struct, frozen=True):
    """The deliveries to attempt now, and how long until the next one falls due (None:
    nothing is waiting)."""

    deliveries: list[Delivery]
    wait: float | None


class Backlog(msgspec.Struct, frozen=True):
    pending: int
    oldest: datetime | None  # when the event of the oldest pending delivery was recorded


class WebhookStore(Protocol):
    # --- endpoints -----------------------------------------------------------------------

    async def save_endpoint(self, endpoint: Endpoint) -> Endpoint:
        """Add the endpoint, or change the url, secret, events and description of the one
        with its id (keeping when it was created); the endpoint as stored."""
        ...

    async def endpoints(self) -> list[Endpoint]:
        """Every endpoint, oldest first."""
        ...

    async def endpoint(self, endpoint_id: str) -> Endpoint | None: ...

    async def remove_endpoint(self, endpoint_id: str) -> bool:
        """Remove it and cancel its pending deliveries (the log keeps them); False if no
        such endpoint."""
        ...

    # --- the dispatcher ------------------------------------------------------------------

    async def checkpoint(self, name: str) -> Checkpoint:
        """How far the follower `name` has got in the global order (START if nowhere)."""
        ...

    async def enqueue(
        self,
        name: str,
        holder: str,
        after: Checkpoint,
        deliveries: Sequence[NewDelivery],
    ) -> bool:
        """Queue the deliveries and move the checkpoint of `name` to `after`, in one
        transaction, if `holder` still holds the lease `name`; False (nothing done) if it
        does not. A delivery id queued before is left as it is."""
        ...

    async def due(self, limit: int = 100) -> Due:
        """The oldest pending delivery of each endpoint and game (by the global order of
        their events), those whose next attempt is due, soonest first. A pending delivery
        whose endpoint is gone is cancelled here (as removing the endpoint does) and never
        listed, so none can hold a place in `limit` for ever."""
        ...

    async def claim(
        self, name: str, holder: str, delivery_id: str, attempts: int, hold: float
    ) -> bool:
        """Take a delivery `due` listed for one attempt, if `holder` still holds the lease
        `name` and the delivery is still as `due` read it: pending, due now, `attempts`
        attempts recorded, and its endpoint still there (a removal committed before the
        claim is seen by it). Its next attempt then falls due `hold` seconds from now, so
        no other sender takes it while this attempt is in flight (`record` sets it anew).
        False, and nothing changed, if it was delivered, failed, cancelled, attempted or
        taken since, or its endpoint removed: a snapshot from `due` is never enough to send
        on."""
        ...

    async def record(self, name: str, holder: str, delivery_id: str, tried: Tried) -> int:
        """Log an attempt and what it came to (a retry falls due `tried.retry_in` seconds
        from now); its number. A delivery no longer pending (delivered by another attempt,
        or cancelled) keeps its state. An attempt whose sender no longer holds the lease
        `name` (it stalled past the lease, and another sender may have claimed the delivery
        since) is logged and counted, no more: the delivery's state, its next attempt and
        its last answer are the current holder's to write, so a late timeout never marks
        given up a delivery the new holder's attempt delivered. KeyError if there is no
        delivery of that id."""
        ...

    async def redeliver(self, delivery_id: str) -> bool:
        """Queue a failed delivery again, due now, its attempts counting on; False if there
        is no failed delivery of that id, or its endpoint has been removed."""
        ...

    # --- the log -------------------------------------------------------------------------

    async def deliveries(
        self,
        *,
        endpoint_id: str | None = None,
        state: DeliveryState | None = None,
        game_id: str | None = None,
        before: int | None = None,
        limit: int = 100,
    ) -> list[Delivery]:
        """The log, newest first: deliveries queued before `seq` `before`, filtered."""
        ...

    async def delivery(self, delivery_id: str) -> Delivery | None: ...

    async def attempts(self, delivery_id: str) -> list[Attempt]:
        """Every attempt of a delivery, first first."""
        ...

    async def backlog(self) -> Backlog: ...
