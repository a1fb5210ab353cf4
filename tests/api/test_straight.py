"""A seat's command goes straight to the game service through the front door
(services/http/front.py), past the framework's per-request work, and answers exactly what
the route would: the same status, headers and body for every command of a game, rate
limits and request ids included; every request it does not take, or whose command the
service refused, is answered by the route itself, counted once."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest
from litestar.routes import HTTPRoute
from litestar.serialization import encode_json

from services.app.results import Outcome
from services.bootstrap import Adapters
from services.config import Settings
from services.http import commands
from services.http.app import create_app
from tests.api.conftest import (
    OPERATOR,
    OPERATOR_KEY,
    THIRTY_ONE_GAME,
    Api,
    Body,
    Table,
    app_on,
    serving,
)

# What differs between two plays of one game: the time each row was written, and so every
# hash and receipt over it, the ids the server makes up, and the request id.
VOLATILE = {"chain_head", "receipt", "command_id", "recorded_at", "at"}
VOLATILE_HEADERS = {"x-request-id", "content-length"}


class Routed:
    """How many requests for a game's commands reached the route itself."""

    def __init__(self) -> None:
        self.count = 0


def routes_counted(monkeypatch: pytest.MonkeyPatch) -> Routed:
    """Every call of a command route's own handling counted from now on. Build the app
    after this: Litestar takes the route's handle when it builds."""
    seen = Routed()
    handle = HTTPRoute.handle

    async def counted(self: HTTPRoute, scope: Any, receive: Any, send: Any) -> None:
        if scope["path"].endswith("/commands"):
            seen.count += 1
        await handle(self, scope, receive, send)

    monkeypatch.setattr(HTTPRoute, "handle", counted)
    return seen


@pytest.fixture
async def routed(
    adapters: Adapters, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Api, Routed]]:
    """The API, with every call of a command route's own handling counted."""
    seen = routes_counted(monkeypatch)
    app = app_on(adapters)
    async with serving(app) as client:
        yield Api(client, app, adapters), seen


def masked(payload: Any) -> Any:
    if isinstance(payload, dict):
        return {k: "*" if k in VOLATILE else masked(v) for k, v in payload.items()}
    if isinstance(payload, list):
        return [masked(v) for v in payload]
    return payload


def answer(response: httpx.Response) -> tuple[int, dict[str, str], Any]:
    headers = {k: v for k, v in response.headers.items() if k not in VOLATILE_HEADERS}
    body = masked(response.json()) if response.content else None
    if isinstance(body, dict) and "instance" in body:
        body["instance"] = body["instance"].replace(response.request.url.path, "{path}")
    return response.status_code, headers, body


async def played(api: Api, table: Table) -> list[tuple[int, dict[str, str], Any]]:
    answers = []
    for n, (seat, command) in enumerate(THIRTY_ONE_GAME):
        response = await api.send(table, seat, command, key=f"move-{n}")
        assert response.status_code == 200, response.text
        answers.append(answer(response))
    return answers


async def test_every_command_of_a_game_goes_straight_and_answers_what_the_route_does(
    routed: tuple[Api, Routed], monkeypatch: pytest.MonkeyPatch
) -> None:
    api, seen = routed
    timed = {"method": "POST", "route": "/games/{game_id}/commands", "status": "200"}

    def requests_timed() -> float:
        sample = api.runtime.metrics.registry.get_sample_value(
            "bura_http_request_seconds_count", timed
        )
        return sample or 0.0

    straight = await played(api, await api.create())
    assert seen.count == 0  # not one of them reached the route
    assert requests_timed() == len(THIRTY_ONE_GAME)  # timed as the route's would be

    monkeypatch.setattr(commands, "STRAIGHT", False)
    by_route = await played(api, await api.create())
    assert seen.count == len(THIRTY_ONE_GAME)
    assert requests_timed() == 2 * len(THIRTY_ONE_GAME)
    assert straight == by_route
    assert straight[-1][2]["events"][-1]["event"]["type"] == "game_finished"


