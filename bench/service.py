"""Server CPU per command, end to end over HTTP: the command endpoint against a bare one.

Side by side in one run: `bura serve` (harness.processes.Service) with production's
settings (PostgreSQL, Redis, info logging as JSON, rate limits on, metrics), and
bench/bare.py, a Litestar route doing one asyncpg INSERT, under the same uvicorn settings
and on the same PostgreSQL. At 8, 32 and 64 games at once, each target gets a window in
turn (the order rotates every repeat, so drift spreads over both), REPEATS times, after
one window each that is not counted (a fresh server's first window cost up to 1.4 times
the next ones: the interpreter's and PostgreSQL's caches still filling); the figures are
medians of the windows. A window's CPU is the server process's user + system
time read from /proc over it (bench/cpu.py); per command is that over the requests
answered in the window (game creations included, counted apart: a finished bot game is
followed by a new one).

Bot games (bura): each game is a coroutine whose two seats send the moves
domain.bots.greedy_bot picks, one command in flight per game, each seat on its own lean
keep-alive HTTP/1.1 connection. The driver folds the same deterministic decide() as the
server, so it needs no extra request to know whose turn it is (and checks every answer's
version). The bare target gets the same connections and the same command bodies. The
driver's own CPU share is reported next to every figure (`client_cpu_share`): it shares
the machine's cores with the server it measures.

Next to each figure, PostgreSQL's own CPU per request over the same window (every
postgres process on this machine, read the same way), when the database runs here: what
one command costs the primary, for docs/scaling.md's capacity model.

Target (printed, never asserted): command CPU per command <= 1.5x the bare endpoint's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec

from bench import PRODUCTION, database_url, redis_url, sized
from bench.cpu import Meter
from domain.bots import greedy_bot
from domain.commands import StartGame
from domain.decide import decide
from domain.evolve import fold
from domain.rules import Rules
from domain.state import NEW_GAME, Game
from harness.databases import free_port, fresh_database
from harness.processes import OPERATOR_KEY, ROOT, Service

GAMES = (8, 32, 64)
REPEATS = 3
WARMUP = sized(1.5, 0.5)  # seconds before a window: connections, prepared statements, caches
WINDOW = sized(5.0, 1.5)  # seconds counted per window
TARGET_RATIO = 1.5

_encode = msgspec.json.Encoder().encode


def run() -> dict[str, Any]:
    started = time.perf_counter()
    with fresh_database(database_url()) as scratch, servers(scratch, 1) as (bura, bare):
        samples: dict[tuple[str, int], list[dict[str, Any]]] = {}
        targets = [("bura", bura), ("bare", bare)]
        for name, target in targets:  # untimed: a fresh server's first window ran high
            asyncio.run(window(target, max(GAMES), bare=name == "bare"))
        for repeat in range(REPEATS):
            for games in GAMES:
                for name, target in targets[repeat % 2 :] + targets[: repeat % 2]:
                    figures = asyncio.run(window(target, games, bare=name == "bare"))
                    samples.setdefault((name, games), []).append(figures)
    rows = [_row(games, samples) for games in GAMES]
    worst = max(r["ratio"] for r in rows)
    print(
        f"CPU per command, bura over bare: {', '.join(str(r['ratio']) for r in rows)} at "
        f"{', '.join(map(str, GAMES))} games (target <= {TARGET_RATIO}: "
        f"{'met' if worst <= TARGET_RATIO else 'MISSED'})"
    )
    return {
        "unit": "server CPU ms per request (median of windows)",
        "settings": "production: PostgreSQL, Redis, info logging (json), rate limits, metrics",
        "repeats": REPEATS,
        "window_s": WINDOW,
        "target_ratio": TARGET_RATIO,
        "worst_ratio": worst,
        "meets_target": worst <= TARGET_RATIO,
        "cores": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
        "seconds": round(time.perf_counter() - started, 1),
        "table": rows,
    }


def _row(games: int, samples: dict[tuple[str, int], list[dict[str, Any]]]) -> dict[str, Any]:
    def median(name: str, key: str) -> float:
        return float(statistics.median(s[key] for s in samples[(name, games)]))

    bura, bare = median("bura", "cpu_ms"), median("bare", "cpu_ms")
    return {
        "games": games,
        "bura_cpu_ms": round(bura, 3),
        "bare_cpu_ms": round(bare, 3),
        "ratio": round(bura / bare, 2),
        "ratio_per_repeat": [
            round(a["cpu_ms"] / b["cpu_ms"], 2)
            for a, b in zip(samples[("bura", games)], samples[("bare", games)], strict=True)
        ],
        "bura_per_s": round(median("bura", "per_second")),
        "bare_per_s": round(median("bare", "per_second")),
        "bura_p99_ms": median("bura", "p99_ms"),
        "bura_creates": round(median("bura", "creates")),
        "bura_db_cpu_ms": _database(samples[("bura", games)]),
        "bare_db_cpu_ms": _database(samples[("bare", games)]),
        "client_cpu_share_bura": median("bura", "client_cpu_share"),
        "client_cpu_share_bare": median("bare", "client_cpu_share"),
        "errors": sum(s["errors"] for name in ("bura", "bare") for s in samples[(name, games)]),
    }


def _database(windows: list[dict[str, Any]]) -> float | None:
    """PostgreSQL's CPU per request (every process of the server, median of the windows),
    when the server runs on this machine: what the capacity model's primary carries."""
    found = [w["db_cpu_ms"] for w in windows if w.get("db_cpu_ms") is not None]
    return round(statistics.median(found), 3) if found else None


