"""Query parameters read as the OpenAPI document types them: a boolean is `true` or
`false`, an integer whole digits. The framework would read `follow=1` as true and
`limit=1.0` as 1, where the body of the same API refuses 1.0 for an integer; here both
are refused, naming the parameter. The types come from the document itself, so a new
parameter is covered without a list to keep."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from litestar import Litestar

Kinds = dict[str, dict[str, str]]  # path template -> query parameter -> "boolean"/"integer"

_WHOLE = re.compile(r"-?[0-9]+")
SAYS = {"boolean": "true or false", "integer": "a whole number, in digits"}


def kinds_of(app: Litestar) -> Kinds:
    kinds: Kinds = {}
    for path, item in app.openapi_schema.to_schema().get("paths", {}).items():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                kind = _type(parameter.get("schema", {}))
                if parameter.get("in") == "query" and kind in SAYS:
                    kinds.setdefault(path, {})[parameter["name"]] = kind
    return kinds


def _type(schema: dict[str, Any]) -> str | None:
    if "type" in schema:
        return str(schema["type"])
    for alternative in schema.get("oneOf", schema.get("anyOf", [])):
        if alternative.get("type") != "null":
            return _type(alternative)
    return None


def mistyped(kinds: dict[str, str], items: Iterable[tuple[str, Any]]) -> tuple[str, str] | None:
    """The first parameter whose text is not of its type, and what it should be."""
    for name, value in items:
        kind = kinds.get(name)
        if kind == "boolean" and value not in ("true", "false"):
            return name, SAYS[kind]
        if kind == "integer" and not _WHOLE.fullmatch(value):
            return name, SAYS[kind]
    return None
