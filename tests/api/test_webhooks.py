"""Webhooks through the API on both stores, delivered to a receiver on 127.0.0.1: the
endpoints, signed deliveries, retries with the same id, order per game, the delivery log
and the metrics."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import jsonschema
import msgspec
import pytest

from harness.receiver import Received, Receiver
from infra.ports.events import START, NewEvent
from infra.ports.webhooks import Endpoint, NewDelivery
from services.app.notices import WEBHOOK_OF, drafts
from services.app.signing import verify
from services.bootstrap import Adapters
from services.config import ConfigError, Settings, load
from services.http.app import create_app
from services.live.dispatcher import backoff
from tests.api.conftest import (
    FIRST_TRICK,
    OPERATOR,
    OPERATOR_KEY,
    THIRTY_ONE_GAME,
    Api,
    Body,
    serving,
)
from tests.tampering import Tables

# Real receivers, timers, documents or whole games per case: left out of make test-fast.
pytestmark = pytest.mark.slow

SECRET = "whsec_test_secret_of_the_api_tests"
T = TypeVar("T")


@asynccontextmanager
async def app(adapters: Adapters, **settings: Any) -> AsyncIterator[Api]:
    """The app with quick retries and a short lease; every endpoint it registered is
    removed afterwards (the PostgreSQL database is shared by the session's tests)."""
    options: dict[str, Any] = {
        "operator_key": OPERATOR_KEY,
        "webhook_retry_seconds": 0.05,
        "webhook_lease_seconds": 2.0,
        "feed_poll_seconds": 0.2,
        **settings,
    }
    made = create_app(Settings(**options), adapters)
    async with serving(made) as client:
        api = Api(client, made, adapters)
        try:
            yield api
        finally:
            for endpoint in (await client.get("/webhooks", headers=OPERATOR)).json():
                if endpoint["source"] == "api":
                    await client.delete(f"/webhooks/{endpoint['id']}", headers=OPERATOR)


async def until(check: Callable[[], Awaitable[T]], timeout: float = 30.0) -> T:
    """The first truthy answer of check(), asked again and again; fails after the timeout."""
    async with asyncio.timeout(timeout):
        while not (answer := await check()):
            await asyncio.sleep(0.05)
    return answer


async def register(api: Api, receiver: Receiver, **fields: Any) -> Body:
    answer = await api.client.post(
        "/webhooks", json={"url": receiver.url, "secret": SECRET, **fields}, headers=OPERATOR
    )
    assert answer.status_code == 201, answer.text
    made: Body = answer.json()
    return made


async def play(api: Api, steps: list[tuple[int, Body]]) -> str:
    table = await api.create()
    for seat, command in steps:
        await api.play(table, seat, command)
    return table.game_id


def of_game(receiver: Receiver, game_id: str) -> list[Received]:
    return [r for r in receiver.requests() if r.json["game_id"] == game_id]


def signed_as_documented(request: Received, secret: str) -> bool:
    """The receiver's check as the README gives it, written out with hmac alone."""
    fields = dict(part.split("=", 1) for part in request.headers["bura-signature"].split(","))
    signed = fields["t"].encode() + b"." + request.body
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, fields["v1"]) and abs(time.time() - int(fields["t"])) < 300


# --- endpoints ------------------------------------------------------------------------------


async def test_an_endpoint_is_registered_listed_shown_and_removed(adapters: Adapters) -> None:
    async with app(adapters) as api:
        made = (
            await api.client.post(
                "/webhooks",
                json={"url": "https://platform.test/bura", "events": ["game_finished"]},
                headers=OPERATOR,
            )
        ).json()
        assert made["id"].startswith("whk_") and made["secret"].startswith("whsec_")
        listed_at = (await api.client.post(
            "/webhooks", json={"url": "https://platform.test/other"}, headers=OPERATOR
        )).headers["location"]  # fmt: skip
        assert listed_at.startswith("/webhooks/whk_")
        assert (await api.client.get(listed_at, headers=OPERATOR)).status_code == 200
        await api.client.delete(listed_at, headers=OPERATOR)
        assert (made["events"], made["source"]) == (["game_finished"], "api")

        listed = await api.get("/webhooks")
        assert {**made, "secret": None} in listed
        shown = await api.get(f"/webhooks/{made['id']}")
        assert shown == {**made, "secret": None}

        assert (
            await api.client.delete(f"/webhooks/{made['id']}", headers=OPERATOR)
        ).status_code == 204
        gone = await api.client.get(f"/webhooks/{made['id']}", headers=OPERATOR)
        assert (gone.status_code, gone.json()["code"]) == (404, "webhook_not_found")
        again = await api.client.delete(f"/webhooks/{made['id']}", headers=OPERATOR)
        assert again.status_code == 404


