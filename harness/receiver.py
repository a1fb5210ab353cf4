"""A webhook receiver for tests and benchmarks: an HTTP server on 127.0.0.1, on a thread of
its own, that keeps every request it gets and answers each as the test says."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.databases import free_port


@dataclass
class Received:
    path: str
    headers: dict[str, str]  # names in lower case
    body: bytes
    at: float = field(default_factory=time.monotonic)

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def delivery_id(self) -> str:
        return self.headers.get("bura-delivery", "")


# answer(request, how many times its delivery id has come, this one included) -> status
Answer = Callable[[Received, int], int]


def always_ok(request: Received, count: int) -> int:
    return 200


class Receiver:
    def __init__(self, answer: Answer = always_ok, delay: float = 0.0) -> None:
        self.answer = answer
        self.delay = delay  # seconds to sit on each request before answering
        self.received: list[Received] = []
        self.answered: list[tuple[str, int]] = []  # (delivery id, status) as answered
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self.port = free_port()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                request = Received(
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length),
                )
                with receiver._lock:
                    receiver._counts[request.delivery_id] += 1
                    count = receiver._counts[request.delivery_id]
                    receiver.received.append(request)
                if receiver.delay:
                    time.sleep(receiver.delay)
                status = receiver.answer(request, count)
                with receiver._lock:
                    receiver.answered.append((request.delivery_id, status))
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def requests(self) -> list[Received]:
        with self._lock:
            return list(self.received)

    def delivered(self) -> dict[str, Received]:
        """The first request of each delivery id that was answered with a 2xx."""
        with self._lock:
            ok = {i for i, status in self.answered if 200 <= status < 300}
            found: dict[str, Received] = {}
            for r in self.received:
                if r.delivery_id in ok:
                    found.setdefault(r.delivery_id, r)
            return found

    async def wait_for(self, test: Callable[[Receiver], bool], timeout: float = 60.0) -> None:
        """Until test(receiver) holds; AssertionError after the timeout."""
        deadline = time.monotonic() + timeout
        while not test(self):
            if time.monotonic() > deadline:
                raise AssertionError(f"the receiver did not get what was awaited: {self.summary()}")
            await asyncio.sleep(0.05)

    def summary(self) -> str:
        with self._lock:
            kinds = Counter(r.headers.get("bura-event", "?") for r in self.received)
            return f"{len(self.received)} requests {dict(kinds)}, answers {self.answered[-5:]}"
