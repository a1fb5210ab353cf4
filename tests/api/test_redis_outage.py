"""Redis lost or down, through the API (docs/deploy.md, "Clocks and presence").

Lost: a Redis restarted empty (here its database emptied with FLUSHDB, the same thing)
while the seats' streams stay open. Presence comes back at the next renewal, connected
since the streams opened, and no seat is judged to have abandoned the game meanwhile.

Down: every Redis adapter pointed at a port nobody listens on. Nothing a request reaches
answers 500: stream tickets are a 503 `stream_tickets_unavailable`, views show no presence,
streams open with a bearer, rate limits serve uncounted."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from infra.ports.presence import LAPSE_MS, RENEW_MS
from infra.postgres.store import PostgresEventStore
from infra.postgres.tokens import PostgresSeatTokens
from infra.redis.connection import CALL_SECONDS
from infra.redis.hints import RedisHintBus
from infra.redis.limits import RedisRateCounters
from infra.redis.presence import RedisPresence
from infra.redis.tickets import RedisStreamTickets
from services.bootstrap import Adapters, adapters_on
from services.config import Settings
from services.http.app import create_app
from services.http.health import CHECK_SECONDS
from tests import servers
from tests.api.conftest import OPERATOR, OPERATOR_KEY, THIRTY_ONE_GAME, Api, Table, app_on, serving
from tests.api.replicas import replica

pytestmark = pytest.mark.slow

DB = 14  # this module's own database: emptied at will


def on_db(url: str, db: int) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{db}"))


async def timeouts(api: Api, table: Table) -> list[object]:
    return [e for e in await api.events(table) if e["event"]["type"] == "timed_out"]


@pytest.fixture
async def lossy(adapters: Adapters, redis_url: str) -> AsyncIterator[Api]:
    """The app with its presence on a Redis database of this module's own."""
    presence = await RedisPresence.open(on_db(redis_url, DB))
    await presence.client.flushdb()
    await adapters.presence.close()
    adapters.presence = presence  # closed with the adapters
    app = app_on(adapters)
    async with serving(app) as client:
        api = Api(client, app, adapters)
        yield api
        await api.end_clocked()
    await presence.client.flushdb()


async def test_streams_open_through_a_redis_restarted_empty_are_never_judged_away(
    lossy: Api,
) -> None:
    api = lossy
    table = await api.create(rules={"turn_seconds": 60, "abandon_seconds": 1})
    attendance = api.runtime.attendance
    streams = [await attendance.arrive(table.game_id, seat) for seat in (0, 1)]  # as streams do
    before = (await api.view(table))["seats"]
    assert [s["connected"] for s in before] == [True, True]
    await asyncio.sleep(1.5)  # past abandon_seconds since the clock started

    presence = api.adapters.presence
    assert isinstance(presence, RedisPresence)
    await presence.client.flushdb()  # Redis restarted empty; both streams stay open
    api.runtime.timers.poke(table.game_id)  # the timer looks while nothing is known
    await asyncio.sleep(1.5)
    assert await timeouts(api, table) == []

    # the next renewal writes both streams again, connected since they opened
    async with asyncio.timeout(RENEW_MS / 1000 + 5):
        while True:
            shown = (await api.view(table))["seats"]
            if all(s["connected"] for s in shown):
                break
            await asyncio.sleep(0.1)
    assert [s["connected_since"] for s in shown] == [s["connected_since"] for s in before]
    api.runtime.timers.poke(table.game_id)
    await asyncio.sleep(1.5)
    assert await timeouts(api, table) == []
    assert (await api.view(table))["status"] != "finished"
    for stream in streams:
        await attendance.leave(stream)


