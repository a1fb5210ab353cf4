"""Query parameters read as the OpenAPI document types them: a boolean is `true` or
`false`, an integer whole digits, a patterned text matches its pattern whole. The
framework would read `follow=1` as true and `limit=1.0` as 1, where the body of the same
API refuses 1.0 for an integer; and it matches a pattern as Python does, whose `$` also
matches before a final line feed (JSON Schema's, ECMA's, does not): `after=0:0%0A` would
pass. Here all three are refused, naming the parameter. The types come from the document
itself, so a new parameter is covered without a list to keep."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from services.wording import words_for


def _nothing_more(text: str) -> str:
    return ""


class Expected(NamedTuple):
    holds: Callable[[str], bool]  # the parameter's text is of its documented type
    says: str  # what it should be, for the 400
    more: Callable[[str], str] = _nothing_more  # what to add of the text refused

    def told(self, text: str) -> str:
        """What the parameter should be, said of the text that was refused."""
        return self.says + self.more(text)


Kinds = dict[str, dict[str, Expected]]  # path template -> query parameter -> its type

# digits as JSON writes an integer: the framework reads no other (`02` is not 2 to it)
_WHOLE = re.compile(r"-?(?:0|[1-9][0-9]*)")
_LEADING_ZERO = re.compile(r"-?0[0-9]+")
_BOOLEAN = Expected(lambda text: text in ("true", "false"), "true or false")


def _leading_zero(text: str) -> str:
    """`02` is refused for its writing, not its value: said so."""
    return ", written without a leading 0" if _LEADING_ZERO.fullmatch(text) else ""


_INTEGER = Expected(
    lambda text: _WHOLE.fullmatch(text) is not None, "a whole number, in digits", _leading_zero
)


def _integer(least: int | None, most: int | None) -> Expected:
    """Whole digits, within the documented bounds: one wording for `abc` and for `-1`."""
    if least is None and most is None:
        return _INTEGER
    low = least if least is not None else -math.inf
    high = most if most is not None else math.inf
    says = _INTEGER.says + (
        f", from {least} to {most}" if least is not None and most is not None
        else f", of at least {least}" if least is not None
        else f", of at most {most}"
    )  # fmt: skip

    def holds(text: str) -> bool:  # 20 digits pass any bound: no huge text is read
        return _INTEGER.holds(text) and len(text) <= 20 and low <= int(text) <= high

    return Expected(holds, says, _leading_zero)


# an anchor at the end that no backslash escapes: ECMA's `$` is the end of the text only
_FINAL_ANCHOR = re.compile(r"(?<!\\)((?:\\\\)*)\$$")


def ecma(pattern: str) -> re.Pattern[str]:
    """The pattern as JSON Schema reads it (ECMA: `$` is the very end of the text), for
    Python's `re.search`, whose `$` also matches before a final line feed."""
    return re.compile(_FINAL_ANCHOR.sub(r"\1\\Z", pattern))


def _patterned(pattern: str) -> Expected:
    compiled = ecma(pattern)
    says = words_for(pattern) or f"text matching {pattern}"
    return Expected(lambda text: compiled.search(text) is not None, says)


def kinds_of(document: dict[str, Any]) -> Kinds:
    """Every typed query parameter of an OpenAPI document, by path template."""
    kinds: Kinds = {}
    for path, item in document.get("paths", {}).items():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                expected = _expected(parameter.get("schema", {}))
                if parameter.get("in") == "query" and expected is not None:
                    kinds.setdefault(path, {})[parameter["name"]] = expected
    return kinds


def _expected(schema: dict[str, Any]) -> Expected | None:
    plain = _plain(schema)
    kind = plain.get("type")
    if kind == "boolean":
        return _BOOLEAN
    if kind == "integer":
        # an optional parameter's bounds stand beside its `oneOf`, a required one's inside;
        # the framework writes them as floats (`1.0`), told here as the integers they are
        least, most = (schema.get(b, plain.get(b)) for b in ("minimum", "maximum"))
        return _integer(_whole(least), _whole(most))
    # an optional parameter's pattern stands beside its `oneOf`, a required one's inside
    pattern = schema.get("pattern", plain.get("pattern"))
    if kind == "string" and pattern is not None:
        return _patterned(str(pattern))
    return None


def _whole(bound: object) -> int | None:
    return int(bound) if isinstance(bound, int | float) else None


def _plain(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema itself, or the alternative of an optional one that is not null."""
    if "type" in schema:
        return schema
    for alternative in schema.get("oneOf", schema.get("anyOf", [])):
        if alternative.get("type") != "null":
            return _plain(alternative)
    return {}


def mistyped(
    kinds: dict[str, Expected], items: Iterable[tuple[str, Any]]
) -> tuple[str, str] | None:
    """The first parameter whose text is not of its type, and what it should be."""
    for name, value in items:
        expected = kinds.get(name)
        if expected is not None and not expected.holds(value):
            return name, expected.told(value)
    return None
