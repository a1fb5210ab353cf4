"""Presence on real processes (docs/rules.md §13.5): a seat's live stream on one replica
shows it connected in the views and streams of another, through Redis; a seat whose
replica dies is away once its presence lapses, and is abandoned by the replica left."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import jsonschema

from harness.processes import OPERATOR, Service
from harness.sse import Stream
from infra.ports.presence import LAPSE_MS
from tests.e2e.conftest import StartService
from tests.e2e.play import Table

WAIT = 30.0


async def seats(client: httpx.AsyncClient, service: Service, table: Table) -> list[dict[str, Any]]:
    answer = await client.get(f"{service.url}/games/{table.game_id}", headers=OPERATOR)
    assert answer.status_code == 200, answer.text
    shown: list[dict[str, Any]] = answer.json()["seats"]
    return shown


async def published(client: httpx.AsyncClient, service: Service) -> Any:
    """A validator of the stream's messages as the service's OpenAPI document writes them:
    one StreamFrame each, whose `data` is the JSON its `contentSchema` names."""
    doc = (await client.get(f"{service.url}/schema/openapi.json")).json()
    frames = {
        frame["properties"]["event"]["const"]: frame["properties"]["data"]["contentSchema"]
        for frame in (
            doc["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]
            for ref in doc["components"]["schemas"]["StreamFrame"]["oneOf"]
        )
    }
    asyncapi = (await client.get(f"{service.url}/schema/asyncapi.json")).json()
    assert "presence" in asyncapi["components"]["messages"]

    def check(event: str, data: Any) -> None:
        schema = {**frames[event], "components": doc["components"]}
        jsonschema.Draft202012Validator(schema).validate(data)

    return check


async def until_seat(
    client: httpx.AsyncClient, service: Service, table: Table, seat: int, connected: bool
) -> dict[str, Any]:
    async with asyncio.timeout(WAIT):
        while (found := (await seats(client, service, table))[seat])["connected"] != connected:
            await asyncio.sleep(0.05)
    return found


async def test_a_stream_on_one_replica_shows_its_seat_connected_on_the_other(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    one, two = await asyncio.gather(start_service(), start_service())
    table = await Table.create(client, one.url, seed="presence-1")
    before = await seats(client, two, table)
    assert [s["connected"] for s in before] == [False, False]
    async with Stream(client, table.stream_url(two.url), table.tokens[1]) as watcher:
        first = await watcher.event("view")
        assert first.data["view"]["seats"][1]["connected"] is True  # its own stream
        async with Stream(client, table.stream_url(one.url), table.tokens[0]) as seat0:
            await seat0.event("view")
            joined = await until_seat(client, two, table, 0, True)
            assert joined["connected_since"] is not None
            pushed = await watcher.wait_for(
                lambda m: m.event == "presence" and m.data["seats"][0]["connected"], WAIT
            )
            assert pushed.id is None and pushed.data["version"] == table.state.version
            check = await published(client, two)
            check("presence", pushed.data)
            check("view", first.data)
        left = await until_seat(client, two, table, 0, False)
        assert left["away_since"] >= joined["connected_since"]
        gone = await watcher.wait_for(
            lambda m: m.event == "presence" and m.data["seats"][0]["connected"] is False, WAIT
        )
        assert gone.data["seats"][0]["away_since"] == left["away_since"]
        check("presence", gone.data)
    assert watcher.last_id == table.state.version  # presence messages carry no version


async def test_a_seat_whose_replica_dies_is_away_once_it_lapses_and_then_abandoned(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    one, two = await asyncio.gather(start_service(), start_service())
    rules = {"turn_seconds": 600, "abandon_seconds": 1}
    table = await Table.create(client, one.url, seed="presence-2", rules=rules, dealer=1)
    async with Stream(client, table.stream_url(one.url), table.tokens[0]) as seat0:
        await seat0.event("view")
        await until_seat(client, two, table, 0, True)
        one.kill()  # the replica and the seat's stream die; nothing says the seat left
        await asyncio.wait_for(seat0.closed.wait(), WAIT)
    away = await until_seat(client, two, table, 0, False)  # once LAPSE_MS has passed
    async with asyncio.timeout(WAIT + LAPSE_MS / 1000):
        while True:
            answer = await client.get(f"{two.url}/games/{table.game_id}/events", headers=OPERATOR)
            found = [e["event"] for e in answer.json()["events"]]
            timed = [e for e in found if e["type"] == "timed_out"]
            if timed:
                break
            await asyncio.sleep(0.1)
    [timeout] = timed
    assert (timeout["seat"], timeout["clock"], timeout["verdict"]) == (0, "abandon", "lose_deal")
    assert timeout["away_since"] == away["away_since"]
    assert timeout["at"] >= timeout["away_since"] + 1_000
    assert found[-1]["type"] == "game_finished" and found[-1]["reason"] == "abandoned"


async def test_a_graceful_restart_dates_a_seat_away_from_when_its_stream_closed(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    """On Redis, a stream the drain closes says it left, then and there: the seat is away
    from the drain (when its `event: shutdown` went), not from its last renewal, nor from
    when the process finally exited."""
    one = await start_service(BURA_SHUTDOWN_GRACE_SECONDS="5")
    rules = {"turn_seconds": 600, "abandon_seconds": 60}
    table = await Table.create(client, one.url, seed="presence-3", rules=rules, dealer=1)
    async with Stream(client, table.stream_url(one.url), table.tokens[0]) as seat0:
        await seat0.event("view")
        connected = await until_seat(client, one, table, 0, True)
        await asyncio.sleep(1.0)  # no renewal yet: one would come after RENEW_MS
        stopping = int(time.time() * 1000)
        one.signal(signal.SIGTERM)
        await seat0.event("shutdown")
    assert await one.wait() == 0
    two = await start_service()
    away = (await seats(client, two, table))[0]
    assert away["connected"] is False, away
    assert away["away_since"] >= stopping > connected["connected_since"], (away, stopping)


async def stopped_with_seat_0_due(
    start_service: StartService,
    client: httpx.AsyncClient,
    tmp_path: Path,
    *,
    abandon_seconds: int,
    seed: str,
) -> tuple[Table, Callable[[], Awaitable[Service]]]:
    """The embedded default (SQLite kept in tmp_path) with seat 0 due and its stream open
    longer than abandon_seconds, then stopped gracefully (SIGTERM): the table, and how to
    start the server again on the same port and store."""
    embedded = {
        "BURA_DATABASE_URL": "",
        "BURA_REDIS_URL": "",
        "BURA_SQLITE_PATH": str(tmp_path / "bura.sqlite3"),
    }
    one = await start_service(**embedded)
    rules = {"turn_seconds": 600, "abandon_seconds": abandon_seconds}
    table = await Table.create(client, one.url, seed=seed, rules=rules, dealer=1)
    async with Stream(client, table.stream_url(one.url), table.tokens[0]) as seat0:
        await seat0.event("view")
        await until_seat(client, one, table, 0, True)
        await asyncio.sleep(abandon_seconds + 0.5)  # longer than abandon_seconds, seat 0 due
        one.signal(signal.SIGTERM)
        await seat0.event("shutdown")
    assert await one.wait() == 0

    async def restart() -> Service:
        return await start_service(port=one.port, **embedded)

    return table, restart


async def test_a_restart_of_the_embedded_default_judges_no_seat_from_before_it(
    start_service: StartService, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    """The in-process board starts empty: a seat due longer than abandon_seconds when the
    server restarts was judged abandoned 2 ms after start-up, its stream open all along,
    `away_since` the moment it became due. Like a Redis that lost its state, the board
    counts a seat it never saw from a lapse after it began."""
    table, restart = await stopped_with_seat_0_due(
        start_service, client, tmp_path, abandon_seconds=2, seed="presence-4"
    )
    two = await restart()
    async with Stream(client, table.stream_url(two.url), table.tokens[0]) as again:
        await again.event("view")  # the seat's client is back at once, as told to
        await until_seat(client, two, table, 0, True)
        await asyncio.sleep(2.5)
    answer = await client.get(f"{two.url}/games/{table.game_id}/events", headers=OPERATOR)
    found = [e["event"]["type"] for e in answer.json()["events"]]
    assert "timed_out" not in found and "deal_lost" not in found, found


async def test_after_a_restart_of_the_embedded_default_the_view_shows_when_the_seat_is_judged(
    start_service: StartService, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    """A seat due since before the restart that does not come back is judged a lapse plus
    abandon_seconds after the start; the view's `abandon_at` says so (it showed the moment
    counted from when the seat became due, already past), and `timed_out` comes then."""
    table, restart = await stopped_with_seat_0_due(
        start_service, client, tmp_path, abandon_seconds=1, seed="presence-5"
    )
    starting = int(time.time() * 1000)
    two = await restart()
    started = int(time.time() * 1000)
    due = (await seats(client, two, table))[0]
    assert due["connected"] is False and due["away_since"] is None, due
    allowed = LAPSE_MS + 1_000
    assert starting + allowed <= due["abandon_at"] <= started + allowed, (starting, due, started)
    async with asyncio.timeout(WAIT + LAPSE_MS / 1000):
        while True:
            answer = await client.get(f"{two.url}/games/{table.game_id}/events", headers=OPERATOR)
            timed = [
                e["event"] for e in answer.json()["events"] if e["event"]["type"] == "timed_out"
            ]
            if timed:
                break
            await asyncio.sleep(0.1)
    [timeout] = timed
    assert timeout["clock"] == "abandon" and timeout["seat"] == 0
    assert timeout["away_since"] + 1_000 == due["abandon_at"] <= timeout["at"], (due, timeout)
    assert timeout["at"] - due["abandon_at"] < 1_000  # judged when the view said
