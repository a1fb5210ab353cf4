"""Real PostgreSQL and Redis servers for integration tests, and event store factories.

A server comes from, in order: the BURA_TEST_DATABASE_URL / BURA_TEST_REDIS_URL
variable; a testcontainers container when a Docker engine answers; the server binaries
on PATH (or /usr/lib/postgresql/*/bin) started in a temporary directory on a free port.
When none works the test fails and says what was tried: never a silent skip.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from harness.databases import free_port, fresh_database, run_async
from infra.memory.hints import InProcessHintBus
from infra.ports.hints import HintBus
from infra.postgres.migrate import migrate
from infra.postgres.store import PostgresEventStore
from infra.postgres.tokens import PostgresSeatTokens
from infra.sqlite.database import SqliteDatabase
from infra.sqlite.store import SqliteEventStore
from infra.sqlite.tokens import SqliteSeatTokens
from services.bootstrap import Adapters, adapters_on

__all__ = ["free_port", "fresh_database", "run_async"]

DATABASE_ENV = "BURA_TEST_DATABASE_URL"
REDIS_ENV = "BURA_TEST_REDIS_URL"
STARTUP_TIMEOUT = 30.0

T = TypeVar("T")


# --- store factories -------------------------------------------------------------------


async def open_postgres_store(
    url: str, min_size: int = 1, max_size: int = 20, lanes: int | None = 1
) -> PostgresEventStore:
    """An open store on a database that migrate() has brought up to date, with
    production's lanes (BURA_APPEND_LANES' default) unless told otherwise."""
    await migrate(url)
    return await PostgresEventStore.open(url, min_size=min_size, max_size=max_size, lanes=lanes)


def sqlite_store(path: str | os.PathLike[str] = ":memory:") -> SqliteEventStore:
    return SqliteEventStore(os.fspath(path))


async def postgres_adapters(url: str, hints: HintBus | None = None) -> Adapters:
    """Adapters on a PostgreSQL database (migrated here) and the given hint bus."""
    store = await open_postgres_store(url)
    return adapters_on(store, PostgresSeatTokens(store.pool), hints or InProcessHintBus())


async def sqlite_adapters(
    path: str | os.PathLike[str] = ":memory:", hints: HintBus | None = None
) -> Adapters:
    database = await SqliteDatabase.open(os.fspath(path))
    return adapters_on(
        SqliteEventStore(database), SqliteSeatTokens(database), hints or InProcessHintBus()
    )


# --- servers --------------------------------------------------------------------------


@contextmanager
def postgres_server() -> Iterator[str]:
    """URL of a PostgreSQL server and a database on it an admin may connect to."""
    with _first_that_works(
        "PostgreSQL", DATABASE_ENV, _postgres_container, _postgres_binaries
    ) as url:
        yield url


@contextmanager
def redis_server() -> Iterator[str]:
    with _first_that_works("Redis", REDIS_ENV, _redis_container, _redis_binary) as url:
        yield url


@contextmanager
def _first_that_works(
    what: str,
    env: str,
    container: Callable[[ExitStack], str],
    binaries: Callable[[ExitStack], str],
) -> Iterator[str]:
    if url := os.environ.get(env):
        yield url
        return
    tried = [f"{env} is not set"]
    for attempt in (container, binaries):
        with ExitStack() as stack:
            try:
                url = attempt(stack)
            except Exception as e:
                tried.append(str(e))
                continue
            yield url
            return
    pytest.fail(
        f"integration tests need a {what} server and none could be had:\n  - "
        + "\n  - ".join(tried),
        pytrace=False,
    )


def _docker_engine() -> None:
    try:
        import docker

        docker.from_env(timeout=3).ping()
    except Exception as e:
        raise RuntimeError(f"no Docker engine answers for testcontainers ({e})") from e


def _postgres_container(stack: ExitStack) -> str:
    _docker_engine()
    try:
        from testcontainers.community.postgres import PostgresContainer
    except ImportError:
        from testcontainers.postgres import PostgresContainer
    container = stack.enter_context(PostgresContainer("postgres:16-alpine", driver=None))
    return str(container.get_connection_url())


def _redis_container(stack: ExitStack) -> str:
    _docker_engine()
    try:
        from testcontainers.community.redis import RedisContainer
    except ImportError:
        from testcontainers.redis import RedisContainer
    container = stack.enter_context(RedisContainer("redis:7-alpine"))
    host, port = container.get_container_host_ip(), container.get_exposed_port(6379)
    return f"redis://{host}:{port}/0"


def _postgres_bin(name: str) -> str | None:
    dirs = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda d: int(Path(d).parent.name) if Path(d).parent.name.isdigit() else 0,
        reverse=True,
    )
    for d in dirs:
        if os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    return shutil.which(name)


# A throwaway server: durability buys nothing here.
_THROWAWAY_POSTGRES = (
    "listen_addresses=127.0.0.1",
    "fsync=off",
    "synchronous_commit=off",
    "full_page_writes=off",
)


def _postgres_binaries(stack: ExitStack) -> str:
    initdb, postgres = _postgres_bin("initdb"), _postgres_bin("postgres")
    if not (initdb and postgres):
        raise RuntimeError("no initdb/postgres binaries on PATH or in /usr/lib/postgresql/*/bin")
    home = stack.enter_context(tempfile.TemporaryDirectory(prefix="bura-pg-"))
    # PostgreSQL refuses to run as root: run it as an unprivileged account instead.
    user = _unprivileged_user() if os.geteuid() == 0 else None
    if user is not None:
        os.chown(home, user.pw_uid, user.pw_gid)
    data, port = os.path.join(home, "data"), free_port()
    init = subprocess.run(
        [initdb, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"],
        capture_output=True,
        text=True,
        check=False,
        **_as(user),
    )
    if init.returncode != 0:
        raise RuntimeError(f"initdb failed: {init.stderr.strip()[-500:]}")
    log_path = os.path.join(home, "postgres.log")
    args = [postgres, "-D", data, "-p", str(port), "-k", home]
    for setting in _THROWAWAY_POSTGRES:
        args += ["-c", setting]
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            **_as(user),
        )
    stack.callback(_stop, server, signal.SIGINT)  # fast shutdown: disconnects clients
    _wait_until(
        lambda: b"ready to accept connections" in Path(log_path).read_bytes(),
        server,
        f"postgres on port {port} (log {log_path})",
    )
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


def _redis_binary(stack: ExitStack) -> str:
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("no redis-server binary on PATH")
    home = stack.enter_context(tempfile.TemporaryDirectory(prefix="bura-redis-"))
    port = free_port()
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", home]
    server = subprocess.Popen(
        [*args, "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    stack.callback(_stop, server, signal.SIGTERM)
    _wait_until(lambda: _redis_pings(port), server, f"redis-server on port {port}")
    return f"redis://127.0.0.1:{port}/0"


def _redis_pings(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _as(user: pwd.struct_passwd | None) -> dict[str, Any]:
    return {} if user is None else {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _unprivileged_user() -> pwd.struct_passwd:
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError("running as root and no 'postgres' or 'nobody' account to run as")


def _wait_until(ready: Callable[[], bool], server: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not ready():
        if server.poll() is not None:
            raise RuntimeError(f"{what} exited with code {server.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready after {STARTUP_TIMEOUT:.0f}s")
        time.sleep(0.05)


def _stop(server: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    if server.poll() is None:
        server.send_signal(sig)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
