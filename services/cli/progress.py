"""A progress bar on stderr for long CLI runs; silent when stderr is not a terminal."""

from __future__ import annotations

import sys
from typing import TextIO


class Progress:
    def __init__(
        self, label: str, total: int, stream: TextIO | None = None, width: int = 30
    ) -> None:
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.shown = -1
        self.enabled = self.stream.isatty() and total >= 50

    def __call__(self, done: int) -> None:
        if not self.enabled:
            return
        filled = self.width * done // self.total
        if filled == self.shown and done != self.total:
            return  # redraw only when the bar grows
        self.shown = filled
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{self.total}")
        if done == self.total:
            self.stream.write("\n")
        self.stream.flush()
