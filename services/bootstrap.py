"""The composition root: settings -> adapters -> seating, game service, reviews, projector,
presence and the clocks' timers.

The server, the CLI and the tests all build the application here: PostgreSQL and Redis
when the settings name them, else the embedded SQLite file and the in-process bus.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from infra.memory.limits import InProcessRateCounters
from infra.memory.presence import InProcessPresence
from infra.memory.tickets import InProcessStreamTickets
from infra.ports.events import EventStore, Record, StoreUnavailable
from infra.ports.games import GameIndex
from infra.ports.hints import HintBus
from infra.ports.leases import Leases
from infra.ports.limits import RateCounters
from infra.ports.presence import PresenceBoard
from infra.ports.snapshots import Snapshots
from infra.ports.tickets import StreamTickets
from infra.ports.tokens import SeatTokens
from infra.ports.webhooks import WebhookStore
from infra.redis.wire import Wire
from services.app.callers import Seating
from services.app.games import GameService
from services.app.listing import Listing
from services.app.reviews import Reviews
from services.app.tickets import Tickets
from services.app.webhooks import Webhooks
from services.config import ConfigError, Settings
from services.live.attendance import Attendance
from services.live.dispatcher import Dispatcher
from services.live.projector import Projector
from services.live.timeline import Timeline
from services.live.timers import Timers
from services.metrics import Metrics

log = logging.getLogger("bura.store")

# What a shutdown may take on a stalled database once the work in flight has ended, each
# step bounded: five components' background work cancelled (infra/deadline.STOP_SECONDS
# each), the webhook attempts in flight (dispatcher.ATTEMPTS_END_SECONDS), the webhook
# lease let go (infra/postgres/leases.RELEASE_SECONDS), the pool closed
# (infra/postgres/connections.CLOSE_SECONDS). docs/deploy.md counts it in the pod's grace.
STALLED_CLOSE = 5 * 1.0 + 2.0 + 2.0 + 2.0


def index_on(store: EventStore) -> GameIndex:
    """The games index in the event store's own database."""
    from infra.postgres.store import PostgresEventStore

    if isinstance(store, PostgresEventStore):
        from infra.postgres.games import PostgresGameIndex

        return PostgresGameIndex(store.pool, store.command_timeout)
    from infra.sqlite.games import SqliteGameIndex
    from infra.sqlite.store import SqliteEventStore

    assert isinstance(store, SqliteEventStore)
    return SqliteGameIndex(store.db)


def snapshots_on(store: EventStore) -> Snapshots:
    """Snapshots in the event store's own database (a disposable cache beside the events)."""
    from infra.postgres.store import PostgresEventStore

    if isinstance(store, PostgresEventStore):
        from infra.postgres.snapshots import PostgresSnapshots

        return PostgresSnapshots(store.pool, store.command_timeout)
    from infra.sqlite.snapshots import SqliteSnapshots
    from infra.sqlite.store import SqliteEventStore

    if isinstance(store, SqliteEventStore):
        return SqliteSnapshots(store.db)
    from infra.memory.snapshots import InProcessSnapshots

    return InProcessSnapshots()


@dataclass
class Adapters:
    """Open connections to the outside world; close() releases them. The games index
    lives in the event store's database (it is found there when not given); presence is
    in-process unless a Redis board is given."""

    store: EventStore
    tokens: SeatTokens
    hints: HintBus
    webhooks: WebhookStore
    leases: Leases
    # In-process unless Redis is configured: then shared by every replica.
    tickets: StreamTickets = field(default_factory=InProcessStreamTickets)
    counters: RateCounters = field(default_factory=InProcessRateCounters)

    index: GameIndex | None = None
    presence: PresenceBoard = field(default_factory=InProcessPresence)
    snapshots: Snapshots | None = None
    # where replays, audits and exports read the record: the store unless a standby is given
    record: Record | None = None
    # released after the adapters above: what several of them share (one Redis wire)
    shared: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.index is None:
            self.index = index_on(self.store)
        if self.snapshots is None:
            self.snapshots = snapshots_on(self.store)
        if self.record is None:
            self.record = self.store

    @property
    def games(self) -> GameIndex:
        assert self.index is not None
        return self.index

    async def close(self) -> None:
        await self.presence.close()
        await self.counters.close()
        await self.tickets.close()
        await self.hints.close()
        if self.record is not None:
            await close_record(self.record, self.store)
        await self.store.close()
        for close in self.shared:
            await close()


