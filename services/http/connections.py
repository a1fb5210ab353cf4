"""HTTP connections held to bounds before the app sees a byte: the request line and
headers are bounded in size (BURA_MAX_HEADER_BYTES) and number (BURA_MAX_HEADERS), 431
above either; a request must arrive whole within BURA_READ_TIMEOUT_SECONDS, else 408 and
the connection is closed (a client sending a byte now and then holds no connection for
long); an idle keep-alive connection closes after BURA_IDLE_TIMEOUT_SECONDS (uvicorn's
keep-alive timeout)."""

from __future__ import annotations

import asyncio
from typing import Any

import httptools
import msgspec
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from services.config import Settings
from services.http.middleware import new_request_id
from services.http.problems import PROBLEM_JSON, details

# How long a refused connection's input is still read (and dropped) before it is closed.
LINGER_SECONDS = 2.0

_REASONS = {400: b"Bad Request", 408: b"Request Timeout", 431: b"Request Header Fields Too Large"}


def _refusal(status: int, code: str, detail: str, instance: str | None = None) -> bytes:
    """The refusal as every other error is answered: RFC 9457 problem details (`instance`
    once the request line has arrived whole), a request id of its own (the caller's cannot
    be told from a request not read whole), and `Vary: Origin`, which a server allowing
    origins puts on every answer and no other is harmed by."""
    body = msgspec.json.encode(details(code, detail, instance=instance))
    head = (
        f"HTTP/1.1 {status} ".encode() + _REASONS[status] + b"\r\n"
        b"content-type: " + PROBLEM_JSON.encode() + b"\r\n"
        b"x-request-id: " + new_request_id().encode() + b"\r\n"
        b"vary: Origin\r\n"
        b"connection: close\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    return head + body


class _Closing:
    """The transport a request that ends its connection (`Connection: close`, HTTP/1.0) is
    answered through: closed before its body has arrived whole (a 413, a 401 that never
    read it), the connection ends our side and drops the rest for a moment instead, so the
    client reads the answer rather than a reset."""

    __slots__ = ("_close", "_transport")

    def __init__(self, transport: asyncio.Transport, close: Any) -> None:
        self._transport, self._close = transport, close

    def write(self, data: bytes) -> None:
        self._transport.write(data)

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def close(self) -> None:
        self._close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def bounded_protocol(settings: Settings) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol with the settings' bounds."""

    class Bounded(HttpToolsProtocol):
        """Every request pays for what it reads through here, so the bounds cost little:
        the headers are counted once the head is complete (its size, bounded as it
        grows, bounds their number meanwhile), and one read timer a connection is moved
        lazily (a request's arrival sets when its reading must end; the timer, when it
        fires early, is set again for that moment) instead of one made and cancelled a
        request."""

        max_header_bytes = settings.max_header_bytes
        max_headers = settings.max_headers
        read_timeout = settings.read_timeout_seconds

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._head_bytes = 0  # of the request being read, while its head is
            self._in_head = True
            self._heads_done = 0  # heads completed on this connection
            self._body_done = True  # the request being read has arrived whole
            self._refused = False
            self._begun = False  # a request has begun arriving and is not yet whole
            self._line_whole = False  # the request line being read has arrived whole
            self._read_timer: asyncio.TimerHandle | None = None
            self._read_by: float | None = None  # loop time a request being read must end

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._start_reading()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_reading()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            was_in_head, heads_done = self._in_head, self._heads_done
            super().data_received(data)
            # The parser keeps a header it has not finished in memory: bound it as it grows.
            # Only a chunk that began and ended inside one head is all head; a chunk in
            # which a head completed also held a body or other requests (those heads were
            # measured exactly as they completed), and a head it left unfinished is
            # counted from the next chunk on, so it is held to at most one read more.
            if self._refused or not (was_in_head and self._in_head):
                return
            if self._heads_done != heads_done:
                return
            self._head_bytes += len(data)
            if self._head_bytes > self.max_header_bytes:
                self._refuse(431, f"the request's headers exceed {self.max_header_bytes} bytes")

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._in_head, self._head_bytes, self._line_whole = True, 0, False
            self._begun = True
            if self._read_by is None:
                self._start_reading()

        def on_headers_complete(self) -> None:
            if self._refused:
                return
            self._heads_done += 1
            self._line_whole = True
            if len(self.headers) > self.max_headers:
                self._refuse(431, f"the request has more than {self.max_headers} headers")
                return
            size = len(self.url) + sum(len(n) + len(v) + 4 for n, v in self.headers)
            if size > self.max_header_bytes:
                self._refuse(431, f"the request's headers exceed {self.max_header_bytes} bytes")
                return
            self._in_head, self._body_done = False, False
            super().on_headers_complete()
            if not self.cycle.keep_alive:
                self.cycle.transport = _Closing(self.transport, self._close_gently)  # type: ignore[assignment]

        def on_body(self, body: bytes) -> None:
            if not self._refused:
                super().on_body(body)

        def on_message_complete(self) -> None:
            self._read_by = None  # read whole: the timer, if it fires, lets it be
            self._in_head, self._head_bytes, self._body_done = True, 0, True
            self._begun = False  # its url and headers are no next request's
            if not self._refused:
                super().on_message_complete()

        def _start_reading(self) -> None:
            self._read_by = self.loop.time() + self.read_timeout
            if self._read_timer is None:
                self._read_timer = self.loop.call_at(self._read_by, self._look)

        def _stop_reading(self) -> None:
            self._read_by = None
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None

        def _look(self) -> None:
            """The read timer: a request still being read has had its time, or the timer
            is set again for when it will have; between requests it rests until the next
            one arrives."""
            self._read_timer = None
            if self._read_by is None:
                return
            if self._read_by > self.loop.time():
                self._read_timer = self.loop.call_at(self._read_by, self._look)
                return
            self._read_by = None
            self._too_slow()

        def _too_slow(self) -> None:
            if self.transport.is_closing():
                return
            # A request whose body is late is the app's already: it sees the client gone.
            handling = self.cycle is not None and not self.cycle.response_complete
            if handling or self._refused:
                self.transport.close()
                return
            self._refuse(408, f"the request did not arrive within {self.read_timeout:g} seconds")

        def send_400_response(self, msg: str) -> None:
            """What the parser could not read as HTTP (a control character in a header,
            a malformed request line): answered as every other refusal, not in uvicorn's
            plain text."""
            if self._refused or self.transport.is_closing():
                return
            self._refuse(400, f"the request is not valid HTTP/1.1 ({msg.rstrip('.')})")

        def _refuse(self, status: int, detail: str) -> None:
            self._refused = True
            self._stop_reading()
            code = {400: "bad_request", 431: "headers_too_large"}.get(status, "request_timeout")
            self.transport.write(_refusal(status, code, detail, self._instance()))
            self._linger()

        def _instance(self) -> str | None:
            """The path the refused request was sent to, as the app's answers give it
            (percent-encoding kept, no query), once its request line has arrived whole:
            a header parsed after it, or the head complete. None before that."""
            url: bytes = getattr(self, "url", b"")
            if not self._begun or not (self._line_whole or self.headers) or not url:
                return None
            try:
                path = httptools.parse_url(url).path
            except httptools.HttpParserInvalidURLError:
                return None
            return path.decode("latin-1") if path else None

        def _close_gently(self) -> None:
            if self._body_done or self.transport.is_closing():
                self.transport.close()
                return
            self._refused = True  # what still comes of the body is dropped
            self._stop_reading()
            self._linger()

        def _linger(self) -> None:
            # A close with unread input resets the connection, and the client may lose the
            # answer with it: end our side, drop what still comes for a moment, then close.
            if self.transport.can_write_eof():
                self.transport.write_eof()
            self.loop.call_later(LINGER_SECONDS, self.transport.close)

    return Bounded