async def test_an_id_with_a_nul_names_nothing_and_a_filter_with_one_is_refused(
    adapters: Adapters,
) -> None:
    """PostgreSQL's text cannot hold a NUL: looking one up was a 500 internal_error. An id
    with one names no endpoint or delivery (404), as a game id does; a filter with one is
    a 400 naming it, as its documented pattern says."""
    async with app(adapters) as api:
        for method, path, code in (
            ("GET", "/webhooks/%00", "webhook_not_found"),
            ("GET", "/webhooks/whk_a%00b", "webhook_not_found"),
            ("DELETE", "/webhooks/%00", "webhook_not_found"),
            ("GET", "/webhooks/deliveries/%00", "delivery_not_found"),
            ("POST", "/webhooks/deliveries/dlv_%00/retry", "delivery_not_found"),
        ):
            answer = await api.client.request(method, path, headers=OPERATOR)
            assert (answer.status_code, answer.json()["code"]) == (404, code), (path, answer.text)
        for name in ("endpoint", "game_id"):
            answer = await api.client.get(
                "/webhooks/deliveries", params={name: "a\x00b"}, headers=OPERATOR
            )
            assert answer.status_code == 400, answer.text
            assert name in {e["key"] for e in answer.json()["errors"]}, answer.text
        schema = (await api.client.get("/schema/openapi.json")).json()
        listed = schema["paths"]["/webhooks/deliveries"]["get"]["parameters"]
        patterns = {p["name"]: p["schema"].get("pattern") for p in listed}
        assert patterns["endpoint"] == patterns["game_id"] == "^[^\x00]*$", patterns


@pytest.mark.parametrize(
    "body",
    [
        {"url": "ftp://platform.test/x"},
        {"url": "platform.test/x"},
        {"url": "https://platform.test/x", "events": ["deal_won"]},
        {"url": "https://platform.test/x", "events": []},
        {"url": "https://platform.test/x", "secret": "short"},
        {"url": "https://platform.test/x", "colour": "red"},
        {"url": "https://platform.test/x", "secret": "  a-secret-of-16-or-more  "},
        {"url": "https://platform.test/x", "secret": "a secret of 16 or more"},
        {"url": "https://platform.test/x", "secret": "a-secret-of-16-or-more\n"},
        {"url": "https://platform.test/x", "events": ["game_finished", "game_finished"]},
        # no host, or no valid one, or no valid port
        {"url": "http://:"},
        {"url": "http://..."},
        {"url": "http://:8080/x"},
        {"url": "http://[]/"},
        {"url": "http://[zz]/"},
        {"url": "http://host.example:abc/"},
        {"url": "http://host.example:99999/"},
        {"url": "http://host.example:0/"},
        {"url": "http://a..b/"},
        # numbers that are no IPv4 address, and labels that name nothing
        {"url": "http://999.999.999.999/"},
        {"url": "http://127.1/"},
        {"url": "http://0x7f.0.0.1/"},
        {"url": "http://1.2.3.4.5/"},
        {"url": "http://010.0.0.1/"},
        {"url": "http://_/"},
        {"url": "http://-ledger.example/"},
        {"url": "http://ledger-.example/"},
        {"url": "http://ledger.__/"},
        {"url": "http://_dmarc.platform.test/"},
        {"url": "http://ledger.example.1/"},
        # PostgreSQL's text cannot hold a NUL (it was a 500 there, and taken on SQLite)
        {"url": "https://platform.test/x", "description": "ledger\x00"},
    ],
)
async def test_a_bad_registration_is_a_400_naming_the_field(adapters: Adapters, body: Body) -> None:
    async with app(adapters) as api:
        answer = await api.client.post("/webhooks", json=body, headers=OPERATOR)
        assert answer.status_code == 400, answer.text
        problem = answer.json()
        assert problem["code"] == "bad_request"
        named = {e["key"].split(".")[0].split("[")[0] for e in problem["errors"]}
        assert named & {*body, "data"}, problem


