"""Every answer is true, whatever happens between the service and PostgreSQL: a proxy the
test starts between them holds an append's answer back past the deadline, or resets the
connection, after the server committed; or stalls the database altogether.

"Nothing was written" is never said of a command that is in the store; a command whose
fate the service could not learn is `outcome_unknown`; and then the lookup and a retry
with the same key give what was committed.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import statistics
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest

from domain.bots import random_bot
from domain.commands import PlayerCommand
from domain.views import redact
from harness.postgres import Fault, PostgresProxy
from harness.processes import OPERATOR, Service, bearer
from tests.e2e.conftest import StartService
from tests.e2e.expect import RULES
from tests.e2e.play import Table

DEADLINE = 2.0
_encode = msgspec.json.Encoder().encode


@pytest.fixture
async def proxy(database: str) -> AsyncIterator[PostgresProxy]:
    between = PostgresProxy.before(database).start()
    yield between
    between.resume()
    between.close()


async def service_behind(
    start_service: StartService, proxy: PostgresProxy, database: str
) -> Service:
    return await start_service(
        BURA_DATABASE_URL=proxy.via(database),
        BURA_REQUEST_DEADLINE_SECONDS=str(DEADLINE),
        BURA_REDIS_URL="",
    )


async def post(
    client: httpx.AsyncClient,
    base: str,
    table: Table,
    seat: int,
    command: PlayerCommand,
    key: str | None,
) -> httpx.Response:
    headers = {**bearer(table.tokens[seat]), "Content-Type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return await client.post(
        f"{base}/games/{table.game_id}/commands", content=_encode(command), headers=headers
    )


async def lookup(client: httpx.AsyncClient, base: str, table: Table, key: str) -> dict[str, Any]:
    answer = await client.get(
        f"{base}/games/{table.game_id}/commands/{key}", headers=OPERATOR, timeout=30
    )
    assert answer.status_code == 200, answer.text
    status: dict[str, Any] = answer.json()
    return status


def shown_to(table: Table, seat: int, version: int) -> Any:
    event = dict(table.events)[version]
    return msgspec.json.decode(_encode(redact(event, seat, table.state.rules)))


async def check_truthful(
    client: httpx.AsyncClient,
    base: str,
    table: Table,
    seat: int,
    command: PlayerCommand,
    key: str | None,
    answer: httpx.Response,
    before: int,
) -> str:
    """What the answer said, checked against the store; then settled with the key."""
    await table.sync(client, base)
    body = answer.json()
    if answer.status_code == 200:
        assert body["duplicate"] is False
        assert [e["version"] for e in body["events"]] == list(
            range(before + 1, body["version"] + 1)
        )
        for e in body["events"]:
            assert e["event"] == shown_to(table, seat, e["version"])
        key = body["command_id"]
        said = "applied"
    else:
        assert answer.status_code == 503, answer.text
        said = body["code"]
        if said == "store_unavailable":  # said only when true
            assert table.state.version == before, "nothing was written, said the 503"
        else:
            assert said == "outcome_unknown", body
            key = body["command_id"]
    assert key is not None  # every answer names the command, even one sent without a key
    status = await lookup(client, base, table, key)
    if table.state.version > before:
        assert (status["status"], status["version"]) == ("applied", table.state.version)
    else:
        assert status["status"] == "unknown"
    retried = await post(client, base, table, seat, command, key)
    assert retried.status_code == 200, retried.text
    again = retried.json()
    assert again["duplicate"] is (table.state.version > before)
    await table.sync(client, base)
    assert again["version"] == table.state.version
    return said


async def play_under(
    client: httpx.AsyncClient,
    service: Service,
    proxy: PostgresProxy,
    fault: Fault,
    seed: str,
    commands: int,
) -> list[str]:
    table = await Table.create(client, service.url, seed=seed, **RULES)
    chance = random.Random(seed)
    said = []
    for n in range(commands):
        if table.state.finished:
            table = await Table.create(client, service.url, seed=f"{seed}-{n}", **RULES)
        seat, command = table.next_move(random_bot, chance)
        key = None if n % 3 == 0 else uuid.uuid4().hex  # some sent with no key at all
        before = table.state.version
        struck = len(proxy.struck)
        proxy.strike(fault)
        answer = await post(client, service.url, table, seat, command, key)
        assert len(proxy.struck) == struck + 1, "the fault was never applied"
        said.append(
            await check_truthful(client, service.url, table, seat, command, key, answer, before)
        )
    return said


async def test_answers_held_back_past_the_deadline_after_commit_are_told_truthfully(
    start_service: StartService, client: httpx.AsyncClient, proxy: PostgresProxy, database: str
) -> None:
    service = await service_behind(start_service, proxy, database)
    said = await play_under(client, service, proxy, Fault("delay", 10 * DEADLINE), "held", 12)
    # the service finds its own append by its command id: the real outcome, not a 503
    assert said.count("applied") >= 8, said
    assert "store_unavailable" not in said


async def test_connections_reset_after_commit_are_told_truthfully(
    start_service: StartService, client: httpx.AsyncClient, proxy: PostgresProxy, database: str
) -> None:
    service = await service_behind(start_service, proxy, database)
    said = await play_under(client, service, proxy, Fault("reset"), "reset", 12)
    assert said.count("applied") >= 8, said
    assert "store_unavailable" not in said


async def test_a_stalled_database_answers_40_queued_commands_within_the_bound(
    start_service: StartService, client: httpx.AsyncClient, proxy: PostgresProxy, database: str
) -> None:
    """40 commands at once while PostgreSQL answers nothing: every one a 503 in about the
    deadline (the pool holds 10 connections: the others wait for one, and give up in
    time), none saying "nothing was written" of what the stalled server may still commit."""
    service = await service_behind(start_service, proxy, database)
    chance = random.Random(40)
    tables: list[Table] = []
    while len(tables) < 40:
        table = await Table.create(client, service.url, seed=f"stall-{len(tables)}", **RULES)
        tables.append(table)
    # one move on each at once: the service knows every table (the next command goes
    # straight to the append) and its pool has all its connections open
    await asyncio.gather(
        *(
            t.play(client, service.url, random_bot, random.Random(n), moves=1)
            for n, t in enumerate(tables)
        )
    )
    tables = [t for t in tables if not t.state.finished]
    moves = [(t, *t.next_move(random_bot, chance), uuid.uuid4().hex) for t in tables]
    before = {t.game_id: t.state.version for t in tables}
    proxy.pause()

    async def timed(
        table: Table, seat: int, command: PlayerCommand, key: str
    ) -> tuple[float, httpx.Response]:
        began = time.monotonic()
        answer = await post(client, service.url, table, seat, command, key)
        return time.monotonic() - began, answer

    try:
        answers = await asyncio.gather(*(timed(*move) for move in moves))
        ready = await client.get(f"{service.url}/health/ready")
    finally:
        proxy.resume()
    seconds = sorted(s for s, _ in answers)
    codes = [a.json()["code"] for _, a in answers]
    print(
        f"\nstalled database, {len(answers)} commands queued, deadline {DEADLINE:g}s: "
        f"p50 {statistics.median(seconds):.2f}s, max {seconds[-1]:.2f}s; "
        f"{codes.count('store_unavailable')} store_unavailable, "
        f"{codes.count('outcome_unknown')} outcome_unknown"
    )
    assert len(answers) >= 35
    assert all(a.status_code == 503 for _, a in answers), [a.text for _, a in answers]
    assert set(codes) <= {"store_unavailable", "outcome_unknown"}
    assert seconds[-1] < 10 * DEADLINE + 5, f"an answer took {seconds[-1]:.1f}s"
    assert ready.status_code == 503

    # The database is back: what the stalled server did, the lookup and the key tell.
    late = 0
    for (table, seat, command, key), (_, answer) in zip(moves, answers, strict=True):
        await table.sync(client, service.url)
        known = await lookup(client, service.url, table, key)
        if answer.json()["code"] == "store_unavailable":
            assert table.state.version == before[table.game_id]
            assert known["status"] == "unknown"
        late += known["status"] == "applied"  # an append the stalled server ran after all
        retried = await post(client, service.url, table, seat, command, key)
        assert retried.status_code == 200, retried.text
        assert retried.json()["duplicate"] is (known["status"] == "applied")
        await table.sync(client, service.url)
        assert retried.json()["version"] == table.state.version > before[table.game_id]
        status = await lookup(client, service.url, table, key)
        assert (status["status"], status["version"]) == ("applied", table.state.version)
        assert [v for v, _ in table.events] == list(range(1, table.state.version + 1))
    print(f"{late} of the unknown outcomes had been applied by the stalled server")


async def test_a_stalled_database_bounds_a_creation_and_the_list_by_the_deadline(
    start_service: StartService, client: httpx.AsyncClient, proxy: PostgresProxy, database: str
) -> None:
    """The games index's and the webhooks' calls waited for the pool with no bound, and
    gave a connection back by waiting for the stalled server: a creation (either way it is
    sent), the operator's list and the webhooks' answered only once the database did (7 s,
    12 s, 20 s). They are 503s in about the deadline, and a creation refused so leaves no
    game behind."""
    service = await service_behind(start_service, proxy, database)
    await Table.create(client, service.url, seed="warm", **RULES)  # the pool's connections
    proxy.pause()
    body = {"seats": [{"name": "ann"}, {"name": "bob"}]}
    try:
        timed: list[tuple[str, float, httpx.Response]] = []
        for what, send in (
            ("json", lambda: client.post(f"{service.url}/games", json=body, headers=OPERATOR)),
            (
                "form",  # not application/json: the framework's route, not the front door
                lambda: client.post(
                    f"{service.url}/games",
                    content=_encode(body),
                    headers={**OPERATOR, "content-type": "application/x-www-form-urlencoded"},
                ),
            ),
            ("list", lambda: client.get(f"{service.url}/games", headers=OPERATOR)),
            ("hooks", lambda: client.get(f"{service.url}/webhooks", headers=OPERATOR)),
            (
                "log",
                lambda: client.get(f"{service.url}/webhooks/deliveries", headers=OPERATOR),
            ),
        ):
            began = time.monotonic()
            answer = await send()
            timed.append((what, time.monotonic() - began, answer))
    finally:
        proxy.resume()
    for what, seconds, answer in timed:
        assert answer.status_code == 503, (what, answer.text)
        # the deadline, give or take a busy machine (the webhooks' reads took the pool's
        # own statement timeout, 5 s here; the index's, as long as the stall)
        assert seconds < DEADLINE + 2, f"{what}: {seconds:.1f}s"
    listed = (await client.get(f"{service.url}/games", headers=OPERATOR)).json()
    assert len(listed["games"]) == 1, listed  # the warm-up's alone
    # both creations are timed as long as they took: the one sent as JSON was taken by the
    # front door, and its 503 was timed from its hand-over to the route (a few ms)
    metrics = (await client.get(f"{service.url}/metrics")).text
    spent = next(
        float(line.split()[-1])
        for line in metrics.splitlines()
        if line.startswith("bura_http_request_seconds_sum")
        and 'method="POST"' in line
        and 'route="/games"' in line
        and 'status="503"' in line
    )
    assert spent >= 2 * DEADLINE * 0.9, metrics


async def test_requests_cut_off_by_the_end_of_the_grace_are_answered_in_words(
    start_service: StartService, client: httpx.AsyncClient, proxy: PostgresProxy, database: str
) -> None:
    """SIGTERM with a command and a read waiting on a stalled database, and a grace shorter
    than the deadline: uvicorn cancelled them at the grace's end and answered each a bare
    `500 Internal Server Error` in plain text. The command is `503 outcome_unknown` with
    its key (its append may have been sent), the read `503 shutting_down`; the process
    still exits 0, and the log says what was cut off."""
    service = await start_service(
        BURA_DATABASE_URL=proxy.via(database),
        BURA_REQUEST_DEADLINE_SECONDS="8",
        BURA_SHUTDOWN_GRACE_SECONDS="1",
        BURA_REDIS_URL="",
        BURA_LOG_FORMAT="json",
    )
    table = await Table.create(client, service.url, seed="cut-off", **RULES)
    seat, command = table.next_move(random_bot, random.Random(1))
    proxy.pause()
    try:
        sent = asyncio.ensure_future(post(client, service.url, table, seat, command, "cut-1"))
        read = asyncio.ensure_future(
            client.get(f"{service.url}/games/{table.game_id}/events", headers=OPERATOR)
        )
        await asyncio.sleep(0.5)  # both wait on the database
        assert service.process is not None
        service.process.send_signal(signal.SIGTERM)
        answers = await asyncio.wait_for(asyncio.gather(sent, read), timeout=15)
        exit_code = await asyncio.to_thread(service.process.wait, 15)
    finally:
        proxy.resume()
    (command_answer, read_answer) = answers
    assert command_answer.status_code == 503, command_answer.text
    assert command_answer.headers["content-type"] == "application/problem+json"
    assert command_answer.json()["code"] == "outcome_unknown"
    assert command_answer.json()["command_id"] == "cut-1"
    assert read_answer.status_code == 503 and read_answer.json()["code"] == "shutting_down"
    assert exit_code == 0
    cut = [
        json.loads(line)
        for line in service.log_path.read_text().splitlines()
        if "cut off by the end of the shutdown grace" in line
    ]
    assert len(cut) == 2, service.log()
    # each line names the request as its answer did, so the SRE finds the client's 503
    said = {line["path"]: line for line in cut}
    command_line = said[f"/games/{table.game_id}/commands"]
    assert command_line["request_id"] == command_answer.headers["x-request-id"]
    assert command_line["command_id"] == "cut-1"
    read_line = said[f"/games/{table.game_id}/events"]
    assert read_line["request_id"] == read_answer.headers["x-request-id"]
