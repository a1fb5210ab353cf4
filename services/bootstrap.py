"""The composition root: settings -> adapters -> seating, game service, reviews, projector.

The server, the CLI and the tests all build the application here: PostgreSQL and Redis
when the settings name them, else the embedded SQLite file and the in-process bus.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from infra.memory.limits import InProcessRateCounters
from infra.memory.tickets import InProcessStreamTickets
from infra.ports.events import EventStore
from infra.ports.hints import HintBus
from infra.ports.leases import Leases
from infra.ports.limits import RateCounters
from infra.ports.tickets import StreamTickets
from infra.ports.tokens import SeatTokens
from infra.ports.webhooks import WebhookStore
from services.app.callers import Seating
from services.app.games import GameService
from services.app.reviews import Reviews
from services.app.tickets import Tickets
from services.app.webhooks import Webhooks
from services.config import Settings
from services.live.dispatcher import Dispatcher
from services.live.projector import Projector
from services.live.timeline import Timeline
from services.metrics import Metrics


@dataclass
class Adapters:
    """Open connections to the outside world; close() releases them."""

    store: EventStore
    tokens: SeatTokens
    hints: HintBus
    webhooks: WebhookStore
    leases: Leases
    # In-process unless Redis is configured: then shared by every replica.
    tickets: StreamTickets = field(default_factory=InProcessStreamTickets)
    counters: RateCounters = field(default_factory=InProcessRateCounters)

    async def close(self) -> None:
        await self.counters.close()
        await self.tickets.close()
        await self.hints.close()
        await self.store.close()


async def open_store(settings: Settings) -> tuple[EventStore, SeatTokens]:
    """The event store and seat tokens the settings name, migrated and open."""
    if settings.database_url:
        from infra.postgres.migrate import migrate
        from infra.postgres.store import PostgresEventStore
        from infra.postgres.tokens import PostgresSeatTokens

        await migrate(settings.database_url)
        postgres = await PostgresEventStore.open(settings.database_url)
        return postgres, PostgresSeatTokens(postgres.pool)
    from infra.sqlite.database import SqliteDatabase
    from infra.sqlite.store import SqliteEventStore
    from infra.sqlite.tokens import SqliteSeatTokens

    directory = os.path.dirname(settings.sqlite_path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    database = await SqliteDatabase.open(settings.sqlite_path)
    return SqliteEventStore(database), SqliteSeatTokens(database)


async def open_hints(settings: Settings) -> HintBus:
    if settings.redis_url:
        from infra.redis.hints import RedisHintBus

        return await RedisHintBus.open(settings.redis_url)
    from infra.memory.hints import InProcessHintBus

    return InProcessHintBus()


def adapters_on(
    store: EventStore,
    tokens: SeatTokens,
    hints: HintBus,
    tickets: StreamTickets | None = None,
    counters: RateCounters | None = None,
) -> Adapters:
    """The adapters around an open event store: the webhook store and the leases live in
    the same database, on the same pool or file; stream tickets and rate counters are the
    given ones (Redis) or this process's."""
    tickets = tickets or InProcessStreamTickets()
    counters = counters or InProcessRateCounters()
    from infra.sqlite.store import SqliteEventStore

    if isinstance(store, SqliteEventStore):
        from infra.sqlite.leases import SqliteLeases
        from infra.sqlite.webhooks import SqliteWebhookStore

        return Adapters(
            store,
            tokens,
            hints,
            SqliteWebhookStore(store.db),
            SqliteLeases(store.db),
            tickets,
            counters,
        )
    from infra.postgres.leases import PostgresLeases
    from infra.postgres.store import PostgresEventStore
    from infra.postgres.webhooks import PostgresWebhookStore

    if not isinstance(store, PostgresEventStore):
        raise TypeError(f"no webhook store for {type(store).__name__}")
    return Adapters(
        store,
        tokens,
        hints,
        PostgresWebhookStore(store.pool),
        PostgresLeases(store.pool),
        tickets,
        counters,
    )


async def open_shared(settings: Settings) -> tuple[StreamTickets, RateCounters]:
    """Stream tickets and rate counters: in Redis when it is configured, so that single use
    and the limits hold across replicas; in this process otherwise."""
    if settings.redis_url:
        from infra.redis.limits import RedisRateCounters
        from infra.redis.tickets import RedisStreamTickets

        return (
            await RedisStreamTickets.open(settings.redis_url, settings.redis_prefix),
            await RedisRateCounters.open(settings.redis_url, settings.redis_prefix),
        )
    return InProcessStreamTickets(), InProcessRateCounters()


async def open_adapters(settings: Settings) -> Adapters:
    store, tokens = await open_store(settings)
    try:
        hints = await open_hints(settings)
        tickets, counters = await open_shared(settings)
    except BaseException:
        await store.close()
        raise
    return adapters_on(store, tokens, hints, tickets, counters)


@dataclass
class Runtime:
    """Everything the entry points use, built from one set of settings."""

    settings: Settings
    adapters: Adapters
    metrics: Metrics
    seating: Seating
    games: GameService
    reviews: Reviews
    projector: Projector
    timeline: Timeline
    webhooks: Webhooks
    dispatcher: Dispatcher
    tickets: Tickets

    def drain(self) -> None:
        """SIGTERM: end every live stream and feed with word to reconnect elsewhere."""
        self.projector.drain()
        self.timeline.drain()


def assemble(settings: Settings, adapters: Adapters, metrics: Metrics | None = None) -> Runtime:
    metrics = metrics or Metrics()
    seating = Seating(adapters.tokens, settings.operator_key, cache=settings.cache_games)
    games = GameService(
        adapters.store,
        seating,
        adapters.hints,
        retries=settings.command_retries,
        cache=settings.cache_games,
        metrics=metrics,
    )
    projector = Projector(
        games,
        adapters.hints,
        poll_seconds=settings.feed_poll_seconds,
        keepalive_seconds=settings.sse_keepalive_seconds,
    )
    timeline = Timeline(
        adapters.store,
        adapters.hints,
        poll_seconds=settings.feed_poll_seconds,
        keepalive_seconds=settings.sse_keepalive_seconds,
    )
    dispatcher = Dispatcher(
        adapters.store, adapters.webhooks, adapters.leases, timeline, metrics, settings
    )
    metrics.open_streams.set_function(lambda: projector.open_streams)
    metrics.projector_lag.set_function(lambda: projector.lag)
    metrics.redis_errors.set_function(lambda: getattr(adapters.hints, "errors", 0))
    metrics.feed_streams.set_function(lambda: timeline.open_streams)
    tickets = Tickets(adapters.tickets, settings.stream_ticket_seconds)
    return Runtime(
        settings,
        adapters,
        metrics,
        seating,
        games,
        Reviews(games),
        projector,
        timeline,
        Webhooks(adapters.webhooks),
        dispatcher,
        tickets,
    )


@asynccontextmanager
async def running(
    settings: Settings, adapters: Adapters | None = None, metrics: Metrics | None = None
) -> AsyncIterator[Runtime]:
    """The assembled application with its projector running. Adapters it opens itself it
    closes at the end; adapters given to it are left open for the caller."""
    opened = adapters is None
    adapters = adapters if adapters is not None else await open_adapters(settings)
    try:
        runtime = assemble(settings, adapters, metrics)
        runtime.projector.start()
        runtime.timeline.start()
        runtime.dispatcher.start()
        try:
            yield runtime
        finally:
            await runtime.dispatcher.stop()
            await runtime.timeline.stop()
            await runtime.projector.stop()
            await runtime.games.seeding.stop()
    finally:
        if opened:
            await adapters.close()