# --- the servers under test ----------------------------------------------------------


class Target:
    """Where to send commands: one base URL per replica, and the processes to meter."""

    def __init__(self, bases: Sequence[str], pids: Sequence[int]) -> None:
        self.bases, self.pids = list(bases), list(pids)


@contextmanager
def servers(database_url: str, replicas: int) -> Iterator[tuple[Target, Target]]:
    """`replicas` bura servers with production settings, and the bare baseline."""
    env = {**PRODUCTION, "BURA_DATABASE_URL": database_url, "BURA_REDIS_URL": redis_url()}
    with bura_replicas(env, replicas) as bura, bare_replicas(database_url, 1) as bare:
        yield bura, bare


@contextmanager
def bura_replicas(
    env: dict[str, str], count: int, root: Path | None = None, wrapper: Sequence[str] = ()
) -> Iterator[Target]:
    """`count` `bura serve` processes on `env`, running `root`'s code (this checkout's
    unless given), each under `wrapper`'s command if given."""
    services = [Service(env, root=root, wrapper=wrapper) for _ in range(count)]
    try:
        for service in services:
            service.start()

        async def ready() -> None:
            await asyncio.gather(*(s.ready(300.0 if wrapper else 30.0) for s in services))

        asyncio.run(ready())
        yield Target([s.url for s in services], [s.process.pid for s in services if s.process])
    finally:
        for service in services:
            service.stop()


