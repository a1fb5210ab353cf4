"""The HTTP API over an in-process ASGI transport, on each event store.

Streaming responses are buffered by this transport, so live streams are tested elsewhere
with a real server; here every call is a plain request and its answer.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from litestar import Litestar

from infra.ports.events import EventStore
from services.app.games import GameService
from services.bootstrap import Adapters, Runtime
from services.config import Settings
from services.http.app import create_app
from services.http.problems import PROBLEM_JSON, PROBLEMS
from tests.decks import dealing_order
from tests.views import table_only

__all__ = ["table_only"]

OPERATOR_KEY = "operator-key-of-the-api-tests"
OPERATOR = {"Authorization": f"Bearer {OPERATOR_KEY}"}
CARD = re.compile(r"^(10|[2-9JQKA])[SHDC]$")

Body = dict[str, Any]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def stacked(
    hands: Sequence[Sequence[str]], trump: str, stock: Sequence[str] = (), dealer: int = 1
) -> list[str]:
    """A full 36-card deck that deals `hands` (by seat), turns `trump`, and leaves `stock`
    on top of the stock (tests/decks.py)."""
    return list(dealing_order(hands, trump, stock, dealer=dealer))


# A two-seat game that seat 0 wins by declaring 31 (35 points) after an accepted dave.
# Dealer 1: seat 0 leads. Trump clubs. Each step is (seat, command).
THIRTY_ONE_DECK = stacked(
    hands=[["AS", "10S", "KS"], ["6H", "7H", "8H"]],
    trump="6C",
    stock=["9D", "AD", "10D", "7D", "QS", "JH", "8S", "9S", "JS", "QH"],
)
THIRTY_ONE_GAME: list[tuple[int, Body]] = [
    (0, {"type": "lead", "cards": ["AS", "10S", "KS"]}),  # 25 points, not beaten
    (1, {"type": "respond", "cards": ["6H", "7H", "8H"]}),
    (0, {"type": "draw"}),
    (1, {"type": "draw"}),
    (0, {"type": "draw"}),
    (1, {"type": "draw"}),
    (0, {"type": "draw"}),
    (1, {"type": "draw"}),
    (0, {"type": "lead", "cards": ["9D"]}),
    (1, {"type": "respond", "cards": ["AD"]}),  # seat 1 takes 11
    (1, {"type": "draw"}),
    (0, {"type": "draw"}),
    (1, {"type": "lead", "cards": ["7D"]}),
    (0, {"type": "respond", "cards": ["10D"]}),  # seat 0 takes 10: 35 in all
    (0, {"type": "draw"}),
    (1, {"type": "draw"}),
    (0, {"type": "dave"}),
    (1, {"type": "dave_answer", "accept": True}),
    (0, {"type": "declare", "claim": "thirty_one"}),
]
# After the first trick of that deck seat 0 (the taker) is due to draw, with an empty hand.
FIRST_TRICK = THIRTY_ONE_GAME[:2]


@dataclass
class Table:
    """A game created through the API and its secrets."""

    game_id: str
    tokens: list[str]
    spectator: str
    version: int

    def seat(self, seat: int) -> dict[str, str]:
        return bearer(self.tokens[seat])

    @property
    def watcher(self) -> dict[str, str]:
        return bearer(self.spectator)


class Api:
    def __init__(self, client: httpx.AsyncClient, app: Litestar, adapters: Adapters) -> None:
        self.client = client
        self.app = app
        self.adapters = adapters
        self.store: EventStore = adapters.store
        self.clocked: list[Table] = []  # games with a clock, ended when the test is over

    @property
    def runtime(self) -> Runtime:
        runtime: Runtime = self.app.state.runtime
        return runtime

    @property
    def service(self) -> GameService:
        return self.runtime.games

    async def create(
        self,
        *,
        seats: int = 2,
        rules: Body | None = None,
        deck: Sequence[str] | None = THIRTY_ONE_DECK,
        dealer: int | None = 1,
        seed: str | None = "api-tests",
    ) -> Table:
        body: Body = {"seats": [{"name": f"p{i}"} for i in range(seats)]}
        for key, value in (("rules", rules), ("deck", deck), ("dealer", dealer), ("seed", seed)):
            if value is not None:
                body[key] = list(value) if key == "deck" else value
        answer = await self.client.post("/games", json=body, headers=OPERATOR)
        assert answer.status_code == 201, answer.text
        created = answer.json()
        table = Table(
            created["game_id"],
            [s["token"] for s in created["seats"]],
            created["spectator_token"],
            created["version"],
        )
        if rules and rules.get("turn_seconds"):
            self.clocked.append(table)
        return table

    async def end_clocked(self) -> None:
        """Concede every game with a clock this test left going: the PostgreSQL database is
        the session's, and any later server's timers would go on timing its seats out."""
        for table in self.clocked:
            for _ in range(20):
                shown = await self.view(table)
                if shown["status"] == "finished":
                    break
                if shown["phase"] == "seeding":  # no seat to concede yet: the seeds first
                    for seat in range(len(table.tokens)):
                        await self.send(table, seat, {"type": "seed", "value": "end"})
                    continue
                # 409 when a timer moved the table first: look again
                await self.send(table, shown["turn"], {"type": "concede"})

    async def send(
        self, table: Table, seat: int, command: Body, key: str | None = None
    ) -> httpx.Response:
        headers = table.seat(seat)
        if key is not None:
            headers["Idempotency-Key"] = key
        return await self.client.post(
            f"/games/{table.game_id}/commands", json=command, headers=headers
        )

    async def play(self, table: Table, seat: int, command: Body, key: str | None = None) -> Body:
        """Send a command that must be accepted; its answer."""
        answer = await self.send(table, seat, command, key)
        assert answer.status_code == 200, (seat, command, answer.text)
        result: Body = answer.json()
        return result

    async def get(self, path: str, headers: dict[str, str] = OPERATOR, **params: Any) -> Body:
        answer = await self.client.get(path, headers=headers, params=params)
        assert answer.status_code == 200, (path, answer.text)
        result: Body = answer.json()
        return result

    async def view(self, table: Table, headers: dict[str, str] = OPERATOR) -> Body:
        return await self.get(f"/games/{table.game_id}", headers)

    async def events(self, table: Table, headers: dict[str, str] = OPERATOR) -> list[Body]:
        page = await self.get(f"/games/{table.game_id}/events", headers)
        events: list[Body] = page["events"]
        return events

    async def version(self, table: Table) -> int:
        return int((await self.view(table))["version"])


@asynccontextmanager
async def serving(app: Litestar) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app with its lifespan running. The lifespan is entered and left in
    one task of its own: a fixture's setup and teardown run in different tasks."""
    started, stop = asyncio.Event(), asyncio.Event()

    async def lifespan() -> None:
        async with app.lifespan():
            started.set()
            await stop.wait()

    task = asyncio.create_task(lifespan())
    ready = asyncio.create_task(started.wait())
    await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        ready.cancel()
        await task  # raises why the app did not start
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://bura.test",
            event_hooks={"response": [every_error_is_a_problem]},
        ) as client:
            yield client
    finally:
        stop.set()
        await task