async def test_a_url_may_write_its_scheme_in_capitals_and_its_host_as_an_address(
    adapters: Adapters,
) -> None:
    async with app(adapters) as api:
        for url in (
            "HTTPS://platform.test/x",
            "Http://[::1]:8080/x",
            "http://127.0.0.1:9/",
            "http://192.0.2.7/x",
            "http://ledger_svc:8080/hook",  # a Compose service's name
            "http://bura_ledger.platform.test./",
            "http://10x.platform.test/",
            "http://localhost:8080/",
        ):
            answer = await api.client.post("/webhooks", json={"url": url}, headers=OPERATOR)
            assert answer.status_code == 201, (url, answer.text)
            assert answer.json()["url"] == url


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"BURA_WEBHOOK_URL": "http://:8080/x"}, ["BURA_WEBHOOK_URL"]),
        ({"BURA_WEBHOOK_URL": "http://..."}, ["BURA_WEBHOOK_URL"]),
        ({"BURA_WEBHOOK_URL": "http://[zz]/"}, ["BURA_WEBHOOK_URL"]),
        ({"BURA_WEBHOOK_URL": "http://999.999.999.999/"}, ["BURA_WEBHOOK_URL"]),
        ({"BURA_WEBHOOK_URL": "http://_/"}, ["BURA_WEBHOOK_URL"]),
        ({"BURA_WEBHOOK_URL": "http://host.example:99999/"}, ["BURA_WEBHOOK_URL"]),
        ({"BURA_WEBHOOK_URL": "http://host.example:abc/"}, ["BURA_WEBHOOK_URL"]),
        ({"BURA_WEBHOOK_EVENTS": ","}, ["BURA_WEBHOOK_EVENTS"]),
        ({"BURA_WEBHOOK_EVENTS": " , ,"}, ["BURA_WEBHOOK_EVENTS"]),
        ({"BURA_WEBHOOK_SECRET": SECRET}, ["BURA_WEBHOOK_SECRET", "BURA_WEBHOOK_URL"]),
    ],
)
def test_a_bad_webhook_setting_stops_start_up_naming_it(
    env: dict[str, str], named: list[str]
) -> None:
    """As every setting (tests/services/test_config.py): ConfigError, which the command
    line turns into exit status 2."""
    with pytest.raises(ConfigError) as refused:
        load({"BURA_WEBHOOK_SECRET": SECRET, **env} if "BURA_WEBHOOK_URL" in env else env)
    assert all(name in str(refused.value) for name in named), refused.value


def test_the_settings_endpoint_may_write_its_scheme_in_capitals() -> None:
    settings = load(
        {"BURA_WEBHOOK_URL": "HTTPS://platform.test/bura", "BURA_WEBHOOK_SECRET": SECRET}
    )
    assert settings.webhook_url == "HTTPS://platform.test/bura"


async def test_only_the_operator_manages_webhooks(adapters: Adapters) -> None:
    async with app(adapters) as api:
        table = await api.create()
        calls = [
            ("post", "/webhooks"),
            ("get", "/webhooks"),
            ("get", "/webhooks/deliveries"),
            ("get", "/webhooks/whk_x"),
            ("delete", "/webhooks/whk_x"),
            ("post", "/webhooks/deliveries/dlv_x/retry"),
        ]
        for method, path in calls:
            for headers, status in (({}, 401), (table.seat(0), 403), (table.watcher, 403)):
                answer = await api.client.request(
                    method, path, headers=headers, json={"url": "https://x.test/"}
                )
                assert answer.status_code == status, (method, path, answer.text)


async def test_the_settings_endpoint_is_listed_and_removed_only_by_the_settings(
    adapters: Adapters,
) -> None:
    async with app(
        adapters,
        webhook_url="https://platform.test/from-settings",
        webhook_secret=SECRET,
        webhook_events="game_finished, deal_ended",
    ) as api:

        async def configured_listed() -> bool:  # the dispatcher writes it as it starts
            return any(e["id"] == "config" for e in await api.get("/webhooks"))

        await until(configured_listed)
        configured = await api.get("/webhooks/config")
        assert configured["url"] == "https://platform.test/from-settings"
        assert configured["events"] == ["game_finished", "deal_ended"]
        assert (configured["source"], configured["secret"]) == ("config", None)
        refused = await api.client.delete("/webhooks/config", headers=OPERATOR)
        assert (refused.status_code, refused.json()["code"]) == (409, "webhook_configured")
    async with app(adapters) as again:  # started again without it: gone

        async def configured_gone() -> bool:
            return all(e["id"] != "config" for e in await again.get("/webhooks"))

        await until(configured_gone)


# --- deliveries -----------------------------------------------------------------------------


