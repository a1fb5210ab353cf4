from __future__ import annotations

import asyncio

import asyncpg

from domain.chain import canonical, link
from infra.ports.events import NewEvent
from infra.postgres.migrate import migrate, migration_files
from tests import servers
from tests.infra.test_store_contract import rehashed


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
    assert {"events", "seat_tokens"} <= {r["tablename"] for r in tables}


async def test_the_chain_migration_hashes_the_rows_written_before_it(
    postgres_admin_url: str,
) -> None:
    with servers.fresh_database(postgres_admin_url, migrated=False) as url:
        await migrate(url, until="002_no_causation_id.sql")
        conn = await asyncpg.connect(url)
        try:
            for stream, count in (("old-1", 3), ("old-2", 2)):
                await conn.fetchrow(
                    "SELECT * FROM bura_append($1, 0, $2, $3, $4, 'k', 1, 'req')",
                    stream,
                    ["A"] * count,
                    [b'{"n": %d}' % i for i in range(count)],
                    [1] * count,
                )
        finally:
            await conn.close()
        assert await migrate(url) == [n for n, _ in migration_files()][2:]
        store = await servers.open_postgres_store(url)
        try:
            for stream in ("old-1", "old-2"):
                rows = await store.read(stream)
                assert [r.hash for r in rows] == rehashed(rows)
            # and the chain goes on from the migrated head
            await store.append("old-1", 3, [NewEvent("B", b"{}")])
            rows = await store.read("old-1")
            assert [r.hash for r in rows] == rehashed(rows)
        finally:
            await store.close()


async def test_the_chain_link_is_declared_stable_so_the_append_inlines_it(
    postgres_admin_url: str,
) -> None:
    """Declared IMMUTABLE over its stable body (convert_to, extract), the link would be
    called as a function of its own for every event: several times the cost (007)."""
    with servers.fresh_database(postgres_admin_url) as url:
        conn = await asyncpg.connect(url)
        try:
            volatility = await conn.fetchval(
                "SELECT provolatile FROM pg_proc WHERE proname = 'bura_link'"
            )
            link = await conn.fetchval(
                "SELECT bura_link('\\x00'::bytea, 's', 1, 't', 1, '\\x7b7d'::bytea, NULL, 0,"
                " 'r', to_timestamp(0))"
            )
        finally:
            await conn.close()
    assert volatility == b"s"
    assert link == link_of(b"\x00", "s", 1, "t", 1, b"{}", None, 0, "r", 0)


def link_of(previous: bytes, *fields: object) -> bytes:
    return link(previous, canonical(*fields))  # type: ignore[arg-type]
