"""End to end over HTTP: 32 bot games at once against the real service.

The service runs as `bura serve` (uvicorn) in a subprocess on a free 127.0.0.1 port, on a
scratch PostgreSQL database with the in-process bus. Each bot game is one coroutine: it
creates a game with a seed of its own (not timed), then its two seats send the moves
domain.bots.greedy_bot picks, one command in flight per game; a game that ends is
followed by a new one. The driver keeps its own replica of each game by running the same
deterministic decide() as the server, so it needs no extra request to know whose turn it
is (and checks every answer's version against the replica).

Only command POSTs are counted and timed, in windows after a warm-up; the figures are
medians over the windows. Commands go over a lean keep-alive HTTP/1.1 connection per
game: the driver shares the machine's two cores with the server it measures, and httpx
spends more CPU per request than the server does. One window driven through
httpx.AsyncClient is reported beside, to show what the client costs.

Targets (printed, never asserted): >= 1,000 commands/s with p99 <= 50 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec

from bench import database_url
from domain.bots import greedy_bot
from domain.commands import PlayerCommand, StartGame
from domain.decide import decide
from domain.evolve import fold
from domain.rules import Rules
from domain.state import NEW_GAME, Game
from harness.databases import fresh_database

GAMES = 32
WINDOWS = 3
WARMUP = 2.0  # seconds before the first window: connections, prepared statements, caches
WINDOW = 5.0  # seconds counted per window
TARGETS = {"commands_per_second": 1_000, "p99_ms": 50.0}
OPERATOR_KEY = "bench-operator-key"
ROOT = Path(__file__).resolve().parent.parent

_encode = msgspec.json.Encoder().encode
Post = Callable[[str, bytes, dict[str, str]], Awaitable[tuple[int, bytes]]]


def run() -> dict[str, Any]:
    started = time.perf_counter()
    # Unmigrated: the service migrates at start, as in production.
    with fresh_database(database_url(), migrated=False) as scratch, _service(scratch) as base:
        windows = asyncio.run(_drive(base, lean=True, windows=WINDOWS))
        [through_httpx] = asyncio.run(_drive(base, lean=False, windows=1))
    rate = statistics.median(w["commands_per_second"] for w in windows)
    p50 = statistics.median(w["p50_ms"] for w in windows)
    p99 = statistics.median(w["p99_ms"] for w in windows)
    rate_met = rate >= TARGETS["commands_per_second"]
    p99_met = p99 <= TARGETS["p99_ms"]
    print(
        f"commands/s {rate:.0f} (target >= {TARGETS['commands_per_second']}: "
        f"{'met' if rate_met else 'MISSED'}), p50 {p50:.1f} ms, p99 {p99:.1f} ms "
        f"(target <= {TARGETS['p99_ms']:.0f} ms: {'met' if p99_met else 'MISSED'})"
    )
    return {
        "games_in_flight": GAMES,
        "window_s": WINDOW,
        "commands_per_second": round(rate),
        "target_commands_per_second": TARGETS["commands_per_second"],
        "p50_ms": round(p50, 2),
        "p99_ms": round(p99, 2),
        "target_p99_ms": TARGETS["p99_ms"],
        "meets_targets": rate_met and p99_met,
        "httpx_commands_per_second": through_httpx["commands_per_second"],
        "httpx_p99_ms": through_httpx["p99_ms"],
        "errors": sum(w["errors"] for w in windows),
        "cores": os.cpu_count(),
        "seconds": round(time.perf_counter() - started, 1),
        "table": [
            *({"client": "lean", **w} for w in windows),
            {"client": "httpx", **through_httpx},
        ],
    }


# --- the service under test ---------------------------------------------------------


@contextmanager
def _service(database_url: str) -> Iterator[str]:
    """`bura serve` on a free port with the in-process bus; its base URL once ready."""
    port = _free_port()
    env = {
        **os.environ,
        "BURA_DATABASE_URL": database_url,
        "BURA_HOST": "127.0.0.1",
        "BURA_PORT": str(port),
        "BURA_OPERATOR_KEY": OPERATOR_KEY,
        "BURA_LOG_LEVEL": "warning",
    }
    env.pop("BURA_REDIS_URL", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "services.cli", "serve"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base, server)
        yield base
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(base: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            error = server.stderr.read().decode() if server.stderr else ""
            raise RuntimeError(f"bura serve exited with {server.returncode}: {error[-2000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base}/health/ready", timeout=1).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"bura serve on {base} not ready after 30 s")


# --- the bots ------------------------------------------------------------------------


class Window:
    """Commands whose POST started and ended between opens and closes."""

    def __init__(self, opens: float, closes: float) -> None:
        self.opens, self.closes = opens, closes
        self.latencies: list[float] = []
        self.games_finished = 0
        self.errors = 0

    def figures(self) -> dict[str, Any]:
        lat = sorted(self.latencies)

        def ms(q: float) -> float | None:
            return round(1000 * lat[min(len(lat) - 1, int(len(lat) * q))], 2) if lat else None

        return {
            "commands_per_second": round(len(lat) / (self.closes - self.opens)),
            "p50_ms": ms(0.5),
            "p99_ms": ms(0.99),
            "max_ms": ms(1.0),
            "commands": len(lat),
            "games_finished": self.games_finished,
            "errors": self.errors,
        }


async def _drive(base: str, lean: bool, windows: int) -> list[dict[str, Any]]:
    opens = time.perf_counter() + WARMUP
    timed = [Window(opens + i * WINDOW, opens + (i + 1) * WINDOW) for i in range(windows)]
    await asyncio.gather(*(_bot_games(base, n, timed, lean) for n in range(GAMES)))
    return [w.figures() for w in timed]


async def _bot_games(base: str, slot: int, windows: list[Window], lean: bool) -> None:
    # A client per game: httpcore's pool scans every pooled connection on each request,
    # which at 32 connections costs more than the request itself.
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        post = await KeepAlive.open(base) if lean else _through(client)
        try:
            await _play(client, post, slot, windows)
        finally:
            if isinstance(post, KeepAlive):
                await post.close()


def _through(client: httpx.AsyncClient) -> Post:
    async def post(path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        answer = await client.post(path, content=body, headers=headers)
        return answer.status_code, answer.content

    return post


async def _play(client: httpx.AsyncClient, post: Post, slot: int, windows: list[Window]) -> None:
    chance = random.Random(slot)
    end = windows[-1].closes
    while time.perf_counter() < end:
        state, game_id, tokens = await _new_game(client, f"bench-{slot}-{uuid.uuid4().hex}")
        path = f"/games/{game_id}/commands"
        while not state.finished and time.perf_counter() < end:
            seat = state.deal.turn  # type: ignore[union-attr]
            command = greedy_bot(state, seat, chance)
            headers = {
                "Authorization": f"Bearer {tokens[seat]}",
                "Content-Type": "application/json",
                "Idempotency-Key": uuid.uuid4().hex,
            }
            started = time.perf_counter()
            status, answer = await post(path, _encode(command), headers)
            done = time.perf_counter()
            window = next((w for w in windows if w.opens <= started < w.closes), None)
            if status != 200:
                if window is not None:
                    window.errors += 1
                raise RuntimeError(f"{command!r} -> {status} {answer.decode(errors='replace')}")
            if window is not None and done < window.closes:
                window.latencies.append(done - started)
            state = _after(state, command, seat)
            if _version(answer).version != state.version:
                raise RuntimeError(f"game {game_id}: the server is at another version")
            if state.finished and window is not None:
                window.games_finished += 1


async def _new_game(client: httpx.AsyncClient, seed: str) -> tuple[Game, str, list[str]]:
    body = {"seats": [{"name": "ann"}, {"name": "bob"}], "seed": seed}
    answer = await client.post(
        "/games", json=body, headers={"Authorization": f"Bearer {OPERATOR_KEY}"}
    )
    answer.raise_for_status()
    created = answer.json()
    start = StartGame(seats=("ann", "bob"), rules=Rules(), seed=seed)
    state = fold(NEW_GAME, decide(NEW_GAME, start, None))
    if state.version != created["version"]:
        raise RuntimeError("the server dealt another game than the replica")
    return state, created["game_id"], [s["token"] for s in created["seats"]]


def _after(state: Game, command: PlayerCommand, seat: int) -> Game:
    return fold(state, decide(state, command, seat))


class _Version(msgspec.Struct):
    version: int


_version = msgspec.json.Decoder(_Version).decode


class KeepAlive:
    """One keep-alive HTTP/1.1 connection sending JSON POSTs and reading answers that have
    a Content-Length: all the driver needs, at a fraction of httpx's CPU per request."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str
    ) -> None:
        self.reader, self.writer, self.host = reader, writer, host

    @classmethod
    async def open(cls, base: str) -> KeepAlive:
        where = urlsplit(base)
        reader, writer = await asyncio.open_connection(where.hostname, where.port)
        return cls(reader, writer, where.netloc)

    async def __call__(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\n{lines}"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode("latin-1") + body)
        status = int((await self.reader.readline()).split()[1])
        length = None
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length is None:
            raise RuntimeError(f"POST {path}: an answer without Content-Length")
        return status, await self.reader.readexactly(length)

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


if __name__ == "__main__":
    from bench.__main__ import render

    print(render(run()))
