"""Connections of the pool, each use bounded by the request's deadline, and the errors of a
broken or unreachable server told apart from the server's own answers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from datetime import datetime

import asyncpg
from asyncpg.exceptions import (
    InsufficientResourcesError,
    InternalClientError,
    InvalidAuthorizationSpecificationError,
    InvalidCatalogNameError,
    OperatorInterventionError,
    ReadOnlySQLTransactionError,
)
from asyncpg.pool import PoolConnectionProxy

from infra.deadline import remaining
from infra.ports.events import StoreUnavailable

# A connection of our own, or one lent by the pool.
Connection = asyncpg.Connection | PoolConnectionProxy

# A lost, refused or closed connection, a server shutting down, restarting, full (of
# connections, disk or memory) or a standby after a failover, a timeout, or the driver
# losing track of the protocol when the connection breaks under it. And a server that
# refuses the session itself: no such database, no such role, a wrong password (these come
# only while connecting, before anything could be written).
UNAVAILABLE = (
    OSError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    OperatorInterventionError,
    InsufficientResourcesError,
    ReadOnlySQLTransactionError,
    InternalClientError,
    InvalidCatalogNameError,
    InvalidAuthorizationSpecificationError,
)


def unavailable(error: BaseException) -> bool:
    # asyncpg reports bad arguments as InterfaceErrors too: those are bugs, not outages
    return isinstance(error, UNAVAILABLE) and not isinstance(error, ValueError)


@contextmanager
def reachable() -> Iterator[None]:
    """Turn a connection failure into StoreUnavailable (for calls that write nothing)."""
    try:
        yield
    except UNAVAILABLE as e:
        if not unavailable(e):
            raise
        raise _unavailable(e) from e


def _unavailable(error: BaseException) -> StoreUnavailable:
    # a timeout says nothing of itself: say what it means
    said = str(error) or ("no answer in time" if isinstance(error, TimeoutError) else "")
    return StoreUnavailable(f"{type(error).__name__}: {said}", said=type(error).__name__)


class StatelessConnection(asyncpg.Connection):
    """A pooled connection released without asyncpg's reset query (RESET ALL, UNLISTEN,
    CLOSE ALL, advisory unlock): the store never sets session state, so that round trip
    on every release bought nothing. Open transactions are still ended on release.

    It remembers when its server session began: with the session's process id that names
    the session exactly (a process id alone may be reused), so that a session whose answer
    was lost can be ended, and only that one."""

    backend_start: datetime | None = None

    def get_reset_query(self) -> str:
        return ""


async def remember_start(conn: asyncpg.Connection) -> None:
    """The pool's init hook: note when the connection's server session began. Behind a
    pooling proxy the process id the connection was given is not the session's own; then
    the session cannot be named, and is never ended by guess."""
    if isinstance(conn, StatelessConnection):
        row = await conn.fetchrow(
            "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()"
        )
        if row is not None and row["pid"] == conn.get_server_pid():
            conn.backend_start = row["backend_start"]


def budget(default: float) -> float:
    """What is left of the request's deadline, or `default`; nothing left is a 503 before
    anything is sent."""
    left = remaining(default)
    if left <= 0:
        raise StoreUnavailable("the request's deadline passed before the store was asked")
    return left


def discard(conn: Connection) -> None:
    """Close a connection whose state is unknown, unless the pool has taken it back already
    (asyncpg does, when the server ends the session)."""
    with contextlib.suppress(asyncpg.InterfaceError):
        conn.terminate()


@asynccontextmanager
async def acquired(pool: asyncpg.Pool, default: float) -> AsyncIterator[PoolConnectionProxy]:
    """A connection of the pool within the deadline (a full pool makes the caller wait
    that long at most, never forever). A connection that fails in the block is thrown away
    rather than returned, so nobody waits on what it left unfinished, and the failure is
    StoreUnavailable: blocks that write decide themselves what a failure means."""
    with reachable():
        conn = await pool.acquire(timeout=budget(default))
    try:
        yield conn
    except asyncio.CancelledError:
        # cut off mid-query (a readiness probe's bound, a request's task): giving it back
        # would wait for the server to finish or reset it, as long as a stalled database
        # takes; closed at once instead
        discard(conn)
        raise
    except UNAVAILABLE as error:
        if not unavailable(error):
            raise
        discard(conn)
        raise _unavailable(error) from error
    finally:
        # a release that fails has closed the connection already: the caller's answer stands
        with contextlib.suppress(*UNAVAILABLE):
            await pool.release(conn, timeout=max(remaining(default), 0.1))


# what closing a pool waits for its connections to end gracefully before ending them
CLOSE_SECONDS = 2.0


async def close_pool(pool: asyncpg.Pool, within: float = CLOSE_SECONDS) -> None:
    """Close a pool at shutdown: gracefully within `within` seconds, else at once. A
    stalled database would hold a graceful close for asyncpg's own 10 s or more, beyond
    the shutdown's grace."""
    try:
        await asyncio.wait_for(pool.close(), within)
    except (TimeoutError, *UNAVAILABLE):
        pool.terminate()


class Bounded:
    """An adapter on the store's pool whose every call ends by the request's deadline, else
    by `command_timeout`: a pooled connection waited for counts against it, and one that
    fails is thrown away rather than given back to be waited on (`acquired`)."""

    def __init__(self, pool: asyncpg.Pool, command_timeout: float = 10.0) -> None:
        self.pool = pool
        self.command_timeout = command_timeout

    def connection(self) -> AbstractAsyncContextManager[PoolConnectionProxy]:
        return acquired(self.pool, self.command_timeout)

    def left(self) -> float:
        """The seconds a statement sent now may take (StoreUnavailable once none are)."""
        return budget(self.command_timeout)
