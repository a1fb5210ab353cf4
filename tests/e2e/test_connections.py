"""The server's own connections, on a real `bura serve`: headers bounded in size and number,
slow and idle clients closed, a port already taken refused at once."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from domain.bots import random_bot
from harness.processes import OPERATOR_KEY, RedisServer, Service
from harness.sse import Stream
from tests.e2e.conftest import StartService
from tests.e2e.expect import RULES
from tests.e2e.play import Table

QUICK = {"BURA_READ_TIMEOUT_SECONDS": "1", "BURA_IDLE_TIMEOUT_SECONDS": "1"}


async def sqlite_service(start_service: StartService, tmp_path: Path, **env: str) -> Service:
    return await start_service(
        BURA_DATABASE_URL="",
        BURA_REDIS_URL="",
        BURA_SQLITE_PATH=str(tmp_path / "bura.sqlite3"),
        **env,
    )


async def exchange(port: int, data: bytes, timeout: float = 15.0) -> bytes:
    """Send raw bytes, read everything until the server closes (or `timeout`)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        async with asyncio.timeout(timeout):
            return await reader.read(-1)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def resident_bytes(service: Service) -> int:
    assert service.process is not None
    status = Path(f"/proc/{service.process.pid}/status").read_text()
    kilobytes = next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS"))
    return int(kilobytes) * 1024


def answer_of(raw: bytes) -> tuple[int, dict[str, str]]:
    """The status and body of a refusal, checked to be RFC 9457 problem details as every
    other error answer is."""
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    problem = json.loads(body)
    assert b"\r\ncontent-type: application/problem+json\r\n" in head.lower() + b"\r\n"
    assert re.search(rb"\r\nx-request-id: [0-9a-f]{32}\r\n", head.lower() + b"\r\n"), head
    assert problem["type"] == f"/problems/{problem['code']}"
    assert problem["status"] == status and problem["title"]
    return status, problem


def answers_in(raw: bytes) -> list[tuple[int, bytes]]:
    """Each (status, body) of a run of keep-alive answers with Content-Length."""
    found = []
    while raw:
        head, _, rest = raw.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length = next(
            int(v)
            for k, _, v in (h.partition(b":") for h in lines[1:])
            if k.strip().lower() == b"content-length"
        )
        found.append((int(lines[0].split(b" ", 2)[1]), rest[:length]))
        raw = rest[length:]
    return found


async def test_headers_larger_than_the_bound_are_a_431_and_the_connection_closes(
    start_service: StartService, tmp_path: Path
) -> None:
    service = await sqlite_service(start_service, tmp_path, BURA_MAX_HEADER_BYTES="8192")
    big = b"GET /health/live HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n"
    status, body = answer_of(await exchange(service.port, big))
    assert status == 431 and body["code"] == "headers_too_large"
    # a huge one is answered as soon as it passes the bound, and what follows is dropped
    before = resident_bytes(service)
    reader, writer = await asyncio.open_connection("127.0.0.1", service.port)
    writer.write(b"GET /health/live HTTP/1.1\r\nHost: x\r\nX-Huge: " + b"a" * 100_000)
    await writer.drain()
    async with asyncio.timeout(15):
        assert (await reader.readuntil(b"\r\n")).startswith(b"HTTP/1.1 431")
    with contextlib.suppress(ConnectionError):
        for _ in range(4096):  # 32 MB more of the same header
            writer.write(b"a" * 8192)
            await writer.drain()
    writer.close()
    grown = resident_bytes(service) - before
    assert grown < 16 * 2**20, f"the server grew by {grown / 2**20:.0f} MB"
    fine = httpx.get(f"{service.url}/health/live", headers={"X-Ok": "a" * 4000})
    assert fine.status_code == 200


async def test_a_request_that_is_no_http_is_a_400_in_problem_details(
    start_service: StartService, tmp_path: Path
) -> None:
    """A control character in a header, or a request line that is no HTTP, is refused
    as every other error is (problem details, a request id), not in the HTTP parser's
    plain text; the server goes on serving."""
    service = await sqlite_service(start_service, tmp_path)
    for raw in (
        b"POST /games HTTP/1.1\r\nHost: x\r\nIdempotency-Key: a\x7fb\r\n\r\n",
        b"GET /health/live HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n",
        b"NOT HTTP AT ALL\r\n\r\n",
    ):
        status, body = answer_of(await exchange(service.port, raw))
        assert status == 400 and body["code"] == "bad_request", (raw, body)
        assert body["detail"].startswith("the request is not valid HTTP/1.1"), body
    # after a request answered on the same connection: no instance of that one's
    fine = b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n"
    raw = await exchange(service.port, fine + b"NOT HTTP AT ALL\r\n\r\n")
    status, refused = answers_in(raw)[-1]
    assert status == 400
    assert "instance" not in json.loads(refused), refused
    assert httpx.get(f"{service.url}/health/live").status_code == 200


