"""The service's own pages: the arbiter's (a game's record, version by version) and a seat's
table, rendered here as plain HTML with a small script of their own (static/)."""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).parent / "static"