async def test_the_body_is_encoded_as_the_framework_encodes_it(api: Api) -> None:
    table = await api.create()
    seat, command = THIRTY_ONE_GAME[0]
    response = await api.send(table, seat, command, key="first")
    outcome = msgspec.json.decode(response.content, type=Outcome)
    assert response.content == encode_json(outcome)
    assert response.headers["content-type"] == "application/json"
    assert int(response.headers["content-length"]) == len(response.content)
    assert response.headers["x-request-id"]


LEAD = json.dumps(THIRTY_ONE_GAME[0][1]).encode()


def cases(table: Table) -> list[tuple[str, bytes, list[tuple[str, str]]]]:
    """Requests that are not a seat's plainly valid command: each is the route's to answer,
    in this order (most of them with an error, one with a move)."""
    seat = ("Authorization", f"Bearer {table.tokens[0]}")
    return [
        ("no token", LEAD, []),
        ("unknown token", LEAD, [("Authorization", "Bearer nobody")]),
        ("not bearer", LEAD, [("Authorization", f"Basic {table.tokens[0]}")]),
        ("spectator", LEAD, [("Authorization", f"Bearer {table.spectator}")]),
        ("operator", LEAD, [("Authorization", OPERATOR["Authorization"])]),
        ("two tokens", LEAD, [seat, seat]),
        ("key out of pattern", LEAD, [seat, ("Idempotency-Key", "a\tb")]),
        ("key too long", LEAD, [seat, ("Idempotency-Key", "k" * 201)]),
        ("empty key", LEAD, [seat, ("Idempotency-Key", "")]),
        ("two keys", LEAD, [seat, ("Idempotency-Key", "a"), ("Idempotency-Key", "b")]),
        ("not JSON", b"{lead", [seat]),
        ("not a command", b'{"type": "shuffle"}', [seat]),
        ("coerced", b'{"type": "lead", "cards": ["AS", "10S", "KS"], "seen": "1"}', [seat]),
        ("no card", b'{"type": "lead", "cards": ["ZZ"]}', [seat]),
        ("too deep", b"[" * 40 + b"]" * 40, [seat]),
        ("text", LEAD, [seat, ("Content-Type", "text/plain")]),
    ]


async def test_what_is_not_a_plainly_valid_command_is_answered_by_the_route(
    routed: tuple[Api, Routed], monkeypatch: pytest.MonkeyPatch
) -> None:
    api, seen = routed

    async def each(table: Table) -> list[tuple[str, tuple[int, dict[str, str], Any]]]:
        answers = []
        for name, body, headers in cases(table):
            before = seen.count
            if not any(name == "Content-Type" for name, _ in headers):
                headers = [("Content-Type", "application/json"), *headers]
            response = await api.client.post(
                f"/games/{table.game_id}/commands", content=body, headers=headers
            )
            assert seen.count == before + 1, name  # once: by the route alone
            answers.append((name, answer(response)))
        return answers

    straight = await each(await api.create())
    monkeypatch.setattr(commands, "STRAIGHT", False)
    by_route = await each(await api.create())
    assert straight == by_route
    # the route takes the first of two tokens (so the lead is played there), reads no
    # Content-Type, and refuses the lead sent again once played
    assert {name: status for name, (status, _, _) in straight} == {
        "no token": 401,
        "unknown token": 401,
        "not bearer": 401,
        "spectator": 403,
        "operator": 403,
        "two tokens": 200,
        "key out of pattern": 400,
        "key too long": 400,
        "empty key": 400,
        "two keys": 409,
        "not JSON": 400,
        "not a command": 400,
        "coerced": 400,
        "no card": 400,
        "too deep": 400,
        "text": 409,
    }


