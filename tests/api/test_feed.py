"""GET /events on both stores: every game's events in the global order, as the arbiter sees
them, resumed from a checkpoint without a gap or a repeat. Here the feed ends once caught
up (follow=false); live following is tested with real servers (tests/e2e/test_feed.py)."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from infra.ports.events import NewEvent
from tests.api.conftest import FIRST_TRICK, OPERATOR, THIRTY_ONE_GAME, Api, Body, Table


def lines(text: str) -> list[Body]:
    return [json.loads(line) for line in text.splitlines() if line]


async def feed(api: Api, headers: dict[str, str] = OPERATOR, **params: Any) -> list[Body]:
    answer = await api.client.get("/events", params={"follow": "false", **params}, headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/x-ndjson")
    return lines(answer.text)


async def played(api: Api, steps: list[tuple[int, Body]]) -> Table:
    table = await api.create()
    for seat, command in steps:
        await api.play(table, seat, command)
    return table


async def test_the_feed_holds_every_event_of_every_game_in_the_global_order(api: Api) -> None:
    one, two = await api.create(), await api.create()
    for i, (seat, command) in enumerate(THIRTY_ONE_GAME):  # the two games interleaved
        await api.play(one, seat, command)
        if i < len(FIRST_TRICK):
            await api.play(two, *FIRST_TRICK[i])

    entries = [e for e in await feed(api) if e["game_id"] in (one.game_id, two.game_id)]

    for table in (one, two):
        mine = [e for e in entries if e["game_id"] == table.game_id]
        events = await api.events(table)  # the operator's: the whole record
        assert [(e["version"], e["event"]) for e in mine] == [
            (e["version"], e["event"]) for e in events
        ]
        assert all(e["type"] == e["event"]["type"] for e in mine)
    places = [tuple(map(int, e["checkpoint"].split(":"))) for e in entries]
    assert places == sorted(places) and len(set(places)) == len(places)
    dealt = next(e for e in entries if e["type"] == "card_dealt")
    assert dealt["event"]["card"] is not None  # the arbiter's record: hidden cards and all
    moved = next(e for e in entries if e["type"] == "cards_led")
    assert moved["seat"] == 0 and moved["request_id"] and moved["recorded_at"]
    started = next(e for e in entries if e["type"] == "game_started")
    assert started["seat"] is None and started["event"]["seed"] == "api-tests"


async def test_the_feed_resumes_after_a_checkpoint_with_nothing_missed_or_repeated(
    api: Api,
) -> None:
    table = await played(api, THIRTY_ONE_GAME[:6])
    everything = await feed(api)
    mine = [e for e in everything if e["game_id"] == table.game_id]

    read, after = [], "0:0"
    while page := await feed(api, after=after, limit=7):
        read += page
        after = page[-1]["checkpoint"]

    assert read == everything
    middle = mine[len(mine) // 2]["checkpoint"]
    rest = await feed(api, after=middle)
    assert [e["checkpoint"] for e in rest] == [
        e["checkpoint"] for e in everything[everything.index(mine[len(mine) // 2]) + 1 :]
    ]
    assert await feed(api, after=everything[-1]["checkpoint"]) == []


async def test_server_sent_events_carry_the_checkpoint_as_their_id(api: Api) -> None:
    table = await played(api, FIRST_TRICK)
    whole = [e for e in await feed(api) if e["game_id"] == table.game_id]
    start = whole[0]["checkpoint"]

    answer = await api.client.get(
        "/events",
        params={"follow": "false"},
        headers={**OPERATOR, "Accept": "text/event-stream", "Last-Event-ID": start},
    )

    assert answer.headers["content-type"].startswith("text/event-stream")
    messages = [m for m in answer.text.split("\n\n") if m]
    parsed = [dict(line.split(": ", 1) for line in m.splitlines()) for m in messages]
    mine = [
        json.loads(p["data"]) for p in parsed if json.loads(p["data"])["game_id"] == table.game_id
    ]
    assert mine == whole[1:]
    assert all(p["id"] == json.loads(p["data"])["checkpoint"] for p in parsed)
    # the format parameter chooses too, and Last-Event-ID wins over `after`
    chosen = await api.client.get(
        "/events",
        params={"follow": "false", "format": "sse", "after": "0:0"},
        headers={**OPERATOR, "Last-Event-ID": start},
    )
    assert chosen.text == answer.text


async def test_an_event_this_server_cannot_read_is_passed_on_as_stored(api: Api) -> None:
    table = await api.create()
    version = await api.version(table)
    future = {"type": "timed_out", "from_a_newer_server": True}
    await api.store.append(
        table.game_id, version, [NewEvent("timed_out", msgspec.json.encode(future))]
    )
    (last,) = [e for e in await feed(api) if e["game_id"] == table.game_id][-1:]
    assert (last["type"], last["version"], last["event"]) == ("timed_out", version + 1, future)


async def test_only_the_operator_reads_the_feed(api: Api) -> None:
    table = await api.create()
    for headers, status in (({}, 401), (table.seat(0), 403), (table.watcher, 403)):
        answer = await api.client.get("/events", params={"follow": "false"}, headers=headers)
        assert answer.status_code == status, answer.text


async def test_a_bad_checkpoint_or_format_is_a_400(api: Api) -> None:
    for params, headers in (
        ({"after": "12"}, {}),
        ({"after": "a:b"}, {}),
        ({"after": "-1:3"}, {}),
        ({"format": "xml"}, {}),
        ({"limit": "0"}, {}),
        ({}, {"Last-Event-ID": "7"}),
    ):
        answer = await api.client.get(
            "/events", params={"follow": "false", **params}, headers={**OPERATOR, **headers}
        )
        assert answer.status_code == 400, (params, answer.text)
        assert answer.json()["code"] == "bad_request"
        [error] = answer.json()["errors"]  # named as sent, and where
        assert error["key"] == next(iter(params), "last-event-id"), error


async def test_a_checkpoint_the_store_never_gave_is_a_400_naming_it(api: Api) -> None:
    """Past the head, between two events, or of another store's making: resuming there
    would skip events or give them again (each store in its own way), so it is refused
    with its own code (the text is well formed: only the store knows it never gave it)."""
    await played(api, THIRTY_ONE_GAME[:2])
    last = (await feed(api))[-1]["checkpoint"]
    tx, position = map(int, last.split(":"))
    # the last two are past any checkpoint a store can give (a bigint's range)
    for made_up in (
        f"{tx}:{position + 1_000_000}",
        f"{tx + 1_000_000}:0",
        f"{2**62}:{2**62}",
        f"{2**63}:1",
        "9999999999999999999:1",
    ):
        for params, headers, name in (
            ({"after": made_up}, {}, "after"),
            ({}, {"Last-Event-ID": made_up}, "Last-Event-ID"),
        ):
            answer = await api.client.get(
                "/events", params={"follow": "false", **params}, headers={**OPERATOR, **headers}
            )
            assert answer.status_code == 400, (made_up, answer.text)
            problem = answer.json()
            assert problem["code"] == "bad_checkpoint"
            assert problem["detail"].startswith(f"{name}: {made_up} is no checkpoint this store")
            [error] = problem["errors"]  # keyed as a malformed one is
            assert (error["key"], error["source"]) == (
                name.lower(),
                "query" if params else "header",
            )
            assert problem["detail"] == f"{name}: {error['message']}"
    assert await feed(api, after=last) == [] and await feed(api, after="0:0")
