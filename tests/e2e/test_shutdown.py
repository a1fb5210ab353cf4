"""Graceful shutdown on SIGTERM: no new connections, in-flight commands finish, open
streams end with `event: shutdown`, the process exits 0 within its grace period."""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import time
from pathlib import Path

import httpx
import pytest
from litestar.testing import AsyncTestClient

from domain.bots import random_bot
from harness.processes import Proxy
from harness.sse import Stream
from infra.deadline import STOP_SECONDS
from infra.postgres.connections import CLOSE_SECONDS
from infra.postgres.leases import RELEASE_SECONDS
from services.bootstrap import STALLED_CLOSE
from services.config import Settings
from services.http.app import create_app
from services.live.dispatcher import ATTEMPTS_END_SECONDS
from tests import servers
from tests.e2e.conftest import StartService
from tests.e2e.expect import RULES
from tests.e2e.play import Table

GRACE = 10.0


async def test_sigterm_finishes_commands_closes_streams_and_exits_0(
    start_service: StartService, client: httpx.AsyncClient, database: str
) -> None:
    proxy = Proxy.before(database).start()
    try:
        env = {"BURA_DATABASE_URL": proxy.via(database), "BURA_SHUTDOWN_GRACE_SECONDS": str(GRACE)}
        service = await start_service(**env)
        table = await Table.create(client, service.url, seed="shutdown-1", **RULES)
        chance = random.Random(21)
        await table.play(client, service.url, random_bot, chance, moves=3)
        url = table.stream_url(service.url)
        streams = [Stream(client, url, token) for token in [*table.tokens, table.spectator]]
        for stream in streams:
            await stream.__aenter__()
            await stream.version(table.state.version)

        proxy.pause()  # the next command waits on PostgreSQL: in flight at the signal
        seat, command = table.next_move(random_bot, chance)
        held = proxy.held
        in_flight = asyncio.create_task(table.send(client, service.url, seat, command))
        async with asyncio.timeout(5):  # until the command's query waits on PostgreSQL
            while proxy.held == held:
                await asyncio.sleep(0.02)
        assert not in_flight.done()
        signalled = time.monotonic()
        service.signal(signal.SIGTERM)

        for stream in streams:
            last = await stream.event("shutdown", timeout=3)
            assert last.data == {"reason": "server_shutdown", "reconnect": True}
            await asyncio.wait_for(stream.closed.wait(), 3)
            assert stream.messages[-1] is last
        with pytest.raises(httpx.ConnectError):
            async with asyncio.timeout(2):
                while True:  # until the listening socket is closed
                    async with httpx.AsyncClient() as fresh:  # a new connection each time
                        # one accepted in the moment the listener closed is dropped
                        # unanswered: the socket is closing; look again
                        with contextlib.suppress(httpx.RemoteProtocolError):
                            await fresh.get(f"{service.url}/health/live")
                    await asyncio.sleep(0.05)
        assert not in_flight.done()

        proxy.resume()
        answer = await in_flight
        assert answer.status_code == 200, answer.text
        assert await service.wait(GRACE + 5) == 0
        assert time.monotonic() - signalled < GRACE

        again = await start_service(port=service.port, **env)
        before = table.state.version
        await table.sync(client, again.url)
        assert table.state.version == answer.json()["version"] > before
    finally:
        proxy.close()


async def test_readiness_is_503_and_new_streams_are_refused_while_draining(
    tmp_path: Path,
) -> None:
    adapters = await servers.sqlite_adapters(tmp_path / "events.db")
    app = create_app(Settings(operator_key="k"), adapters)
    try:
        async with AsyncTestClient(app) as client:
            assert (await client.get("/health/ready")).status_code == 200
            created = await client.post(
                "/games",
                json={"seats": [{"name": "a"}, {"name": "b"}]},
                headers={"Authorization": "Bearer k"},
            )
            game = created.json()["game_id"]
            app.state.runtime.projector.drain()
            ready = await client.get("/health/ready")
            assert ready.status_code == 503 and ready.json()["server"] == "shutting down"
            stream = await client.get(
                f"/games/{game}/stream", headers={"Authorization": "Bearer k"}
            )
            assert stream.status_code == 503
    finally:
        await adapters.close()


async def test_a_stalled_database_is_told_at_the_first_probe_and_does_not_hold_the_exit(
    start_service: StartService, client: httpx.AsyncClient, database: str
) -> None:
    """PostgreSQL stops answering: the first readiness probe says so within its bound (a
    probe cut off mid-query closes its connection rather than wait to give it back), and
    SIGTERM exits 0 within the grace, the deadline of the work in flight and the bound
    on letting go of the database (the webhook loop, its lease, the pool), however long
    the database stays stalled (it took 12 to 20 s more)."""
    proxy = Proxy.before(database).start()
    try:
        grace, deadline = 1, 2
        service = await start_service(
            BURA_DATABASE_URL=proxy.via(database),
            BURA_SHUTDOWN_GRACE_SECONDS=str(grace),
            BURA_REQUEST_DEADLINE_SECONDS=str(deadline),
        )
        assert (await client.get(f"{service.url}/health/ready")).status_code == 200
        proxy.pause()
        for _ in range(3):
            asked = time.monotonic()
            probe = await client.get(f"{service.url}/health/ready", timeout=10)
            took = time.monotonic() - asked
            assert probe.status_code == 503 and probe.json()["store"] != "ok", probe.text
            assert took < 2.0, f"a probe of a stalled database took {took:.2f} s"
        signalled = time.monotonic()
        service.signal(signal.SIGTERM)
        assert await service.wait(30) == 0, service.log()
        took = time.monotonic() - signalled
        bound = grace + deadline + STALLED_CLOSE + 1.5
        assert took < bound, (f"exit took {took:.1f} s, the database stalled", service.log())
        assert "Traceback" not in service.log()
        parts = 5 * STOP_SECONDS + ATTEMPTS_END_SECONDS + RELEASE_SECONDS + CLOSE_SECONDS
        assert parts == STALLED_CLOSE
    finally:
        proxy.resume()
        proxy.close()