async def test_after_redis_lost_its_state_a_view_shows_when_a_seat_it_holds_nothing_of_is_judged(
    lossy: Api,
) -> None:
    """A seat due that Redis holds nothing of once it restarted empty is not known away
    before a lapse after the game's presence was restored; the view's `abandon_at` counts
    from then, as the timers do (it counted from when the seat became due)."""
    api = lossy
    table = await api.create(rules={"turn_seconds": 600, "abandon_seconds": 30})
    due = (await api.view(table))["clock"]["seat"]
    before = (await api.view(table))["seats"][due]
    assert before["connected"] is False and before["away_since"] is None
    attendance = api.runtime.attendance
    stream = await attendance.arrive(table.game_id, 1 - due)  # the other seat watches
    presence = api.adapters.presence
    assert isinstance(presence, RedisPresence)
    lost = api.runtime.games.now()
    await presence.client.flushdb()  # Redis restarted empty
    async with asyncio.timeout(RENEW_MS / 1000 + 5):  # until the renewal writes it again
        while not (await api.view(table))["seats"][1 - due]["connected"]:
            await asyncio.sleep(0.1)
    shown = (await api.view(table))["seats"][due]
    seen = await attendance.seats(table.game_id, await api.runtime.games.load(table.game_id))
    assert seen is not None and seen[due].since is not None  # as the timers judge it
    assert seen[due].since >= lost + LAPSE_MS  # not known away before a lapse after the loss
    assert shown["away_since"] is None
    assert shown["abandon_at"] == seen[due].since + 30_000 > before["abandon_at"], shown
    await attendance.leave(stream)


def nobody_listens() -> str:
    """A Redis URL on a port nobody listens on: Redis down."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


@pytest.fixture
async def down(adapters: Adapters) -> AsyncIterator[Api]:
    """The app with stream tickets, presence and rate counters on a Redis that is down."""
    url = nobody_listens()
    for old in (adapters.tickets, adapters.presence, adapters.counters):
        await old.close()
    adapters.tickets = await RedisStreamTickets.open(url)
    adapters.presence = await RedisPresence.open(url)
    adapters.counters = await RedisRateCounters.open(url)
    app = create_app(Settings(operator_key=OPERATOR_KEY, rate_limits=True), adapters)
    async with serving(app) as client:
        yield Api(client, app, adapters)


async def test_stream_tickets_while_redis_is_down_are_a_503_the_client_retries(
    down: Api,
) -> None:
    api = down
    table = await api.create()
    for seat, command in THIRTY_ONE_GAME:
        await api.play(table, seat, command)  # rate limits serve uncounted
    asked = await api.client.post(f"/games/{table.game_id}/stream-tickets", headers=table.seat(0))
    assert asked.status_code == 503, asked.text
    assert asked.json()["code"] == "stream_tickets_unavailable"
    assert asked.headers["retry-after"] == "1"
    spent = await api.client.get(f"/games/{table.game_id}/stream", params={"ticket": "st_x"})
    assert spent.status_code == 503, spent.text
    assert spent.json()["code"] == "stream_tickets_unavailable"
    for answer in (asked, spent):  # Redis's host and port are for the log, not for anyone
        assert "127.0.0.1" not in answer.json()["detail"], answer.text
        assert answer.json()["detail"].startswith("stream tickets cannot be reached (")

    # what needs no ticket goes on: a view (with no presence), a stream with a bearer
    shown = await api.view(table)
    assert shown["status"] == "finished"
    assert all(s.get("connected") is None for s in shown["seats"])
    streamed = await api.client.get(f"/games/{table.game_id}/stream", headers=table.seat(1))
    assert streamed.status_code == 200 and "event: end" in streamed.text
    listed = await api.client.get("/games", headers=OPERATOR)
    assert listed.status_code == 200


@pytest.fixture
async def hanging() -> AsyncIterator[int]:
    """The port of a server that takes connections and never answers: a Redis (or a
    PostgreSQL) that hangs, as one stopped with kill -STOP does."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        while await reader.read(1 << 16):  # reads whatever comes; answers nothing
            pass

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()
    for writer in held:
        writer.transport.abort()


async def ready_in(adapters: Adapters, requires_bus: bool) -> tuple[float, int, dict[str, str]]:
    """How long /health/ready took to answer, its status and its report."""
    settings = Settings(
        operator_key=OPERATOR_KEY, rate_limits=False, ready_requires_bus=requires_bus
    )
    app = create_app(settings, adapters)
    async with serving(app) as client:
        started = time.monotonic()
        answer = await client.get("/health/ready")
        took = time.monotonic() - started
    return took, answer.status_code, answer.json()


