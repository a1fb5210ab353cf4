"""One way to open a Redis client for commands: short timeouts and a couple of quick
retries, so a slow Redis costs a request milliseconds, not seconds."""

from __future__ import annotations

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

# What one call to Redis may cost a request, its retries included (docs/deploy.md): a Redis
# that stops answering without closing the connection is given up on after this long.
CALL_SECONDS = 2.0


def connect(url: str) -> redis.Redis:
    return redis.Redis.from_url(
        url,
        retry=Retry(ExponentialBackoff(cap=0.2, base=0.02), 2),
        socket_connect_timeout=2,
        socket_timeout=2,
        health_check_interval=10,
    )
