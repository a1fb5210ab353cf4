"""PostgreSQL faults for tests: a proxy that reads the wire protocol and strikes exactly an
append's answer after the server committed it, and a private server a test may stop,
restart and kill (never the shared one).

The proxy understands just enough of the protocol (version 3, no TLS: give the client
`sslmode=disable`): the client's Parse and Bind messages, to tell when an append (a
bura_append function, or the store's INSERT INTO events) is executed, and the server's
ReadyForQuery, sent once that statement's implicit transaction has committed. Only then
does it apply a fault: hold the answer back for a while (the client's timeout fires, the
data is in the store), or drop the answer and reset both connections (the client sees a
broken connection, the data is in the store).
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import pwd
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import asyncpg

from harness.databases import free_port
from harness.processes import Proxy

STARTUP_CODES = {80877103, 80877102, 80877104}  # SSLRequest, CancelRequest, GSSENCRequest


@dataclass
class Fault:
    """What to do to the answer of the next appends, once each: hold it back `seconds`
    (delay), or drop it and reset both connections (reset), then, given `seconds`, refuse
    and drop every connection for that long (the network down a moment after)."""

    action: Literal["delay", "reset"]
    seconds: float = 0.0


@dataclass
class _Wire:
    """One client connection's protocol state."""

    started: bool = False  # the startup message has gone by
    client: bytearray = field(default_factory=bytearray)
    server: bytearray = field(default_factory=bytearray)
    appends: set[bytes] = field(default_factory=set)  # prepared statements of bura_append
    unnamed_append: bool = False  # the unnamed statement is a bura_append
    armed: Fault | None = None  # the fault for the append now executing


class PostgresProxy(Proxy):
    """A Proxy (cut, pause) that can also strike the answers of appends after commit."""

    def __init__(self, target_host: str, target_port: int) -> None:
        super().__init__(target_host, target_port)
        self.faults: deque[Fault] = deque()
        self.struck: list[Fault] = []  # faults applied, in order
        self.appends = 0  # appends seen executing

    def strike(self, *faults: Fault) -> None:
        """Apply these to the answers of the next appends, one each."""
        self.loop.call_soon_threadsafe(self.faults.extend, faults)

    def close(self) -> None:
        async def settle() -> None:
            current = asyncio.current_task()
            for _ in range(3):  # a connection accepted as the server closed starts one more
                pipes = [t for t in asyncio.all_tasks() if t is not current]
                for task in pipes:
                    task.cancel()
                await asyncio.gather(*pipes, return_exceptions=True)
                await asyncio.sleep(0)

        self.resume()
        with contextlib.suppress(Exception):
            self._call(self._cut())
            self._call(settle())
        super().close()

    async def _down_for(self, seconds: float) -> None:
        await self._cut()
        self.loop.call_later(seconds, lambda: asyncio.ensure_future(self._listen()))

    def via(self, url: str) -> str:
        base = super().via(url)
        return base + ("&" if "?" in base else "?") + "sslmode=disable"

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self.pipes |= {writer, up_writer}
        wire = _Wire()

        def reset() -> None:
            writer.transport.abort()
            up_writer.transport.abort()

        async def upstream() -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await reader.read(65536):
                    await self.flowing.wait()
                    self._from_client(wire, data)
                    up_writer.write(data)
                    await up_writer.drain()
            up_writer.transport.abort()

        async def downstream() -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await up_reader.read(65536):
                    await self.flowing.wait()
                    fault, data = self._from_server(wire, data)
                    if fault is not None and fault.action == "reset":
                        reset()
                        if fault.seconds:
                            await self._down_for(fault.seconds)
                        return
                    if fault is not None:
                        await asyncio.sleep(fault.seconds)
                    writer.write(data)
                    await writer.drain()
            writer.transport.abort()

        await asyncio.gather(upstream(), downstream())
        self.pipes -= {writer, up_writer}

    def _from_client(self, wire: _Wire, data: bytes) -> None:
        wire.client += data
        while True:
            if not wire.started:
                if len(wire.client) < 8:
                    return
                length, code = struct.unpack("!ii", wire.client[:8])
                if len(wire.client) < length:
                    return
                del wire.client[:length]
                wire.started = code not in STARTUP_CODES
                continue
            if len(wire.client) < 5:
                return
            kind = wire.client[:1]
            (length,) = struct.unpack("!i", wire.client[1:5])
            if len(wire.client) < 1 + length:
                return
            body = bytes(wire.client[5 : 1 + length])
            del wire.client[: 1 + length]
            if kind == b"P":  # Parse: statement name, query
                name, _, rest = body.partition(b"\0")
                query = rest.partition(b"\0")[0]
                is_append = b"bura_append" in query or query.startswith(b"INSERT INTO events")
                if name:
                    (wire.appends.add if is_append else wire.appends.discard)(name)
                else:
                    wire.unnamed_append = is_append
            elif kind == b"B":  # Bind: portal name, statement name
                statement = body.split(b"\0", 2)[1]
                if (statement in wire.appends) or (not statement and wire.unnamed_append):
                    self.appends += 1
                    if self.faults and wire.armed is None:
                        wire.armed = self.faults.popleft()

    def _from_server(self, wire: _Wire, data: bytes) -> tuple[Fault | None, bytes]:
        """The fault to apply to this chunk, when it ends the armed append's answer."""
        if wire.armed is None:
            return None, data
        wire.server += data
        while len(wire.server) >= 5:
            kind = wire.server[:1]
            (length,) = struct.unpack("!i", wire.server[1:5])
            if len(wire.server) < 1 + length:
                break
            del wire.server[: 1 + length]
            if kind == b"Z":  # ReadyForQuery: the append's transaction has ended
                fault, wire.armed = wire.armed, None
                wire.server.clear()
                self.struck.append(fault)
                return fault, data
        return None, data