class SchemaBehind(Exception):
    """A store opened for reading only whose schema this code is ahead of."""


def refusal(error: BaseException) -> str | None:
    """Why the store could not be opened or read, in one line: a setting names no store
    that could be (a malformed PostgreSQL URL), it is unreachable or cannot be opened,
    its schema is behind, or PostgreSQL refused the role (no right to the schema, say).
    None for anything else, which is a bug and keeps its traceback."""
    if isinstance(error, ConfigError):
        return f"bad setting: {error}"
    if isinstance(error, StoreUnavailable):
        return f"the event store is unavailable: {error}"
    if isinstance(error, SchemaBehind):
        return str(error)
    if type(error).__module__.startswith("asyncpg") and hasattr(error, "sqlstate"):
        return f"the database refused: {type(error).__name__}: {error}"
    return None


def check_stores(settings: Settings) -> None:
    """The PostgreSQL URLs of the settings, read as asyncpg will read them when it
    connects, before anything is opened: one that cannot be read (a port that is no
    number or out of range, an unknown `sslmode`, a broken address or query) is a bad
    setting, ConfigError naming the variable, rather than an error from deep inside a
    connection attempt. The URL itself is never repeated (it may hold a password)."""
    for variable, url in (
        ("BURA_DATABASE_URL", settings.database_url),
        ("BURA_READ_DATABASE_URL", settings.read_database_url),
    ):
        if url:
            wrong = _postgres_url_problem(url)
            if wrong is not None:
                raise ConfigError(f"{variable} is no usable PostgreSQL URL: {wrong}")


def _postgres_url_problem(url: str) -> str | None:
    """What makes `url` no PostgreSQL URL asyncpg can connect with, in one line; None when
    nothing does (whether its server answers is found out by connecting)."""
    try:
        netloc = urlsplit(url).netloc
    except ValueError as e:  # a bracket left open
        return str(e)
    for host in netloc.rpartition("@")[2].split(","):  # host[:port], a list of them
        after_address = host.rpartition("]")[2] if host.startswith("[") else host  # [IPv6]
        _, colon, port = after_address.partition(":")
        if colon and port and not _is_port(unquote(port)):
            return f"the port {unquote(port)!r} is no port number (1 to 65535)"
    try:
        parsed = _asyncpg_parse(url)
    except (ValueError, OSError) as e:  # asyncpg's ClientConfigurationError is a ValueError
        return " ".join(str(e).split()) or type(e).__name__
    for address in parsed:
        if isinstance(address, tuple) and not _is_port(str(address[1])):
            return f"the port {address[1]!r} is no port number (1 to 65535)"
    return None


def _is_port(text: str) -> bool:
    return text.isascii() and text.isdigit() and 1 <= int(text) <= 65535


def _asyncpg_parse(url: str) -> list[object]:
    """The addresses asyncpg makes of `url` with its own parser, which it runs on every
    connection (the URL's query, its `sslmode`, its certificates' files and the PG*
    variables included), without connecting. Empty when this asyncpg has no such parser
    to ask: connecting then finds what it would have."""
    from asyncpg import connect_utils

    parse = getattr(connect_utils, "_parse_connect_dsn_and_args", None)
    if parse is None:
        return []
    names = inspect.signature(parse).parameters
    if "dsn" not in names:
        return []
    try:
        addresses, _ = parse(**{name: None for name in names if name != "dsn"}, dsn=url)
    except TypeError:  # a parser of another asyncpg, asked otherwise
        return []
    return list(addresses)


