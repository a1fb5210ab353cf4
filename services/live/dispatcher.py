"""The webhook dispatcher: exactly one replica at a time (the holder of the `webhooks` lease)
follows the global order from the checkpoint stored with the deliveries, turns each event
a webhook is for into one delivery per subscribed endpoint, and sends them.

- At least once: a delivery is queued in the same transaction that moves the checkpoint
  past its event, and is marked delivered only after the receiver's 2xx; a replica that
  dies between the two leaves it pending, and the next holder sends it again under the
  same id once that attempt's claim has run out (receivers deduplicate by the
  Bura-Delivery header or the body's `id`).
- Never again once recorded: an attempt first claims its delivery in the store, which
  refuses unless it is still pending, due and unattempted since `due` read it, and this
  replica still holds the lease; the claim puts the next attempt BURA_WEBHOOK_TIMEOUT_SECONDS
  off, so no other holder sends it while this attempt is in flight.
- Ordered per game: only the oldest pending delivery of each endpoint and game is ever
  attempted, so a later event of a game never reaches an endpoint before an earlier one.
- One at a time: a holder renews its lease every third of its term and stops sending
  once its own term is up without a renewal; the store takes nothing from a replica that
  no longer holds it, so an old holder woken late cannot move the checkpoint or start
  an attempt.
- Retries back off exponentially (BURA_WEBHOOK_RETRY_SECONDS doubling, a little jitter,
  never past BURA_WEBHOOK_RETRY_MAX_SECONDS) until BURA_WEBHOOK_MAX_ATTEMPTS,
  after which the delivery is failed (the log keeps it; POST .../retry queues it again)
  and the game's later deliveries go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import os
import random
import secrets
import socket
import ssl
import time
from datetime import UTC, datetime
from urllib.parse import urlsplit, urlunsplit

import certifi
import httpx

from infra.deadline import cancelled
from infra.ports.events import Checkpoint, EventStore, StoreUnavailable
from infra.ports.leases import Leases
from infra.ports.webhooks import Delivery, Endpoint, NewDelivery, Tried, Verdict, WebhookStore
from infra.throttle import Throttled
from services.app.notices import drafts
from services.app.signing import HEADER, signature
from services.app.webhooks import CONFIG_ENDPOINT, configured_endpoint
from services.config import Settings
from services.live.timeline import Timeline
from services.metrics import Metrics

log = logging.getLogger("bura.webhooks")

LEASE = "webhooks"  # the lease's name, and the checkpoint's
PAGE = 500
CONCURRENCY = 8  # deliveries in flight at once (each to another endpoint or game)
COALESCE = 0.05  # hints closer together than this are read as one
WARN_EVERY = 10.0  # seconds between two warnings that the store cannot be reached
ATTEMPTS_END_SECONDS = 2.0  # stopping: attempts in flight may end within this
IDLE_LOOK = 1.0  # with no endpoint: how often to look for one (seconds, at most the poll)


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context a process: building one loads the CA bundle (tens of ms)."""
    return ssl.create_default_context(cafile=certifi.where())


def delivery_id(endpoint_id: str, game_id: str, version: int) -> str:
    """The same id for the same event and endpoint, whichever replica queues it."""
    return "dlv_" + hashlib.sha256(f"{endpoint_id}/{game_id}/{version}".encode()).hexdigest()[:24]


