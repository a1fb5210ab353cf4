"""The benchmarks' lean HTTP client (bench/service.py's KeepAlive) against a real `bura
serve` with short connection bounds: it must measure the server, never stumble on the
server's own bounds. A connection opened long before its first request is refused by the
server (408, then closed), and a connection left resting past the idle timeout is closed:
the client connects when first used, and again once the server has closed it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench.service import KeepAlive
from tests.e2e.conftest import StartService
from tests.e2e.test_connections import QUICK, sqlite_service

BODY = b'{"type":"draw","seen":0}'
HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer nobody"}


async def test_a_connection_is_made_by_its_first_request_not_ahead_of_it(
    start_service: StartService, tmp_path: Path
) -> None:
    service = await sqlite_service(start_service, tmp_path, **QUICK)
    post = KeepAlive.later(service.url)
    # longer than BURA_READ_TIMEOUT_SECONDS: a connection opened here would now be refused
    await asyncio.sleep(2 * float(QUICK["BURA_READ_TIMEOUT_SECONDS"]))
    try:
        status, answer = await post("/games/nobody/commands", BODY, HEADERS)
        assert status != 408, answer
        assert status in (401, 404), answer
    finally:
        await post.close()


async def test_a_connection_the_server_closed_while_it_rested_is_made_again(
    start_service: StartService, tmp_path: Path
) -> None:
    service = await sqlite_service(start_service, tmp_path, **QUICK)
    post = await KeepAlive.open(service.url)
    try:
        first, _ = await post("/games/nobody/commands", BODY, HEADERS)
        # past BURA_IDLE_TIMEOUT_SECONDS: the server has closed the resting connection
        await asyncio.sleep(2 * float(QUICK["BURA_IDLE_TIMEOUT_SECONDS"]) + 0.5)
        assert post.reader is not None and post.reader.at_eof()
        again, answer = await post("/games/nobody/commands", BODY, HEADERS)
        assert again == first != 408, answer
    finally:
        await post.close()
