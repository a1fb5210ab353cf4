"""The Python client's stream, against answers made here (httpx's MockTransport): a resume
past the game's version, which the server answers by starting over with the table as it
is now, is taken as that table, not skipped as already seen."""

from __future__ import annotations

import json

import httpx
from bura_client import Client


def _frame(version: int) -> str:
    view = {"version": version, "status": "in_progress"}
    return f"id: {version}\nevent: view\ndata: {json.dumps({'version': version, 'view': view})}\n\n"


def test_a_stream_that_starts_over_below_the_id_resumed_from_is_followed() -> None:
    asked: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.headers.get("last-event-id"))
        body = _frame(7) + _frame(8) + "event: end\ndata: {}\n\n"
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    with Client("http://bura.test", transport=httpx.MockTransport(answer)) as client:
        seat = client.seat("g1", "token")
        got = [(m.event, m.id) for m in seat.follow(last_event_id=12)]
    assert asked == ["12"]
    assert got == [("view", 7), ("view", 8), ("end", None)]
    assert seat.version == 8


def test_a_resumed_stream_still_skips_what_it_gave() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        body = _frame(5) + _frame(6) + "event: end\ndata: {}\n\n"
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    with Client("http://bura.test", transport=httpx.MockTransport(answer)) as client:
        got = [m.id for m in client.seat("g1", "token").follow(last_event_id=5)]
    assert got == [6, None]


def test_a_command_whose_seen_is_null_carries_the_version_the_seat_saw() -> None:
    """`bura play` sends its domain commands as built-ins, `"seen": null` included: that
    names no version, so the client puts in the one the seat last saw (and with seen off,
    sends none at all)."""
    sent: list[dict[str, object]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"version": 9, "status": "in_progress"})
        sent.append(json.loads(request.content))
        return httpx.Response(
            200, json={"version": 10, "events": [], "duplicate": False, "command_id": "k"}
        )

    with Client("http://bura.test", transport=httpx.MockTransport(answer)) as client:
        seat = client.seat("g1", "token")
        seat.view()
        seat.send({"type": "draw", "count": 1, "seen": None}, key="a")
        blind = client.seat("g1", "token", seen=False)
        blind.view()
        blind.send({"type": "draw", "count": 1, "seen": None}, key="b")
    assert sent == [{"type": "draw", "count": 1, "seen": 9}, {"type": "draw", "count": 1}]