async def test_more_headers_than_the_bound_are_a_431(
    start_service: StartService, tmp_path: Path
) -> None:
    service = await sqlite_service(start_service, tmp_path, BURA_MAX_HEADERS="20")
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(30))
    raw = b"GET /health/live HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n"
    status, body = answer_of(await exchange(service.port, raw))
    assert status == 431 and "more than 20 headers" in body["detail"]
    assert body["instance"] == "/health/live"  # the request line arrived whole
    # the path as it was sent, as every other answer's instance: encoded, no query
    raw = b"GET /games/a%20b?x=1 HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n"
    status, body = answer_of(await exchange(service.port, raw))
    assert (status, body["instance"]) == (431, "/games/a%20b")
    few = {f"X-H{i}": "v" for i in range(10)}
    assert httpx.get(f"{service.url}/health/live", headers=few).status_code == 200


async def test_a_large_body_arriving_with_its_head_is_no_header(
    start_service: StartService, tmp_path: Path
) -> None:
    """The head bound counts the head only: a body larger than the head bound that arrives
    in the same read as its head is read as a body (answered, or 413 above the body bound),
    and so are many small requests pipelined in one write."""
    service = await sqlite_service(start_service, tmp_path, BURA_MAX_HEADER_BYTES="8192")

    def create(padding: int) -> bytes:
        body = b'{"seats": [{"name": "a"}, {"name": "b"}]' + b" " * padding + b"}"
        return (
            b"POST /games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + OPERATOR_KEY.encode() + b"\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body
        )

    raw = await exchange(service.port, create(30_000))
    assert raw.startswith(b"HTTP/1.1 201"), raw[:300]
    status, problem = answer_of(await exchange(service.port, create(70_000)))
    assert status == 413 and problem["code"] == "body_too_large"

    one = b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n"
    last = b"GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    answers = answers_in(await exchange(service.port, one * 299 + last))
    assert [status for status, _ in answers] == [200] * 300
    assert "Traceback" not in service.log()


async def test_a_client_sending_its_request_a_byte_at_a_time_is_cut_off(
    start_service: StartService, tmp_path: Path
) -> None:
    service = await sqlite_service(start_service, tmp_path, **QUICK)
    reader, writer = await asyncio.open_connection("127.0.0.1", service.port)
    began = time.monotonic()
    answered = asyncio.create_task(reader.read(-1))  # all the server says, up to its close
    with contextlib.suppress(ConnectionError):
        for byte in b"GET /health/live HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200:
            if answered.done():
                break
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0.1)
    async with asyncio.timeout(15):
        answer = await answered
    writer.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert answer_of(answer)[1]["code"] == "request_timeout"
    assert time.monotonic() - began < 15