async def test_a_finished_game_is_delivered_signed_with_a_stable_id_in_header_and_body(
    adapters: Adapters,
) -> None:
    with Receiver() as receiver:
        async with app(adapters) as api:
            hook = await register(api, receiver)
            game_id = await play(api, THIRTY_ONE_GAME)
            await receiver.wait_for(lambda r: len(of_game(r, game_id)) == 2)
            doc = (await api.client.get("/schema/openapi.json")).json()

        deal, end = of_game(receiver, game_id)
        for request in (deal, end):
            assert verify(SECRET, request.headers["bura-signature"], request.body)
            assert signed_as_documented(request, SECRET)
            assert not verify(
                "another-secret-entirely", request.headers["bura-signature"], request.body
            )
            assert request.headers["bura-delivery"] == request.json["id"]
            assert request.headers["bura-event"] == request.json["type"]
            assert request.headers["content-type"] == "application/json"
            assert request.path == "/hooks"
        assert deal.json["type"] == "deal_ended" and end.json["type"] == "game_finished"
        assert deal.json["version"] < end.json["version"]
        assert deal.json["data"] == {
            "deal": 1,
            "winners": [0],
            "losers": [1],
            "reason": "thirty_one",
            "stake": 2,
            "multiplier": 2,
            "payments": [2, -2],
            "by": 0,
        }
        assert (deal.json["seats"], deal.json["score"]) == (["p0", "p1"], [2, -2])
        assert deal.json["event"] == {"type": "deal_won", "seat": 0, "reason": "thirty_one"}
        assert end.json["status"] == "finished"
        assert end.json["data"]["winners"] == [0] and end.json["data"]["reason"] == "thirty_one"
        assert len(end.json["data"]["deals"]) == 1 and end.json["data"]["deals"][0]["by"] == 0
        assert {"game_id", "checkpoint", "recorded_at"} <= set(end.json)
        assert hook["id"] not in (deal.json["id"], end.json["id"])
        # as the OpenAPI document's `webhooks` describe them, body and headers
        for request in (deal, end):
            sent = doc["webhooks"][request.json["type"]]["post"]
            body = sent["requestBody"]["content"]["application/json"]["schema"]
            validator = jsonschema.Draft202012Validator({**body, "components": doc["components"]})
            validator.validate(request.json)
            for header in sent["parameters"]:
                given = request.headers[header["name"].lower()]
                assert re.fullmatch(header["schema"].get("pattern", ".+"), given), header
        # `event` is typed for each type: a deal's end does not take a game's end's event
        assert not jsonschema.Draft202012Validator(
            {
                **doc["webhooks"]["deal_ended"]["post"]["requestBody"]["content"][
                    "application/json"
                ]["schema"],
                "components": doc["components"],
            }
        ).is_valid({**deal.json, "event": end.json["event"]})
        wrong = {**end.json, "data": deal.json["data"]}  # a game's end with a deal's data
        assert not jsonschema.Draft202012Validator(
            {
                **doc["webhooks"]["game_finished"]["post"]["requestBody"]["content"][
                    "application/json"
                ]["schema"],
                "components": doc["components"],
            }
        ).is_valid(wrong)


async def test_a_receiver_that_fails_three_times_gets_the_delivery_once_more_with_the_same_id(
    adapters: Adapters,
) -> None:
    with Receiver(lambda request, count: 500 if count <= 3 else 200) as receiver:
        async with app(adapters) as api:
            await register(api, receiver, events=["game_finished"])
            game_id = await play(api, THIRTY_ONE_GAME)
            await receiver.wait_for(lambda r: len(r.delivered()) == 1)
            (delivered,) = receiver.delivered()

            async def logged() -> Body | None:
                # the receiver has answered; the dispatcher records it a moment later
                found = await api.get(f"/webhooks/deliveries/{delivered}")
                return found if found["state"] == "delivered" else None

            log = await until(logged)
            metrics = (await api.client.get("/metrics")).text

        tries = of_game(receiver, game_id)
        assert len(tries) == 4
        assert {t.delivery_id for t in tries} == {delivered}
        assert len({t.body for t in tries}) == 1  # the same bytes every time
        assert len({t.headers["bura-signature"] for t in tries}) >= 1
        assert all(verify(SECRET, t.headers["bura-signature"], t.body) for t in tries)
        assert (log["state"], log["attempts"], log["last_status"]) == ("delivered", 4, 200)
        assert [t["status"] for t in log["tries"]] == [500, 500, 500, 200]
        assert [t["error"] for t in log["tries"]] == ["HTTP 500"] * 3 + [None]
        assert log["body"] == tries[0].json
        assert 'outcome="retry"} 3.0' in metrics and 'outcome="delivered"} 1.0' in metrics


