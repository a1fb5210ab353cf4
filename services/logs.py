"""Structured logs: one JSON object a line, with game id, version, seat and command id
where a record carries them (pass them as `extra=`)."""

from __future__ import annotations

import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime

import msgspec

from services.config import Settings

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

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": self._time(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in _FIELDS:
            value = getattr(record, field, None)
            if value is not None:
                line[field] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return _encode(line).decode()


def configure(settings: Settings) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if settings.log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
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