async def test_a_command_the_game_refuses_is_sent_once_and_rendered_by_the_route(
    routed: tuple[Api, Routed], monkeypatch: pytest.MonkeyPatch
) -> None:
    api, seen = routed
    calls: list[str] = []
    execute = api.service.execute

    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(str(args[2]))
        return await execute(*args, **kwargs)

    monkeypatch.setattr(api.service, "execute", counted)

    async def refusals(table: Table) -> list[tuple[int, dict[str, str], Body]]:
        out_of_turn = await api.send(table, 1, {"type": "lead", "cards": ["6H"]}, key="early")
        first = await api.send(table, 0, THIRTY_ONE_GAME[0][1], key="lead")
        reused = await api.send(table, 0, {"type": "draw"}, key="lead")
        assert first.status_code == 200
        return [answer(out_of_turn), answer(reused)]

    table = await api.create()
    straight = await refusals(table)
    assert (len(calls), seen.count) == (3, 2)  # each sent once; the route renders the two
    assert await api.version(table) == table.version + 1
    monkeypatch.setattr(commands, "STRAIGHT", False)
    by_route = await refusals(await api.create())
    assert straight == by_route
    assert [(status, body["code"]) for status, _, body in straight] == [
        (409, "not_your_turn"),
        (422, "idempotency_key_reused"),
    ]


@pytest.fixture
async def limited(
    adapters: Adapters, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Api, Routed]]:
    """The API with rate limits on (far from reached), the route's handling counted."""
    seen = routes_counted(monkeypatch)
    settings = Settings(
        operator_key=OPERATOR_KEY, rate_commands_per_token=500, rate_commands_per_address=900
    )
    app = create_app(settings, adapters)
    async with serving(app) as client:
        yield Api(client, app, adapters), seen


async def test_with_rate_limits_the_front_door_counts_once_and_answers_as_the_route(
    limited: tuple[Api, Routed], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The RateLimit fields of every answer, taken or refused, and each request counted
    once: the remaining count falls by one a request, whichever way it was answered."""
    api, seen = limited

    async def both(table: Table) -> list[tuple[int, dict[str, str], Any]]:
        answers = []
        for n, (seat, command) in enumerate(THIRTY_ONE_GAME[:6]):
            answers.append(answer(await api.send(table, seat, command, key=f"m{n}")))
        refused = await api.send(table, 0, {"type": "lead", "cards": ["6H"]}, key="early")
        answers.append(answer(refused))
        return answers

    straight = await both(await api.create())
    assert seen.count == 1  # only the refusal reached the route, to be rendered
    seats = [seat for seat, _ in THIRTY_ONE_GAME[:6]] + [0]
    left = [int(h["ratelimit"].split("r=")[1].split(";")[0]) for _, h, _ in straight]
    for seat in set(seats):  # each token's count falls by one a request
        mine = [n for s, n in zip(seats, left, strict=True) if s == seat]
        assert mine == list(range(mine[0], mine[0] - len(mine), -1)), (seat, mine)
    assert all(h["ratelimit-policy"] for _, h, _ in straight)
    monkeypatch.setattr(commands, "STRAIGHT", False)
    by_route = await both(await api.create())
    assert [(s, {k: v for k, v in h.items() if k != "ratelimit"}, b) for s, h, b in straight] == [
        (s, {k: v for k, v in h.items() if k != "ratelimit"}, b) for s, h, b in by_route
    ]


async def test_the_front_door_keeps_the_callers_request_id(api: Api) -> None:
    """Echoed, and recorded as the command's correlation id, as by the route."""
    table = await api.create()
    seat, command = THIRTY_ONE_GAME[0]
    response = await api.client.post(
        f"/games/{table.game_id}/commands",
        json=command,
        headers={**table.seat(seat), "X-Request-ID": "trace-front-1", "Idempotency-Key": "a"},
    )
    assert response.status_code == 200
    assert response.headers["x-request-id"] == "trace-front-1"
    rows = await api.adapters.store.read(table.game_id, after=table.version)
    assert rows and {r.metadata.correlation_id for r in rows} == {"trace-front-1"}
