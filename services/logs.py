"""Structured logs: one JSON object a line, with game id, version, seat and command id
where a record carries them (pass them as `extra=`)."""

from __future__ import annotations

import contextlib
import logging
import re
import sys
import time
from collections.abc import Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TextIO

import msgspec

from infra.throttle import Quieted
from services.config import Settings

WARN_EVERY = 10.0  # seconds between two warnings of another library's that keeps failing

# The id of the request being served (services/http/middleware.py sets it).
request_id: ContextVar[str | None] = ContextVar("request_id", default=None)


class LogContext(logging.Filter):
    """Stamps the current request id on every record logged while serving it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = request_id.get()
        return True


_FIELDS = (
    "game_id",
    "version",
    "seat",
    "command_id",
    "request_id",
    "code",
    "status",
    "method",
    "path",
    "duration_ms",
    "url",
    "store",
    "error",
    "repeats",
)


_encode = msgspec.json.Encoder(enc_hook=str).encode


class JsonFormatter(logging.Formatter):
    """One JSON object a line, encoded by msgspec in one call; the time's text is made
    once a second (only its milliseconds change within one)."""

    def __init__(self) -> None:
        super().__init__()
        self._second = -1
        self._prefix = ""

    def _time(self, created: float) -> str:
        second = int(created)
        if second != self._second:
            at = datetime.fromtimestamp(second, UTC).isoformat()
            self._second, self._prefix = second, at[:-6]  # without "+00:00"
        return f"{self._prefix}.{int((created - second) * 1000):03d}+00:00"

    def line(
        self, created: float, level: str, logger: str, message: str, fields: Mapping[str, object]
    ) -> dict[str, object]:
        """A line's fields, in the order every line gives them."""
        line: dict[str, object] = {
            "time": self._time(created),
            "level": level,
            "logger": logger,
            "message": message,
        }
        for field in _FIELDS:
            value = fields.get(field)
            if value is not None:
                line[field] = value
        return line

    def format(self, record: logging.LogRecord) -> str:
        line = self.line(
            record.created,
            record.levelname.lower(),
            record.name,
            record.getMessage(),
            {field: getattr(record, field, None) for field in _FIELDS},
        )
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return _encode(line).decode()


# The handler `configure` set up for JSON lines, while it is the only place lines go.
_lines: logging.StreamHandler[TextIO] | None = None


def info(logger: logging.Logger, message: str, fields: Mapping[str, object]) -> None:
    """An info line with its fields (those of _FIELDS), as `logger.info(message,
    extra=fields)` would log it, at a fraction of its cost: one a command is the busiest
    line the server writes. While lines go, as `configure` set them up, as JSON to one
    stream and nowhere else, the line is encoded and written here: no record, no
    formatting work thrown away, byte for byte the line the record would give. Else (a
    handler or filter added since, text lines) it is an ordinary record."""
    if not logger.isEnabledFor(logging.INFO):
        return
    handler = _lines
    if handler is None or not _plain(logger, handler):
        logger.info("%s", message, extra=fields)
        return
    formatter = handler.formatter
    assert isinstance(formatter, JsonFormatter)
    if fields.get("request_id") is None:
        fields = {**fields, "request_id": request_id.get()}
    text = _encode(formatter.line(time.time(), "info", logger.name, message, fields)).decode()
    with handler.lock or contextlib.nullcontext():
        try:
            handler.stream.write(text + handler.terminator)
            handler.stream.flush()
        except Exception:  # a line that cannot be written stops nothing, as in logging
            said = {"name": logger.name, "msg": message, "levelno": logging.INFO}
            handler.handleError(logging.makeLogRecord(said))


def _plain(logger: logging.Logger, handler: logging.Handler) -> bool:
    """Whether a record of `logger` would meet only `handler`, and no filter but its
    LogContext, as `configure` left them."""
    current: logging.Logger | None = logger
    while current is not None and current is not logging.root:
        if current.handlers or current.filters or current.disabled or not current.propagate:
            return False
        current = current.parent
    root = logging.root
    return (
        len(root.handlers) == 1
        and root.handlers[0] is handler
        and not root.filters
        and handler.level <= logging.INFO
        and len(handler.filters) == 1
        and isinstance(handler.filters[0], LogContext)
    )


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class TextFormatter(logging.Formatter):
    """Text lines (`BURA_LOG_FORMAT=text`) whose message is one line whatever it holds: a
    control character (a line break in a path a client sent, `%0a`) is written escaped
    (`\\n`), so that nobody writes a line of their own into the log. A traceback after
    it stays as Python writes it."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = _CONTROL.sub(_escaped, record.message)
        return super().formatMessage(record)


def _escaped(found: re.Match[str]) -> str:
    return repr(found.group())[1:-1]  # "\n", "\r", "\t", "\x00"


def configure(settings: Settings) -> None:
    global _lines
    handler = logging.StreamHandler(sys.stderr)
    _lines = None
    if settings.log_format == "json":
        handler.setFormatter(JsonFormatter())
        _lines = handler
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    handler.addFilter(LogContext())
    # What no line shows, and the logging module would otherwise find out for every record
    # (the calling file, line and function, the thread and the process): about a third of
    # a line's cost, two lines a command (the logging HOWTO's "Optimization").
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level.upper())
    # the webhook client's own line per attempt ("HTTP Request: POST ..."): the dispatcher
    # logs what an attempt came to, and the delivery log keeps every attempt; at debug,
    # everything
    for chatty in ("httpx", "httpcore"):
        quiet = root.level > logging.DEBUG
        logging.getLogger(chatty).setLevel(logging.WARNING if quiet else logging.NOTSET)
    # asyncpg's pool warns, with a traceback, each time it fails to reconnect (every second
    # or two while the store is out of reach): at most once a period, as the server's own
    pool = logging.getLogger("asyncpg.pool")
    pool.filters[:] = [f for f in pool.filters if not isinstance(f, Quieted)]
    pool.addFilter(Quieted(WARN_EVERY))
