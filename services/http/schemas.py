"""Request bodies and bounds of the API, decoded strictly at the edge."""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import accumulate
from typing import Annotated, Any
from urllib.parse import parse_qsl

import msgspec
from litestar.exceptions import ValidationException

from domain.rules import Rules
from domain.vocabulary import PauseVerdict
from services.wording import NO_NUL

# No body of this API nests deeper than 4 (a game's teams); far deeper is an attack on the
# decoder's recursion, refused before anything parses it.
MAX_NESTING = 32


class SeatSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    # PostgreSQL's text cannot hold a NUL: a name with one could not be listed
    name: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            max_length=64,
            pattern=NO_NUL,
            description="1 to 64 characters, any but NUL",
        ),
    ]


class CreateGame(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    seats: Annotated[list[SeatSpec], msgspec.Meta(min_length=2, max_length=6)]
    rules: Rules = Rules()
    seed: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1,
                max_length=256,
                description="For reproducing a deal (tests, a dispute): left out, the server "
                "draws 128 random bits. The shuffle is public, so a seat that guesses a seed "
                "learns every hidden card: one given for play must be as unguessable.",
            ),
        ]
        | None
    ) = None
    dealer: Annotated[int, msgspec.Meta(ge=0, le=5)] | None = None
    deck: Annotated[list[str], msgspec.Meta(max_length=52)] | None = None


_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}
_AT = re.compile(r"^(?P<message>.*) - at `\$\.?(?P<key>[^`]*)`$")


def invalid(key: str, message: str, source: str) -> ValidationException:
    """A 400 `bad_request` naming what is wrong where (`errors`: the key as the client sent
    it, and whether in the body, the query, a header or the path)."""
    return ValidationException(
        detail=f"{key}: {message}" if key else message,
        extra=[{"key": key, "message": message, "source": source}],
    )


def strictly(raw: bytes, kind: Any) -> Any:
    """The body as `kind`, with no coercion at all: `"2"` is not 2 and `0` is not false. A
    value of the wrong type is a 400 naming the field."""
    decoder = _decoders.get(kind)
    if decoder is None:
        decoder = _decoders[kind] = msgspec.json.Decoder(kind, strict=True)
    try:
        decoded = decoder.decode(raw)
    except msgspec.ValidationError as e:
        found = _AT.match(str(e))
        key, message = (found["key"], found["message"]) if found else ("", str(e))
        raise invalid(key, message, "body") from None
    return decoded


def nesting(raw: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest, brackets inside strings aside
    (an unterminated string runs to the end: that text is no JSON anyway). One pass."""
    steps = (_STEP.get(token, 0) for token in _TOKEN.findall(raw))
    return max(accumulate(steps, initial=0))


def too_deep(raw: bytes) -> int | None:
    """How deep the text nests, if deeper than MAX_NESTING; else None. A text with no more
    opening brackets than that cannot be deeper, and is not scanned (a command has two)."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_NESTING:
        return None
    depth = nesting(raw)
    return depth if depth > MAX_NESTING else None


# A string (to its closing quote, or to the end), or a bracket.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)
_STEP = {b"[": 1, b"{": 1, b"]": -1, b"}": -1}


# Headers that each name one thing (who calls, which command, where a stream resumes):
# given twice with two values, which one counts would be a guess, so neither is taken.
SINGLE_HEADERS = (b"authorization", b"idempotency-key", b"last-event-id")


def given_twice(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The first of SINGLE_HEADERS that the request gives twice with different values, if
    any (the same value repeated, as a proxy may pass it on, says one thing)."""
    seen: dict[bytes, bytes] = {}
    for name, value in headers:
        if name in SINGLE_HEADERS and seen.setdefault(name, value) != value:
            return name.decode("latin-1")
    return None


def asked_twice(query: bytes) -> str | None:
    """The first query parameter the query string gives twice with different values, if
    any, however its name is escaped: `?after=1&after=2` would be read as one of the two,
    and which one is the reader's guess (the same value repeated says one thing)."""
    if b"&" not in query:  # one parameter at most
        return None
    return field_twice(parse_qsl(query.decode("latin-1"), keep_blank_values=True))


def field_twice(fields: Iterable[tuple[str, object]]) -> str | None:
    """The first name given twice with different values among a query's or a form's
    fields, if any."""
    seen: dict[str, object] = {}
    for name, value in fields:
        if seen.setdefault(name, value) != value:
            return name
    return None


class RematchBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    seed: Annotated[str, msgspec.Meta(min_length=1, max_length=256)] | None = None


class EndPauseBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    verdict: PauseVerdict = "play_on"


# One example per command type, named by its `type` (tests/api/test_contract.py checks
# every command has one); they are the request examples of the OpenAPI document.
COMMAND_EXAMPLES: dict[str, dict[str, object]] = {
    "draw": {"type": "draw"},
    "lead": {"type": "lead", "cards": ["AS", "KS"]},
    "respond": {"type": "respond", "cards": ["10S", "QS"]},
    "declare": {"type": "declare", "claim": "thirty_one"},
    "dave": {"type": "dave"},
    "dave_answer": {"type": "dave_answer", "accept": True},
    "pass": {"type": "pass"},
    "concede": {"type": "concede"},
    "seed": {"type": "seed", "value": "my own 32 random hex digits 9f2c"},
}

CREATE_EXAMPLES: dict[str, dict[str, object]] = {
    "classic": {"seats": [{"name": "ann"}, {"name": "bob"}]},
    "closed_discard": {
        "seats": [{"name": "ann"}, {"name": "bob"}],
        "rules": {"closed_discard": True, "false_declaration": "pay_pot"},
    },
    "seats_shuffle": {
        "seats": [{"name": "ann"}, {"name": "bob"}],
        "rules": {"shuffle": "seats", "seeding_seconds": 20},
    },
    "teams": {
        "seats": [{"name": n} for n in ("ann", "bob", "cid", "dan")],
        "rules": {"deck": 52, "teams": [[0, 2], [1, 3]], "target_points": 41},
    },
    "fixed_deck": {
        "seats": [{"name": "ann"}, {"name": "bob"}],
        "dealer": 1,
        "seed": "walk-through",
        # ann: AS KS JS; bob: 10S QS 9S; trump 7H (the README's curl walk-through)
        "deck": [
            *("AS", "10S", "KS", "QS", "JS", "9S", "7H", "8H", "9H", "6S", "7S", "8S"),
            *("6H", "10H", "AH", "KH", "QH", "JH", "6D", "7D", "8D", "9D", "10D", "JD"),
            *("QD", "KD", "AD", "6C", "7C", "8C", "9C", "10C", "JC", "QC", "KC", "AC"),
        ],
    },
}

# operationId -> its request examples, by name.
WEBHOOK_EXAMPLES: dict[str, dict[str, object]] = {
    "every kind": {"url": "https://platform.example/bura/hooks"},
    "results only": {
        "url": "https://platform.example/bura/results",
        "events": ["deal_ended", "game_finished"],
        "secret": "a-secret-of-16-or-more-characters",
        "description": "pay-outs",
    },
}
REQUEST_EXAMPLES: dict[str, dict[str, dict[str, object]]] = {
    "sendCommand": COMMAND_EXAMPLES,
    "createGame": CREATE_EXAMPLES,
    "registerWebhook": WEBHOOK_EXAMPLES,
    "startRematch": {"a fresh shuffle": {}, "a seed of the operator's": {"seed": "final-2"}},
    "resumeGame": {
        "a fresh turn": {"verdict": "play_on"},
        "lose on time": {"verdict": "lose_deal"},
    },
}