# --- a private server ---------------------------------------------------------------------


def postgres_binary(name: str) -> str | None:
    dirs = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda d: int(Path(d).parent.name) if Path(d).parent.name.isdigit() else 0,
        reverse=True,
    )
    for d in dirs:
        if os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    return shutil.which(name)


class PostgresServer:
    """A PostgreSQL cluster of the test's own in a temporary directory, on a fixed port so
    that it comes back there after a restart. Run as an unprivileged account when the
    tests run as root (PostgreSQL refuses root).

    `standby_of` a running one: a hot standby of it, copied by pg_basebackup and streaming
    its write-ahead log from then on (read-only; `replay(False)` holds it where it is)."""

    def __init__(self, standby_of: PostgresServer | None = None) -> None:
        initdb, postgres = postgres_binary("initdb"), postgres_binary("postgres")
        basebackup = postgres_binary("pg_basebackup")
        if not (initdb and postgres and basebackup):
            raise RuntimeError("no initdb/postgres binaries: this test needs a private server")
        self.postgres = postgres
        # not under the test's own directory: the server's account must be able to reach it
        home = Path(tempfile.mkdtemp(prefix="bura-pg-"))
        self.home = home
        self.data = home / "data"
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.user = _unprivileged() if os.geteuid() == 0 else None
        if self.user is not None:
            os.chown(home, self.user.pw_uid, self.user.pw_gid)
        if standby_of is None:  # initdb's trust also lets 127.0.0.1 connect for replication
            make = [initdb, "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync"]
        else:
            make = [basebackup, "-h", "127.0.0.1", "-p", str(standby_of.port), "-U", "postgres"]
            make += ["-D", str(self.data), "--write-recovery-conf", "--wal-method=stream"]
            make += ["--no-sync"]
        init = subprocess.run(make, capture_output=True, text=True, check=False, **self._as())
        if init.returncode != 0:
            raise RuntimeError(f"{Path(make[0]).name} failed: {init.stderr.strip()[-500:]}")

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self, timeout: float = 30.0) -> PostgresServer:
        log = self.home / "postgres.log"
        seen = log.stat().st_size if log.exists() else 0
        args = [self.postgres, "-D", str(self.data), "-p", str(self.port), "-k", str(self.home)]
        for setting in ("listen_addresses=127.0.0.1", "fsync=off", "max_connections=60"):
            args += ["-c", setting]
        with open(log, "ab") as out:
            self.process = subprocess.Popen(
                args, stdout=out, stderr=subprocess.STDOUT, **self._as()
            )
        deadline = time.monotonic() + timeout
        # "ready to accept connections", or "read-only connections" for a standby
        while b"ready to accept" not in log.read_bytes()[seen:]:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"postgres on {self.port} did not start: {self.log()}")
            time.sleep(0.05)
        return self

    def stop(self, sig: signal.Signals = signal.SIGINT) -> None:
        """SIGINT is a fast shutdown (sessions are ended, the data is clean); SIGQUIT an
        immediate one, like a crash: the next start recovers from the write-ahead log."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def restart(self, sig: signal.Signals = signal.SIGINT) -> None:
        self.stop(sig)
        self.start()

    async def replay(self, on: bool) -> None:
        """A standby: go on replaying what the primary writes, or hold where it is."""
        conn = await asyncpg.connect(self.url)
        try:
            await conn.execute(f"SELECT pg_wal_replay_{'resume' if on else 'pause'}()")
        finally:
            await conn.close()

    async def caught_up(self, primary: PostgresServer, timeout: float = 30.0) -> None:
        """A standby: wait until it has replayed everything the primary has written."""
        source = await asyncpg.connect(primary.url)
        try:
            written = await source.fetchval("SELECT pg_current_wal_lsn()::text")
        finally:
            await source.close()
        conn = await asyncpg.connect(self.url)
        try:
            async with asyncio.timeout(timeout):
                while not await conn.fetchval(
                    "SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn", written
                ):
                    await asyncio.sleep(0.02)
        finally:
            await conn.close()

    def log(self) -> str:
        try:
            return (self.home / "postgres.log").read_text(errors="replace")[-2000:]
        except OSError:
            return "(no log)"

    def remove(self) -> None:
        """Stop the server and delete its cluster."""
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)

    def _as(self) -> dict[str, Any]:
        if self.user is None:
            return {}
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}


def _unprivileged() -> pwd.struct_passwd:
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise RuntimeError("running as root and no 'postgres' or 'nobody' account to run as")
