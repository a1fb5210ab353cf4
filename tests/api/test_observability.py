"""What the SRE on call reads: /metrics after a played game, request ids, JSON logs."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from harness.databases import free_port
from infra.memory.hints import InProcessHintBus
from infra.ports.events import NewEvent
from infra.postgres.store import PostgresEventStore
from infra.postgres.tokens import PostgresSeatTokens
from services.bootstrap import adapters_on
from services.logs import JsonFormatter, LogContext
from services.metrics import CONTENT_TYPE_LATEST
from tests import servers
from tests.api.conftest import (
    FIRST_TRICK,
    OPERATOR,
    THIRTY_ONE_GAME,
    Api,
    app_on,
    serving,
)


async def test_metrics_expose_the_series_an_sre_needs_after_a_played_game(api: Api) -> None:
    table = await api.create()
    for seat, command in THIRTY_ONE_GAME:
        await api.play(table, seat, command)
    penalised = await api.create()
    for seat, command in FIRST_TRICK:
        await api.play(penalised, seat, command)
    await api.play(penalised, 1, {"type": "draw"})  # seat 0 was due: out_of_turn_draw
    refused = await api.send(table, 0, {"type": "lead", "cards": ["8S"]})
    assert refused.status_code == 409

    answer = await api.client.get("/metrics")
    assert answer.status_code == 200
    # prometheus_client's own media type, each parameter once: a scraper that parses it
    # strictly (Prometheus 3's, Go's mime) refuses a header that names its charset twice
    media = answer.headers["content-type"]
    assert media == CONTENT_TYPE_LATEST
    names = [part.split("=")[0].strip().lower() for part in media.split(";")[1:]]
    assert len(names) == len(set(names)), media
    text = answer.text
    for line in (
        'bura_commands_total{outcome="ok",type="lead"}',
        'bura_commands_total{outcome="ok",type="declare"}',
        'bura_commands_total{outcome="game_over",type="lead"}',
        'bura_penalties_total{rule="out_of_turn_draw"}',
        'bura_deals_ended_total{reason="thirty_one"}',
        'bura_deals_ended_total{reason="out_of_turn_draw"}',
        'bura_command_seconds_bucket{le="0.05",type="draw"}',
        "bura_append_conflicts_total 0.0",
        "bura_command_retries_total",
        "bura_append_batches ",
        "bura_appends_batched ",
        "bura_sse_streams 0.0",
        "bura_projector_lag_versions",
        "bura_store_errors_total 0.0",
        "bura_redis_errors 0.0",
        'bura_record_rows{source="standby"} 0.0',  # no standby: the store reads the record
        "bura_standby_errors 0.0",
        'bura_http_request_seconds_count{method="POST",route="/games/{game_id}/commands"',
    ):
        assert line in text, line
    registry = api.runtime.metrics.registry
    assert (
        registry.get_sample_value("bura_commands_total", {"type": "draw", "outcome": "ok"}) == 11
    )  # ten in the won game, and the faulty draw that was judged (not refused)
    # every series the SRE may see is named in the README's list
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    families = {m.name for m in registry.collect()}
    assert families and all(f"`{name}" in readme for name in families), sorted(
        name for name in families if f"`{name}" not in readme
    )


async def test_a_request_id_is_echoed_and_recorded_with_the_events(api: Api) -> None:
    table = await api.create()
    seat, command = THIRTY_ONE_GAME[0]
    headers = {**table.seat(seat), "X-Request-ID": "trace-42"}
    answer = await api.client.post(
        f"/games/{table.game_id}/commands", json=command, headers=headers
    )
    assert answer.status_code == 200 and answer.headers["x-request-id"] == "trace-42"
    rows = await api.store.read(table.game_id, after=table.version)
    assert [r.metadata.correlation_id for r in rows] == ["trace-42"]
    assert rows[0].metadata.actor == seat

    anonymous = await api.client.get("/health/live")
    assert len(anonymous.headers["x-request-id"]) == 32  # one is made when none is sent
    # random, not a counter: ids in sequence told any caller how many requests others made
    made = [(await api.client.get("/health/live")).headers["x-request-id"] for _ in range(4)]
    assert len({m[:16] for m in made}) == 4 and len({m[16:] for m in made}) == 4, made
    assert all(int(m, 16) >= 0 for m in made)
    bad = await api.client.get("/health/live", headers={"X-Request-ID": "x" * 500})
    assert bad.headers["x-request-id"] != "x" * 500


def test_log_lines_are_json_with_the_game_fields() -> None:
    record = logging.LogRecord("bura.games", logging.INFO, __file__, 1, "draw accepted", (), None)
    for key, value in {"game_id": "g1", "version": 14, "seat": 0, "command_id": "k-1"}.items():
        setattr(record, key, value)
    LogContext().filter(record)
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "draw accepted" and line["level"] == "info"
    assert {k: line[k] for k in ("game_id", "version", "seat", "command_id")} == {
        "game_id": "g1",
        "version": 14,
        "seat": 0,
        "command_id": "k-1",
    }


async def test_an_unexpected_error_is_a_500_with_a_code_and_its_traceback_is_logged(
    api: Api, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure nothing foresaw (a bug, planted here in the game service) is no outage and
    no client's fault: a 500 `internal_error`, with the request id to find the logged
    traceback by."""
    table = await api.create()

    async def a_bug(game_id: str, seen: int = 0) -> None:
        raise RuntimeError(f"a bug reading {game_id}")

    monkeypatch.setattr(api.runtime.games, "current", a_bug)
    with caplog.at_level(logging.ERROR, logger="bura.http"):
        answer = await api.client.get(
            f"/games/{table.game_id}", headers={**OPERATOR, "X-Request-ID": "req-500"}
        )
    assert answer.status_code == 500, answer.text
    body = answer.json()
    assert body["code"] == "internal_error" and "req-500" in body["detail"]
    assert "a bug" not in body["detail"]  # the cause is logged, not told
    [record] = [r for r in caplog.records if r.name == "bura.http" and r.exc_info]
    assert "req-500" in getattr(record, "request_id", "")
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError


