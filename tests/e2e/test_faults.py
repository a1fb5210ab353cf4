"""Faults against real servers: Redis restarted, a client cut off, PostgreSQL unreachable,
the service killed with SIGKILL in the middle of a load of games."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from pathlib import Path

import httpx
import msgspec

from domain.bots import random_bot
from domain.commands import PlayerCommand
from domain.views import redact
from harness.processes import Proxy, RedisServer
from harness.sse import Stream
from tests.e2e.conftest import StartService
from tests.e2e.expect import RULES, assert_one_per_version, until_ready
from tests.e2e.play import Envelope, Table


class Acked(msgspec.Struct):
    version: int
    duplicate: bool
    events: list[Envelope]


async def test_redis_restarted_mid_game(
    start_service: StartService, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    bus = RedisServer(tmp_path / "redis").start()
    try:
        one = await start_service(BURA_REDIS_URL=bus.url)
        two = await start_service(BURA_REDIS_URL=bus.url, BURA_READY_REQUIRES_BUS="false")
        table = await Table.create(client, one.url, seed="faults-1", **RULES)
        chance = random.Random(11)
        url = table.stream_url(two.url)
        async with (
            Stream(client, url, table.tokens[0]) as seat0,
            Stream(client, url, table.spectator) as spectator,
        ):
            start = table.state.version
            await asyncio.gather(seat0.version(start), spectator.version(start))
            await table.play(client, one.url, random_bot, chance, moves=4)
            await seat0.version(table.state.version, timeout=2)

            bus.kill()
            began = time.perf_counter()
            await table.play(client, one.url, random_bot, chance, moves=6)  # all answer 200
            assert time.perf_counter() - began < 4.0, "commands waited on the dead Redis"
            ready = await client.get(f"{one.url}/health/ready")  # Redis required: not ready
            assert ready.status_code == 503 and ready.json()["bus"].startswith("unavailable")
            relaxed = await client.get(f"{two.url}/health/ready")  # ready, and says why not
            assert relaxed.status_code == 200 and relaxed.json()["status"] == "degraded"
            await seat0.version(table.state.version, timeout=5)  # by the poll
            async with Stream(client, url, table.tokens[1], last_id=start) as resumed:
                await resumed.version(table.state.version, timeout=5)

            bus.start()  # the same port, empty
            await until_ready(client, one.url)  # ready again on its own
            await table.play(client, one.url, random_bot, chance, moves=4)
            await seat0.version(table.state.version, timeout=5)
            await spectator.version(table.state.version, timeout=5)
        assert_one_per_version(seat0, start, table.state.version)
        assert_one_per_version(spectator, start, table.state.version)
        assert_one_per_version(resumed, start + 1, resumed.views[-1].id or 0)
    finally:
        bus.kill()


async def test_a_client_cut_off_and_back_with_last_event_id_misses_nothing(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    service = await start_service()
    table = await Table.create(client, service.url, seed="faults-2", **RULES)
    url = table.stream_url(service.url)
    playing = asyncio.create_task(table.play(client, service.url, random_bot, random.Random(12)))
    received: list[int] = []
    last: int | None = None
    while True:
        async with Stream(client, url, table.tokens[0], last_id=last) as stream:
            with_end = stream.wait_for(lambda m: m.event == "end" or len(stream.views) >= 7)
            await with_end
        received += [m.id for m in stream.views if m.id is not None]
        last = stream.last_id
        if any(m.event == "end" for m in stream.messages):
            break
    await playing
    first = received[0]
    assert received == list(range(first, table.state.version + 1))


async def test_postgres_unreachable_answers_503_writes_nothing_and_recovers(
    start_service: StartService, client: httpx.AsyncClient, database: str
) -> None:
    proxy = Proxy.before(database).start()
    try:
        service = await start_service(BURA_DATABASE_URL=proxy.via(database))
        table = await Table.create(client, service.url, seed="faults-3", **RULES)
        chance = random.Random(13)
        await table.play(client, service.url, random_bot, chance, moves=4)
        before = table.state.version
        async with Stream(client, table.stream_url(service.url), table.tokens[1]) as seat1:
            await seat1.version(before)
            proxy.cut()
            seat, command = table.next_move(random_bot, chance)
            key = uuid.uuid4().hex
            for _ in range(3):  # the same command, retried while the store is away
                answer = await table.send(client, service.url, seat, command, key)
                assert answer.status_code == 503, answer.text
                body = answer.json()
                # a connection the service still believed alive may have taken the append:
                # then it cannot say nothing was written, and does not
                assert body["code"] in ("store_unavailable", "outcome_unknown"), body
                if body["code"] == "store_unavailable":
                    assert "nothing was written" in body["detail"]
                else:
                    assert body["command_id"] == key and "may have been applied" in body["detail"]
                assert answer.headers["retry-after"] == "1"
            ready = await client.get(f"{service.url}/health/ready")
            assert ready.status_code == 503 and ready.json()["store"].startswith("unavailable")
            await asyncio.sleep(0.6)  # a poll or two fail meanwhile; the stream stays open

            proxy.restore()
            await until_ready(client, service.url)
            answer = await table.send(client, service.url, seat, command, key)
            assert answer.status_code == 200, answer.text
            assert answer.json()["duplicate"] is False  # the proxy let nothing through
            await table.sync(client, service.url)  # gapless, or it fails
            assert table.events[before][0] == before + 1
            await seat1.version(table.state.version, timeout=5)
            assert_one_per_version(seat1, before, table.state.version)
            await table.play(client, service.url, random_bot, chance)
    finally:
        proxy.close()


async def test_sigkill_under_load_loses_no_acknowledged_command(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    service = await start_service()
    tables: list[Table] = []
    acked: dict[str, list[tuple[int, Acked]]] = {}
    in_flight: dict[str, tuple[int, PlayerCommand, str]] = {}

    async def load(worker: int) -> None:
        """Game after game, until the server dies under it."""
        chance = random.Random(worker)
        try:
            for number in range(1000):
                table = await Table.create(client, service.url, seed=f"kill-{worker}-{number}")
                tables.append(table)
                acked[table.game_id] = []
                while not table.state.finished:
                    seat, command = table.next_move(random_bot, chance)
                    key = uuid.uuid4().hex
                    in_flight[table.game_id] = (seat, command, key)
                    answer = await table.send(client, service.url, seat, command, key)
                    assert answer.status_code == 200, answer.text
                    acked[table.game_id].append(
                        (seat, msgspec.json.decode(answer.content, type=Acked))
                    )
                    del in_flight[table.game_id]
                    await table.sync(client, service.url)
        except httpx.TransportError:
            return

    players = [asyncio.create_task(load(worker)) for worker in range(8)]
    await asyncio.sleep(1.5)
    service.kill()
    await asyncio.gather(*players)
    assert sum(len(a) for a in acked.values()) >= 50, "too little load before the kill"

    again = await start_service(port=service.port)

    async def check_and_finish(table: Table) -> None:
        fresh = Table(
            {
                "game_id": table.game_id,
                "seats": [{"token": t} for t in table.tokens],
                "spectator_token": table.spectator,
            }
        )
        await fresh.sync(client, again.url)
        stored = dict(fresh.events)
        for seat, ack in acked[table.game_id]:
            assert ack.version <= fresh.state.version
            for envelope in ack.events:
                shown = redact(stored[envelope.version], seat, fresh.state.rules)
                assert shown == envelope.event, f"{table.game_id} v{envelope.version}"
        if table.game_id in in_flight:  # its fate unknown: the same key settles it
            seat, command, key = in_flight[table.game_id]
            answer = await fresh.send(client, again.url, seat, command, key)
            assert answer.status_code == 200, answer.text
            await fresh.sync(client, again.url)
        await fresh.play(client, again.url, random_bot, random.Random(99))
        assert fresh.state.finished

    await asyncio.gather(*(check_and_finish(t) for t in tables))
