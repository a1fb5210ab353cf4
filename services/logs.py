"""Structured logs: one JSON object a line, with game id, version, seat and command id
where a record carries them (pass them as `extra=`)."""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime

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


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
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
        return json.dumps(line, ensure_ascii=False, default=str)


def configure(settings: Settings) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if settings.log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    handler.addFilter(LogContext())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level.upper())
