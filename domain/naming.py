"""The `type` tags of commands and events: class names in snake case."""

import re

_BOUNDARY = re.compile(r"(?<!^)(?=[A-Z])")


def snake(name: str) -> str:
    return _BOUNDARY.sub("_", name).lower()
