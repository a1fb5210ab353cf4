"""A clock whose hint never went out is still timed (docs/rules.md §13, docs/architecture.md
"Clocks, timers and presence"). A replica that dies between its commit and its hint leaves
no gap in the hints for the others to notice, and a retry answered `duplicate: true`
publishes nothing: found from outside with three replicas, games created (or paused games
played on) by a replica SIGKILLed a moment after its append were never timed out by the
replicas left, until the dead one started again.

Here the dead replica is a game service on the same store whose hints go to a bus nobody
hears; the live one is the app with its timers, looking at the store every POLL seconds.
Its timers must start by themselves from the store, within a few intervals."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from domain.commands import Lead
from domain.rules import Rules
from infra.memory.hints import InProcessHintBus
from infra.ports.events import StoreUnavailable
from infra.redis.hints import RedisHintBus
from services.app.games import GameService
from services.bootstrap import Adapters
from services.config import Settings
from services.http.app import create_app
from tests import servers
from tests.api.conftest import OPERATOR_KEY, Api, Table, serving

# Real clocks of a second: left out of make test-fast.
pytestmark = pytest.mark.slow

POLL = 0.2  # seconds: BURA_FEED_POLL_SECONDS of the live replica
TURN = 1  # seconds: each clock here
WAIT = TURN + 20 * 1.0  # the deadline, then a few looks at the store, with room to spare


async def live(adapters: Adapters, poll: float = POLL) -> AsyncIterator[Api]:
    settings = Settings(operator_key=OPERATOR_KEY, rate_limits=False, feed_poll_seconds=poll)
    app = create_app(settings, adapters)
    async with serving(app) as client:
        api = Api(client, app, adapters)
        # the timers have read the games index: what comes later only the store can tell
        async with asyncio.timeout(10):
            while api.runtime.timers._background:
                await asyncio.sleep(0.01)
        try:
            yield api
        finally:
            await api.end_clocked()


@pytest.fixture
async def replica(adapters: Adapters) -> AsyncIterator[Api]:
    """The live replica, on each store and the in-process bus."""
    async for api in live(adapters):
        yield api


@pytest.fixture
async def follower(database_url: str, redis_url: str) -> AsyncIterator[Api]:
    """The live replica on PostgreSQL and Redis: it follows a shared bus, so the copies it
    cached are known current for a poll interval (and not read again before). The interval
    is long beside the test's own steps, so that the clock is found in the store while the
    copy the replica cached when it paused the game is still known current."""
    adapters = await servers.postgres_adapters(database_url, await RedisHintBus.open(redis_url))
    try:
        async for api in live(adapters, poll=1.0):
            yield api
    finally:
        await adapters.close()


def dead_replica(api: Api) -> GameService:
    """A replica on the same store and games index whose hints nobody hears."""
    return GameService(api.store, api.runtime.seating, InProcessHintBus(), index=api.adapters.games)


async def recorded(api: Api, game_id: str, kind: str, times: int = 1) -> list[str]:
    """The correlation ids of the game's events of the kind, once there are `times` of them;
    fails after WAIT seconds."""
    async with asyncio.timeout(WAIT):
        while True:
            rows = [r for r in await api.store.read(game_id) if r.type == kind]
            if len(rows) >= times:
                return [r.metadata.correlation_id or "" for r in rows]
            await asyncio.sleep(0.05)


async def test_a_game_created_by_a_replica_that_died_before_its_hint_is_timed_out(
    replica: Api,
) -> None:
    dead = dead_replica(replica)
    created = await dead.create(["p0", "p1"], Rules(turn_seconds=TURN), dealer=1)
    tokens = [s.token for s in created.seats]
    replica.clocked.append(Table(created.game_id, tokens, created.spectator_token, 1))
    assert created.game_id not in replica.runtime.timers.tasks  # no hint told of it

    assert await recorded(replica, created.game_id, "timed_out") == ["timer"]
    await asyncio.sleep(TURN + 2 * POLL)  # and no second timeout of the same deadline
    rows = await replica.store.read(created.game_id)
    assert [r.type for r in rows].count("timed_out") == 1
    assert (await replica.service.load(created.game_id)).finished  # lost the deal: the game


async def play_on_a_paused_game_through_a_dead_replica(api: Api) -> None:
    """The reviewer's case: a game paused by a timeout; its seat's move taken by a replica
    that dies before its hint, and the retry with the same key answered as a duplicate by
    the live one. The clock the move started must still run out there."""
    table = await api.create(rules={"turn_seconds": TURN, "on_timeout": "pause"})
    await recorded(api, table.game_id, "timed_out")
    timers = api.runtime.timers
    async with asyncio.timeout(WAIT):  # the live timer ended with the clock paused
        while table.game_id in timers.tasks:
            await asyncio.sleep(0.01)
    lead = Lead(("AS", "10S", "KS"))
    await dead_replica(api).execute(table.game_id, 0, lead, command_id="lead-1")
    retried = await api.play(table, 0, {"type": "lead", "cards": ["AS", "10S", "KS"]}, "lead-1")
    assert retried["duplicate"] is True

    # seat 1's clock, started by the lead, runs out on the live replica
    timeouts = await recorded(api, table.game_id, "timed_out", 2)
    assert timeouts == ["timer", "timer"]
    kinds = [r.type for r in await api.store.read(table.game_id)]
    last = max(i for i, kind in enumerate(kinds) if kind == "timed_out")
    assert kinds.index("cards_led") < last  # the second is seat 1's, after the lead
    await asyncio.sleep(TURN + 2 * api.runtime.settings.feed_poll_seconds)  # paused: no more
    assert [r.type for r in await api.store.read(table.game_id)].count("timed_out") == 2


async def test_a_paused_game_played_on_by_a_replica_that_died_before_its_hint_is_timed(
    replica: Api,
) -> None:
    await play_on_a_paused_game_through_a_dead_replica(replica)


async def test_a_replica_following_the_hints_times_a_clock_it_never_heard_of(
    follower: Api,
) -> None:
    """On a shared bus the live replica's copy of the paused game, which it appended
    itself a moment before, is known current: the clock found in the store makes it read
    the game all the same."""
    await play_on_a_paused_game_through_a_dead_replica(follower)


async def test_a_clock_its_timer_already_knows_costs_no_read_when_found_in_the_store(
    replica: Api,
) -> None:
    """Looking at the store costs no read of a game whose timer already knows its clock."""
    table = await replica.create(rules={"turn_seconds": 60})
    timers = replica.runtime.timers
    async with asyncio.timeout(10):
        while table.game_id not in timers._asleep:
            await asyncio.sleep(0.01)
    reads = replica.service.reads
    await asyncio.sleep(5 * POLL)
    assert replica.service.reads == reads
    assert timers.tasks[table.game_id] is not None


async def test_a_seeding_opened_by_a_replica_that_died_before_its_hint_is_closed(
    replica: Api,
) -> None:
    """A seats' shuffle: the replica that opened the seeding (and only it set its timer)
    dies before its hint. Nobody reads the game; the live replica's timers find the
    seeding in the store and close it at its deadline, the seeds missing counted empty."""
    dead = dead_replica(replica)
    created = await dead.create(["p0", "p1"], Rules(shuffle="seats", seeding_seconds=1), dealer=1)
    await dead.seeding.stop()  # its process is gone, and its timer with it
    assert not replica.service.seeding.watching(created.game_id)

    assert await recorded(replica, created.game_id, "seeding_closed") == ["seeding"]
    rows = await replica.store.read(created.game_id)
    assert [r.type for r in rows].count("seeding_closed") == 1


async def test_a_store_out_of_reach_is_warned_of_once_a_period_not_once_a_look(
    replica: Api, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The timers look at the store every BURA_FEED_POLL_SECONDS: while it is out of
    reach, each look wrote a warning (15 in 30 s at 2 s); now at most one a period."""
    timers = replica.runtime.timers
    looks = 0

    async def unreachable(checkpoint: object) -> object:
        nonlocal looks
        looks += 1
        raise StoreUnavailable("connection refused")

    monkeypatch.setattr(timers, "_sweep", unreachable)
    with caplog.at_level("WARNING", logger="bura.timers"):
        async with asyncio.timeout(10):
            while looks < 10:  # a look every POLL
                await asyncio.sleep(POLL / 2)
    said = [r for r in caplog.records if "timers could not look at the store" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]
