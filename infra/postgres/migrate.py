"""Apply the pending SQL migrations in infra/migrations to a PostgreSQL database."""

from __future__ import annotations

import logging
from importlib.resources import files

import asyncpg

from infra.postgres.store import reachable

log = logging.getLogger("bura.migrate")

# Any fixed key will do; every process that migrates this schema takes the same one.
_LOCK_KEY = 0x6275726100000001
# A server that takes the connection and never answers (a stalled host, a proxy to
# nowhere) is unavailable after this, as the store's pool judges it: asyncpg alone waits a
# minute. The same bounds the reads of what is applied; taking the lock behind another
# process's migration, and the migrations themselves, may take as long as they take.
CONNECT_SECONDS = 5.0
READ_SECONDS = 10.0


def migration_files() -> list[tuple[str, str]]:
    """(name, SQL) of every migration, in the order they apply."""
    folder = files("infra.postgres") / "migrations"
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".sql"))
    return [(name, (folder / name).read_text(encoding="utf-8")) for name in names]


async def migrate(dsn: str, until: str | None = None) -> list[str]:
    """Apply pending migrations, each in its own transaction; return the names applied.
    `until` stops after the migration of that name (to test a migration of old data).

    A session advisory lock makes concurrent callers (replicas starting together) wait
    for one another, so each migration applies exactly once; a caller that finds it held
    says so at info before it waits (a long migration elsewhere is no silent hang).
    """
    with reachable():
        conn = await asyncpg.connect(dsn, timeout=CONNECT_SECONDS)
        try:
            tried = await conn.fetchval(
                "SELECT pg_try_advisory_lock($1)", _LOCK_KEY, timeout=READ_SECONDS
            )
            if not tried:
                log.info("waiting for the migration lock: another process is migrating")
                await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
            try:
                return await _apply_pending(conn, until)
            finally:
                await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
        finally:
            await conn.close(timeout=CONNECT_SECONDS)


async def _apply_pending(conn: asyncpg.Connection, until: str | None) -> list[str]:
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " name text PRIMARY KEY,"
        " applied_at timestamptz NOT NULL DEFAULT now())"
    )
    done = {r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations")}
    applied = []
    for name, sql in migration_files():
        if name in done:
            continue
        async with conn.transaction():
            await conn.execute(sql)
            await conn.execute("INSERT INTO schema_migrations (name) VALUES ($1)", name)
        applied.append(name)
        if name == until:
            break
    return applied


async def pending(dsn: str) -> list[str]:
    """The migrations this code has and the database has not applied, read without
    writing (a reader's role may hold no right to create anything): every one of them
    for a database that holds no bura schema at all."""
    with reachable():
        conn = await asyncpg.connect(dsn, timeout=CONNECT_SECONDS)
        try:
            exists = await conn.fetchval(
                "SELECT to_regclass('schema_migrations') IS NOT NULL", timeout=READ_SECONDS
            )
            done = (
                {
                    r["name"]
                    for r in await conn.fetch(
                        "SELECT name FROM schema_migrations", timeout=READ_SECONDS
                    )
                }
                if exists
                else set()
            )
        finally:
            await conn.close(timeout=CONNECT_SECONDS)
    return [name for name, _ in migration_files() if name not in done]