async def test_a_penalty_and_its_deal_reach_the_receiver_in_the_game_s_order_with_no_card(
    adapters: Adapters,
) -> None:
    # seat 0 took the first trick and is due to draw; seat 1 draws first
    faulty = [*FIRST_TRICK, (1, {"type": "draw"})]
    with Receiver() as receiver:
        async with app(adapters) as api:
            await register(api, receiver)
            game_id = await play(api, faulty)
            await receiver.wait_for(lambda r: len(of_game(r, game_id)) == 3)

        penalty, deal, end = of_game(receiver, game_id)
        assert [r.json["type"] for r in (penalty, deal, end)] == [
            "penalty_applied",
            "deal_ended",
            "game_finished",
        ]
        assert penalty.json["version"] < deal.json["version"] < end.json["version"]
        assert penalty.json["data"] == {
            "deal": 1,
            "seat": 1,
            "rule": "out_of_turn_draw",
            "due": 0,
            "count": 1,
            "asked": 1,
        }
        assert penalty.json["event"]["cards"] is None  # the cards taken stay hidden
        assert (
            deal.json["data"]["losers"] == [1] and deal.json["data"]["reason"] == "out_of_turn_draw"
        )


async def test_deliveries_of_one_game_wait_for_the_earlier_one(adapters: Adapters) -> None:
    # (game, type) of each delivery taken: the store is shared with other tests, whose
    # clocked games this app's timers may judge, so only this game's are compared
    order: list[tuple[str, str]] = []

    def answer(request: Received, count: int) -> int:
        if request.json["type"] == "deal_ended" and count <= 2:
            return 503
        order.append((request.json["game_id"], request.json["type"]))
        return 200

    with Receiver(answer) as receiver:
        async with app(adapters) as api:
            await register(api, receiver)
            game = await play(api, THIRTY_ONE_GAME)
            await receiver.wait_for(lambda r: [g for g, _ in order].count(game) == 2)
        assert [kind for g, kind in order if g == game] == ["deal_ended", "game_finished"]
        kinds = [r.json["type"] for r in of_game(receiver, game)]
        assert kinds == ["deal_ended", "deal_ended", "deal_ended", "game_finished"]


