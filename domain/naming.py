"""The `type` tags of commands and events: class names in snake case."""

import re
from functools import cache

_BOUNDARY = re.compile(r"(?<!^)(?=[A-Z])")


@cache  # a class name: a few dozen of them, asked for on every command
def snake(name: str) -> str:
    return _BOUNDARY.sub("_", name).lower()
