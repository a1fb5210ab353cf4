"""A route's path template as the framework writes it (`/games/{game_id:str}`), read two
ways: as the OpenAPI document names the path (`/games/{game_id}`), and as a pattern of
the request paths it routes."""

from __future__ import annotations

import re

_PARAM = re.compile(r"\{([^}:]+):([^}]+)\}")


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
