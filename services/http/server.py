"""Serving the API with uvicorn: adapters opened for the process, graceful SIGTERM."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
from collections.abc import Sequence
from types import FrameType

import uvicorn
from litestar import Litestar

from services.config import Settings
from services.http.app import create_app
from services.http.connections import bounded_protocol
from services.logs import configure

log = logging.getLogger("bura")


class Server(uvicorn.Server):
    """uvicorn, telling the app's projector of SIGTERM/SIGINT at once.

    uvicorn stops accepting and then waits for open connections before the app's lifespan
    shutdown runs; live streams never close by themselves, so the projector must end them
    (with a final `event: shutdown`) as soon as the signal comes. A stop by signal is the
    normal way out: the process exits 0 rather than re-raising the signal.
    """

    def __init__(self, config: uvicorn.Config, app: Litestar, banner: Sequence[str] = ()) -> None:
        super().__init__(config)
        self.app = app
        self.loop: asyncio.AbstractEventLoop | None = None
        self.banner = banner

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Serving: uvicorn runs this once the app's start-up (its store, its Redis) has
        succeeded, so the banner never announces a server that then fails to start."""
        await super().startup(sockets)
        if not self.should_exit:
            for line in self.banner:
                print(line, flush=True)

    async def serve(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
        self.loop = asyncio.get_running_loop()
        await super().serve(sockets)  # type: ignore[arg-type]

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # A signal handler runs between two bytecodes of the loop's own thread: hand the
        # work to the loop rather than touch its objects from here.
        runtime = getattr(self.app.state, "runtime", None)
        if runtime is not None and self.loop is not None:
            self.loop.call_soon_threadsafe(runtime.drain)
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        else:
            if not self.should_exit:
                log.info("stopping: draining connections", extra={"code": f"signal {sig}"})
            self.should_exit = True


def listening(host: str, port: int, peer_timeout: float | None = None) -> socket.socket:
    """The server's socket, bound before anything else starts: a port already taken stops
    `bura serve` at once (uvicorn would find out only after the app, its pool and its Redis
    were up, and then hang on their shutdown).

    `peer_timeout` (seconds): TCP_USER_TIMEOUT, which every accepted connection takes from
    the listening socket on Linux: data left unacknowledged this long drops the connection.
    A stream's keep-alives are such data, so a stream whose peer vanished without closing
    ends within a keep-alive period plus this (the kernel alone retransmits for about 15
    minutes), and its seat's presence with it. Where the system has no such option it is
    left out."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if peer_timeout is not None and hasattr(socket, "TCP_USER_TIMEOUT"):
            milliseconds = max(1, round(peer_timeout * 1000))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, milliseconds)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def warn_of_short_grace(settings: Settings) -> bool:
    """Whether a request in flight at SIGTERM may outlast the grace (it may run to its
    deadline: cut off then, a command is answered `outcome_unknown`, services/http/cutoff.py);
    said in the log at start if so."""
    if settings.shutdown_grace_seconds > settings.request_deadline_seconds:
        return False
    log.warning(
        "BURA_SHUTDOWN_GRACE_SECONDS=%g is not longer than BURA_REQUEST_DEADLINE_SECONDS=%g:"
        " a request in flight at shutdown may be cut off (503, a command's outcome unknown)",
        settings.shutdown_grace_seconds,
        settings.request_deadline_seconds,
    )
    return True


def serve(settings: Settings, command: str = "serve") -> int:
    """`command`: the `bura` command that serves (`serve`, `demo`), as its failures say."""
    configure(settings)
    try:
        sock = listening(settings.host, settings.port, settings.peer_timeout_seconds)
    except OSError as e:
        print(
            f"bura {command}: cannot listen on {settings.host}:{settings.port}: {e.strerror or e}",
            file=sys.stderr,
            flush=True,
        )
        return 1
    app = create_app(settings)
    where = "PostgreSQL" if settings.database_url else f"SQLite file {settings.sqlite_path}"
    where += " + Redis" if settings.redis_url else " + in-process bus"
    url = f"http://{settings.host}:{settings.port}"
    banner = [
        f"Bura server on {url}  ({where})",
        f"OpenAPI: {url}/schema/openapi.json  API reference: {url}/schema/swagger",
        f"operator key (generated; set BURA_OPERATOR_KEY to fix it): {settings.operator_key}"
        if settings.operator_key_generated
        else "operator key: from BURA_OPERATOR_KEY",
    ]
    log.info("starting", extra={"url": url, "store": where})
    warn_of_short_grace(settings)
    config = uvicorn.Config(
        app,
        log_config=None,
        timeout_graceful_shutdown=int(settings.shutdown_grace_seconds),
        timeout_keep_alive=max(1, round(settings.idle_timeout_seconds)),
        http=bounded_protocol(settings),
        access_log=False,
    )
    Server(config, app, banner).run(sockets=[sock])
    return 0
