"""Work a request starts that outlives it — a clock's timer, a seeding's timer — is not
bound by that request's deadline (BURA_REQUEST_DEADLINE_SECONDS). The deadline follows a
request into every task it starts; a timer that kept it found the store "unavailable" on
every read once the request's seconds had passed, and the table waited, overdue, until
someone's command woke it (found from outside: an auto_play clock stopped after a few
timeouts).

Here the deadline is far shorter than any clock, and the store itself is read, so no
request of the test's own closes what the timers should have."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from services.bootstrap import Adapters
from services.config import Settings
from services.http.app import create_app
from tests.api.conftest import OPERATOR_KEY, Api, Table, serving

# Real timers of a second or more: left out of make test-fast.
pytestmark = pytest.mark.slow

DEADLINE = 0.3  # seconds: every request's bound, a fraction of each clock below


@pytest.fixture
async def hasty(adapters: Adapters) -> AsyncIterator[Api]:
    settings = Settings(
        operator_key=OPERATOR_KEY, rate_limits=False, request_deadline_seconds=DEADLINE
    )
    app = create_app(settings, adapters)
    async with serving(app) as client:
        api = Api(client, app, adapters)
        yield api
        await api.end_clocked()


async def recorded(api: Api, table: Table, kind: str, times: int = 1) -> int:
    """Wait (generously) until the store holds `times` events of the kind."""
    async with asyncio.timeout(30):
        while True:
            count = [r.type for r in await api.store.read(table.game_id)].count(kind)
            if count >= times:
                return count
            await asyncio.sleep(0.05)


async def test_a_clock_keeps_timing_out_long_after_the_request_that_started_it(
    hasty: Api,
) -> None:
    table = await hasty.create(rules={"turn_seconds": 1, "on_timeout": "auto_play"})
    # each auto-played act starts the next seat's clock: three timeouts take three
    # seconds, ten times the deadline of the request that created the game
    assert await recorded(hasty, table, "timed_out", 3) >= 3
    rows = await hasty.store.read(table.game_id)
    timeouts = [r for r in rows if r.type == "timed_out"]
    assert all(r.metadata.correlation_id == "timer" for r in timeouts)


async def test_a_seeding_is_closed_by_its_timer_long_after_the_request_that_set_it(
    hasty: Api,
) -> None:
    table = await hasty.create(
        rules={"shuffle": "seats", "seeding_seconds": 1}, deck=None, dealer=None, seed="late"
    )
    await recorded(hasty, table, "seeding_closed")
    assert "deal_started" in [r.type for r in await hasty.store.read(table.game_id)]
