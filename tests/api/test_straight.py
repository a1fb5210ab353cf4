"""A seat's command, and the operator's creation of a game, go straight to the game service
through the front door (services/http/front.py), past the framework's per-request work,
and answer exactly what the route would: the same status, headers and body for every
command of a game and for every creation, rate limits and request ids included; every
request it does not take, or whose command or creation the service refused, is answered
by the route itself, counted once."""

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
    THIRTY_ONE_DECK,
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
    """How many requests for a game's commands, and how many creations, reached their
    routes themselves."""

    def __init__(self) -> None:
        self.count = 0
        self.creations = 0


def routes_counted(monkeypatch: pytest.MonkeyPatch) -> Routed:
    """Every call of a command route's own handling counted from now on. Build the app
    after this: Litestar takes the route's handle when it builds."""
    seen = Routed()
    handle = HTTPRoute.handle

    async def counted(self: HTTPRoute, scope: Any, receive: Any, send: Any) -> None:
        if scope["path"].endswith("/commands"):
            seen.count += 1
        elif scope["path"] == "/games" and scope["method"] == "POST":
            seen.creations += 1
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


def masked(payload: Any, volatile: set[str] = VOLATILE) -> Any:
    if isinstance(payload, dict):
        return {k: "*" if k in volatile else masked(v, volatile) for k, v in payload.items()}
    if isinstance(payload, list):
        return [masked(v, volatile) for v in payload]
    return payload


def answer(
    response: httpx.Response, volatile: set[str] = VOLATILE
) -> tuple[int, dict[str, str], Any]:
    headers = {k: v for k, v in response.headers.items() if k not in VOLATILE_HEADERS}
    raw = response.json() if response.content else None
    if "location" in headers and isinstance(raw, dict):  # a new game's: where it is found
        headers["location"] = headers["location"].replace(raw["game_id"], "{game_id}")
    body = masked(raw, volatile) if raw is not None else None
    if isinstance(body, dict) and "instance" in body:
        body["instance"] = body["instance"].replace(response.request.url.path, "{path}")
    return response.status_code, headers, body


