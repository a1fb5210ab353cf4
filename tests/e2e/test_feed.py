"""The operator feed (GET /events) over real servers on PostgreSQL: followed live while
commands race on several games through two replicas, cut and resumed from its checkpoint
again and again, on either replica, it holds every event exactly once, in order."""

from __future__ import annotations

import asyncio
import json
import random

import httpx

from domain.bots import random_bot
from harness.processes import OPERATOR, OPERATOR_KEY, Service
from harness.sse import Stream
from tests.e2e.conftest import StartService
from tests.e2e.play import Table

GAMES = 6


def place(checkpoint: str) -> tuple[int, int]:
    tx, position = checkpoint.split(":")
    return int(tx), int(position)


class Reader:
    """Follows the feed in short stretches, each from the last checkpoint it has: as SSE
    resumed with Last-Event-ID, or as NDJSON resumed with `after`, on either replica."""

    def __init__(self, client: httpx.AsyncClient, services: list[Service], seed: int) -> None:
        self.client = client
        self.services = services
        self.chance = random.Random(seed)
        self.entries: list[dict[str, object]] = []
        self.checkpoint: str | None = None
        self.stretches = 0

    async def stretch(self) -> None:
        base = self.chance.choice(self.services).url
        self.stretches += 1
        if self.chance.random() < 0.5:
            await self._sse(base)
        else:
            await self._ndjson(base)

    async def _sse(self, base: str) -> None:
        async with Stream(
            self.client, f"{base}/events", OPERATOR_KEY, last_id=self.checkpoint
        ) as stream:
            await asyncio.sleep(self.chance.uniform(0.05, 0.6))
        messages = [m for m in stream.messages if m.event == "message"]
        assert stream.error is None or isinstance(stream.error, httpx.TransportError)
        for message in messages:
            assert message.key == message.data["checkpoint"]
        self._take([m.data for m in messages])

    async def _ndjson(self, base: str) -> None:
        params = {"format": "ndjson", "limit": str(self.chance.randint(1, 60))}
        if self.chance.random() < 0.5:
            params["follow"] = "false"
        if self.checkpoint is not None:
            params["after"] = self.checkpoint
        async with self.client.stream(
            "GET", f"{base}/events", params=params, headers=OPERATOR
        ) as answer:
            assert answer.status_code == 200
            taken = []
            try:
                async with asyncio.timeout(self.chance.uniform(0.1, 0.8)):
                    async for line in answer.aiter_lines():
                        if line:
                            taken.append(json.loads(line))
            except TimeoutError:
                pass  # hung up mid-stream: what came whole counts, the rest comes again
        self._take(taken)

    def _take(self, entries: list[dict[str, object]]) -> None:
        self.entries += entries
        if entries:
            checkpoint = entries[-1]["checkpoint"]
            assert isinstance(checkpoint, str)
            self.checkpoint = checkpoint


async def test_the_feed_resumed_from_checkpoints_misses_and_repeats_nothing_while_games_race(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    one = await start_service(BURA_SSE_KEEPALIVE_SECONDS="0.5")
    two = await start_service(BURA_SSE_KEEPALIVE_SECONDS="0.5")
    services = [one, two]
    tables = [
        await Table.create(client, services[i % 2].url, seed=f"feed-{i}", rules={"match_target": 2})
        for i in range(GAMES)
    ]
    reader = Reader(client, services, seed=7)

    async def play(i: int) -> None:
        # each game moves through both replicas, one command at a time, racing the others
        chance = random.Random(i)
        table = tables[i]
        while not table.state.finished:
            base = chance.choice(services).url
            await table.play(client, base, random_bot, chance, moves=chance.randint(1, 4))

    players = asyncio.gather(*(play(i) for i in range(GAMES)))
    while not players.done():
        await reader.stretch()
    await players
    final = {t.game_id: t.state.version for t in tables}
    async with asyncio.timeout(60):
        while {
            e["game_id"]: e["version"] for e in reader.entries if e["game_id"] in final
        } != final:
            await reader.stretch()

    places = [place(str(e["checkpoint"])) for e in reader.entries]
    assert places == sorted(places), "out of the global order"
    assert len(set(places)) == len(places), "an entry came twice"
    assert reader.stretches > 10
    for table in tables:
        mine = [e for e in reader.entries if e["game_id"] == table.game_id]
        assert [e["version"] for e in mine] == list(range(1, table.state.version + 1))
        page = await client.get(f"{one.url}/games/{table.game_id}/events", headers=OPERATOR)
        assert [e["event"] for e in mine] == [e["event"] for e in page.json()["events"]]
    assert {e["game_id"] for e in reader.entries} == set(final)
