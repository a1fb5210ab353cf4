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


@pytest.mark.parametrize(
    ("asked", "at_fault"),
    [
        ({"Origin": "https://elsewhere.example"}, "origin"),
        ({"Access-Control-Request-Headers": "X-Secret"}, "access-control-request-headers"),
        ({"Access-Control-Request-Method": "PUT"}, "access-control-request-method"),
    ],
)
async def test_a_refused_preflight_is_problem_details_naming_the_header(
    cors: Api, asked: dict[str, str], at_fault: str
) -> None:
    """Refused as every other error is: RFC 9457 problem details with the header at
    fault, and the request id the caller gave (the CORS middleware wrote a line of text)."""
    headers = {
        "Origin": ALLOWED,
        "Access-Control-Request-Method": "POST",
        "X-Request-ID": "preflight-1",
        **asked,
    }
    refused = await cors.client.options("/games", headers=headers)
    assert refused.status_code == 400
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.headers["x-request-id"] == "preflight-1"
    body = refused.json()
    assert body["code"] == "bad_request" and body["status"] == 400
    assert body["detail"].startswith("CORS preflight refused: ") and body["instance"] == "/games"
    assert [e["key"] for e in body["errors"]] == [at_fault]
    assert int(refused.headers["content-length"]) == len(refused.content)


async def test_an_admitted_preflight_carries_a_request_id(cors: Api) -> None:
    admitted = await cors.client.options(
        "/games",
        headers={"Origin": ALLOWED, "Access-Control-Request-Method": "POST"},
    )
    assert admitted.status_code in (200, 204), admitted.text
    assert len(admitted.headers["x-request-id"]) == 32
    assert admitted.headers.get_list("x-request-id") == [admitted.headers["x-request-id"]]
    plain = await cors.client.options("/games")  # no preflight: the route's own answer
    assert len(plain.headers.get_list("x-request-id")) == 1


@pytest.mark.parametrize("origin", [ALLOWED, "https://elsewhere.example"])
@pytest.mark.parametrize("asked", [None, ""])
async def test_an_options_with_an_origin_but_no_method_asked_is_no_preflight(
    cors: Api, origin: str, asked: str | None
) -> None:
    """No browser sends one; the CORS middleware took it for a preflight and answered a
    line of plain text (or a 204 without Allow or X-Request-ID). It is the route's."""
    headers = {"Origin": origin, "X-Request-ID": "options-1"}
    if asked is not None:
        headers["Access-Control-Request-Method"] = asked
    answer = await cors.client.options("/games", headers=headers)
    assert answer.status_code in (200, 204), answer.text
    assert answer.headers["x-request-id"] == "options-1"
    plain = await cors.client.options("/games")
    assert answer.headers["allow"] == plain.headers["allow"] and "POST" in plain.headers["allow"]
    assert "Origin" in [v.strip() for v in answer.headers.get_list("vary", split_commas=True)]


async def test_an_origin_written_with_its_scheme_s_port_is_the_one_a_browser_sends(
    adapters: Adapters,
) -> None:
    """Browsers leave a default port out of Origin: `https://cards.example:443` in the
    setting was never matched."""
    listed = "https://cards.example:443, http://localhost:80, http://localhost:05173/"
    settings = Settings(operator_key=OPERATOR_KEY, rate_limits=False, cors_origins=listed)
    async with serving(create_app(settings, adapters)) as client:
        for origin in ("https://cards.example", "http://localhost", "http://localhost:5173"):
            answer = await client.get("/games/nope", headers={**OPERATOR, "Origin": origin})
            assert answer.headers.get("access-control-allow-origin") == origin, answer.headers


async def test_a_page_may_read_the_file_name_a_bundle_suggests(cors: Api) -> None:
    answer = await cors.client.get("/games/nope/bundle", headers={**OPERATOR, "Origin": ALLOWED})
    exposed = {
        h.strip().lower() for h in answer.headers["access-control-expose-headers"].split(",")
    }
    assert "content-disposition" in exposed