def without_query(url: str) -> str:
    """An endpoint's URL as a log line shows it: no query or fragment, where receivers
    often carry a credential (`?access_token=`, a chat hook's key)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class Dispatcher:
    def __init__(
        self,
        store: EventStore,
        webhooks: WebhookStore,
        leases: Leases,
        timeline: Timeline,
        metrics: Metrics,
        settings: Settings,
    ) -> None:
        self.store = store
        self.webhooks = webhooks
        self.leases = leases
        self.timeline = timeline
        self.metrics = metrics
        self.settings = settings
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.lease_seconds = settings.webhook_lease_seconds
        self._held_until = 0.0  # monotonic: our term, counted from before the renewal
        self._renewed = 0.0
        self._checkpoint: Checkpoint | None = None
        self._endpoints: dict[str, Endpoint] = {}
        # No endpoint at the last look: nothing to deliver, so the events are not read (the
        # checkpoint moves to the store's head) and hints do not wake the loop; it looks
        # again every IDLE_LOOK s, or at once when this replica registers an endpoint.
        self.idle = True
        self._poked = asyncio.Event()
        self._inflight: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._finished = asyncio.Event()  # an attempt ended: its game's next may go
        self._task: asyncio.Task[None] | None = None
        self._client: httpx.AsyncClient | None = None
        self._trouble = Throttled(log, WARN_EVERY)  # the store out of reach, now and then

    @property
    def held(self) -> bool:
        return time.monotonic() < self._held_until

    def start(self) -> None:
        self._client = httpx.AsyncClient(
            verify=_tls(),
            timeout=self.settings.webhook_timeout_seconds,
            follow_redirects=False,
            headers={"User-Agent": "bura-webhooks/1", "Content-Type": "application/json"},
        )
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Stop sending; attempts in flight get a moment to finish (one cut short stays
        pending and is sent again); let the lease go so another replica takes over now."""
        if self._task is not None:
            await cancelled([self._task])
        inflight = list(self._inflight.values())
        if inflight:
            await asyncio.wait(inflight, timeout=ATTEMPTS_END_SECONDS)
            await cancelled(inflight)
        if self.held:
            with contextlib.suppress(StoreUnavailable, OSError):
                await self.leases.release(LEASE, self.holder)
        self._held_until = 0.0
        self.metrics.webhook_lease.set(0)
        if self._client is not None:
            await self._client.aclose()

    # --- the loop -------------------------------------------------------------------------

    async def _run(self) -> None:
        configured = False
        backlog_read = 0.0
        while True:
            pulse = self.timeline.pulse()
            finished = self._finished
            wait = self.lease_seconds / 3
            try:
                if not configured:
                    await self._configure()
                    configured = True
                if time.monotonic() - backlog_read >= min(self.timeline.poll, 5.0):
                    await self._count_backlog()
                    backlog_read = time.monotonic()
                if self.settings.webhook_delivery:
                    await self._hold()
                if self.held:
                    more = await self._pump()
                    if self.idle:
                        wait = min(wait, IDLE_LOOK, self.timeline.poll)
                    else:
                        due = await self._send_due()
                        wait = 0.0 if more else min(wait, due, self.timeline.poll)
            except asyncio.CancelledError:
                raise
            except StoreUnavailable as error:
                self.metrics.webhook_errors.inc()
                self._trouble.warn("webhooks paused: the store cannot be reached (%s)", error)
                wait = self.timeline.poll
            except Exception:
                self.metrics.webhook_errors.inc()
                log.exception("the webhook dispatcher failed; going on")
                wait = self.timeline.poll
            if wait > 0:
                await self._sleep(pulse, finished, wait)

    async def _sleep(self, pulse: asyncio.Event, finished: asyncio.Event, wait: float) -> None:
        """Until the wait is over, or (while holding the lease) a hint or a finished
        attempt calls for a look; hints closer together than COALESCE count as one."""
        if not self.held:
            await asyncio.sleep(wait)
            return
        if self.idle:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._poked.wait()
            self._poked.clear()
            return
        waiters = [asyncio.ensure_future(e.wait()) for e in (pulse, finished)]
        try:
            await asyncio.wait(waiters, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
        await asyncio.sleep(COALESCE)

    def poke(self) -> None:
        """An endpoint was registered here: look now rather than at the next idle look."""
        self._poked.set()

    async def _configure(self) -> None:
        """The settings' own endpoint, as the settings say now (gone if they name none)."""
        endpoint = configured_endpoint(self.settings)
        if endpoint is not None:
            await self.webhooks.save_endpoint(endpoint)
        elif await self.webhooks.endpoint(CONFIG_ENDPOINT) is not None:
            await self.webhooks.remove_endpoint(CONFIG_ENDPOINT)

    async def _hold(self) -> None:
        now = time.monotonic()
        if self.held and now - self._renewed < self.lease_seconds / 3:
            return
        was = self.held
        if await self.leases.hold(LEASE, self.holder, self.lease_seconds):
            self._held_until, self._renewed = now + self.lease_seconds, now
            if not was:
                log.info("delivering webhooks: this replica holds the lease")
                self._checkpoint = None  # another holder may have moved it meanwhile
        else:
            self._lost()
        self.metrics.webhook_lease.set(1 if self.held else 0)

    def _lost(self) -> None:
        if self._held_until:
            log.info("not delivering webhooks: another replica holds the lease")
        self._held_until = 0.0
        self.metrics.webhook_lease.set(0)

    # --- from the global order to the outbox -----------------------------------------------

    async def _pump(self) -> bool:
        """Queue the deliveries of the next page of events; True if there may be more."""
        if self._checkpoint is None:
            self._checkpoint = await self.webhooks.checkpoint(LEASE)
        if self.idle and not await self._idle_look(self._checkpoint):
            return False
        rows = await self.store.read_all(self._checkpoint, PAGE)
        if not rows:
            return False
        endpoints = await self.webhooks.endpoints()
        self._endpoints = {e.id: e for e in endpoints}
        self.idle = not endpoints
        queued = []
        if endpoints:
            for draft in await drafts(self.store, rows):
                row = draft.row
                for endpoint in endpoints:
                    created = endpoint.created_at
                    if draft.type not in endpoint.events or (
                        created is not None and row.recorded_at < created
                    ):
                        continue
                    ident = delivery_id(endpoint.id, row.stream_id, row.version)
                    queued.append(
                        NewDelivery(
                            id=ident,
                            endpoint_id=endpoint.id,
                            url=endpoint.url,
                            type=draft.type,
                            game_id=row.stream_id,
                            version=row.version,
                            tx_id=row.tx_id,
                            position=row.position,
                            recorded_at=row.recorded_at,
                            body=draft.body(ident),
                        )
                    )
        if not await self._moved((rows[-1].tx_id, rows[-1].position), queued):
            return False
        if queued:
            self.metrics.webhook_queued.inc(len(queued))
        return len(rows) == PAGE

    async def _idle_look(self, checkpoint: Checkpoint) -> bool:
        """With no endpoint at the last look: True if there is one now. Else the checkpoint
        moves to the head of the global order without reading the events it passes. The
        head is read before the endpoints: an endpoint registered after that look hears
        only of events recorded after it, and those are all past that head."""
        head = await self.store.head()
        if await self.webhooks.endpoints():
            self.idle = False
            return True
        if head > checkpoint:
            await self._moved(head, [])
        return False

    async def _moved(self, after: Checkpoint, queued: list[NewDelivery]) -> bool:
        """Queue the deliveries and move the checkpoint to `after`, in one transaction,
        while the lease is still ours; False (the lease lost) if it is not."""
        if not await self.webhooks.enqueue(LEASE, self.holder, after, queued):
            self._lost()
            return False
        self._checkpoint = after
        return True

    # --- sending ---------------------------------------------------------------------------

    async def _send_due(self) -> float:
        """Start the attempts that are due; seconds until the next falls due."""
        due = await self.webhooks.due(limit=CONCURRENCY * 4)
        started = 0
        for delivery in due.deliveries:
            key = (delivery.endpoint_id, delivery.game_id)
            if key in self._inflight or len(self._inflight) >= CONCURRENCY:
                continue
            endpoint = self._endpoints.get(delivery.endpoint_id)
            if endpoint is None:
                endpoint = await self.webhooks.endpoint(delivery.endpoint_id)
                if endpoint is None:
                    continue  # removed meanwhile: its deliveries are being cancelled
                self._endpoints[endpoint.id] = endpoint
            self._inflight[key] = asyncio.create_task(self._attempt(key, delivery, endpoint))
            started += 1
        if due.wait is None or (due.wait == 0 and not started):
            return self.timeline.poll  # an attempt that ends wakes the loop sooner
        return due.wait

    async def _attempt(self, key: tuple[str, str], delivery: Delivery, endpoint: Endpoint) -> None:
        try:
            # `due` is a snapshot: an attempt that was being recorded as it was read (this
            # key's previous one, or another holder's) may have settled the delivery since.
            # Only the store can say so, atomically with taking it for this attempt.
            if not await self.webhooks.claim(
                LEASE,
                self.holder,
                delivery.id,
                delivery.attempts,
                self.settings.webhook_timeout_seconds,
            ):
                return
            tried = await self._send(delivery, endpoint)
            await self.webhooks.record(LEASE, self.holder, delivery.id, tried)
            self.metrics.webhook_deliveries.labels(endpoint.id, tried.verdict).inc()
            if tried.verdict != "delivered":
                log.warning(
                    "webhook %s to %s (%s): %s (attempt %d, %s)",
                    delivery.id,
                    endpoint.id,
                    without_query(endpoint.url),
                    tried.error,
                    delivery.attempts + 1,
                    "giving up" if tried.verdict == "failed" else f"again in {tried.retry_in:.1f}s",
                    extra={"game_id": delivery.game_id, "version": delivery.version},
                )
        except StoreUnavailable as error:
            self._trouble.warn(
                "a webhook attempt could not be recorded (%s); it will be resent", error
            )
        except Exception:
            log.exception("webhook %s: the attempt failed", delivery.id)
        finally:
            self._inflight.pop(key, None)
            finished, self._finished = self._finished, asyncio.Event()
            finished.set()

    async def _send(self, delivery: Delivery, endpoint: Endpoint) -> Tried:
        assert self._client is not None
        at = datetime.now(UTC)
        started = time.monotonic()
        headers = {
            "Bura-Delivery": delivery.id,
            "Bura-Event": delivery.type,
            HEADER: signature(endpoint.secret, int(at.timestamp()), delivery.body),
        }
        status: int | None = None
        error: str | None = None
        limit = self.settings.webhook_timeout_seconds
        try:
            # the whole attempt (connect, send, the answer's head) within the timeout: the
            # client's own timeout bounds each read alone, which a receiver that dribbles
            # its answer a line at a time never trips
            async with asyncio.timeout(limit):
                async with self._client.stream(
                    "POST", endpoint.url, content=delivery.body, headers=headers
                ) as response:
                    status = response.status_code
            if not 200 <= status < 300:
                error = f"HTTP {status}"
        except TimeoutError:
            status, error = None, f"no answer within {limit:g}s"
        except Exception as failure:  # whatever it was, the attempt failed
            # not only httpx's errors: a URL it cannot use (InvalidURL), an encoding error,
            # a bug; an attempt that is never recorded would stay pending for ever
            error = f"{type(failure).__name__}: {failure}"[:500] or type(failure).__name__
        number = delivery.attempts + 1
        verdict: Verdict
        if error is None:
            verdict = "delivered"
        elif number >= self.settings.webhook_max_attempts:
            verdict = "failed"
        else:
            verdict = "retry"
        return Tried(
            at=at,
            status=status,
            error=error,
            seconds=time.monotonic() - started,
            verdict=verdict,
            retry_in=backoff(self.settings, number),
        )

    # --- what the SRE sees -----------------------------------------------------------------

    async def _count_backlog(self) -> None:
        backlog = await self.webhooks.backlog()
        self.metrics.webhook_pending.set(backlog.pending)
        oldest = backlog.oldest
        age = 0.0 if oldest is None else max(0.0, time.time() - oldest.timestamp())
        self.metrics.webhook_oldest.set(age)


def backoff(settings: Settings, attempts: int) -> float:
    """Seconds before the next attempt, after `attempts`: doubling up to the cap."""
    # past 2^64 the delay is the cap anyway; 2.0 ** 1024 would overflow
    growth: float = 2.0 ** min(attempts - 1, 64)
    delay = settings.webhook_retry_seconds * growth * (1 + random.random() / 10)
    # the jitter spreads retries to a receiver back up; the cap is the longest delay
    return min(settings.webhook_retry_max_seconds, delay)
