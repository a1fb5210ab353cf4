"""End-to-end fixtures: real service processes on free ports over a fresh PostgreSQL
database, sharing the session's Redis unless a test brings its own."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import httpx
import pytest

from harness.processes import Service
from tests import servers

StartService = Callable[..., Awaitable[Service]]


async def metric(client: httpx.AsyncClient, service: Service, name: str) -> float:
    """A metric of the service's /metrics, summed over its labels; `name` may name some of
    them (`bura_record_rows{source="standby"}`) to sum only that series."""
    text = (await client.get(f"{service.url}/metrics")).text
    found = re.findall(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", text, re.M)
    return sum(float(v) for v in found)


@pytest.fixture
def database(postgres_admin_url: str) -> Iterator[str]:
    """A migrated database of this test's own."""
    with servers.fresh_database(postgres_admin_url) as url:
        yield url


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    limits = httpx.Limits(max_connections=400, max_keepalive_connections=100)
    async with httpx.AsyncClient(timeout=10.0, limits=limits) as opened:
        yield opened


@pytest.fixture
async def start_service(
    database: str, redis_url: str, tmp_path: Path
) -> AsyncIterator[StartService]:
    """start_service(**env) -> a ready service on the test's database and the session's
    Redis (override with BURA_* keyword arguments); all are stopped after the test."""
    started: list[Service] = []

    async def start(port: int | None = None, wait: bool = True, **env: str) -> Service:
        settings = {
            "BURA_DATABASE_URL": database,
            "BURA_REDIS_URL": redis_url,
            "BURA_FEED_POLL_SECONDS": "0.5",
            **env,
        }
        service = Service(settings, port=port, log_dir=tmp_path).start()
        started.append(service)
        return await service.ready() if wait else service

    yield start
    for service in started:
        service.stop()