async def open_store(
    settings: Settings, *, migrating: bool = True
) -> tuple[EventStore, SeatTokens]:
    """The event store and seat tokens the settings name, migrated and open.

    On PostgreSQL the applied migrations are read first, and nothing is written when none
    is pending: a role that may only read and write the rows (no CREATE) serves an
    up-to-date database. Pending ones, `migrating` (`bura serve`, `bura import`), are
    named in one line at info and applied, unless BURA_MIGRATE_ON_START is false: then,
    as for a reader (`bura replay`, `audit`, `verify`, `export`), SchemaBehind, which
    says to run `bura migrate` (the rollout's migration Job). The embedded SQLite file
    migrates itself when `migrating`; for a reader it is opened for reading only and must
    hold this bura's schema (it is never written, not even upgraded). A malformed URL is
    ConfigError, a SQLite file that cannot be made or opened StoreUnavailable."""
    check_stores(settings)
    if settings.database_url:
        from infra.postgres.migrate import migrate, pending
        from infra.postgres.store import PostgresEventStore
        from infra.postgres.tokens import PostgresSeatTokens

        if missing := await pending(settings.database_url):
            if not migrating or not settings.migrate_on_start:
                why = "" if not migrating else " (BURA_MIGRATE_ON_START is false)"
                raise SchemaBehind(
                    f"the store's schema lacks {len(missing)} migration(s) this bura has "
                    f"(first: {missing[0]}){why}: run `bura migrate` (or the rollout's "
                    "migration Job)"
                )
            log.info(
                "applying %d pending migration(s): %s",
                len(missing),
                ", ".join(missing),
                extra={"migrations": missing},
            )
            applied = await migrate(settings.database_url)
            # another replica starting at once may have applied some (or all) of them
            # while this one waited for the migration lock: say what this one did
            log.info(
                "applied %d migration(s)%s",
                len(applied),
                f" ({len(missing) - len(applied)} by another process)"
                if len(applied) < len(missing)
                else "",
                extra={"migrations": applied},
            )
        postgres = await PostgresEventStore.open(
            settings.database_url, lanes=settings.append_lanes or None
        )
        return postgres, PostgresSeatTokens(postgres.pool)
    from infra.sqlite.database import SqliteDatabase
    from infra.sqlite.store import SqliteEventStore
    from infra.sqlite.tokens import SqliteSeatTokens

    path = settings.sqlite_path
    directory = os.path.dirname(path)
    if directory:
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as e:
            raise StoreUnavailable(
                f"cannot open {path} (BURA_SQLITE_PATH): cannot make its directory "
                f"{directory}: {e.strerror or e}"
            ) from e
    try:
        database = await SqliteDatabase.open(path, reading=not migrating)
    except StoreUnavailable as e:  # no file SQLite can open (a directory, no database)
        raise StoreUnavailable(f"{e} (BURA_SQLITE_PATH)") from e
    return SqliteEventStore(database), SqliteSeatTokens(database)


async def open_record(settings: Settings, store: EventStore) -> Record:
    """Where the record's long reads go: the standby the settings name, topped up from
    `store`, else `store` itself. The standby is connected at its first read, so one that
    is down delays nothing (its reads fall back to the primary)."""
    if not settings.read_database_url:
        return store
    from infra.postgres.standby import StandbyReads
    from infra.postgres.store import PostgresEventStore

    standby = await PostgresEventStore.open(settings.read_database_url, min_size=0, max_size=4)
    return StandbyReads(standby, store)


async def close_record(record: Record, store: EventStore) -> None:
    """Close what `open_record` opened: a standby's connections, never the store it was
    given (whoever opened the store closes it)."""
    if record is not store:
        await record.close()


async def open_hints(settings: Settings, wire: Wire | None) -> HintBus:
    """The hints in Redis on the process's wire when Redis is configured (the wire's owner
    closes it), on the channel under BURA_REDIS_PREFIX; in this process otherwise."""
    if wire is not None and settings.redis_url:
        from infra.redis.hints import RedisHintBus

        return RedisHintBus(wire, settings.redis_url, owns_wire=False, prefix=settings.redis_prefix)
    from infra.memory.hints import InProcessHintBus

    return InProcessHintBus()


async def open_presence(settings: Settings) -> PresenceBoard:
    if settings.redis_url:
        from infra.redis.presence import RedisPresence

        return await RedisPresence.open(settings.redis_url, prefix=settings.redis_prefix)
    return InProcessPresence()


def adapters_on(
    store: EventStore,
    tokens: SeatTokens,
    hints: HintBus,
    tickets: StreamTickets | None = None,
    counters: RateCounters | None = None,
    presence: PresenceBoard | None = None,
) -> Adapters:
    """The adapters around an open event store: the webhook store, the leases and the
    games index live in the same database, on the same pool or file; stream tickets, rate
    counters and the presence board are the given ones (Redis) or this process's."""
    tickets = tickets or InProcessStreamTickets()
    counters = counters or InProcessRateCounters()
    from infra.sqlite.store import SqliteEventStore

    board = presence if presence is not None else InProcessPresence()
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
            index_on(store),
            board,
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
        PostgresWebhookStore(store.pool, store.command_timeout),
        PostgresLeases(store.pool, store.command_timeout),
        tickets,
        counters,
        index_on(store),
        board,
    )


