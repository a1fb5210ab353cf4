from __future__ import annotations

import asyncio

import asyncpg

from infra.postgres.migrate import migrate, migration_files
from tests import servers


async def test_concurrent_migrations_apply_each_file_exactly_once(postgres_admin_url: str) -> None:
    names = [name for name, _ in migration_files()]
    with servers.fresh_database(postgres_admin_url, migrated=False) as url:
        runs = await asyncio.gather(*(migrate(url) for _ in range(5)))

        assert sorted(runs) == [[]] * 4 + [names]
        assert await migrate(url) == []
        conn = await asyncpg.connect(url)
        try:
            applied = await conn.fetch("SELECT name FROM schema_migrations ORDER BY name")
            tables = await conn.fetch(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
            )
        finally:
            await conn.close()
    assert [r["name"] for r in applied] == names
    assert {"events", "commands", "seat_tokens"} <= {r["tablename"] for r in tables}
