"""Live views over real servers: what a stream sends, how it resumes, and how commands on
one replica reach streams on another, with hints and without."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import httpx
import msgspec

from domain.bots import random_bot
from domain.views import view
from harness.processes import OPERATOR, RedisServer
from harness.sse import Stream
from infra.redis.wire import Wire
from tests.e2e.conftest import StartService
from tests.e2e.expect import RULES, assert_one_per_version
from tests.e2e.play import Table
from tests.views import table_only


async def test_a_stream_starts_with_the_current_view_and_sends_every_version_then_ends(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    service = await start_service(BURA_SSE_KEEPALIVE_SECONDS="0.3")
    table = await Table.create(client, service.url, seed="streams-1", **RULES)
    chance = random.Random(1)
    await table.play(client, service.url, random_bot, chance, moves=5)
    start = table.state.version
    url = table.stream_url(service.url)
    async with (
        Stream(client, url, table.tokens[0]) as seat,
        Stream(client, url, table.spectator) as spectator,
    ):
        first = await seat.version(start)
        await spectator.version(start)
        assert first.id == start and first.data["event"] is None
        shown = dict(first.data["view"])
        sealed = shown.pop("receipt")  # the receipt of the record's hash at that version
        assert shown.pop("chain_head") is None  # the raw hash is for the arbiter only now
        local = json.loads(msgspec.json.encode(view(table.state, 0)))
        assert table_only(shown) == table_only(local)
        assert first.data["view"]["seats"][0]["connected"] is True  # this very stream
        now = await client.get(f"{service.url}/games/{table.game_id}", headers=OPERATOR)
        assert now.json()["receipt"] == sealed and now.json()["chain_head"]
        await asyncio.sleep(1.0)  # idle: keep-alive comments, and nothing else
        assert seat.comments >= 2 and len(seat.messages) == 1
        await table.play(client, service.url, random_bot, chance)
        end = await seat.event("end")
        await spectator.event("end")
        await asyncio.wait_for(seat.closed.wait(), 5)
    assert end.data == {"reason": "game_over"}
    final = table.state.version
    assert_one_per_version(seat, start, final)
    assert_one_per_version(spectator, start, final)
    receipts = [m.data["view"]["receipt"] for m in seat.views]
    assert receipts == [m.data["view"]["receipt"] for m in spectator.views]
    assert len(set(receipts)) == len(receipts) and all(len(r) == 64 for r in receipts)
    assert all(m.data["view"]["chain_head"] is None for m in seat.views[:-1])
    assert seat.views[-1].data["view"]["chain_head"]  # the game is over: the seed is out
    assert seat.views[-1].data["view"]["status"] == "finished"
    assert all(
        m.data["view"]["hand"] is not None
        for m in seat.views[:-1]
        if m.data["view"]["status"] == "in_progress"
    )
    for message in spectator.views:
        shown = message.data["view"]
        assert shown["hand"] is None and all(s["hand"] is None for s in shown["seats"])
    # A stream opened after the end gets the final view, then the end, at once.
    async with Stream(client, url, table.tokens[1]) as late:
        await late.event("end")
    assert [m.id for m in late.views] == [final]


async def test_a_stream_resumed_with_last_event_id_gets_what_it_missed_once(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    service = await start_service()
    table = await Table.create(client, service.url, seed="streams-2", **RULES)
    chance = random.Random(2)
    url = table.stream_url(service.url)
    async with Stream(client, url, table.tokens[1]) as first:
        await table.play(client, service.url, random_bot, chance, moves=4)
        await first.version(table.state.version)
    seen = first.last_id
    assert seen == table.state.version
    await table.play(client, service.url, random_bot, chance, moves=6)
    async with Stream(client, url, table.tokens[1], last_id=seen) as resumed:
        await resumed.version(table.state.version)
        await table.play(client, service.url, random_bot, chance, moves=2)
        await resumed.version(table.state.version)
    assert_one_per_version(resumed, seen + 1, table.state.version)
    # From far back (beyond what a feed keeps in memory): read from the store.
    async with Stream(client, url, table.tokens[1], last_id=0) as replayed:
        await replayed.version(table.state.version)
    assert_one_per_version(replayed, 1, table.state.version)
    assert replayed.views[0].data["event"]["type"] == "game_started"
    # Every version but the head was behind as it was sent: only the last is to act on.
    assert [m.data["latest"] for m in replayed.views] == [False] * (len(replayed.views) - 1) + [
        True
    ]


async def test_a_command_on_one_replica_reaches_streams_on_the_other_by_hint(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    # The poll is slower than the whole test: only a hint can bring the news in time.
    one = await start_service(BURA_FEED_POLL_SECONDS="60")
    two = await start_service(BURA_FEED_POLL_SECONDS="60")
    table = await Table.create(client, one.url, seed="streams-4", **RULES)
    chance = random.Random(4)
    url = table.stream_url(two.url)
    async with (
        Stream(client, url, table.tokens[0]) as seat0,
        Stream(client, url, table.tokens[1]) as seat1,
    ):
        await asyncio.gather(seat0.version(table.state.version), seat1.version(table.state.version))
        start = table.state.version
        ends = {start}  # the version each command left the table at
        for _ in range(10):
            await table.play(client, one.url, random_bot, chance, moves=1)
            ends.add(table.state.version)
            await seat0.version(table.state.version, timeout=2)
            await seat1.version(table.state.version, timeout=2)
    assert_one_per_version(seat0, start, table.state.version)
    assert_one_per_version(seat1, start, table.state.version)
    # A command that recorded several events (a response, then the trick taken) sends a
    # message for each; only its last is `latest`, the table a seat may act on.
    assert len(ends) < table.state.version - start + 1  # some command recorded several
    for seat in (seat0, seat1):
        assert [m.data["latest"] for m in seat.views] == [m.id in ends for m in seat.views]


async def test_streams_converge_by_the_poll_when_no_hint_arrives(
    start_service: StartService, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    # Each replica has a Redis of its own: the hints of one never reach the other.
    own = RedisServer(tmp_path / "own").start()
    other = RedisServer(tmp_path / "other").start()
    try:
        one = await start_service(BURA_REDIS_URL=own.url)
        two = await start_service(BURA_REDIS_URL=other.url, BURA_FEED_POLL_SECONDS="0.3")
        table = await Table.create(client, one.url, seed="streams-5", **RULES)
        chance = random.Random(5)
        async with Stream(client, table.stream_url(two.url), table.tokens[1]) as seat1:
            await seat1.version(table.state.version)
            start = table.state.version
            await table.play(client, one.url, random_bot, chance, moves=6)
            await seat1.version(table.state.version, timeout=3)
        assert_one_per_version(seat1, start, table.state.version)
    finally:
        own.kill()
        other.kill()


async def _published(redis: Wire) -> int:
    """How many PUBLISH commands this Redis has run."""
    info = (await redis.call("INFO", "commandstats")).decode()
    for line in info.splitlines():
        if line.startswith("cmdstat_publish:"):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


async def test_a_replica_that_joins_a_lone_one_hears_every_append_at_once(
    start_service: StartService, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    """A replica alone on its Redis sends no hints: nobody would hear them. One that
    joins says hello as it subscribes; from then on every append reaches it by hint, and
    the ones left out show it a gap, for which it reads the store. Neither the first
    replica's next look at Redis (every 5 s) nor the poll (slower than the test) is
    waited for."""
    own = RedisServer(tmp_path / "own").start()
    redis = Wire(own.url)
    try:
        one = await start_service(BURA_REDIS_URL=own.url, BURA_FEED_POLL_SECONDS="60")
        table = await Table.create(client, one.url, seed="streams-6", **RULES)
        chance = random.Random(6)
        for _ in range(50):  # until Redis has told it that nobody else listens
            before = await _published(redis)
            await table.play(client, one.url, random_bot, chance, moves=1)
            await asyncio.sleep(0.05)  # a hint sent would have reached Redis by now
            if await _published(redis) == before:
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("a lone replica still publishes its hints")
        two = await start_service(BURA_REDIS_URL=own.url, BURA_FEED_POLL_SECONDS="60")
        async with Stream(client, table.stream_url(two.url), table.tokens[1]) as seat1:
            await seat1.version(table.state.version, timeout=2)
            start = table.state.version
            for _ in range(8):
                before = await _published(redis)
                await table.play(client, one.url, random_bot, chance, moves=1)
                for _ in range(100):  # written ahead of the answer: Redis runs it at once
                    if await _published(redis) > before:
                        break
                    await asyncio.sleep(0.01)
                else:
                    raise AssertionError("the hint of a replica that is heard was not sent")
                await seat1.version(table.state.version, timeout=2)
        assert_one_per_version(seat1, start, table.state.version)
    finally:
        await redis.close()
        own.kill()
