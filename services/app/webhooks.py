"""The operator's webhooks: register, list and remove endpoints; read the delivery log;
queue a failed delivery again. The sending is services/live/dispatcher.py."""

from __future__ import annotations

import ipaddress
import re
import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

import msgspec

from infra.ports.events import checkpoint_text
from infra.ports.webhooks import Delivery, DeliveryState, Endpoint, Source, WebhookStore
from services.app.errors import NotFound, Refused
from services.app.notices import WEBHOOK_TYPES, WebhookType
from services.config import Settings
from services.wording import NO_NUL, worded

CONFIG_ENDPOINT = "config"


def configured_endpoint(settings: Settings) -> Endpoint | None:
    """The endpoint BURA_WEBHOOK_URL names, if it does."""
    if not settings.webhook_url or not settings.webhook_secret:
        return None
    events = tuple(e.strip() for e in settings.webhook_events.split(",") if e.strip())
    return Endpoint(
        id=CONFIG_ENDPOINT,
        url=settings.webhook_url,
        secret=settings.webhook_secret,
        events=tuple(dict.fromkeys(events)) or WEBHOOK_TYPES,
        source="config",
        description="BURA_WEBHOOK_URL",
    )


# What the OpenAPI document says of a webhook URL, and all the server holds it to but one
# thing: the scheme in either case; a host that is an IPv4 address (four decimal numbers 0
# to 255), a name (dot-separated labels of letters, digits, `-` and `_`, each beginning and
# ending with a letter or digit, the last beginning with a letter, so that no name reads as
# a number: `999.999.999.999`, `127.1` or `0x7f.1` is none; an optional final dot) or a
# bracketed IPv6 text; a port of 1 to 65535; then anything printable. Which bracketed
# texts are IPv6 addresses, only ipv6_fault says.
_PORT = r"(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
_LAST = r"[A-Za-z](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
URL_PATTERN = worded(
    r"^[Hh][Tt][Tt][Pp][Ss]?://"
    rf"(?:{_OCTET}(?:\.{_OCTET}){{3}}|(?:{_LABEL}\.)*{_LAST}\.?|\[[0-9A-Fa-f:.]{{2,45}}\])"
    rf"(?::{_PORT})?(?:[/?#][!-~]*)?$",
    "an http:// or https:// URL (the scheme in either case) with a valid host (a name, an "
    "IPv4 address or a bracketed IPv6 one) and, if written, a port 1 to 65535",
)
SECRET_PATTERN = worded(r"^[!-~]{16,256}$", "16 to 256 printable ASCII characters without spaces")


def ipv6_fault(url: str) -> str | None:
    """What is wrong with the bracketed host of a URL that URL_PATTERN took, None if it
    is an IPv6 address (or the host is no bracketed one)."""
    authority = re.split(r"[/?#]", url.partition("://")[2], maxsplit=1)[0]
    if not authority.startswith("["):
        return None
    literal = authority[1:].partition("]")[0]
    try:
        ipaddress.IPv6Address(literal)
    except ValueError:
        return f"[{literal}] is no IPv6 address"
    return None