@pytest.mark.parametrize("requires_bus", [False, True])
async def test_readiness_answers_in_about_a_check_while_redis_hangs(
    hanging: int, tmp_path: Path, requires_bus: bool
) -> None:
    """Within the readinessProbe's 2 s (k8s/base/deployment.yaml): a Redis that hangs is
    reported, `degraded` with BURA_READY_REQUIRES_BUS=false (the pod stays ready), never
    a probe that times out."""
    assert CHECK_SECONDS <= 1.0
    bus = await RedisHintBus.open(f"redis://127.0.0.1:{hanging}/0")
    adapters = await servers.sqlite_adapters(tmp_path / "events.db", bus)
    try:
        took, status, report = await ready_in(adapters, requires_bus)
    finally:
        await adapters.close()
    assert report["bus"] == "unavailable: TimeoutError" and report["store"] == "ok"
    if requires_bus:
        assert (status, report["status"]) == (503, "unavailable")
    else:
        assert (status, report["status"]) == (200, "degraded")
    assert CHECK_SECONDS * 0.9 <= took < CHECK_SECONDS + 0.5, took


async def test_readiness_checks_the_store_and_redis_at_once(hanging: int) -> None:
    """Both hanging, the answer still comes in about one check's time, not two."""
    store = await PostgresEventStore.open(
        f"postgresql://postgres@127.0.0.1:{hanging}/test", min_size=0, connect_timeout=30
    )
    bus = await RedisHintBus.open(f"redis://127.0.0.1:{hanging}/0")
    adapters = adapters_on(store, PostgresSeatTokens(store.pool), bus)
    try:
        took, status, report = await ready_in(adapters, requires_bus=False)
    finally:
        await adapters.close()
    assert status == 503
    assert report["store"] == report["bus"] == "unavailable: TimeoutError"
    assert took < CHECK_SECONDS + 0.5, took


async def test_a_redis_that_hangs_costs_one_view_a_calls_bound_and_the_next_nothing(
    adapters: Adapters, hanging: int
) -> None:
    """Stream tickets and presence on a Redis that takes connections and never answers:
    a ticket is a 503 within a call's bound (2 s, docs/deploy.md), not the socket timeout
    times each retry; the first view shows no presence within that bound, and the views
    after it do not ask the board again for a while (each took 15 to 45 s)."""
    url = f"redis://127.0.0.1:{hanging}/0"
    for old in (adapters.tickets, adapters.presence):
        await old.close()
    adapters.tickets = await RedisStreamTickets.open(url)
    adapters.presence = await RedisPresence.open(url)
    app = create_app(Settings(operator_key=OPERATOR_KEY, rate_limits=False), adapters)
    async with serving(app) as client:
        api = Api(client, app, adapters)
        table = await api.create()
        took = []
        for _ in range(3):
            started = time.monotonic()
            shown = await api.view(table)
            took.append(time.monotonic() - started)
            assert all(s.get("connected") is None for s in shown["seats"])
        assert took[0] < CALL_SECONDS + 1.0, took
        assert max(took[1:]) < 0.5, took
        started = time.monotonic()
        asked = await client.post(f"/games/{table.game_id}/stream-tickets", headers=table.seat(0))
        assert time.monotonic() - started < CALL_SECONDS + 1.0
        assert asked.status_code == 503 and asked.json()["code"] == "stream_tickets_unavailable"
        assert "redis did not answer in 2 s" in asked.json()["detail"]


async def test_a_replica_cut_off_from_the_hints_reads_the_store_for_every_view(
    database_url: str, redis_url: str
) -> None:
    """A replica whose subscription is down hears nothing the others append: a copy it read
    a moment ago is no longer known current (it was trusted for BURA_FEED_POLL_SECONDS, 60
    here, and its views showed the table as it was, so a seat's next move was refused as
    `table_changed`). Each view reads the store until the subscription is back."""
    async with AsyncExitStack() as stack:
        one = await replica(stack, database_url, redis_url)
        cut_off = await replica(stack, database_url, nobody_listens())
        assert not cut_off.api.adapters.hints.subscribed
        table = await one.api.create()
        assert (await cut_off.api.view(table))["version"] == table.version  # its copy
        for seat, command in THIRTY_ONE_GAME[:3]:
            answer = await one.api.play(table, seat, command)
            shown = await cut_off.api.view(table, table.seat(seat))
            assert shown["version"] == answer["version"]  # at once: no hint came
        assert cut_off.api.service.known(table.game_id) is None
        assert one.api.adapters.hints.subscribed
