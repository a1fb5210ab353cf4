"""The bare baseline of bench/service.py: one Litestar route that does one asyncpg INSERT
and answers a small JSON body, served by uvicorn the way `bura serve` is (one process, no
access log, no log config of uvicorn's, the same keep-alive). What any Python service on
this stack pays per request; the command endpoint's cost is read against it.

One INSERT is one round trip: its pool, like the event store's, releases a connection
without asyncpg's reset query (RESET ALL, UNLISTEN *, CLOSE ALL, advisory unlock), which
by default is a second statement sent on every release. With it, this endpoint cost 1.25
times as much (0.244 against 0.196 ms at 8 games, four interleaved repeats): a floor that
high made the command endpoint look a fifth cheaper than it is.

`python -m bench.bare PORT DSN` serves it on 127.0.0.1:PORT until SIGTERM.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import msgspec
import uvicorn
from litestar import Litestar, Request, get, post

_TABLE = (
    "CREATE TABLE IF NOT EXISTS bare_commands (id bigserial PRIMARY KEY, game text NOT NULL,"
    " body bytea NOT NULL, at timestamptz NOT NULL DEFAULT now())"
)
_INSERT = "INSERT INTO bare_commands (game, body) VALUES ($1, $2) RETURNING id"


class _Released(asyncpg.Connection):
    """Released to the pool with no reset query (the endpoint sets no session state)."""

    def get_reset_query(self) -> str:
        return ""


class Answer(msgspec.Struct):
    version: int
    duplicate: bool = False


@post("/games/{game_id:str}/commands", status_code=200)
async def command(game_id: str, request: Request) -> Answer:  # type: ignore[type-arg]
    body = await request.body()
    pool: asyncpg.Pool = request.app.state.pool
    async with pool.acquire() as conn:
        version = await conn.fetchval(_INSERT, game_id, body)
    return Answer(version=version)


@get("/health/ready")
async def ready() -> dict[str, str]:
    return {"status": "ready"}


def create_app(dsn: str) -> Litestar:
    @asynccontextmanager
    async def pool(app: Litestar) -> AsyncIterator[None]:
        # the same pool bounds as the event store's default
        app.state.pool = await asyncpg.create_pool(
            dsn, min_size=1, max_size=10, connection_class=_Released
        )
        async with app.state.pool.acquire() as conn:
            await conn.execute(_TABLE)
        try:
            yield
        finally:
            await app.state.pool.close()

    return Litestar([command, ready], lifespan=[pool])


def main(port: int, dsn: str) -> None:
    config = uvicorn.Config(
        create_app(dsn),
        host="127.0.0.1",
        port=port,
        log_config=None,
        access_log=False,
        http="httptools",
        timeout_keep_alive=75,  # BURA_IDLE_TIMEOUT_SECONDS' default
    )
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
