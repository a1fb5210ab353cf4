"""How deep a body nests is measured before anything decodes it: brackets inside strings
do not count, however the strings are escaped, and no text makes the measure slow."""

from __future__ import annotations

import pytest

from services.http.schemas import nesting, too_deep


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        (b"", 0),
        (b"3", 0),
        (b"{}", 1),
        (b'{"type": "lead", "cards": ["AS"]}', 2),
        (b'{"teams": [[0, 2], [1, 3]]}', 3),
        (b'"[[[{{{"', 0),
        (b'["a \\" [[[ still a string"]', 1),
        (b'["\\\\", [[]]]', 3),  # an escaped backslash ends before the quote
        (b'["\\n", [[[[]]]]]', 5),
        (b"[" * 1000 + b"]" * 1000, 1000),
        (b'[[[["never closed', 4),
    ],
)
def test_brackets_in_strings_do_not_count(text: bytes, depth: int) -> None:
    assert nesting(text) == depth


def test_an_unterminated_string_hides_no_brackets_after_a_backslash() -> None:
    # a scanner that dropped the byte after a backslash would read `["\` as an open string
    # and miss every bracket after it
    assert nesting(b'["\\n",' + b"[" * 500 + b"]" * 500 + b"]") == 501


@pytest.mark.parametrize(
    ("text", "over"),
    [
        (b'{"type": "lead", "cards": ["AS"]}', None),
        (b"[" * 32 + b"]" * 32, None),  # as deep as allowed
        (b"[" * 33 + b"]" * 33, 33),
        (b"[]" * 500, None),  # many brackets, none deep: scanned, and let through
        (b'["' + b"[" * 500 + b'"]', None),  # brackets in a string
        (b"[{" * 20 + b"}]" * 20, 40),
    ],
)
def test_only_a_body_deeper_than_allowed_is_too_deep(text: bytes, over: int | None) -> None:
    assert too_deep(text) == over
