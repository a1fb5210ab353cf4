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


def connect(url: str) -> redis.Redis:
    return redis.Redis.from_url(
        url,
        retry=Retry(ExponentialBackoff(cap=0.2, base=0.02), 2),
        socket_connect_timeout=2,
        socket_timeout=2,
        health_check_interval=10,
    )