class RegisterWebhook(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    # ASCII only, spelled out: `\s` means other things to Python and to JSON Schema. The
    # scheme in either case (RFC 3986); an IPv6 host is checked in __post_init__.
    url: Annotated[
        str,
        msgspec.Meta(pattern=URL_PATTERN, max_length=2048),
    ]
    # each once: the route refuses a repeat, and the OpenAPI says uniqueItems
    events: Annotated[tuple[WebhookType, ...], msgspec.Meta(min_length=1)] = WEBHOOK_TYPES
    # generated when left out (and then shown once, in the answer); printable ASCII without
    # spaces, so that no copy of it loses or gains a byte at its ends
    secret: Annotated[str, msgspec.Meta(pattern=SECRET_PATTERN)] | None = None
    # PostgreSQL's text cannot hold a NUL (as a seat's name: any character but NUL)
    description: (
        Annotated[
            str,
            msgspec.Meta(
                max_length=256,
                pattern=NO_NUL,
                description="up to 256 characters, any but NUL",
            ),
        ]
        | None
    ) = None

    def __post_init__(self) -> None:
        # a pattern's `$` also matches before a final line feed: the whole text, exactly
        for name, value in (("url", self.url), ("secret", self.secret)):
            if value is not None and "\n" in value:
                raise ValueError(f"{name}: no line feed (at its end neither)")
        fault = ipv6_fault(self.url)  # the rest of the URL is the pattern's
        if fault is not None:
            raise ValueError(f"url: {fault}")


class WebhookEndpoint(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    url: str
    events: tuple[str, ...]
    source: Source  # api, or config (BURA_WEBHOOK_URL)
    description: str | None
    created_at: datetime | None  # it hears of events recorded from then on
    secret: str | None = None  # only in the answer to its registration


class AttemptRecord(msgspec.Struct, frozen=True, kw_only=True):
    number: int
    at: datetime
    status: int | None  # the receiver's HTTP status; null when none came
    error: str | None
    seconds: float


class DeliveryRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str  # as in the Bura-Delivery header and the body's `id`
    endpoint_id: str
    url: str  # the endpoint's URL when it was queued
    type: str
    game_id: str
    version: int
    checkpoint: str  # the event's place in the global order (GET /events)
    state: DeliveryState
    attempts: int
    recorded_at: datetime  # when the event was recorded
    created_at: datetime  # when the delivery was queued
    next_attempt_at: datetime | None  # pending only
    last_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None
    delivered_at: datetime | None


class DeliveryDetail(DeliveryRecord, frozen=True, kw_only=True):
    body: Any  # the JSON body every attempt sends
    tries: list[AttemptRecord]


class DeliveryPage(msgspec.Struct, frozen=True):
    deliveries: list[DeliveryRecord]
    next: int | None  # pass as `before` for the page after this one; null at the end


def shown(endpoint: Endpoint, secret: str | None = None) -> WebhookEndpoint:
    return WebhookEndpoint(
        id=endpoint.id,
        url=endpoint.url,
        events=endpoint.events,
        source=endpoint.source,
        description=endpoint.description,
        created_at=endpoint.created_at,
        secret=secret,
    )


def _fields(d: Delivery) -> dict[str, Any]:
    return {
        "id": d.id,
        "endpoint_id": d.endpoint_id,
        "url": d.url,
        "type": d.type,
        "game_id": d.game_id,
        "version": d.version,
        "checkpoint": checkpoint_text((d.tx_id, d.position)),
        "state": d.state,
        "attempts": d.attempts,
        "recorded_at": d.recorded_at,
        "created_at": d.created_at,
        "next_attempt_at": d.next_attempt_at,
        "last_attempt_at": d.last_attempt_at,
        "last_status": d.last_status,
        "last_error": d.last_error,
        "delivered_at": d.delivered_at,
    }


def record(d: Delivery) -> DeliveryRecord:
    return DeliveryRecord(**_fields(d))


class Webhooks:
    def __init__(self, store: WebhookStore, registered: Callable[[], None] | None = None) -> None:
        self.store = store
        self.registered = registered  # told of each endpoint registered (the dispatcher)

    async def register(self, spec: RegisterWebhook) -> WebhookEndpoint:
        secret = spec.secret or "whsec_" + secrets.token_urlsafe(24)
        endpoint = await self.store.save_endpoint(
            Endpoint(
                id="whk_" + secrets.token_hex(8),
                url=spec.url,
                secret=secret,
                events=tuple(dict.fromkeys(spec.events)),
                source="api",
                description=spec.description,
            )
        )
        if self.registered is not None:
            self.registered()
        return shown(endpoint, secret)

    async def endpoints(self) -> list[WebhookEndpoint]:
        return [shown(e) for e in await self.store.endpoints()]

    async def endpoint(self, endpoint_id: str) -> WebhookEndpoint:
        found = await self.store.endpoint(endpoint_id) if _may_name(endpoint_id) else None
        if found is None:
            raise NotFound("webhook_not_found", f"no webhook endpoint {endpoint_id}")
        return shown(found)

    async def remove(self, endpoint_id: str) -> None:
        if not _may_name(endpoint_id):
            raise NotFound("webhook_not_found", f"no webhook endpoint {endpoint_id!r}")
        if endpoint_id == CONFIG_ENDPOINT and await self.store.endpoint(endpoint_id):
            raise Refused(
                "webhook_configured",
                "this endpoint comes from BURA_WEBHOOK_URL: unset it and restart instead",
            )
        if not await self.store.remove_endpoint(endpoint_id):
            raise NotFound("webhook_not_found", f"no webhook endpoint {endpoint_id}")

    async def log(
        self,
        *,
        endpoint_id: str | None,
        state: DeliveryState | None,
        game_id: str | None,
        before: int | None,
        limit: int,
    ) -> DeliveryPage:
        # one more than the page: `next` is null on the last page, not a page that is empty
        rows = await self.store.deliveries(
            endpoint_id=endpoint_id, state=state, game_id=game_id, before=before, limit=limit + 1
        )
        page = rows[:limit]
        more = len(rows) > limit
        return DeliveryPage([record(r) for r in page], page[-1].seq if more else None)

    async def delivery(self, delivery_id: str) -> DeliveryDetail:
        found = await self.store.delivery(delivery_id) if _may_name(delivery_id) else None
        if found is None:
            raise NotFound("delivery_not_found", f"no webhook delivery {delivery_id}")
        tries = [
            AttemptRecord(
                number=a.number, at=a.at, status=a.status, error=a.error, seconds=a.seconds
            )
            for a in await self.store.attempts(delivery_id)
        ]
        return DeliveryDetail(**_fields(found), body=msgspec.json.decode(found.body), tries=tries)

    async def retry(self, delivery_id: str) -> DeliveryRecord:
        if not _may_name(delivery_id):
            raise NotFound("delivery_not_found", f"no webhook delivery {delivery_id!r}")
        if not await self.store.redeliver(delivery_id):
            found = await self.store.delivery(delivery_id)
            if found is None:
                raise NotFound("delivery_not_found", f"no webhook delivery {delivery_id}")
            if found.state == "failed":  # then its endpoint is gone: nowhere to send it
                raise NotFound(
                    "webhook_not_found",
                    f"no webhook endpoint {found.endpoint_id}: it was removed, so delivery"
                    f" {delivery_id} cannot be sent again",
                )
            raise Refused(
                "delivery_not_failed",
                f"delivery {delivery_id} is {found.state}: only a failed one is sent again",
            )
        found = await self.store.delivery(delivery_id)
        assert found is not None
        return record(found)


def _may_name(record_id: str) -> bool:
    """Whether an id may name an endpoint or a delivery: ids are made of letters, digits
    and `_`, and PostgreSQL's text cannot even hold a NUL (looking one up was a 500)."""
    return "\x00" not in record_id
