"""A warning about something that keeps failing, said at most once a period.

An outage (Redis gone, a standby unreadable, the store out of reach) fails every request
or every hint that meets it; a line for each would bury the log the on-call SRE reads.
`Throttled` says the first at once and then at most one line every `every` seconds, each
with how many times it was due since the line before (`repeats` in the JSON log)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from typing import Any


class Throttled:
    def __init__(self, log: logging.Logger, every: float) -> None:
        self.log, self.every = log, every
        self._said = -math.inf  # when the last line was written
        self._due = 0  # warnings due since then, this one included

    def warn(self, text: str, *args: object, extra: Mapping[str, Any] | None = None) -> bool:
        """Says `text % args` now if the last line is `every` seconds old, else counts it;
        whether it was said."""
        self._due += 1
        now = time.monotonic()
        if now - self._said < self.every:
            return False
        repeats, self._due, self._said = self._due - 1, 0, now
        fields = dict(extra or {})
        if repeats:
            text += " (and %d more like it since the last line)"
            args = (*args, repeats)
            fields["repeats"] = repeats
        self.log.warning(text, *args, extra=fields)
        return True


class Quieted(logging.Filter):
    """`Throttled` for another library's logger (asyncpg's pool retrying its connections
    every second while the store is out of reach): its warnings pass at most once every
    `every` seconds, each with how many were held back since the one before (`repeats`)."""

    def __init__(self, every: float) -> None:
        super().__init__()
        self.every = every
        self._said = -math.inf
        self._held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        now = time.monotonic()
        if now - self._said < self.every:
            self._held += 1
            return False
        if self._held:
            record.repeats = self._held
        self._said, self._held = now, 0
        return True
