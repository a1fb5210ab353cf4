"""A query parameter's pattern read as JSON Schema reads it: ECMA's `$` is the end of the
text, where Python's `re.search` also lets a final line feed through."""

from __future__ import annotations

import pytest

from services.http.queries import ecma, kinds_of, mistyped


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        (r"^[0-9]+$", "12", True),
        (r"^[0-9]+$", "12\n", False),
        (r"^[0-9]+$", "1\n2", False),
        (r"^a\$", "a$", True),  # an escaped dollar is a dollar, not an anchor
        (r"^a\\$", "a\\", True),  # an escaped backslash before the anchor
        (r"^a\\$", "a\\\n", False),
        (r"[0-9]", "x1\n", True),  # no anchor, nothing to change
    ],
)
def test_a_final_anchor_is_the_end_of_the_text(pattern: str, text: str, matches: bool) -> None:
    assert (ecma(pattern).search(text) is not None) is matches


def test_every_typed_query_parameter_is_read_from_the_document() -> None:
    document = {
        "paths": {
            "/things": {
                "get": {
                    "parameters": [
                        {"name": "all", "in": "query", "schema": {"type": "boolean"}},
                        {"name": "n", "in": "query", "schema": {"type": "integer"}},
                        {
                            "name": "at",
                            "in": "query",
                            "schema": {
                                "oneOf": [{"type": "string"}, {"type": "null"}],
                                "pattern": "^[a-z]+$",
                            },
                        },
                        {"name": "free", "in": "query", "schema": {"type": "string"}},
                        {"name": "Id", "in": "header", "schema": {"type": "integer"}},
                    ]
                },
                "parameters": [],  # a path item's own field, not an operation
            }
        }
    }
    kinds = kinds_of(document)["/things"]
    assert sorted(kinds) == ["all", "at", "n"]
    assert mistyped(kinds, [("all", "true"), ("n", "-3"), ("at", "abc"), ("free", "x\n")]) is None
    assert mistyped(kinds, [("all", "1")]) == ("all", "true or false")
    assert mistyped(kinds, [("n", "1.0")]) == ("n", "a whole number, in digits")
    assert mistyped(kinds, [("at", "abc\n")]) == ("at", "text matching ^[a-z]+$")


def test_a_bounded_integer_says_its_bounds_whatever_the_text() -> None:
    """`after=-1` and `after=abc` are told the same way: what the parameter should be."""
    document = {
        "paths": {
            "/feed": {
                "get": {
                    "parameters": [
                        {
                            "name": "after",
                            "in": "query",
                            "schema": {"type": "integer", "minimum": 0},
                        },
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {
                                "oneOf": [
                                    {"type": "integer", "minimum": 1, "maximum": 200},
                                    {"type": "null"},
                                ]
                            },
                        },
                    ]
                }
            }
        }
    }
    kinds = kinds_of(document)["/feed"]
    from_zero = ("after", "a whole number, in digits, of at least 0")
    assert mistyped(kinds, [("after", "-1")]) == mistyped(kinds, [("after", "abc")]) == from_zero
    assert mistyped(kinds, [("after", "9" * 5000)]) == from_zero  # never read as a number
    assert mistyped(kinds, [("after", "0"), ("limit", "200")]) is None
    assert mistyped(kinds, [("limit", "201")]) == (
        "limit",
        "a whole number, in digits, from 1 to 200",
    )


def test_an_integer_with_a_leading_zero_is_told_so_not_as_the_framework_words_it() -> None:
    """`limit=02` is digits, yet no integer as JSON writes one, and the framework refuses it
    in its own words ("Expected `int`, got `str`"): told here, with the bounds."""
    document = {
        "paths": {
            "/games": {
                "get": {
                    "parameters": [
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {"type": "integer", "minimum": 1, "maximum": 200},
                        }
                    ]
                }
            }
        }
    }
    kinds = kinds_of(document)["/games"]
    said = ("limit", "a whole number, in digits, from 1 to 200, written without a leading 0")
    assert mistyped(kinds, [("limit", "02")]) == mistyped(kinds, [("limit", "00002")]) == said
    assert mistyped(kinds, [("limit", "2")]) is None
    unbounded = kinds_of({"paths": {"/x": {"get": {"parameters": [
        {"name": "n", "in": "query", "schema": {"type": "integer"}}
    ]}}}})["/x"]  # fmt: skip
    assert mistyped(unbounded, [("n", "-07")]) == (
        "n",
        "a whole number, in digits, written without a leading 0",
    )
    assert mistyped(kinds, [("limit", "0")]) == (
        "limit",
        "a whole number, in digits, from 1 to 200",
    )