async def every_error_is_a_problem(response: httpx.Response) -> None:
    """Every error any API test meets is problem details of a registered type whose status
    is the answer's (services/http/problems.py). A readiness probe's 503 is its report, and
    a page a browser asked for (text/html first) of a game nobody holds is a page."""
    if response.status_code < 400 or response.request.url.path.startswith("/health/"):
        return
    path = response.request.url.path
    asked = response.request.headers.get("accept", "")
    if path.startswith(("/play/", "/arbiter/")) and asked.startswith("text/html"):
        return
    if response.request.method == "HEAD":  # no body to read: tests/api/test_head.py
        return
    await response.aread()
    assert response.headers["content-type"] == PROBLEM_JSON, response.text
    body = response.json()
    code = body["code"]
    assert code in PROBLEMS, f"unregistered code {code}"
    assert body["type"] == f"/problems/{code}" and body["title"] == PROBLEMS[code].title
    assert body["status"] == response.status_code, response.text
    assert isinstance(body["detail"], str) and body["detail"]
    if response.status_code == 401:
        assert response.headers["www-authenticate"].startswith("Bearer")


def app_on(adapters: Adapters) -> Litestar:
    # Rate limits have tests of their own (tests/api/test_limits.py); here they would
    # only refuse the suites' bursts.
    return create_app(Settings(operator_key=OPERATOR_KEY, rate_limits=False), adapters)


@pytest.fixture
async def api(adapters: Adapters) -> AsyncIterator[Api]:
    """The app on each database (tests/conftest.py `adapters`) and the in-process bus."""
    app = app_on(adapters)
    async with serving(app) as client:
        api = Api(client, app, adapters)
        yield api
        await api.end_clocked()


def cards_in(payload: Any) -> Iterator[str]:
    """Every card code anywhere in a JSON document."""
    if isinstance(payload, str):
        if CARD.match(payload):
            yield payload
    elif isinstance(payload, dict):
        for value in payload.values():
            yield from cards_in(value)
    elif isinstance(payload, list | tuple):
        for value in payload:
            yield from cards_in(value)


# The headers the OpenAPI document describes on answers (services/http/contract.py HEADERS).
DESCRIBED_HEADERS = (
    "x-request-id",
    "ratelimit",
    "ratelimit-policy",
    "retry-after",
    "www-authenticate",
)


async def undocumented_headers(client: httpx.AsyncClient, answer: httpx.Response) -> set[str]:
    """The described headers an answer carries that its operation's documented response
    (found by method and path template in the app's own document) does not name."""
    doc = (await client.get("/schema/openapi.json")).json()
    path = answer.request.url.path
    # a literal segment wins over a parameter: /webhooks/deliveries, not /webhooks/{id}
    for template, item in sorted(doc["paths"].items(), key=lambda p: p[0].count("{")):
        pattern = re.sub(r"\{[^}]+\}", "[^/]+", template)
        if re.fullmatch(pattern, path) and answer.request.method.lower() in item:
            operation = item[answer.request.method.lower()]
            break
    else:
        raise AssertionError(f"no operation for {answer.request.method} {path}")
    response = operation["responses"][str(answer.status_code)]
    named = {name.lower() for name in response.get("headers", {})}
    return {name for name in DESCRIBED_HEADERS if name in answer.headers} - named
