"""One way to open a Redis client for commands: short timeouts and a couple of quick
retries, so a slow Redis costs a request milliseconds, not seconds."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import RedisError

# What one call to Redis may cost a request, its retries included (docs/deploy.md): a Redis
# that stops answering without closing the connection is given up on after this long.
CALL_SECONDS = 2.0


async def bounded(pending: Awaitable[Any], unavailable: type[Exception]) -> Any:
    """One call, its retries included, within CALL_SECONDS: a Redis that stops answering
    without closing the connection costs a request that long, not the socket timeout times
    each retry. Any failure is `unavailable` (the port's own error), saying why."""
    try:
        async with asyncio.timeout(CALL_SECONDS):
            return await pending
    except TimeoutError as error:
        raise unavailable(f"redis did not answer in {CALL_SECONDS:g} s") from error
    except (RedisError, OSError) as error:
        raise unavailable(f"redis: {error}") from error


# Connections a client keeps at most: calls beyond them wait for one (within CALL_SECONDS).
# Redis answers one command at a time, so more buy no speed. redis-py's own pool opens one
# per call under way, keeps them all, and past 100 refuses the call ("Too many
# connections"): a burst (every stream of a replica reconnecting at once) failed its
# presence and tickets and left each replica holding a hundred connections.
POOL_CONNECTIONS = 16


def connect(url: str, socket_timeout: float = 2.0) -> redis.Redis:
    """A client of at most POOL_CONNECTIONS connections; a call waits for one."""
    pool = redis.BlockingConnectionPool.from_url(
        url,
        max_connections=POOL_CONNECTIONS,
        timeout=CALL_SECONDS,
        retry=Retry(ExponentialBackoff(cap=0.2, base=0.02), 2),
        socket_connect_timeout=2,
        socket_timeout=socket_timeout,
        health_check_interval=10,
    )
    return redis.Redis.from_pool(pool)
