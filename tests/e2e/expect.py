"""What the end-to-end tests wait for and check, shared by their modules."""

from __future__ import annotations

import asyncio

import httpx

from harness.sse import Stream

# Games long enough to outlast a test's moves: a match to 3 deals won.
RULES = {"rules": {"match_target": 3}}


def assert_one_per_version(stream: Stream, first: int, last: int) -> None:
    """The stream sent exactly one view message per version, first to last, in order."""
    ids = [m.id for m in stream.views]
    assert ids == list(range(first, last + 1)), ids
    assert all(m.data["version"] == m.id == m.data["view"]["version"] for m in stream.views)


async def until_ready(client: httpx.AsyncClient, base: str, timeout: float = 15.0) -> None:
    async with asyncio.timeout(timeout):
        while (await client.get(f"{base}/health/ready")).status_code != 200:
            await asyncio.sleep(0.1)