async def test_a_row_the_server_cannot_read_is_a_broken_record_and_its_cause_is_logged(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    """A row written by hand, as a broken tool might, that is no event: the game's record
    is broken at that row (`record_broken`, naming it), and the decoder's words are
    logged with the traceback."""
    table = await api.create()
    await api.store.append(table.game_id, table.version, [NewEvent("cards_led", b'{"x": 1}')])
    with caplog.at_level(logging.ERROR, logger="bura.http"):
        answer = await api.client.get(f"/games/{table.game_id}", headers=OPERATOR)
    assert answer.status_code == 500, answer.text
    body = answer.json()
    assert body["code"] == "record_broken", body
    assert f"event {table.version + 1} (cards_led) is no event this server reads" in body["detail"]
    [record] = [r for r in caplog.records if r.name == "bura.http" and r.exc_info]
    assert record.exc_info is not None and record.exc_info[1] is not None
    assert "ValidationError" in type(record.exc_info[1].__cause__).__name__


TWO = [{"name": "ann"}, {"name": "bob"}]


async def test_every_503_of_a_store_that_cannot_be_reached_is_a_store_error_counted_once(
    tmp_path: Path,
) -> None:
    """bura_store_errors_total counts each store failure that becomes a 503, wherever it
    was met: a seat token's lookup, a read, a creation, the webhooks; and a command whose
    append (or read) failed inside the game service once, not twice."""
    adapters = await servers.sqlite_adapters(str(tmp_path / "gone.db"))
    app = app_on(adapters)
    async with serving(app) as client:
        api = Api(client, app, adapters)
        registry = api.runtime.metrics.registry

        def counted(name: str, **labels: str) -> float:
            return registry.get_sample_value(name, labels) or 0.0

        table = await api.create()
        await api.play(table, *THIRTY_ONE_GAME[0])  # the seats' tokens are known from here
        await adapters.close()  # the database goes away under the running server
        assert counted("bura_store_errors_total") == 0

        # a seat already known: the command reaches the game service, which fails it
        answer = await api.send(table, *THIRTY_ONE_GAME[1])
        assert answer.status_code == 503 and answer.json()["code"] == "store_unavailable"
        assert counted("bura_store_errors_total") == 1
        kind = THIRTY_ONE_GAME[1][1]["type"]
        assert counted("bura_commands_total", outcome="unavailable", type=kind) == 1

        # failing before any command is judged: never seen by the game service
        calls = [
            client.post("/games", json={"seats": TWO}, headers=OPERATOR),
            client.get(f"/games/{'a' * 32}", headers=OPERATOR),
            client.get(
                f"/games/{'a' * 32}/events",
                headers={"Authorization": f"Bearer {'a' * 32}.some-seat-token"},
            ),
            client.post(
                f"/games/{'a' * 32}/commands",
                json={"type": "draw"},
                headers={"Authorization": f"Bearer {'a' * 32}.some-seat-token"},
            ),
            client.get("/webhooks", headers=OPERATOR),
        ]
        for n, call in enumerate(calls, start=2):
            answer = await call
            assert answer.status_code == 503, answer.text
            assert answer.json()["code"] == "store_unavailable"
            assert counted("bura_store_errors_total") == n, answer.request.url
        metrics = await client.get("/metrics")
        assert f"bura_store_errors_total {float(1 + len(calls))}" in metrics.text


async def test_a_postgresql_store_that_cannot_be_reached_counts_the_token_lookup() -> None:
    closed = await PostgresEventStore.open(
        f"postgresql://postgres@127.0.0.1:{free_port()}/test", min_size=0, connect_timeout=2
    )
    adapters = adapters_on(closed, PostgresSeatTokens(closed.pool), InProcessHintBus())
    app = app_on(adapters)
    try:
        async with serving(app) as client:
            seat = {"Authorization": f"Bearer {'a' * 32}.some-seat-token"}
            answer = await client.post(
                f"/games/{'a' * 32}/commands", json={"type": "draw"}, headers=seat
            )
            assert answer.status_code == 503, answer.text
            registry = app.state.runtime.metrics.registry
            assert registry.get_sample_value("bura_store_errors_total") == 1
    finally:
        await closed.close()


async def test_a_request_id_is_kept_without_the_spaces_around_it(api: Api) -> None:
    """`X-Request-ID: abc   ` is `abc`: the spaces around a header's value are none of it,
    and a client reads the echo back without them (it was echoed, logged and recorded
    with them)."""
    answer = await api.client.get("/health/live", headers={"X-Request-ID": "  trace-43 \t"})
    assert answer.headers["x-request-id"] == "trace-43"
    blank = await api.client.get("/health/live", headers={"X-Request-ID": "   "})
    assert len(blank.headers["x-request-id"]) == 32  # none given: one is made


async def test_a_request_no_route_takes_writes_its_access_line(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    """A path the API lacks (a scanner's `/.env`) and a method a path does not take are
    refused before any route, where the access line is written: they write theirs too."""
    with caplog.at_level("INFO", logger="bura.http"):
        missing = await api.client.get("/.env", headers={"X-Request-ID": "scan-1"})
        wrong = await api.client.put("/games", headers={"X-Request-ID": "scan-2"})
    assert (missing.status_code, wrong.status_code) == (404, 405)
    lines = {
        r.getMessage(): getattr(r, "request_id", None)
        for r in caplog.records
        if r.name == "bura.http"
    }
    assert lines.get("GET /.env 404") == "scan-1", lines
    assert lines.get("PUT /games 405") == "scan-2", lines