async def test_a_delivery_given_up_is_logged_failed_and_may_be_sent_again(
    adapters: Adapters, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("WARNING", logger="bura.webhooks")
    failing = True
    with Receiver(lambda request, count: 500 if failing else 200) as receiver:
        async with app(adapters, webhook_max_attempts=2) as api:
            # a credential in the query, as chat hooks carry one: never in a log line
            hook = await register(
                api, receiver, events=["game_finished"], url=f"{receiver.url}?key=s3cr3t-Q"
            )
            await play(api, THIRTY_ONE_GAME)
            await receiver.wait_for(lambda r: len(r.requests()) == 2)

            async def failed_listed() -> list[Body]:
                page = await api.get("/webhooks/deliveries", endpoint=hook["id"], state="failed")
                listed: list[Body] = page["deliveries"]
                return listed

            (failed,) = await until(failed_listed)
            assert (failed["attempts"], failed["last_error"]) == (2, "HTTP 500")
            said = [r.getMessage() for r in caplog.records if "HTTP 500" in r.getMessage()]
            assert said and all(hook["id"] in line for line in said), said
            assert not any("s3cr3t-Q" in r.getMessage() for r in caplog.records)
            assert failed["next_attempt_at"] is None

            failing = False
            again = await api.client.post(
                f"/webhooks/deliveries/{failed['id']}/retry", headers=OPERATOR
            )
            assert again.status_code == 200 and again.json()["state"] == "pending"
            await receiver.wait_for(lambda r: len(r.delivered()) == 1)
            assert list(receiver.delivered()) == [failed["id"]]

            twice = await api.client.post(
                f"/webhooks/deliveries/{failed['id']}/retry", headers=OPERATOR
            )
            assert twice.status_code == 409 and twice.json()["code"] == "delivery_not_failed"
            unknown = await api.client.post("/webhooks/deliveries/dlv_none/retry", headers=OPERATOR)
            assert unknown.status_code == 404 and unknown.json()["code"] == "delivery_not_found"
            metrics = (await api.client.get("/metrics")).text
            assert f'endpoint="{hook["id"]}",outcome="failed"}} 1.0' in metrics


async def test_a_failed_delivery_of_a_removed_endpoint_is_not_sent_again(
    adapters: Adapters,
) -> None:
    """Its retry is refused (404 webhook_not_found, naming the endpoint): the dispatcher,
    which may still have the endpoint in mind, must not POST it to the removed URL signed
    with the removed secret, nor may it wait for ever."""
    with Receiver(lambda request, count: 500) as receiver:
        async with app(adapters, webhook_max_attempts=1) as api:
            hook = await register(api, receiver, events=["game_finished"])
            await play(api, THIRTY_ONE_GAME)

            async def failed_listed() -> list[Body]:
                page = await api.get("/webhooks/deliveries", endpoint=hook["id"], state="failed")
                listed: list[Body] = page["deliveries"]
                return listed

            (failed,) = await until(failed_listed)
            removed = await api.client.delete(f"/webhooks/{hook['id']}", headers=OPERATOR)
            assert removed.status_code == 204

            again = await api.client.post(
                f"/webhooks/deliveries/{failed['id']}/retry", headers=OPERATOR
            )
            assert (again.status_code, again.json()["code"]) == (404, "webhook_not_found")
            assert hook["id"] in again.json()["detail"]
            await asyncio.sleep(1.0)  # time for an attempt, were one started
            kept = await api.get(f"/webhooks/deliveries/{failed['id']}")
            assert (kept["state"], kept["attempts"]) == ("failed", 1)
        assert len(receiver.requests()) == 1


async def test_deliveries_queued_for_a_removed_endpoint_starve_no_other(
    adapters: Adapters,
) -> None:
    """More deliveries than the dispatcher reads at a time (CONCURRENCY * 4, 32), queued
    for an endpoint that was removed as they were queued (the dispatcher had read the
    endpoints just before): they are cancelled, none is sent to the removed URL, and the
    endpoints that are there get theirs."""
    with Receiver() as removed_one, Receiver() as receiver:
        async with app(adapters) as api:
            gone = await register(api, removed_one)
            await play(api, THIRTY_ONE_GAME)  # the dispatcher now has `gone` in mind
            await removed_one.wait_for(lambda r: len(r.delivered()) == 2)
            removed = await api.client.delete(f"/webhooks/{gone['id']}", headers=OPERATOR)
            assert removed.status_code == 204
            lease = f"test-{gone['id']}"
            assert await adapters.leases.hold(lease, "test", 30)
            orphans = [
                NewDelivery(
                    id=f"dlv-{gone['id']}-{n}",
                    endpoint_id=gone["id"],
                    url=removed_one.url,
                    type="game_finished",
                    game_id=f"game-{gone['id']}-{n}",
                    version=1,
                    tx_id=0,  # before every other in the global order
                    position=n,
                    recorded_at=datetime.now(UTC),
                    body=b"{}",
                )
                for n in range(1, 41)
            ]
            assert await adapters.webhooks.enqueue(lease, "test", START, orphans)

            await register(api, receiver, events=["game_finished"])
            game_id = await play(api, THIRTY_ONE_GAME)
            await receiver.wait_for(lambda r: len(of_game(r, game_id)) == 1, timeout=20)

            async def all_cancelled() -> bool:
                page = await api.get("/webhooks/deliveries", endpoint=gone["id"], limit=100)
                states = {d["state"] for d in page["deliveries"] if d["id"].startswith("dlv-")}
                return states == {"cancelled"}

            await until(all_cancelled)
        assert len(removed_one.requests()) == 2  # the two it had before it was removed


@asynccontextmanager
async def dribbling(every: float, lines: int) -> AsyncIterator[str]:
    """A receiver that answers 200 one header line at a time, a line every `every` s, the
    head whole after `lines` of them; its URL."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\n")
            for _ in range(lines):
                await writer.drain()
                await asyncio.sleep(every)
                writer.write(b"X-Slowly: 1\r\n")
            writer.write(b"Content-Length: 0\r\n\r\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/hooks"
    finally:
        server.close()


async def test_a_receiver_that_dribbles_its_answer_runs_out_of_time_as_a_whole(
    adapters: Adapters,
) -> None:
    """BURA_WEBHOOK_TIMEOUT_SECONDS bounds the whole attempt, not each read: a line every
    0.3 s never trips a 1.5 s read timeout, and the head would be whole only after 6 s."""
    async with (
        dribbling(0.3, 20) as url,
        app(adapters, webhook_timeout_seconds=1.5, webhook_max_attempts=1) as api,
    ):
        made = await api.client.post(
            "/webhooks", json={"url": url, "events": ["game_finished"]}, headers=OPERATOR
        )
        hook = made.json()
        await play(api, THIRTY_ONE_GAME)

        async def settled() -> list[Body]:
            page = await api.get("/webhooks/deliveries", endpoint=hook["id"])
            listed: list[Body] = page["deliveries"]
            return [d for d in listed if d["state"] != "pending"]

        (settled_one,) = await until(settled)
        shown = await api.get(f"/webhooks/deliveries/{settled_one['id']}")
    assert shown["state"] == "failed", shown
    (attempt,) = shown["tries"]
    assert attempt["status"] is None and attempt["error"] == "no answer within 1.5s"
    assert 1.4 <= attempt["seconds"] < 3.0


async def test_an_attempt_that_fails_in_any_way_is_counted_and_given_up(
    adapters: Adapters,
) -> None:
    """Not only the HTTP client's own errors: an endpoint stored with a URL the client
    cannot use (registered before URLs were checked as they are now) fails each attempt
    and then the delivery, rather than stay pending for ever with no attempt."""
    async with app(adapters, webhook_max_attempts=2) as api:
        saved = await adapters.webhooks.save_endpoint(
            Endpoint(
                id=f"whk_{time.monotonic_ns():x}",
                url="http://[zz]/",
                secret=SECRET,
                events=("game_finished",),
                source="api",
            )
        )
        await play(api, THIRTY_ONE_GAME)

        async def failed_listed() -> list[Body]:
            page = await api.get("/webhooks/deliveries", endpoint=saved.id, state="failed")
            listed: list[Body] = page["deliveries"]
            return listed

        (failed,) = await until(failed_listed)
        shown = await api.get(f"/webhooks/deliveries/{failed['id']}")
    assert shown["attempts"] == 2 and len(shown["tries"]) == 2
    assert all(t["error"].startswith("InvalidURL") for t in shown["tries"]), shown["tries"]


@pytest.mark.parametrize("attempts", [8, 9, 10, 11, 64, 10**6])
def test_a_retry_never_waits_longer_than_the_cap(attempts: int) -> None:
    """BURA_WEBHOOK_RETRY_MAX_SECONDS is the longest delay between two attempts: the
    jitter comes before the cap, not on top of it."""
    settings = Settings(webhook_retry_seconds=1.0, webhook_retry_max_seconds=300.0)
    delays = [backoff(settings, attempts) for _ in range(500)]
    assert max(delays) <= 300.0
    assert min(delays) >= min(2.0 ** min(attempts - 1, 64), 300.0)  # doubling, up to it


async def test_an_endpoint_hears_only_its_types_and_only_what_is_recorded_after_it(
    adapters: Adapters,
) -> None:
    with Receiver() as receiver:
        async with app(adapters) as api:
            before = await play(api, THIRTY_ONE_GAME)
            await register(api, receiver, events=["game_finished"])
            after = await play(api, THIRTY_ONE_GAME)
            await receiver.wait_for(lambda r: len(of_game(r, after)) == 1)
            assert of_game(receiver, before) == []
            assert of_game(receiver, after)[0].json["type"] == "game_finished"


async def test_the_log_lists_deliveries_by_endpoint_state_and_game(adapters: Adapters) -> None:
    with Receiver() as receiver:
        async with app(adapters) as api:
            hook = await register(api, receiver)
            game_id = await play(api, THIRTY_ONE_GAME)
            await receiver.wait_for(lambda r: len(r.delivered()) == 2)

            async def both_delivered() -> list[Body]:
                page = await api.get("/webhooks/deliveries", game_id=game_id, state="delivered")
                listed: list[Body] = page["deliveries"]
                return listed if len(listed) == 2 else []

            end, deal = await until(both_delivered)
            assert (end["type"], deal["type"]) == ("game_finished", "deal_ended")
            assert end["endpoint_id"] == hook["id"] and end["url"] == receiver.url
            first = await api.get("/webhooks/deliveries", endpoint=hook["id"], limit=1)
            assert [d["id"] for d in first["deliveries"]] == [end["id"]]
            rest = await api.get("/webhooks/deliveries", endpoint=hook["id"], before=first["next"])
            assert [d["id"] for d in rest["deliveries"]] == [deal["id"]]
            assert rest["next"] is None
            # exactly a page's worth: the last page, so no `next` (and no empty page after)
            whole = await api.get("/webhooks/deliveries", endpoint=hook["id"], limit=2)
            assert [d["id"] for d in whole["deliveries"]] == [end["id"], deal["id"]]
            assert whole["next"] is None
            last = await api.get(
                "/webhooks/deliveries", endpoint=hook["id"], before=first["next"], limit=1
            )
            assert [d["id"] for d in last["deliveries"]] == [deal["id"]] and last["next"] is None
            none = await api.client.get("/webhooks/deliveries/dlv_none", headers=OPERATOR)
            assert none.status_code == 404
            bad = await api.client.get(
                "/webhooks/deliveries", params={"state": "lost"}, headers=OPERATOR
            )
            assert bad.status_code == 400


async def test_an_event_written_by_a_newer_server_is_delivered_with_its_type_alone(
    adapters: Adapters,
) -> None:
    with Receiver() as receiver:
        async with app(adapters) as api:
            await register(api, receiver, events=["timeout"])
            table = await api.create()
            version = await api.version(table)
            future = {"type": "timed_out", "from_a_newer_server": True, "seat": 0}
            await adapters.store.append(
                table.game_id, version, [NewEvent("timed_out", msgspec.json.encode(future))]
            )
            await api.service._publish(table.game_id, version + 1)
            await receiver.wait_for(lambda r: len(of_game(r, table.game_id)) == 1)
        (notice,) = of_game(receiver, table.game_id)
        assert notice.json["type"] == "timeout" and notice.json["version"] == version + 1
        assert notice.json["event"] == {"type": "timed_out"}
        assert notice.json["data"] is None


@pytest.mark.slow
async def test_a_seat_timed_out_is_sent_as_a_timeout_webhook_with_its_clock(
    adapters: Adapters,
) -> None:
    with Receiver() as receiver:
        async with app(adapters) as api:
            await register(api, receiver, events=["timeout"])
            table = await api.create(rules={"turn_seconds": 1})
            await receiver.wait_for(lambda r: len(of_game(r, table.game_id)) == 1)
        (notice,) = of_game(receiver, table.game_id)
        assert signed_as_documented(notice, SECRET)
        data = notice.json["data"]
        assert notice.json["type"] == "timeout" and notice.json["event"]["type"] == "timed_out"
        assert (data["deal"], data["seat"], data["clock"], data["verdict"]) == (
            1,
            0,
            "turn",
            "lose_deal",
        )
        assert data["at"] >= data["deadline"] == notice.json["event"]["deadline"]


class _Reads:
    """The dispatcher's store, counting the events it reads from the global order."""

    def __init__(self, store: Any) -> None:
        self.store, self.pages, self.events = store, 0, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def read_all(self, after: Any, limit: int = 1000) -> Any:
        rows = await self.store.read_all(after, limit)
        self.pages, self.events = self.pages + 1, self.events + len(rows)
        return rows


async def test_with_no_endpoint_the_dispatcher_keeps_up_without_reading_the_events(
    adapters: Adapters,
) -> None:
    """No endpoint, nothing to deliver: the dispatcher's checkpoint follows the store's
    head without reading an event (hints do not wake it either). An endpoint registered
    then hears of what is recorded after it, and once the last is removed the dispatcher
    stops reading again."""
    with Receiver() as receiver:
        async with app(adapters) as api:
            dispatcher = api.runtime.dispatcher
            reads = _Reads(dispatcher.store)
            dispatcher.store = reads
            await until(lambda: asyncio.sleep(0, dispatcher.held))
            before = await play(api, THIRTY_ONE_GAME)
            head = await adapters.store.head()

            async def caught_up() -> bool:
                return await adapters.webhooks.checkpoint("webhooks") >= head

            await until(caught_up)
            assert dispatcher.idle and (reads.pages, reads.events) == (0, 0)

            hook = await register(api, receiver, events=["game_finished"])
            after = await play(api, THIRTY_ONE_GAME)
            await receiver.wait_for(lambda r: len(of_game(r, after)) == 1)
            assert of_game(receiver, before) == []
            assert not dispatcher.idle and reads.events > 0

            removed = await api.client.delete(f"/webhooks/{hook['id']}", headers=OPERATOR)
            assert removed.status_code == 204
            await play(api, THIRTY_ONE_GAME)
            await until(lambda: asyncio.sleep(0, dispatcher.idle))
            read = reads.events
            await play(api, THIRTY_ONE_GAME)
            head = await adapters.store.head()
            await until(caught_up)
            assert reads.events == read


# A record damaged behind the server's back: a row deleted leaves a hole in the versions;
# a row edited so that it still reads no longer folds (a response whose cards are gone).
DAMAGES: dict[str, Callable[[Tables, str], Awaitable[None]]] = {
    "a row deleted": lambda tables, game: tables.delete(game, 3),
    "a row that no longer folds": lambda tables, game: tables.rewrite(
        game, "cards_responded", cards=None
    ),
}


@pytest.mark.parametrize("damage", DAMAGES)
async def test_a_game_whose_record_was_damaged_gets_bare_notices_and_stalls_nothing(
    adapters: Adapters, damage: str
) -> None:
    """Its webhooks say only their type (as for an event this server cannot read), and
    the dispatcher goes on to the games after it instead of failing on the same page
    again and again."""
    with Receiver() as receiver:
        async with app(adapters) as api:
            damaged = await play(api, THIRTY_ONE_GAME)
            await DAMAGES[damage](Tables(adapters.store), damaged)
            rows = [r for r in await adapters.store.read(damaged) if r.type in WEBHOOK_OF]
            made = await drafts(adapters.store, rows)
            assert [(d.row.version, d.type) for d in made] == [
                (r.version, WEBHOOK_OF[r.type]) for r in rows
            ]
            assert all(d.notice.data is None and d.notice.seats == () for d in made)
            await register(api, receiver)
            good = await play(api, THIRTY_ONE_GAME)
            await receiver.wait_for(lambda r: len(of_game(r, good)) == 2)
        assert of_game(receiver, damaged) == []  # recorded before the endpoint was
