"""Two app instances on the real PostgreSQL and Redis, as two replicas of one deployment:
what the tests of work shared between replicas start from."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from infra.ports.events import EventStore, RecordedEvent
from infra.ports.hints import Hint
from infra.postgres.games import PostgresGameIndex
from infra.postgres.leases import PostgresLeases
from infra.postgres.snapshots import PostgresSnapshots
from infra.postgres.tokens import PostgresSeatTokens
from infra.postgres.webhooks import PostgresWebhookStore
from infra.redis.hints import RedisHintBus
from services.bootstrap import Adapters
from services.config import Settings
from services.http.app import create_app
from tests import servers
from tests.api.conftest import OPERATOR_KEY, Api, serving


class CountedReads:
    """The real PostgreSQL event store, counting its reads of each game (the Redis server
    may be shared, and other servers' hints make the timers look their games up)."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.reads: Counter[str] = Counter()
        # game id -> what happens right after the next read of it returns its rows (and
        # before its caller has them): another replica's command, say
        self.then: dict[str, Callable[[], Awaitable[object]]] = {}

    async def read(
        self, stream_id: str, after: int = 0, until: int | None = None
    ) -> list[RecordedEvent]:
        self.reads[stream_id] += 1
        rows = await self.store.read(stream_id, after, until)
        meanwhile = self.then.pop(stream_id, None)
        if meanwhile is not None:
            await meanwhile()
        return rows

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@dataclass
class Replica:
    api: Api
    counted: CountedReads


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def replica(stack: AsyncExitStack, database_url: str, redis_url: str) -> Replica:
    """An app instance on the PostgreSQL and the Redis (its hints' bus) given, served until
    the stack closes."""
    store = await servers.open_postgres_store(database_url)
    counted = CountedReads(store)
    pool = store.pool
    adapters = Adapters(
        counted,  # type: ignore[arg-type]
        PostgresSeatTokens(pool),
        await RedisHintBus.open(redis_url),
        PostgresWebhookStore(pool),
        PostgresLeases(pool),
        index=PostgresGameIndex(pool),
        snapshots=PostgresSnapshots(pool),
    )
    stack.push_async_callback(adapters.close)
    # the poll slower than any test: only the hints move anything here
    settings = Settings(operator_key=OPERATOR_KEY, rate_limits=False, feed_poll_seconds=60)
    app = create_app(settings, adapters)
    client = await stack.enter_async_context(serving(app))
    return Replica(Api(client, app, adapters), counted)


@asynccontextmanager
async def two_replicas(database_url: str, redis_url: str) -> AsyncIterator[tuple[Replica, Replica]]:
    """Two app instances on one PostgreSQL and Redis, each hearing the other's hints."""
    async with AsyncExitStack() as stack:
        one = await replica(stack, database_url, redis_url)
        two = await replica(stack, database_url, redis_url)
        # Each hears the other's hint: both have subscribed (and said so) by then.
        for speaker, hearer in ((one, two), (two, one)):
            probe = Hint(f"probe-{uuid.uuid4().hex}", 1)
            for _ in range(100):  # published again until heard: none is kept for later
                await speaker.api.adapters.hints.publish(probe)
                await asyncio.sleep(0.05)
                if probe.game_id in hearer.api.service._hinted:
                    break
            assert probe.game_id in hearer.api.service._hinted
        yield one, two
