"""Scratch PostgreSQL databases and free ports."""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import uuid
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from infra.postgres.migrate import migrate

T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_async(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion on a private loop, even inside a running one."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + database))


@contextmanager
def fresh_database(admin_url: str, migrated: bool = True) -> Iterator[str]:
    """URL of a new, uniquely named database on the server, dropped on exit."""
    name = f"bura_test_{uuid.uuid4().hex[:12]}"
    url = with_database(admin_url, name)

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(admin_url)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    run_async(lambda: admin(f'CREATE DATABASE "{name}"'))
    try:
        if migrated:
            run_async(lambda: migrate(url))
        yield url
    finally:
        run_async(lambda: admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
