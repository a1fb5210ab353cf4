"""CORS (BURA_CORS_ORIGINS): every answer says it varies by Origin, so that no cache hands
one origin's answer (or a request without one) to another; the allowed origin gets its
Access-Control-Allow-Origin, a refused one none. On each store, through the front door
and the framework alike."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from services.bootstrap import Adapters
from services.config import Settings
from services.http.app import create_app
from tests.api.conftest import OPERATOR, OPERATOR_KEY, Api, serving

ALLOWED = "https://cards.example"


@pytest.fixture
async def cors(adapters: Adapters) -> AsyncIterator[Api]:
    settings = Settings(operator_key=OPERATOR_KEY, rate_limits=False, cors_origins=ALLOWED)
    app = create_app(settings, adapters)
    async with serving(app) as client:
        yield Api(client, app, adapters)


async def test_every_answer_varies_by_origin_and_only_the_allowed_one_is_allowed(
    cors: Api,
) -> None:
    table = await cors.create()
    game = f"/games/{table.game_id}"
    for origin in (None, ALLOWED, "https://elsewhere.example"):
        extra = {"Origin": origin} if origin else {}
        answers = [
            await cors.client.get(game, headers={**table.seat(0), **extra}),
            await cors.client.get("/games/nope", headers={**OPERATOR, **extra}),
            await cors.client.get("/no/such/route", headers=extra),
            await cors.client.post(
                "/games", json={"seats": [{"name": "a"}, {"name": "b"}]},
                headers={**OPERATOR, **extra},
            ),  # the front door answers a creation without an Origin
            await cors.client.post(
                f"{game}/commands", json={"type": "pass"}, headers={**table.seat(1), **extra}
            ),
        ]  # fmt: skip
        for answer in answers:
            varies = [v.strip() for v in answer.headers.get_list("vary", split_commas=True)]
            assert varies.count("Origin") == 1, (origin, answer.request.url, answer.headers)
            allowed = answer.headers.get("access-control-allow-origin")
            assert allowed == (ALLOWED if origin == ALLOWED else None), (origin, answer.headers)


async def test_without_cors_no_answer_names_origin(api: Api) -> None:
    table = await api.create()
    answer = await api.client.get(f"/games/{table.game_id}", headers=table.seat(0))
    assert "vary" not in answer.headers


async def test_a_page_may_call_every_method_and_read_every_documented_header(cors: Api) -> None:
    """The preflight admits every method the API has (DELETE of a webhook endpoint too),
    and an answer exposes every header the OpenAPI document says answers carry: a page
    can read a 201's Location and a 401's WWW-Authenticate."""
    preflight = await cors.client.options(
        "/webhooks/abc",
        headers={"Origin": ALLOWED, "Access-Control-Request-Method": "DELETE"},
    )
    assert preflight.status_code in (200, 204), preflight.text
    methods = {m.strip() for m in preflight.headers["access-control-allow-methods"].split(",")}
    assert {"GET", "HEAD", "POST", "DELETE"} <= methods
    created = await cors.client.post(
        "/games",
        json={"seats": [{"name": "a"}, {"name": "b"}]},
        headers={**OPERATOR, "Origin": ALLOWED},
    )
    assert created.status_code == 201 and "location" in created.headers
    exposed = {
        h.strip().lower() for h in created.headers["access-control-expose-headers"].split(",")
    }
    document = (await cors.client.get("/schema/openapi.json")).json()
    assert {h.lower() for h in document["components"]["headers"]} <= exposed
    assert {"location", "www-authenticate", "x-request-id", "allow"} <= exposed
