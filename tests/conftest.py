"""Shared fixtures: real servers for the session, an event store per test on each adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.databases import run_async
from harness.postgres import PostgresServer
from infra.ports.events import EventStore
from infra.postgres import commits as commits_module
from infra.postgres import store as store_module
from infra.postgres.connections import StatelessConnection
from infra.postgres.migrate import migrate
from services.bootstrap import Adapters
from tests import servers

# Fixtures and parameters that reach outside the process: PostgreSQL, Redis, real servers.
_EXTERNAL_FIXTURES = {
    "postgres_admin_url",
    "database_url",
    "redis_url",
    "database",
    "start_service",
    "browser",
    "postgres_pair",
}
_EXTERNAL_PARAMS = {"postgres", "redis"}
_EXTERNAL_FOLDERS = ("e2e", "ops")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `external` every test that needs PostgreSQL, Redis, real processes or tools, so
    that the fast tier (`make test-fast`: domain and SQLite) can leave them out."""
    for item in items:
        params = getattr(item, "callspec", None)
        values = set(map(str, params.params.values())) if params is not None else set()
        folder = item.path.relative_to(Path(__file__).parent).parts[0]
        if (
            _EXTERNAL_FIXTURES & set(getattr(item, "fixturenames", ()))
            or _EXTERNAL_PARAMS & values
            or folder in _EXTERNAL_FOLDERS
        ):
            item.add_marker(pytest.mark.external)


@pytest.fixture(scope="session")
def postgres_admin_url() -> Iterator[str]:
    """A PostgreSQL server's URL with admin rights (CREATE DATABASE)."""
    with servers.postgres_server() as url:
        yield url


@pytest.fixture(scope="session")
def database_url(postgres_admin_url: str) -> Iterator[str]:
    """A migrated database of this test session's own, dropped at the end."""
    with servers.fresh_database(postgres_admin_url) as url:
        yield url


@pytest.fixture(scope="session")
def postgres_pair() -> Iterator[tuple[PostgresServer, PostgresServer]]:
    """A private primary and a hot standby streaming from it, the primary migrated."""
    primary = PostgresServer().start()
    standby: PostgresServer | None = None
    try:
        run_async(lambda: migrate(primary.url))
        standby = PostgresServer(standby_of=primary).start()
        yield primary, standby
    finally:
        if standby is not None:
            standby.remove()
        primary.remove()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    with servers.redis_server() as url:
        yield url


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    """Headless Chromium (tests/browser.py), closed after the test."""
    from tests.browser import chromium

    async with chromium() as opened:
        yield opened


@pytest.fixture(params=["sqlite", "postgres"])
async def adapters(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Adapters]:
    """Open, migrated adapters on each database (the in-process hint bus)."""
    if request.param == "sqlite":
        opened = await servers.sqlite_adapters(tmp_path / "events.db")
    else:
        # Looked up lazily so that `-k sqlite` runs need no PostgreSQL.
        opened = await servers.postgres_adapters(request.getfixturevalue("database_url"))
    yield opened
    await opened.close()


@pytest.fixture
def store(adapters: Adapters) -> EventStore:
    """The event store of each adapter."""
    return adapters.store


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The name of every append statement the store's connections run from now on."""
    names = {
        store_module._TAKE_ONE: "insert one",
        store_module._TAKE_MANY: "insert many",
        store_module._TAKE_FIRST: "insert first",
        store_module._APPEND: "function",
        commits_module._TAKE_BATCH: "batch",
    }
    run: list[str] = []

    def spying(method: Any) -> Any:
        async def spy(self: StatelessConnection, query: str, *args: Any, **kw: Any) -> Any:
            if query in names:
                run.append(names[query])
            return await method(self, query, *args, **kw)

        return spy

    monkeypatch.setattr(StatelessConnection, "execute", spying(StatelessConnection.execute))
    monkeypatch.setattr(StatelessConnection, "fetchrow", spying(StatelessConnection.fetchrow))
    monkeypatch.setattr(StatelessConnection, "fetch", spying(StatelessConnection.fetch))
    yield run