async def test_a_keep_alive_connection_is_timed_a_request_at_a_time(
    start_service: StartService, tmp_path: Path
) -> None:
    """Each request has the read timeout from its own arrival: a connection serving quick
    requests for longer than that is never cut off, and a request that stops arriving on
    it is, at its own deadline and not before."""
    service = await sqlite_service(start_service, tmp_path, **QUICK)
    timeout = float(QUICK["BURA_READ_TIMEOUT_SECONDS"])
    reader, writer = await asyncio.open_connection("127.0.0.1", service.port)
    try:
        began = time.monotonic()
        served = 0
        while time.monotonic() - began < 2.5 * timeout:  # past the first deadline, twice
            writer.write(b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
            async with asyncio.timeout(15):
                assert (await read_answer(reader)).startswith(b"HTTP/1.1 200")
            served += 1
            await asyncio.sleep(timeout / 5)  # within the idle timeout
        assert served >= 8
        writer.write(b"GET /health/live HTTP/1.1\r\nHost: x\r\nX-Slow: a")
        sent = time.monotonic()
        async with asyncio.timeout(15):
            answer = await reader.read(-1)
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert time.monotonic() - sent >= 0.9 * timeout
        assert answer_of(answer)[1]["instance"] == "/health/live"
    finally:
        writer.close()


async def test_a_body_that_never_finishes_arriving_is_cut_off(
    start_service: StartService, tmp_path: Path
) -> None:
    service = await sqlite_service(start_service, tmp_path, **QUICK)
    head = (
        b"POST /games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 500\r\n\r\n{"
    )
    began = time.monotonic()
    assert await exchange(service.port, head, timeout=15) == b""  # closed, the app told
    assert time.monotonic() - began < 15
    assert "Traceback" not in service.log()


async def test_connections_that_say_nothing_are_closed(
    start_service: StartService, tmp_path: Path
) -> None:
    service = await sqlite_service(start_service, tmp_path, **QUICK)
    # never a byte: no request line, so no instance
    status, body = answer_of(await exchange(service.port, b"", timeout=15))
    assert status == 408 and "instance" not in body
    # idle after an answer, on a keep-alive connection
    reader, writer = await asyncio.open_connection("127.0.0.1", service.port)
    writer.write(b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
    await writer.drain()
    async with asyncio.timeout(15):
        rest = await reader.read(-1)  # the answer, then the close
    writer.close()
    assert rest.startswith(b"HTTP/1.1 200")


async def read_answer(reader: asyncio.StreamReader) -> bytes:
    """One answer off a keep-alive connection: its head and its Content-Length of body."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return head + await reader.readexactly(length)


async def test_a_head_on_a_keep_alive_connection_sends_headers_and_no_body(
    start_service: StartService, tmp_path: Path
) -> None:
    """Through the real server: a HEAD's answer is the GET's head, Content-Length included,
    and not one byte of body, so the connection carries the next answer at once."""
    service = await sqlite_service(start_service, tmp_path)
    reader, writer = await asyncio.open_connection("127.0.0.1", service.port)
    try:
        writer.write(b"GET /health/ready HTTP/1.1\r\nHost: x\r\n\r\n")
        async with asyncio.timeout(15):
            got = await read_answer(reader)
        length = len(got.partition(b"\r\n\r\n")[2])
        for _ in range(2):
            writer.write(b"HEAD /health/ready HTTP/1.1\r\nHost: x\r\n\r\n")
            async with asyncio.timeout(15):
                head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
            assert f"content-length: {length}\r\n".encode() in head.lower()
        writer.write(b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        async with asyncio.timeout(15):
            assert (await read_answer(reader)).startswith(b"HTTP/1.1 200")
    finally:
        writer.close()


async def test_an_idle_connection_outlives_a_client_pools_expiry_by_default(
    start_service: StartService, tmp_path: Path
) -> None:
    """httpx keeps an idle connection for 5 s and sends onto it until then: the server must
    not be the one closing it at that moment, or a request in flight is reset and lost."""
    service = await sqlite_service(start_service, tmp_path)
    reader, writer = await asyncio.open_connection("127.0.0.1", service.port)
    request = b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n"
    try:
        async with asyncio.timeout(15):
            writer.write(request)
            assert (await read_answer(reader)).startswith(b"HTTP/1.1 200")
            await asyncio.sleep(httpx.Limits().keepalive_expiry or 5.0)
            await asyncio.sleep(1.0)  # a second past the pool's expiry: still open
            writer.write(request)
            assert (await read_answer(reader)).startswith(b"HTTP/1.1 200")
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


@pytest.mark.parametrize("with_redis", [False, True])
async def test_serve_exits_at_once_when_its_port_is_taken(tmp_path: Path, with_redis: bool) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    bus = RedisServer(tmp_path / "redis").start() if with_redis else None
    try:
        env = {"BURA_SQLITE_PATH": str(tmp_path / "bura.sqlite3"), "BURA_DATABASE_URL": ""}
        env["BURA_REDIS_URL"] = bus.url if bus is not None else ""
        service = Service(env, port=port, log_dir=tmp_path).start()
        try:
            code = await service.wait(timeout=20)
        finally:
            service.stop()
        assert code != 0
        assert "cannot listen on 127.0.0.1:" in service.log()
        assert "Traceback" not in service.log()
    finally:
        taken.close()
        if bus is not None:
            bus.kill()


async def test_live_streams_outlast_the_request_deadline(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    """The deadline bounds a request's work, not a stream that is meant to stay open: the
    game's stream and the operator feed keep delivering long after it has passed."""
    service = await start_service(BURA_REQUEST_DEADLINE_SECONDS="1")
    table = await Table.create(client, service.url, seed="outlast", **RULES)
    chance = random.Random(3)
    async with (
        Stream(client, table.stream_url(service.url), table.tokens[0]) as seat0,
        Stream(client, f"{service.url}/events", OPERATOR_KEY) as feed,
    ):
        await seat0.version(table.state.version)
        await asyncio.sleep(2.5)  # the deadline of the requests that opened them is gone
        await table.play(client, service.url, random_bot, chance, moves=3)
        await seat0.version(table.state.version, timeout=10)
        await feed.wait_for(
            lambda m: (
                m.event == "message"
                and m.data["game_id"] == table.game_id
                and m.data["version"] == table.state.version
            ),
            timeout=10,
        )
        assert seat0.error is None and feed.error is None


async def test_serve_that_cannot_open_its_store_says_why_in_one_line(
    tmp_path: Path, postgres_admin_url: str
) -> None:
    """A PostgreSQL URL naming a database the server does not have: the replica exits 3
    (as uvicorn does for a failed startup) and its log says why in one line, where the
    SRE looks, not in a framework's traceback."""
    url = urlsplit(postgres_admin_url)._replace(path="/no_such_bura_database")
    env = {"BURA_DATABASE_URL": urlunsplit(url), "BURA_REDIS_URL": "", "BURA_LOG_FORMAT": "json"}
    service = Service(env, log_dir=tmp_path).start()
    try:
        code = await service.wait(timeout=30)
    finally:
        service.stop()
    log = service.log()
    assert code == 3, log
    assert "Traceback" not in log
    (said,) = [json.loads(line) for line in log.splitlines() if "cannot start" in line]
    assert said["level"] == "error"
    assert said["message"] == (
        "cannot start: the event store is unavailable: InvalidCatalogNameError: "
        'database "no_such_bura_database" does not exist'
    )


@pytest.mark.parametrize(
    ("env", "code", "said"),
    [
        (  # a port that is no number: a bad setting, before anything is started
            {"BURA_DATABASE_URL": "postgresql://postgres@127.0.0.1:notaport/x"},
            2,
            "bura serve: bad setting: BURA_DATABASE_URL is no usable PostgreSQL URL: "
            "the port 'notaport' is no port number (1 to 65535)",
        ),
        (
            {"BURA_DATABASE_URL": "postgresql://postgres@127.0.0.1:99999/x"},
            2,
            "bura serve: bad setting: BURA_DATABASE_URL is no usable PostgreSQL URL: "
            "the port '99999' is no port number (1 to 65535)",
        ),
        (
            {"BURA_DATABASE_URL": "postgresql://postgres@127.0.0.1:5432/x?sslmode=bogus"},
            2,
            "bura serve: bad setting: BURA_DATABASE_URL is no usable PostgreSQL URL: "
            "`sslmode` parameter must be one of: ",
        ),
        (  # a SQLite file that cannot be made: the store cannot be opened, at startup
            {"BURA_DATABASE_URL": "", "BURA_SQLITE_PATH": "/proc/nope/bura.sqlite3"},
            3,
            "cannot start: the event store is unavailable: cannot open "
            "/proc/nope/bura.sqlite3 (BURA_SQLITE_PATH): cannot make its directory /proc/nope",
        ),
        (  # a directory where the file should be
            {"BURA_DATABASE_URL": "", "BURA_SQLITE_PATH": "/proc"},
            3,
            "cannot start: the event store is unavailable: cannot open /proc: unable to open "
            "database file (BURA_SQLITE_PATH)",
        ),
    ],
)
async def test_serve_with_a_store_it_cannot_open_says_why_in_one_line(
    tmp_path: Path, env: dict[str, str], code: int, said: str
) -> None:
    """A malformed PostgreSQL URL is a bad setting (2), told before anything starts; a
    store that cannot be opened stops the startup (3, as uvicorn exits for a failed
    startup). Each is one line of the log, naming the setting, and no traceback."""
    service = Service({"BURA_REDIS_URL": "", **env}, log_dir=tmp_path).start()
    try:
        exit_code = await service.wait(timeout=30)
    finally:
        service.stop()
    log = service.log()
    assert exit_code == code, log
    assert "Traceback" not in log and "Exception Group" not in log, log
    assert len([line for line in log.splitlines() if said in line]) == 1, log


async def test_the_apps_own_startup_tells_a_malformed_url_in_one_line(tmp_path: Path) -> None:
    """The app started otherwise than by `bura serve` (settings made in code, as the tests
    and an ASGI server of one's own do): its lifespan reports a malformed URL as the same
    bad setting, one line, through bootstrap.refusal."""
    from services.config import Settings
    from services.http.app import create_app

    settings = Settings(
        database_url="postgresql://postgres@127.0.0.1:notaport/x", operator_key=OPERATOR_KEY
    )
    app = create_app(settings)
    told: list[dict[str, object]] = []
    asked = iter([{"type": "lifespan.startup"}])

    async def receive() -> dict[str, object]:
        return next(asked)

    async def send(message: dict[str, object]) -> None:
        told.append(message)

    with contextlib.suppress(Exception):  # the framework re-raises after telling
        await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)
    (failed,) = [m for m in told if m["type"] == "lifespan.startup.failed"]
    assert failed["message"] == (
        "cannot start: bad setting: BURA_DATABASE_URL is no usable PostgreSQL URL: "
        "the port 'notaport' is no port number (1 to 65535)"
    )
