"""Rate limits in one process (the embedded default): per token and per client address,
commands, reads and game creation counted apart, 429 with Retry-After and the RateLimit
fields, and never a limit on the health endpoints or the metrics. The same limits shared
by two replicas through Redis: tests/e2e/test_limits.py."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.bootstrap import Adapters
from services.config import Settings
from services.http.app import create_app
from services.http.problems import PROBLEM_JSON
from tests.api.conftest import (
    OPERATOR,
    OPERATOR_KEY,
    THIRTY_ONE_DECK,
    Api,
    serving,
    undocumented_headers,
)

LIMITS = {
    "rate_window_seconds": 60.0,
    "rate_commands_per_token": 3,
    "rate_commands_per_address": 5,
    "rate_reads_per_token": 4,
    "rate_reads_per_address": 100,
    "rate_create_per_token": 2,
    "rate_create_per_address": 100,
}


@pytest.fixture
async def limited(adapters: Adapters) -> AsyncIterator[Api]:
    app = create_app(Settings(operator_key=OPERATOR_KEY, **LIMITS), adapters)  # type: ignore[arg-type]
    async with serving(app) as client:
        yield Api(client, app, adapters)


def policy(answer: Any) -> dict[str, tuple[int, int]]:
    """RateLimit-Policy as {name: (quota, window)}."""
    found = re.findall(r'"([a-z-]+)";q=(\d+);w=(\d+)', answer.headers["ratelimit-policy"])
    return {name: (int(q), int(w)) for name, q, w in found}


async def test_commands_past_a_tokens_quota_are_429_with_when_to_retry(limited: Api) -> None:
    table = await limited.create()
    answers = [await limited.send(table, 1, {"type": "lead", "cards": ["6H"]}) for _ in range(4)]
    assert [a.status_code for a in answers] == [409, 409, 409, 429]
    first, refused = answers[0], answers[3]
    assert policy(first) == {"commands-token": (3, 60), "commands-address": (5, 60)}
    assert re.fullmatch(r'"commands-token";r=2;t=\d+', first.headers["ratelimit"])
    assert refused.headers["content-type"] == "application/problem+json"
    body = refused.json()
    assert body["code"] == "rate_limited" and body["status"] == 429
    assert body["detail"].startswith('policy "commands-token": more than 3 commands in 60 s')
    wait = int(refused.headers["retry-after"])
    assert 0 < wait <= 60 and body["retry_after"] == wait
    assert re.fullmatch(r'"commands-token";r=0;t=\d+', refused.headers["ratelimit"])
    for answer in (first, refused):  # each header is in the OpenAPI document where sent
        assert not await undocumented_headers(limited.client, answer)
    # Another token is counted apart; reads are another class.
    assert (await limited.send(table, 0, {"type": "lead", "cards": ["AS"]})).status_code == 200
    assert (
        await limited.client.get(f"/games/{table.game_id}", headers=table.seat(1))
    ).status_code == 200


async def test_a_client_address_is_limited_across_its_tokens(limited: Api) -> None:
    table = await limited.create()
    answers = []
    for n in range(6):
        seat = n % 2
        answers.append(await limited.send(table, seat, {"type": "pass"}))
    # 5 commands from this address, whichever token: the sixth is refused.
    assert [a.status_code for a in answers] == [409] * 5 + [429]
    # The token of the sixth is at its quota too (3), but not past it: the refusal and its
    # RateLimit field both name the address's policy.
    refused = answers[5]
    assert refused.json()["detail"].startswith('policy "commands-address": ')
    assert "from this client address" in refused.json()["detail"]
    assert re.fullmatch(r'"commands-address";r=0;t=\d+', refused.headers["ratelimit"])


async def test_reads_and_creation_have_limits_of_their_own(limited: Api) -> None:
    body = {"seats": [{"name": "a"}, {"name": "b"}], "deck": THIRTY_ONE_DECK, "dealer": 1}
    created = [await limited.client.post("/games", json=body, headers=OPERATOR) for _ in range(3)]
    assert [c.status_code for c in created] == [201, 201, 429]
    assert "create-token" in policy(created[0])
    game = created[0].json()
    seat = {"Authorization": f"Bearer {game['seats'][0]['token']}"}
    reads = [await limited.client.get(f"/games/{game['game_id']}", headers=seat) for _ in range(5)]
    assert [r.status_code for r in reads] == [200] * 4 + [429]


async def test_a_rematch_counts_as_creating_a_game(limited: Api) -> None:
    """A rematch deals a new game: it is game creation's to limit, not reads'."""
    body = {"seats": [{"name": "a"}, {"name": "b"}], "deck": THIRTY_ONE_DECK, "dealer": 1}
    game = (await limited.client.post("/games", json=body, headers=OPERATOR)).json()
    seat = {"Authorization": f"Bearer {game['seats'][0]['token']}"}
    over = await limited.client.post(
        f"/games/{game['game_id']}/commands", json={"type": "concede"}, headers=seat
    )
    assert over.status_code == 200, over.text
    rematch = await limited.client.post(f"/games/{game['game_id']}/rematch", headers=OPERATOR)
    assert rematch.status_code == 201, rematch.text
    assert set(policy(rematch)) == {"create-token", "create-address"}
    assert policy(rematch)["create-token"][0] == 2  # the quota of game creation
    again = await limited.client.post("/games", json=body, headers=OPERATOR)
    assert again.status_code == 429 and "create-token" in again.headers["ratelimit"]


async def test_health_and_metrics_are_never_limited(limited: Api) -> None:
    for _ in range(20):
        assert (await limited.client.get("/health/live")).status_code == 200
        assert (await limited.client.get("/health/ready")).status_code == 200
        metrics = await limited.client.get("/metrics")
        assert metrics.status_code == 200 and "ratelimit" not in metrics.headers


async def test_a_document_the_schema_lacks_is_a_404_like_any_path_and_costs_no_read(
    limited: Api,
) -> None:
    """Under /schema the framework answered a path no document is at with an HTML page,
    and counted it as a read: it is problem details and unlimited, as /nope is."""
    for path in ("/schema/redoc", "/schema/rapidoc", "/schema/nothing", "/nope"):
        for _ in range(20):  # past the reads quota
            answer = await limited.client.get(path, headers={"Accept": "application/json"})
            assert answer.status_code == 404, (path, answer.text)
            assert answer.headers["content-type"] == PROBLEM_JSON
            assert answer.json()["code"] == "not_found" and answer.json()["instance"] == path
            assert "ratelimit" not in answer.headers and "x-request-id" in answer.headers
    assert (await limited.client.get("/schema/openapi.json")).status_code == 200


async def test_rate_limits_can_be_turned_off(api: Api) -> None:
    table = await api.create()
    for _ in range(30):
        answer = await api.send(table, 1, {"type": "pass"})
        assert answer.status_code == 409 and "ratelimit" not in answer.headers


async def test_refusals_are_counted_for_the_sre(limited: Api) -> None:
    table = await limited.create()
    for _ in range(4):
        await limited.send(table, 1, {"type": "pass"})
    metrics = (await limited.client.get("/metrics")).text
    assert 'bura_rate_limited_total{class="commands",key="token"} 1.0' in metrics


async def test_counters_out_of_reach_serve_and_say_so_once_not_a_line_a_request(
    limited: Api, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Requests are served uncounted (no RateLimit fields) while the counters cannot be
    reached; the metric counts each, and the log says so once for the lot: reads the
    routes count and commands the front door takes alike (each had a warning of its own,
    so an outage was said twice a period, each line counting part of it)."""
    table = await limited.create()

    async def unreachable(hits: object) -> Any:
        raise ConnectionError("the counters' Redis is gone")

    monkeypatch.setattr(limited.adapters.counters, "hit_all", unreachable)
    with caplog.at_level("WARNING"):
        for _ in range(6):  # past every quota of LIMITS, twice six requests
            answer = await limited.client.get(f"/games/{table.game_id}", headers=table.seat(0))
            assert answer.status_code == 200 and "ratelimit" not in answer.headers
            sent = await limited.client.post(  # the front door's: a plain JSON command
                f"/games/{table.game_id}/commands", json={"type": "pass"}, headers=table.seat(0)
            )
            assert sent.status_code == 409 and "ratelimit" not in sent.headers
    said = [r for r in caplog.records if "rate counters unavailable" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]
    metrics = (await limited.client.get("/metrics")).text
    assert "bura_rate_counter_errors_total 12.0" in metrics