@contextmanager
def bare_replicas(database_url: str, count: int) -> Iterator[Target]:
    """`count` bare endpoints (bench/bare.py), each a process of its own on its own port,
    on one database: the stack's own floor, for one server or for several."""
    servers: list[subprocess.Popen[bytes]] = []
    bases: list[str] = []
    try:
        for _ in range(count):
            port = free_port()
            servers.append(
                subprocess.Popen(
                    [sys.executable, "-m", "bench.bare", str(port), database_url],
                    cwd=ROOT,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
            )
            bases.append(f"http://127.0.0.1:{port}")
            # one at a time: each creates the table if it is not there yet
            _wait_ready(bases[-1], servers[-1])
        yield Target(bases, [server.pid for server in servers])
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _wait_ready(base: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            error = server.stderr.read().decode() if server.stderr else ""
            raise RuntimeError(f"{base} exited with {server.returncode}: {error[-2000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base}/health/ready", timeout=1).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{base} not ready after 30 s")


async def window(
    target: Target, games: int, bare: bool = False, think: float = 0.0, by_game: bool = False
) -> dict[str, Any]:
    """One timed window of `games` bot games on the target; its figures. With `think`,
    each game's next move follows a pause of that many seconds on average (exponential,
    not timed): the offered load is then about games / think commands a second, whatever
    the target, where without it the bots go as fast as the target answers. With
    `by_game`, a game's commands go to the replica its id hashes to, as a router that
    hashes by game would send them (docs/scaling.md); without, each seat keeps to one."""
    meter = Meter(target.pids)
    timed = Window(time.perf_counter() + WARMUP, time.perf_counter() + WARMUP + WINDOW, think)

    async def metered() -> None:
        await asyncio.sleep(timed.opens - time.perf_counter())
        with meter:
            await asyncio.sleep(timed.closes - time.perf_counter())

    if bare:
        played = [_bare_games(target, n, timed) for n in range(games)]
    else:
        played = [_bot_games(target, n, timed, by_game) for n in range(games)]
    await asyncio.gather(metered(), *played)
    figures = timed.figures()
    requests = figures["commands"] + timed.creates
    figures["creates"] = timed.creates
    figures["server_cpu_s"] = round(meter.servers, 3)
    figures["cpu_ms"] = 1000 * meter.servers / requests if requests else float("nan")
    figures["db_cpu_ms"] = (
        1000 * meter.database / requests if requests and meter.database is not None else None
    )
    figures["client_cpu_share"] = meter.client_share()
    return figures


async def rounds(
    target: Target, games: int, each: int, think: float = 0.0, by_game: bool = False
) -> Window:
    """`games` bot games at once on the target, each slot playing `each` games to their end,
    however long that takes: a known amount of work, for counts that are not of time.
    `by_game` as for `window`."""
    played = Window(0.0, float("inf"), think, games=each)
    await asyncio.gather(*(_bot_games(target, n, played, by_game) for n in range(games)))
    return played


# --- the bots ------------------------------------------------------------------------


class Window:
    """Requests whose POST started and ended between opens and closes."""

    def __init__(
        self, opens: float, closes: float, think: float = 0.0, games: int | None = None
    ) -> None:
        self.opens, self.closes = opens, closes
        self.think = think  # mean pause before each move, seconds (0: none)
        self.games = games  # games each slot starts, if not as many as the time allows
        self.latencies: list[float] = []
        self.creates = 0
        self.games_finished = 0
        self.errors = 0

    def more(self, started: int) -> bool:
        """Whether a slot that has started `started` games starts another."""
        return time.perf_counter() < self.closes and (self.games is None or started < self.games)

    def counts(self, started: float, done: float) -> bool:
        return self.opens <= started and done < self.closes

    def figures(self) -> dict[str, Any]:
        lat = sorted(self.latencies)

        def ms(q: float) -> float | None:
            return round(1000 * lat[min(len(lat) - 1, int(len(lat) * q))], 2) if lat else None

        return {
            "per_second": round(len(lat) / (self.closes - self.opens)),
            "p50_ms": ms(0.5),
            "p99_ms": ms(0.99),
            "commands": len(lat),
            "games_finished": self.games_finished,
            "errors": self.errors,
        }


async def _bot_games(target: Target, slot: int, window: Window, by_game: bool = False) -> None:
    """Bot games one after another; seat n sends on a connection of its own to replica
    (slot + n) mod replicas, as a load balancer holding each client's connection would.
    With `by_game`, the slot creates its games there too, and both seats send a game's
    commands to replica crc32(game id) mod replicas, on a connection of their own to each."""
    count = len(target.bases)
    seats = [KeepAlive.later(target.bases[(slot + n) % count]) for n in range(2)]
    each = [[KeepAlive.later(b) for b in target.bases] for _ in range(2)] if by_game else []

    def route(game_id: str) -> list[KeepAlive]:
        if not by_game:
            return seats
        replica = zlib.crc32(game_id.encode()) % count
        return [each[0][replica], each[1][replica]]

    try:
        await _play(seats[0], route, slot, window)
    finally:
        for post in seats + [post for posts in each for post in posts]:
            await post.close()


async def _play(
    creator: KeepAlive,
    route: Callable[[str], list[KeepAlive]],
    slot: int,
    window: Window,
) -> None:
    """The slot's games, each created on `creator` and played on the seats' connections
    `route` gives for its id."""
    chance = random.Random(slot)
    pauses = random.Random(-slot - 1)  # apart, so that a pace leaves the moves as they were
    games = 0
    while window.more(games):
        games += 1
        started = time.perf_counter()
        state, game_id, tokens = await _new_game(creator, f"bench-{slot}-{uuid.uuid4().hex}")
        window.creates += window.counts(started, time.perf_counter())
        seats = route(game_id)
        path = f"/games/{game_id}/commands"
        while not state.finished and time.perf_counter() < window.closes:
            if window.think:
                await asyncio.sleep(pauses.expovariate(1 / window.think))
            seat = state.deal.turn  # type: ignore[union-attr]
            # with the version it acted on, as the Python client sends every command
            command = msgspec.structs.replace(greedy_bot(state, seat, chance), seen=state.version)
            headers = {
                "Authorization": f"Bearer {tokens[seat]}",
                "Content-Type": "application/json",
                "Idempotency-Key": uuid.uuid4().hex,
            }
            started = time.perf_counter()
            status, answer = await seats[seat](path, _encode(command), headers)
            done = time.perf_counter()
            if status != 200:
                window.errors += 1
                raise RuntimeError(f"{command!r} -> {status} {answer.decode(errors='replace')}")
            if window.counts(started, done):
                window.latencies.append(done - started)
            state = fold(state, decide(state, command, seat))
            if _version(answer).version != state.version:
                raise RuntimeError(f"game {game_id}: the server is at another version")
            if state.finished and window.counts(started, done):
                window.games_finished += 1


async def _bare_games(target: Target, slot: int, window: Window) -> None:
    """The same connections, bodies and pace, on the bare endpoint (no game to follow):
    the seats take turns, each on its own connection to the same replica as a bot's."""
    seats = [KeepAlive.later(target.bases[(slot + n) % len(target.bases)]) for n in range(2)]
    body = _encode(msgspec.json.decode(b'{"type": "lead", "cards": ["AS", "KS"]}'))
    headers = {"Authorization": "Bearer " + "t" * 43, "Content-Type": "application/json"}
    pauses = random.Random(-slot - 1)
    try:
        turn = 0
        while time.perf_counter() < window.closes:
            if window.think:
                await asyncio.sleep(pauses.expovariate(1 / window.think))
            started = time.perf_counter()
            status, answer = await seats[turn](
                f"/games/bare-{slot}/commands",
                body,
                {**headers, "Idempotency-Key": uuid.uuid4().hex},
            )
            done = time.perf_counter()
            if status != 200:
                window.errors += 1
                raise RuntimeError(f"bare -> {status} {answer.decode(errors='replace')}")
            if window.counts(started, done):
                window.latencies.append(done - started)
            turn = 1 - turn
    finally:
        for post in seats:
            await post.close()


async def _new_game(post: KeepAlive, seed: str) -> tuple[Game, str, list[str]]:
    body = _encode({"seats": [{"name": "ann"}, {"name": "bob"}], "seed": seed})
    headers = {"Authorization": f"Bearer {OPERATOR_KEY}", "Content-Type": "application/json"}
    status, answer = await post("/games", body, headers)
    if status != 201:
        raise RuntimeError(f"POST /games -> {status} {answer.decode(errors='replace')}")
    created = _created(answer)
    start = StartGame(seats=("ann", "bob"), rules=Rules(), seed=seed)
    state = fold(NEW_GAME, decide(NEW_GAME, start, None))
    if state.version != created.version:
        raise RuntimeError("the server dealt another game than the replica")
    return state, created.game_id, [s.token for s in created.seats]


class _Seat(msgspec.Struct):
    token: str


class _Created(msgspec.Struct):
    game_id: str
    version: int
    seats: list[_Seat]


_created = msgspec.json.Decoder(_Created).decode


class _Version(msgspec.Struct):
    version: int


_version = msgspec.json.Decoder(_Version).decode


class KeepAlive:
    """One keep-alive HTTP/1.1 connection sending JSON POSTs and reading answers that have
    a Content-Length: all the driver needs, at a fraction of httpx's CPU per request.

    Connected when first used (`later`), as a browser's or a pool's connection is: the
    server refuses a connection that sends nothing within BURA_READ_TIMEOUT_SECONDS (a 408
    and the close), which a connection opened ahead to a replica that no game routes to
    for a while would meet, then read as its first request's answer. And connected again
    when the server closed it while it rested (its idle timeout), as a pool does."""

    def __init__(self, base: str) -> None:
        where = urlsplit(base)
        self.hostname, self.port, self.host = where.hostname, where.port, where.netloc
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    @classmethod
    async def open(cls, base: str) -> KeepAlive:
        """Connected now: the first request pays for no connection."""
        post = cls(base)
        await post._connect()
        return post

    @classmethod
    def later(cls, base: str) -> KeepAlive:
        """Connected by its first request."""
        return cls(base)

    async def _connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.hostname, self.port)

    async def __call__(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        if self.reader is None or self.writer is None or self.reader.at_eof():
            await self.close()
            await self._connect()
        assert self.reader is not None and self.writer is not None
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
        if self.writer is None:
            return
        writer, self.reader, self.writer = self.writer, None, None
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


if __name__ == "__main__":
    from bench.__main__ import render

    print(render(run()))
