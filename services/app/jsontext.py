"""JSON texts whose objects give a name twice: JSON leaves what such an object means to its
reader, so the API refuses such a body and the audit tools such a file (services/http,
services/app/bundle_check.py, services/cli/exports.py)."""

from __future__ import annotations

import json
import re
from typing import Any


def named_twice(raw: bytes) -> str | None:
    """A name that one object of the JSON text gives twice, if any. JSON leaves what such
    an object means to the reader (a decoder keeps the last, another the first: `"count":
    1, "count": 2` would be one card here and a double draw there), so the API refuses it
    rather than guess. One scan in the usual case: when no name is spelt with an escape
    and no two names of the whole text are the same, no object has one twice; otherwise
    the text is read object by object to find out. Not JSON at all: None (the decoder
    says what is wrong)."""
    if b"\\" not in raw:
        names = _NAME.findall(raw)
        if len(names) == len(set(names)):
            return None
    try:
        json.loads(raw, object_pairs_hook=_once)
    except _Twice as twice:
        return twice.name
    except (ValueError, RecursionError):
        return None
    return None


# A name as the text spells it: a string with no quote or escape in it, then a colon. With
# no backslash in the text, every string that a colon follows is a name and nothing else.
_NAME = re.compile(rb'"([^"\\]*)"\s*:')


class _Twice(Exception):
    def __init__(self, name: str) -> None:
        self.name = name


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object of the text, refused if it gives a name twice."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise _Twice(name)
            seen.add(name)
    return found