def requests_timed(api: Api, labels: dict[str, str]) -> float:
    """How many requests the metrics timed under these labels."""
    sample = api.runtime.metrics.registry.get_sample_value(
        "bura_http_request_seconds_count", labels
    )
    return sample or 0.0


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

    straight = await played(api, await api.create())
    assert seen.count == 0  # not one of them reached the route
    assert requests_timed(api, timed) == len(THIRTY_ONE_GAME)  # timed as the route's would be

    monkeypatch.setattr(commands, "STRAIGHT", False)
    by_route = await played(api, await api.create())
    assert seen.count == len(THIRTY_ONE_GAME)
    assert requests_timed(api, timed) == 2 * len(THIRTY_ONE_GAME)
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
        ("two seats' tokens", LEAD, [seat, ("Authorization", f"Bearer {table.tokens[1]}")]),
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
    # the same token twice is one token (so the lead is played there), two different
    # tokens or keys are refused, the route reads no Content-Type, and refuses the lead
    # sent again once played
    assert {name: status for name, (status, _, _) in straight} == {
        "no token": 401,
        "unknown token": 401,
        "not bearer": 401,
        "spectator": 403,
        "operator": 403,
        "two tokens": 200,
        "two seats' tokens": 400,
        "key out of pattern": 400,
        "key too long": 400,
        "empty key": 400,
        "two keys": 400,
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


# --- creations -------------------------------------------------------------------------

# What differs between two creations of one game: the ids and tokens the server makes up,
# and so every hash over them, and a seeding deadline's moment.
MADE_UP = {"game_id", "token", "spectator_token", "chain_head", "receipt", "deadline"}
TWO = [{"name": "ann"}, {"name": "bob"}]
GAMES_TIMED = {"method": "POST", "route": "/games", "status": "201"}


def made(response: httpx.Response) -> tuple[int, dict[str, str], Any]:
    return answer(response, MADE_UP)


GOOD_GAMES: list[tuple[str, Body]] = [
    ("two seats, seeded", {"seats": TWO, "seed": "straight-1"}),
    (
        "a stacked deck, in any case",
        {"seats": TWO, "deck": [c.lower() for c in THIRTY_ONE_DECK], "dealer": 1, "seed": "d"},
    ),
    (
        "four seats, teams",
        {"seats": TWO * 2, "seed": "s", "rules": {"teams": [[0, 2], [1, 3]], "deck": 52}},
    ),
    ("three seats, Kozel rules", {"seats": TWO + TWO[:1], "seed": "k", "rules": {"game": "kozel"}}),
    ("the seats shuffle", {"seats": TWO, "seed": "s1", "rules": {"shuffle": "seats"}}),
]


async def created(api: Api) -> list[tuple[int, dict[str, str], Any]]:
    answers = []
    for what, body in GOOD_GAMES:
        response = await api.client.post("/games", json=body, headers=OPERATOR)
        assert response.status_code == 201, (what, response.text)
        answers.append(made(response))
    return answers


async def test_a_creation_goes_straight_and_answers_what_the_route_does(
    routed: tuple[Api, Routed], monkeypatch: pytest.MonkeyPatch
) -> None:
    api, seen = routed

    straight = await created(api)
    assert seen.creations == 0  # not one of them reached the route
    assert requests_timed(api, GAMES_TIMED) == len(GOOD_GAMES)  # as the route's would be

    monkeypatch.setattr(commands, "STRAIGHT", False)
    by_route = await created(api)
    assert seen.creations == len(GOOD_GAMES)
    assert requests_timed(api, GAMES_TIMED) == 2 * len(GOOD_GAMES)
    assert straight == by_route
    assert straight[0][2]["seats"] == [
        {"seat": 0, "name": "ann", "token": "*"},
        {"seat": 1, "name": "bob", "token": "*"},
    ]


async def test_a_game_created_straight_is_the_game_the_route_deals(api: Api) -> None:
    """Written alike: listed, its tokens stored, its first deal as given; and the body is
    encoded as the framework encodes it."""
    body = {"seats": TWO, "deck": THIRTY_ONE_DECK, "dealer": 1}
    response = await api.client.post(
        "/games", json=body, headers={**OPERATOR, "X-Request-ID": "trace-create-1"}
    )
    assert response.status_code == 201
    assert response.content == encode_json(msgspec.json.decode(response.content))
    assert response.headers["content-type"] == "application/json"
    assert response.headers["x-request-id"] == "trace-create-1"
    game = response.json()
    listed = await api.adapters.games.get(game["game_id"])
    assert listed is not None and listed.seats == ("ann", "bob")
    assert len(await api.adapters.tokens.hashes(game["game_id"])) == 3  # two seats, a spectator
    rows = await api.adapters.store.read(game["game_id"])
    assert rows[0].metadata.correlation_id == "trace-create-1"
    seen = await api.get(
        f"/games/{game['game_id']}", {"Authorization": f"Bearer {game['seats'][0]['token']}"}
    )
    assert seen["seats"][0]["hand"] == ["AS", "10S", "KS"]


def not_straight(table: Table) -> list[tuple[str, bytes, list[tuple[str, str]]]]:
    """Creations that are not the operator's plainly valid one: each is the route's to
    answer (most of them with an error, the last two with a game)."""
    good = json.dumps({"seats": TWO, "seed": "same"}).encode()
    operator = ("Authorization", OPERATOR["Authorization"])
    return [
        ("no token", good, []),
        ("unknown token", good, [("Authorization", "Bearer nobody")]),
        ("a seat's token", good, [("Authorization", f"Bearer {table.tokens[0]}")]),
        ("the spectator's", good, [("Authorization", f"Bearer {table.spectator}")]),
        ("not bearer", good, [("Authorization", f"Basic {OPERATOR_KEY}")]),
        ("not JSON", b"{seats", [operator]),
        ("coerced", b'{"seats": [{"name": "a"}, {"name": "b"}], "dealer": "1"}', [operator]),
        ("an unknown field", b'{"seats": [{"name": "a"}, {"name": "b"}], "x": 1}', [operator]),
        ("a card that is no card", json.dumps({"seats": TWO, "deck": ["1X"]}).encode(), [operator]),
        ("too deep", b"[" * 40 + b"]" * 40, [operator]),
        ("text", good, [operator, ("Content-Type", "text/plain")]),
        ("two keys", good, [operator, operator]),
    ]


async def test_what_is_not_a_plainly_valid_creation_is_answered_by_the_route(
    routed: tuple[Api, Routed], monkeypatch: pytest.MonkeyPatch
) -> None:
    api, seen = routed
    table = await api.create()

    async def each() -> list[tuple[str, tuple[int, dict[str, str], Any]]]:
        answers = []
        for name, body, headers in not_straight(table):
            before = seen.creations
            if not any(name == "Content-Type" for name, _ in headers):
                headers = [("Content-Type", "application/json"), *headers]
            response = await api.client.post("/games", content=body, headers=headers)
            assert seen.creations == before + 1, name  # once: by the route alone
            answers.append((name, made(response)))
        return answers

    straight = await each()
    monkeypatch.setattr(commands, "STRAIGHT", False)
    assert straight == await each()
    assert {name: status for name, (status, _, _) in straight} == {
        "no token": 401,
        "unknown token": 401,
        "a seat's token": 403,
        "the spectator's": 403,
        "not bearer": 401,
        "not JSON": 400,
        "coerced": 400,
        "an unknown field": 400,
        "a card that is no card": 400,
        "too deep": 400,
        "text": 201,  # the route reads no Content-Type
        "two keys": 201,  # the route takes the first
    }


async def test_a_creation_the_game_refuses_is_dealt_once_and_rendered_by_the_route(
    routed: tuple[Api, Routed], monkeypatch: pytest.MonkeyPatch
) -> None:
    api, seen = routed
    calls: list[Any] = []
    create = api.service.create

    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return await create(*args, **kwargs)

    monkeypatch.setattr(api.service, "create", counted)
    refused = [
        {"seats": TWO, "dealer": 2},
        {"seats": TWO, "deck": THIRTY_ONE_DECK[:-1]},
        {"seats": TWO, "rules": {"stake": 0}},
    ]

    async def refusals() -> list[tuple[int, dict[str, str], Any]]:
        return [made(await api.client.post("/games", json=b, headers=OPERATOR)) for b in refused]

    straight = await refusals()
    assert (len(calls), seen.creations) == (3, 3)  # each dealt once; the route renders it
    monkeypatch.setattr(commands, "STRAIGHT", False)
    assert straight == await refusals()
    assert [(status, body["code"]) for status, _, body in straight] == [
        (400, "bad_dealer"),
        (400, "bad_deck"),
        (400, "bad_option"),
    ]


async def test_with_rate_limits_a_creation_is_counted_once_and_answered_as_the_route(
    limited: tuple[Api, Routed], monkeypatch: pytest.MonkeyPatch
) -> None:
    api, seen = limited

    async def three() -> list[tuple[int, dict[str, str], Any]]:
        return [
            made(
                await api.client.post(
                    "/games", json={"seats": TWO, "seed": f"r{n}"}, headers=OPERATOR
                )
            )
            for n in range(3)
        ]

    straight = await three()
    assert seen.creations == 0
    left = [int(h["ratelimit"].split("r=")[1].split(";")[0]) for _, h, _ in straight]
    assert left == list(range(left[0], left[0] - 3, -1))  # one a creation
    monkeypatch.setattr(commands, "STRAIGHT", False)
    by_route = await three()
    assert seen.creations == 3
    after = [int(h["ratelimit"].split("r=")[1].split(";")[0]) for _, h, _ in by_route]
    assert after == list(range(left[-1] - 1, left[-1] - 4, -1))
    assert [(s, {k: v for k, v in h.items() if k != "ratelimit"}, b) for s, h, b in straight] == [
        (s, {k: v for k, v in h.items() if k != "ratelimit"}, b) for s, h, b in by_route
    ]