async def open_shared(settings: Settings, wire: Wire | None) -> tuple[StreamTickets, RateCounters]:
    """Stream tickets and rate counters: in Redis when it is configured (the counters on
    the process's wire, which its owner closes), so that single use and the limits hold
    across replicas; in this process otherwise."""
    if wire is not None and settings.redis_url:
        from infra.redis.limits import RedisRateCounters
        from infra.redis.tickets import RedisStreamTickets

        return (
            await RedisStreamTickets.open(settings.redis_url, settings.redis_prefix),
            RedisRateCounters(wire, settings.redis_prefix, owns_wire=False),
        )
    return InProcessStreamTickets(), InProcessRateCounters()


async def open_adapters(settings: Settings) -> Adapters:
    store, tokens = await open_store(settings)
    # The two Redis calls every command makes (the rate script, the hint's PUBLISH) share
    # one pipelined connection: a turn of the loop writes both in one system call.
    wire = Wire(settings.redis_url) if settings.redis_url else None
    hints: HintBus | None = None
    try:
        hints = await open_hints(settings, wire)
        tickets, counters = await open_shared(settings, wire)
        presence = await open_presence(settings)
    except BaseException:
        if hints is not None:
            await hints.close()
        if wire is not None:
            await wire.close()
        await store.close()
        raise
    adapters = adapters_on(store, tokens, hints, tickets, counters, presence)
    try:
        adapters.record = await open_record(settings, store)
    except BaseException:
        await adapters.close()
        raise
    if wire is not None:
        adapters.shared.append(wire.close)
    return adapters


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
    attendance: Attendance
    timers: Timers
    listing: Listing

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
        index=adapters.games,
        snapshots=adapters.snapshots,
        record=adapters.record,
        # a copy unconfirmed for longer is read again, hint or not: the bound on how long
        # a hint lost without a trace (its publisher died) can leave a copy stale
        fresh_seconds=settings.feed_poll_seconds,
    )
    attendance = Attendance(adapters.presence, now=games.now)
    projector = Projector(
        games,
        adapters.hints,
        poll_seconds=settings.feed_poll_seconds,
        keepalive_seconds=settings.sse_keepalive_seconds,
        attendance=attendance,
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
    timers = Timers(games, adapters.hints, adapters.games, attendance)
    metrics.open_streams.set_function(lambda: projector.open_streams)
    metrics.projector_lag.set_function(lambda: projector.lag)
    metrics.redis_errors.set_function(
        lambda: getattr(adapters.hints, "errors", 0) + attendance.errors
    )
    metrics.feed_streams.set_function(lambda: timeline.open_streams)
    commits = getattr(adapters.store, "commits", None)  # PostgreSQL's group commit
    metrics.append_batches.set_function(lambda: getattr(commits, "batches", 0))
    metrics.appends_batched.set_function(lambda: getattr(commits, "batched", 0))
    standby = adapters.record if adapters.record is not adapters.store else None

    def rows_from(source: str) -> Callable[[], float]:
        return lambda: float(getattr(standby, "rows", {}).get(source, 0))

    for source in ("standby", "primary"):
        metrics.record_rows.labels(source).set_function(rows_from(source))
    metrics.standby_errors.set_function(lambda: getattr(standby, "errors", 0))
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
        Webhooks(adapters.webhooks, registered=dispatcher.poke),
        dispatcher,
        tickets,
        attendance,
        timers,
        Listing(adapters.games, games),
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
        runtime.attendance.start()
        runtime.projector.start()
        runtime.timeline.start()
        runtime.dispatcher.start()
        runtime.timers.start()
        try:
            yield runtime
        finally:
            await runtime.timers.stop()
            await runtime.dispatcher.stop()
            await runtime.timeline.stop()
            await runtime.projector.stop()
            await runtime.games.seeding.stop()
            await runtime.games.settled()
            await runtime.attendance.stop()
    finally:
        if opened:
            await adapters.close()
