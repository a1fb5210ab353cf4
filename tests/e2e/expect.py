"""What the end-to-end tests wait for and check, shared by their modules."""

from __future__ import annotations

import asyncio

import httpx
import redis.asyncio as redis

from tests.e2e.sse import Stream

# Games long enough to outlast a test's moves: a match to 3 deals won.
RULES = {"rules": {"match_target": 3}}


def assert_one_per_version(stream: Stream, first: int, last: int) -> None:
    """The stream sent exactly one view message per version, first to last, in order."""
    ids = [m.id for m in stream.views]
    assert ids == list(range(first, last + 1)), ids
    assert all(m.data["version"] == m.id == m.data["view"]["version"] for m in stream.views)


async def cached_version(url: str, game_id: str, viewer: str) -> int:
    """The version of the viewer's view in the Redis cache at `url` (0: none)."""
    cache = redis.Redis.from_url(url)
    try:
        return int((await cache.hget(f"bura:view:{game_id}:{viewer}", "version")) or 0)
    finally:
        await cache.aclose()


async def until_cached(url: str, game_id: str, viewers: tuple[str, ...], version: int,
                       timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        for viewer in viewers:
            while await cached_version(url, game_id, viewer) < version:
                await asyncio.sleep(0.05)


async def until_ready(client: httpx.AsyncClient, base: str, timeout: float = 15.0) -> None:
    async with asyncio.timeout(timeout):
        while (await client.get(f"{base}/health/ready")).status_code != 200:
            await asyncio.sleep(0.1)
