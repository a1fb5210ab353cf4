"""Real processes for end-to-end tests: the Bura service, a Redis server of the test's own
that it may kill, and a TCP proxy that cuts a service off from PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx

from harness.databases import free_port

ROOT = Path(__file__).resolve().parents[1]
OPERATOR_KEY = "operator-key-of-the-e2e-tests"
OPERATOR = {"Authorization": f"Bearer {OPERATOR_KEY}"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Service:
    """`python -m services.cli serve` on its own port; stderr goes to a log file."""

    def __init__(
        self,
        env: Mapping[str, str],
        port: int | None = None,
        log_dir: Path | None = None,
        root: Path | None = None,
        wrapper: Sequence[str] = (),
        host: str = "127.0.0.1",
    ) -> None:
        self.root = root or ROOT  # the checkout whose code runs (bench/ab.py runs two)
        self.wrapper = list(wrapper)  # a command the server runs under (bench/work.py: valgrind)
        self.port = port or free_port()
        # `host`: where it listens (harness/vanishing.py: every address); `url` is loopback
        given = {**os.environ, **env, "BURA_PORT": str(self.port), "BURA_HOST": host}
        # a setting given as "" is left unset (the server refuses an empty URL)
        self.env = {k: v for k, v in given.items() if v != ""}
        self.env.setdefault("BURA_OPERATOR_KEY", OPERATOR_KEY)
        self.env.setdefault("BURA_LOG_FORMAT", "text")
        self.env.setdefault("BURA_LOG_LEVEL", "warning")
        # Tests and benchmarks send bursts from one address; the rate-limit tests turn the
        # limits on themselves.
        self.env.setdefault("BURA_RATE_LIMITS", "false")
        self.log_path = (log_dir or Path(tempfile.mkdtemp(prefix="bura-e2e-"))) / (
            f"service-{self.port}.log"
        )
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Service:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [*self.wrapper, sys.executable, "-m", "services.cli", "serve"],
                cwd=self.root,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return self

    async def ready(self, timeout: float = 30.0) -> Service:
        """Wait until /health/ready answers 200."""
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=2.0) as client:
            while True:
                if self.process is not None and self.process.poll() is not None:
                    raise RuntimeError(f"service exited {self.process.returncode}: {self.log()}")
                with contextlib.suppress(httpx.TransportError):
                    if (await client.get(f"{self.url}/health/ready")).status_code == 200:
                        return self
                if time.monotonic() > deadline:
                    raise RuntimeError(f"service on {self.port} not ready: {self.log()}")
                await asyncio.sleep(0.05)

    def signal(self, sig: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(sig)

    async def wait(self, timeout: float = 30.0) -> int:
        """The exit code, once the process has ended."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"service on {self.port} still running after {timeout}s")
            await asyncio.sleep(0.02)
        return self.process.returncode

    def kill(self) -> None:
        """SIGKILL: the process dies at once, mid-request."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it lingers: for cleanup."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-3000:]
        except OSError:
            return "(no log)"


class RedisServer:
    """A redis-server of the test's own, on a fixed port so that it can come back there."""

    def __init__(self, home: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not on PATH: the fault tests need one")
        self.binary = binary
        self.port = free_port()
        home.mkdir(parents=True, exist_ok=True)
        self.home = str(home)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                self.home,
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not self._pings():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"redis-server on {self.port} did not start")
            time.sleep(0.02)
        return self

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def _pings(self) -> bool:
        import socket

        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False


class Proxy:
    """A TCP proxy on its own thread and event loop; cut() refuses and drops every
    connection (the network fails, the servers keep running), restore() heals it;
    pause() holds every byte in flight (a stalled network), resume() lets them go."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server: asyncio.Server | None = None
        self.pipes: set[asyncio.StreamWriter] = set()
        self.held = 0  # messages that arrived while paused
        self.flowing = asyncio.Event()
        self.flowing.set()

    @classmethod
    def before(cls, url: str) -> Proxy:
        """A proxy to the server of `url` (its host and port)."""
        parts = urlsplit(url)
        return cls(parts.hostname or "127.0.0.1", parts.port or 5432)

    def via(self, url: str) -> str:
        """`url` with the proxy in place of its server."""
        parts = urlsplit(url)
        user, at, _ = parts.netloc.rpartition("@")
        return urlunsplit(parts._replace(netloc=f"{user}{at}127.0.0.1:{self.port}"))

    def start(self) -> Proxy:
        self.thread.start()
        self._call(self._listen())
        return self

    def cut(self) -> None:
        self._call(self._cut())

    def restore(self) -> None:
        self._call(self._listen())

    def pause(self) -> None:
        self.loop.call_soon_threadsafe(self.flowing.clear)

    def resume(self) -> None:
        self.loop.call_soon_threadsafe(self.flowing.set)

    def close(self) -> None:
        self._call(self._cut())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)

    def _call(self, work: object) -> None:
        asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout=10)  # type: ignore[arg-type]

    async def _listen(self) -> None:
        self.server = await asyncio.start_server(
            self._pipe, "127.0.0.1", self.port, reuse_address=True
        )

    async def _cut(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
        for writer in list(self.pipes):
            writer.transport.abort()
        self.pipes.clear()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self.pipes |= {writer, up_writer}

        async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await src.read(65536):
                    if not self.flowing.is_set():
                        self.held += 1  # a message is waiting on the pause
                    await self.flowing.wait()
                    dst.write(data)
                    await dst.drain()
            dst.transport.abort()

        await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))
        self.pipes -= {writer, up_writer}
