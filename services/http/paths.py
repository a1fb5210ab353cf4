"""A route's path template as the framework writes it (`/games/{game_id:str}`), read two
ways: as the OpenAPI document names the path (`/games/{game_id}`), and as a pattern of
the request paths it routes; and a request's path as the client sent it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_PARAM = re.compile(r"\{([^}:]+):([^}]+)\}")

# The route the framework gives every path under /schema that no document is at (it
# answered an HTML page, counted as a read): answered as any path the API lacks.
NOWHERE = "/schema/{path}"


def nowhere(scope: Mapping[str, Any]) -> bool:
    """The request was routed only to the framework's page for a missing document."""
    return scope.get("path_template") == NOWHERE


def documented(template: str) -> str:
    """`/games/{game_id:str}` as the OpenAPI document names it: `/games/{game_id}`."""
    return _PARAM.sub(r"{\1}", template)


def pattern(template: str) -> str:
    """`/games/{game_id:str}` as a pattern of the paths it routes."""
    parts, last = ["^"], 0
    for found in _PARAM.finditer(template):
        kind = found[2]
        parts += [re.escape(template[last : found.start()]), ".+" if kind == "path" else "[^/]+"]
        last = found.end()
    return "".join([*parts, re.escape(template[last:]), "$"])


def sent_path(scope: Mapping[str, Any]) -> str | None:
    """The request's path as the client sent it, percent-encoding and repeated slashes
    kept (the routed `path` is decoded, its slashes joined and trimmed), without the query
    (some servers' raw path carries it; a `?` of the path's own comes encoded). None
    where the server gives no raw path."""
    raw: bytes | None = scope.get("raw_path")
    return raw.decode("latin-1").partition("?")[0] if raw else None
