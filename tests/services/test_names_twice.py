"""An object that gives a name twice is found before anything decodes the body, however
the names are spelt: JSON leaves its meaning to the reader, so the API refuses it."""

from __future__ import annotations

import pytest

from services.app import jsontext
from services.app.jsontext import named_twice
from services.http.schemas import asked_twice, given_twice


@pytest.mark.parametrize(
    ("text", "twice"),
    [
        (b'{"type": "draw"}', None),
        (b'{"type": "draw", "count": 1, "count": 2}', "count"),
        (b'{"type":"pass","type":"draw"}', "type"),
        (b'{"type": "draw", "count" : 1, "count"\n:2}', "count"),  # space before the colon
        # spelt with an escape, the same name: what a decoder reads is "count" twice
        (b'{"type": "draw", "co\\u0075nt": 1, "count": 2}', "count"),
        (b'{"type": "draw", "\\u0063ount": 1, "\\u0063ount": 2}', "count"),
        # the same name in two objects is no name twice
        (b'{"seats": [{"name": "ann"}, {"name": "bob"}]}', None),
        (b'{"seats": [{"name": "ann", "name": "bob"}]}', "name"),
        (b'{"rules": {"stake": 1, "stake": 3}, "seats": []}', "stake"),
        # a name inside a string is no name, escaped quotes or not
        (b'{"type": "seed", "value": "count: \\"count\\": 1"}', None),
        (b'{"type": "seed", "value": "\\"value\\":"}', None),
        (b'{"a": "\\\\", "a": 1}', "a"),  # an escaped backslash ends before the quote
        # not JSON, or not an object: nothing to say here (the decoder says what is wrong)
        (b"", None),
        (b"draw one card", None),
        (b'{"count": 1, "count": ', None),
        (b'{"type": "\xff\xfe", "type": 1}', None),
        (b'[{"a": 1}, {"a": 2}]', None),
        (b'"\\"a\\": 1, \\"a\\": 2"', None),
    ],
)
def test_a_name_twice_in_one_object_is_found(text: bytes, twice: str | None) -> None:
    assert named_twice(text) == twice


def test_a_body_with_distinct_names_and_no_escape_is_not_read_as_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The usual command costs one scan: only a text whose names repeat somewhere, or that
    holds an escape, is read object by object."""
    read: list[bytes] = []
    loads = jsontext.json.loads

    def counted(raw: bytes, **kw: object) -> object:
        read.append(raw)
        return loads(raw, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(jsontext.json, "loads", counted)
    assert named_twice(b'{"type": "lead", "cards": ["AS", "KS"], "seen": 12}') is None
    assert read == []
    assert named_twice(b'{"seats": [{"name": "a"}, {"name": "b"}]}') is None
    assert named_twice(b'{"type": "seed", "value": "a\\"b"}') is None
    assert len(read) == 2


KEY = b"idempotency-key"


@pytest.mark.parametrize(
    ("headers", "twice"),
    [
        ([], None),
        ([(b"authorization", b"Bearer a"), (b"idempotency-key", b"k")], None),
        ([(b"accept", b"a"), (b"accept", b"b")], None),  # a list by nature: not ours to judge
        ([(b"authorization", b"Bearer a"), (b"authorization", b"Bearer a")], None),  # one thing
        ([(b"authorization", b"Bearer a"), (b"authorization", b"Bearer b")], "authorization"),
        ([(KEY, b"a"), (b"host", b"h"), (KEY, b"b")], "idempotency-key"),
        ([(b"last-event-id", b"1"), (b"last-event-id", b"2")], "last-event-id"),
    ],
)
def test_a_header_naming_one_thing_is_given_once(
    headers: list[tuple[bytes, bytes]], twice: str | None
) -> None:
    assert given_twice(headers) == twice


@pytest.mark.parametrize(
    ("query", "twice"),
    [
        (b"", None),
        (b"after=1", None),
        (b"after=1&version=2", None),
        (b"after=1&after=1", None),  # the same value, one thing
        (b"after=1&after=2", "after"),
        (b"after=1&aft%65r=2", "after"),  # however it is escaped
        (b"a=&a=1", "a"),  # an empty value is a value
        (b"limit=5&cursor=c&limit=6", "limit"),
    ],
)
def test_a_query_parameter_is_given_once(query: bytes, twice: str | None) -> None:
    assert asked_twice(query) == twice
