"""Bad input never yields a 500 or changes a game; every error says what was wrong."""

from __future__ import annotations

import re
from typing import Any

import pytest

from domain.rules import MAX_STAKE, Rules
from tests.api.conftest import OPERATOR, THIRTY_ONE_DECK, THIRTY_ONE_GAME, Api

# Hundreds of cases, each on an app of its own: left out of make test-fast (the domain's
# own refusals and the codec's strictness are there).
pytestmark = pytest.mark.slow

TWICE = "named twice in one object: give each name once"
GIVEN_TWICE = "given twice with different values: send it once"

# (what, raw body, status, code, a word the detail must contain)
BAD_COMMANDS: list[tuple[str, bytes, int, str, str]] = [
    ("truncated JSON", b'{"type": "draw"', 400, "malformed_json", "JSON"),
    ("not JSON", b"draw one card please", 400, "malformed_json", "JSON"),
    ("not UTF-8", b'{"type": "\xff\xfe"}', 400, "malformed_json", "JSON"),
    ("empty body", b"", 400, "malformed_json", "the body is empty"),
    ("null", b"null", 400, "bad_request", "object"),
    ("an array", b'[{"type": "draw"}]', 400, "bad_request", "object"),
    ("no type", b'{"cards": ["AS"]}', 400, "bad_request", "type"),
    ("unknown type", b'{"type": "shuffle"}', 400, "bad_request", "shuffle"),
    ("unknown field", b'{"type": "draw", "speed": 2}', 400, "bad_request", "speed"),
    ("count not a number", b'{"type": "draw", "count": "two"}', 400, "bad_request", "int"),
    ("cards not a list", b'{"type": "lead", "cards": "AS"}', 400, "bad_request", "array"),
    ("card not a string", b'{"type": "lead", "cards": [1]}', 400, "bad_request", "str"),
    ("missing cards", b'{"type": "lead"}', 400, "bad_request", "cards"),
    ("bad claim", b'{"type": "declare", "claim": "forty"}', 400, "bad_request", "claim"),
    ("missing answer", b'{"type": "dave_answer"}', 400, "bad_request", "accept"),
    # a value of the wrong type is refused, never coerced: "2" is no count, 0 no answer
    ("count as text", b'{"type": "draw", "count": "2"}', 400, "bad_request", "count"),
    ("count as a float", b'{"type": "draw", "count": 2.0}', 400, "bad_request", "count"),
    ("count as true", b'{"type": "draw", "count": true}', 400, "bad_request", "count"),
    ("accept as 0", b'{"type": "dave_answer", "accept": 0}', 400, "bad_request", "accept"),
    ("accept as 1", b'{"type": "dave_answer", "accept": 1}', 400, "bad_request", "accept"),
    ("accept as text", b'{"type": "dave_answer", "accept": "true"}', 400, "bad_request", "accept"),
    ("claim as a number", b'{"type": "declare", "claim": 31}', 400, "bad_request", "claim"),
    ("cards as an object", b'{"type": "lead", "cards": {"AS": 1}}', 400, "bad_request", "cards"),
    ("respond cards as text", b'{"type": "respond", "cards": "AS"}', 400, "bad_request", "cards"),
    ("type as a number", b'{"type": 7}', 400, "bad_request", "type"),
    ("seen as text", b'{"type": "draw", "seen": "5"}', 400, "bad_request", "seen"),
    ("seen as a float", b'{"type": "draw", "seen": 5.0}', 400, "bad_request", "seen"),
    ("seen as true", b'{"type": "draw", "seen": true}', 400, "bad_request", "seen"),
    ("seen below zero", b'{"type": "draw", "seen": -1}', 400, "bad_request", "seen"),
    ("seen on a pass", b'{"type": "pass", "seen": "now"}', 400, "bad_request", "seen"),
    ("bad card code", b'{"type": "lead", "cards": ["ZZ"]}', 400, "bad_card", "ZZ"),
    ("no such rank", b'{"type": "lead", "cards": ["11S"]}', 400, "bad_card", "11S"),
    ("empty card", b'{"type": "lead", "cards": [""]}', 400, "bad_card", "not a card"),
    ("duplicate cards", b'{"type": "lead", "cards": ["AS", "AS"]}', 409, "duplicate_cards", "AS"),
    (
        "duplicate in two cases",
        b'{"type": "lead", "cards": ["AS", "as"]}',
        409,
        "duplicate_cards",
        "AS",
    ),
    ("card not in hand", b'{"type": "lead", "cards": ["6D"]}', 409, "card_not_in_hand", "6D"),
    ("no cards", b'{"type": "lead", "cards": []}', 409, "wrong_card_count", "1 to 3"),
    (
        "four cards",
        b'{"type": "lead", "cards": ["AS", "10S", "KS", "QS"]}',
        409,
        "wrong_card_count",
        "1 to 3",
    ),
    (
        "respond with nothing led",
        b'{"type": "respond", "cards": ["AS"]}',
        409,
        "not_your_turn",
        "seat 0",
    ),
    # a name twice: one decoder keeps the first, another the last (one card or a double
    # draw), so neither is guessed
    ("count twice", b'{"type": "draw", "count": 1, "count": 2}', 400, "bad_request", TWICE),
    ("type twice", b'{"type": "pass", "type": "draw"}', 400, "bad_request", TWICE),
    (
        "count twice, once spelt with an escape",
        b'{"type": "draw", "co\\u0075nt": 1, "count": 2}',
        400,
        "bad_request",
        "count: " + TWICE,
    ),
    ("draw no card", b'{"type": "draw", "count": 0}', 409, "wrong_card_count", "at least"),
    ("draw minus one", b'{"type": "draw", "count": -1}', 409, "wrong_card_count", "at least"),
    ("answer no dave", b'{"type": "dave_answer", "accept": true}', 409, "no_dave_pending", "dave"),
    ("pass with cards", b'{"type": "pass"}', 409, "cannot_pass", "lead"),
    (
        "huge body",
        b'{"type": "lead", "cards": ["' + b"A" * 70_000 + b'"]}',
        413,
        "body_too_large",
        "",
    ),
]


@pytest.mark.parametrize(
    ("what", "raw", "status", "code", "says"), BAD_COMMANDS, ids=[b[0] for b in BAD_COMMANDS]
)
async def test_a_bad_command_is_refused_with_its_reason_and_changes_nothing(
    api: Api, what: str, raw: bytes, status: int, code: str, says: str
) -> None:
    table = await api.create()
    before = await api.view(table)
    answer = await api.client.post(
        f"/games/{table.game_id}/commands",
        content=raw,
        headers={**table.seat(0), "Content-Type": "application/json"},
    )
    assert answer.status_code == status, answer.text
    error = answer.json()
    assert error["code"] == code
    assert error["detail"] and says in error["detail"], error
    assert await api.view(table) == before


@pytest.mark.parametrize(
    ("method", "path", "body", "header", "key", "says"),
    [
        ("POST", "/games", {"seats": [{"name": "a\x00"}, {"name": "b"}]}, None,
         "seats[0].name", "any characters but NUL"),
        ("POST", "/games", {"seats": [{"name": ""}, {"name": "b"}]}, None,
         "seats[0].name", "at least 1 character"),
        ("POST", "/webhooks", {"url": "ftp://x"}, None, "url",
         "an http:// or https:// URL (the scheme in either case) with a valid host"),
        ("POST", "/webhooks", {"url": "http://x", "secret": "short"}, None, "secret",
         "16 to 256 printable ASCII characters without spaces"),
        ("POST", "/webhooks", {"url": "http://x", "description": "d" * 257}, None,
         "description", "at most 256 characters"),
        ("GET", "/events", None, ("Last-Event-ID", "x"), "last-event-id",
         "a checkpoint as an entry carries it, `<transaction>:<position>` in digits"),
        ("GET", "/events?after=1", None, None, "after",
         "a checkpoint as an entry carries it, `<transaction>:<position>` in digits"),
        ("GET", "/webhooks/deliveries?game_id=a%00", None, None, "game_id",
         "any characters but NUL"),
        ("GET", "{game}/stream", None, ("Last-Event-ID", "9" * 16), "last-event-id",
         "a game version: a whole number of 15 digits at most"),
        ("GET", "{game}/stream", None, ("Last-Event-ID", "-1"), "last-event-id",
         "a game version: a whole number of 15 digits at most"),
        ("POST", "{game}/commands", {"type": "seed", "value": "s" * 129}, None, "value",
         "at most 128 characters"),
        ("POST", "{game}/commands", {"type": "seed", "value": "\x01"}, None, "value",
         "1 to 128 printable ASCII characters (space to ~)"),
    ],
)  # fmt: skip
async def test_a_refused_text_is_told_in_words_not_as_the_pattern_it_missed(
    api: Api,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    header: tuple[str, str] | None,
    key: str,
    says: str,
) -> None:
    """A text that misses its pattern or its length is told what it should be, as the README
    words it, never as the decoder quotes the regular expression (a URL's was 700
    characters of it) or its bound (`Expected `str` of length <= 256`)."""
    table = await api.create()
    headers = {**OPERATOR, **table.seat(0)} if "{game}" in path else dict(OPERATOR)
    if header is not None:
        headers[header[0]] = header[1]
    answer = await api.client.request(
        method, path.format(game=f"/games/{table.game_id}"), json=body, headers=headers
    )
    assert answer.status_code == 400, answer.text
    error = answer.json()
    assert error["detail"].startswith(f"{key}: {says}"), error
    (field,) = error["errors"]
    assert field["key"] == key and field["message"].startswith(says), error
    assert "regex" not in error["detail"] and "Expected" not in error["detail"], error


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("k" * 201, "1 to 200 printable ASCII characters"),
        ("", "1 to 200 printable ASCII characters"),
        ("k ", "no space at either end"),
        (" k", "no space at either end"),
        ("..", "not `.`, `..` or slashes alone"),
        ("/", "not `.`, `..` or slashes alone"),
        ("//", "not `.`, `..` or slashes alone"),
    ],
)
async def test_a_bad_idempotency_key_is_refused(api: Api, key: str, says: str) -> None:
    table = await api.create()
    before = await api.version(table)
    answer = await api.client.post(
        f"/games/{table.game_id}/commands",
        json={"type": "lead", "cards": ["AS"]},
        headers={**table.seat(0), "Idempotency-Key": key},
    )
    assert answer.status_code == 400, answer.text
    assert (
        answer.json()["detail"].startswith("idempotency-key: ") and says in answer.json()["detail"]
    )
    assert "regex" not in answer.json()["detail"]  # said in words
    assert await api.version(table) == before


@pytest.mark.parametrize(
    ("raw", "code", "detail"),
    [
        (b"", "malformed_json", "the body is empty: this operation takes a JSON object"),
        (b"[]", "bad_request", "Expected `object`, got `array`"),
        (b"null", "bad_request", "Expected `object`, got `null`"),
    ],
)
async def test_a_body_that_is_no_object_names_no_field(
    api: Api, raw: bytes, code: str, detail: str
) -> None:
    """What is wrong is the whole body, which has no key of the client's to name (the
    framework calls it `data`); an empty body is no JSON at all."""
    table = await api.create()
    answer = await api.client.post(
        f"/games/{table.game_id}/commands",
        content=raw,
        headers={**table.seat(0), "Content-Type": "application/json"},
    )
    assert answer.status_code == 400, answer.text
    assert (answer.json()["code"], answer.json()["detail"]) == (code, detail)
    errors = answer.json().get("errors") or []
    assert [(e["key"], e["source"]) for e in errors] == ([] if raw == b"" else [("", "body")])


async def test_a_header_naming_one_thing_given_twice_is_a_400_naming_it(api: Api) -> None:
    """Two tokens, two keys for one command, two places to resume a stream: which one
    counts would be a guess (a proxy may pass on the first, the server read the last), so
    neither is taken, on the front door's path and the framework's alike."""
    table = await api.create()
    before = await api.view(table)
    ann, bob = table.seat(0)["Authorization"], table.seat(1)["Authorization"]
    operator = OPERATOR["Authorization"]
    commands = f"/games/{table.game_id}/commands"
    lead = b'{"type": "lead", "cards": ["AS"]}'
    json = ("Content-Type", "application/json")
    seats = b'{"seats": [{"name": "a"}, {"name": "b"}]}'
    game, stream = f"/games/{table.game_id}", f"/games/{table.game_id}/stream"
    auth, resume = "Authorization", "last-event-id"
    cases: list[tuple[str, str, list[tuple[str, str]], bytes | None, str]] = [
        ("POST", commands, [(auth, ann), (auth, bob), json], lead, "authorization"),
        (
            "POST",
            commands,
            [(auth, ann), ("Idempotency-Key", "a"), ("Idempotency-Key", "b"), json],
            lead,
            "idempotency-key",
        ),
        ("POST", "/games", [(auth, operator), (auth, ann), json], seats, "authorization"),
        ("GET", game, [(auth, bob), (auth, operator)], None, "authorization"),
        ("GET", stream, [(auth, bob), *twice("Last-Event-ID", "1", "9")], None, resume),
        ("GET", "/events", [(auth, operator), *twice("Last-Event-ID", "0-0", "0-1")], None, resume),
    ]
    listed = (await api.client.get("/games", headers=OPERATOR)).json()["games"]
    for method, path, headers, body, name in cases:
        answer = await api.client.request(method, path, headers=headers, content=body)
        assert answer.status_code == 400, (method, path, headers, answer.text)
        error = answer.json()
        assert (error["code"], error["detail"]) == ("bad_request", f"{name}: {GIVEN_TWICE}")
        assert error["errors"] == [{"key": name, "message": GIVEN_TWICE, "source": "header"}]
    assert await api.view(table) == before
    assert (await api.client.get("/games", headers=OPERATOR)).json()["games"] == listed
    # given once, each is taken as ever
    once = await api.client.post(
        commands, content=lead, headers=[(auth, ann), ("Idempotency-Key", "a"), json]
    )
    assert once.status_code == 200, once.text


async def test_a_bad_parameter_or_header_is_named_as_the_client_sent_it(api: Api) -> None:
    """The error names what was sent (`state`, `Last-Event-ID`), not the route's own name
    for it (`kind`, `last_event_id`)."""
    table = await api.create()
    game = f"/games/{table.game_id}"
    for path, headers, key, source in (
        ("/webhooks/deliveries?state=bogus", OPERATOR, "state", "query"),
        ("/events?format=xml&follow=false", OPERATOR, "format", "query"),
        (f"{game}/stream", {**OPERATOR, "Last-Event-ID": "x"}, "last-event-id", "header"),
        ("/events?follow=false", {**OPERATOR, "Last-Event-ID": "x"}, "last-event-id", "header"),
        (f"{game}/events?after=x", OPERATOR, "after", "query"),  # the same name either way
    ):
        answer = await api.client.get(path, headers=headers)
        assert answer.status_code == 400, (path, answer.text)
        error = answer.json()
        assert [(e["key"], e["source"]) for e in error["errors"]] == [(key, source)], error
        assert error["detail"].startswith(f"{key}: "), error
    command = await api.client.post(
        f"{game}/commands", json={"type": "pass"}, headers={**table.seat(0), "Idempotency-Key": ""}
    )
    assert command.status_code == 400
    assert [e["key"] for e in command.json()["errors"]] == ["idempotency-key"]


def twice(name: str, first: str, second: str) -> list[tuple[str, str]]:
    return [(name, first), (name, second)]


async def test_a_query_parameter_given_twice_is_a_400_naming_it(api: Api) -> None:
    """`?after=1&after=2`: which one counts would be a guess, as with a header, so neither
    is taken (however the name is escaped); the same value twice says one thing."""
    table = await api.create()
    await api.play(table, *THIRTY_ONE_GAME[0])
    game = f"/games/{table.game_id}"
    for path, name in (
        (f"{game}/events?after=1&after=2", "after"),
        (f"{game}/events?after=1&aft%65r=2", "after"),
        (f"{game}/replay?version=2&version=3", "version"),
        (f"{game}/stream?after=1&after=9", "after"),
        (f"{game}/stream?ticket=st_a&ticket=st_b", "ticket"),
        ("/games?limit=1&limit=2", "limit"),
        ("/events?follow=false&follow=true", "follow"),
    ):
        answer = await api.client.get(path, headers=OPERATOR)
        assert answer.status_code == 400, (path, answer.text)
        error = answer.json()
        assert (error["code"], error["detail"]) == ("bad_request", f"{name}: {GIVEN_TWICE}")
        assert error["errors"] == [{"key": name, "message": GIVEN_TWICE, "source": "query"}]
    # a command's route reads no parameter, yet one given twice is refused there too, on
    # the front door's path as on the route's, and nothing is played
    before = await api.version(table)
    command = await api.client.post(
        f"{game}/commands?x=1&x=2", json=THIRTY_ONE_GAME[1][1], headers=table.seat(1)
    )
    assert command.status_code == 400 and command.json()["detail"] == f"x: {GIVEN_TWICE}"
    assert await api.version(table) == before
    # once, or the same value twice, is read as ever
    repeated = await api.client.get(f"{game}/events?after=1&after=1", headers=OPERATOR)
    once = await api.client.get(f"{game}/events?after=1", headers=OPERATOR)
    assert repeated.status_code == 200 and repeated.json() == once.json()
    assert once.json()["events"][0]["version"] == 2
    played = await api.client.post(
        f"{game}/commands?x=1&y=2", json=THIRTY_ONE_GAME[1][1], headers=table.seat(1)
    )
    assert played.status_code == 200, played.text


QUERIES: list[tuple[str, dict[str, Any], str]] = [
    ("events", {"after": -1}, "after"),
    ("events", {"after": "three"}, "after"),
    ("events", {"after": 2**70}, "after"),
    ("replay", {"version": 0}, "version"),
    ("replay", {"version": "last"}, "version"),
    ("replay", {"version": 1.5}, "version"),
    ("replay", {"version": 2**70}, "version"),
]


@pytest.mark.parametrize(
    ("endpoint", "params", "says"),
    QUERIES,
    ids=[f"{q[0]}-{next(iter(q[1].values()))}" for q in QUERIES],
)
async def test_a_bad_query_is_a_400_naming_the_parameter(
    api: Api, endpoint: str, params: dict[str, Any], says: str
) -> None:
    table = await api.create()
    answer = await api.client.get(
        f"/games/{table.game_id}/{endpoint}", params=params, headers=OPERATOR
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["code"] == "bad_request"
    assert says in answer.json()["detail"]


async def test_events_after_a_version_are_the_rest(api: Api) -> None:
    table = await api.create()
    page = await api.get(f"/games/{table.game_id}/events", after=7)
    assert page["version"] == table.version
    assert [e["version"] for e in page["events"]] == list(range(8, table.version + 1))
    later = await api.get(f"/games/{table.game_id}/events", after=10**6)
    assert later["events"] == []


@pytest.mark.parametrize(
    "path",
    ["/games/nope", "/games/nope/events", "/games/nope/audit", "/games/" + "f" * 32 + "/replay"],
)
async def test_an_unknown_game_is_404(api: Api, path: str) -> None:
    answer = await api.client.get(path, headers=OPERATOR)
    assert answer.status_code == 404
    assert answer.json()["code"] == "game_not_found"


async def test_an_unknown_path_or_method_is_not_a_server_error(api: Api) -> None:
    table = await api.create()
    assert (await api.client.get("/nowhere", headers=OPERATOR)).status_code == 404
    answer = await api.client.delete(f"/games/{table.game_id}", headers=OPERATOR)
    assert answer.status_code == 405
    assert answer.json()["code"] == "method_not_allowed"


@pytest.mark.parametrize("game_id", ["%00", "a%00b", "%C3%A9", "x" * 65, "a.b"])
async def test_a_game_id_that_names_no_game_is_404_before_the_store(api: Api, game_id: str) -> None:
    for path in ("", "/events", "/replay", "/audit", "/verify", "/stream"):
        answer = await api.client.get(f"/games/{game_id}{path}", headers=OPERATOR)
        assert answer.status_code == 404, (path, answer.text)
        assert answer.json()["code"] == "game_not_found"


@pytest.mark.parametrize("key", [b"nul\x00key", b"\xe9t\xe9", b"tab\tkey", b"\x7f"])
async def test_an_idempotency_key_with_control_or_foreign_characters_is_refused(
    api: Api, key: bytes
) -> None:
    table = await api.create()
    answer = await api.client.post(
        f"/games/{table.game_id}/commands",
        json={"type": "lead", "cards": ["AS"]},
        headers={**table.seat(0), "Idempotency-Key": key},  # type: ignore[dict-item]
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["detail"].startswith("idempotency-key: ")
    assert await api.version(table) == table.version


async def test_tokens_and_request_ids_with_a_nul_are_no_server_error(api: Api) -> None:
    table = await api.create()
    forged = await api.client.get(
        f"/games/{table.game_id}", headers={"Authorization": "Bearer a\x00b.c"}
    )
    assert forged.status_code == 401
    odd_id = {**table.seat(0), "X-Request-ID": "req\x00id"}
    answer = await api.client.post(
        f"/games/{table.game_id}/commands", json={"type": "lead", "cards": ["AS"]}, headers=odd_id
    )
    assert answer.status_code == 200, answer.text
    [row] = await api.store.read(table.game_id, after=table.version)
    assert "\x00" not in (row.metadata.correlation_id or "")


# --- table options and the other fields of a new game, strictly typed ---------------------

# One value of the wrong type for every table option (docs/rules.md §8.1).
WRONG_OPTIONS: dict[str, Any] = {
    "game": 1,
    "deck": "36",
    "hand_size": ["3", "3"],
    "trumps": 1,
    "first_lead_compensation": "0",
    "penalties": True,
    "short_stock": 0,
    "declare_on": ["lead"],
    "no_claim": None,
    "show_own_points": "false",
    "dave": 1,
    "dave_max_multiplier": "64",
    "stake": "3",
    "match_target": "2",
    "closed_discard": 0,
    "false_declaration": 1,
    "open_seats": "0",
    "compensation": 10.0,
    "combinations": False,
    "teams": "0,2",
    "target_points": "31",
    "shuffle": 0,
    "seeding_seconds": "30",
    "turn_seconds": "10",
    "time_bank_seconds": 1.5,
    "on_timeout": True,
    "abandon_seconds": [30],
}


def test_every_option_has_a_wrong_value_here() -> None:
    assert set(WRONG_OPTIONS) == set(Rules.__struct_fields__)


async def test_an_option_of_the_wrong_type_is_a_400_naming_it(api: Api) -> None:
    for option, value in WRONG_OPTIONS.items():
        body = {"seats": [{"name": "a"}, {"name": "b"}], "rules": {option: value}}
        answer = await api.client.post("/games", json=body, headers=OPERATOR)
        assert answer.status_code == 400, (option, answer.text)
        assert answer.json()["code"] == "bad_request", option
        assert f"rules.{option}" in answer.json()["detail"], option


async def test_a_new_games_field_of_the_wrong_type_is_a_400_naming_it(api: Api) -> None:
    wrong: list[tuple[str, Any]] = [
        ("seats", {"a": 1}),
        ("seed", 5),
        ("dealer", "1"),
        ("dealer", True),
        ("deck", "AS 10S"),
    ]
    for field, value in wrong:
        body: dict[str, Any] = {"seats": [{"name": "a"}, {"name": "b"}], field: value}
        answer = await api.client.post("/games", json=body, headers=OPERATOR)
        assert answer.status_code == 400, (field, answer.text)
        assert answer.json()["code"] == "bad_request" and field in answer.json()["detail"]


async def test_stakes_that_could_give_a_score_beyond_2_53_are_refused_naming_the_option(
    api: Api,
) -> None:
    for option, value in [
        ("stake", 2**63 - 1),
        ("stake", MAX_STAKE + 1),
        ("match_target", 2**70),
        ("dave_max_multiplier", 2**62),
    ]:
        body = {"seats": [{"name": "a"}, {"name": "b"}], "rules": {option: value}}
        answer = await api.client.post("/games", json=body, headers=OPERATOR)
        assert answer.status_code == 400, (option, answer.text)
        assert (answer.json()["code"], answer.json()["option"]) == ("bad_option", option)


# --- nesting --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/games", "/games/some-game/commands"])
async def test_a_body_nested_a_thousand_deep_is_a_400_before_anything_else(
    api: Api, path: str
) -> None:
    deep = b'{"type": "lead", "cards": ' + b"[" * 1000 + b"]" * 1000 + b"}"
    for headers in ({}, OPERATOR):  # refused before the token is even looked at
        answer = await api.client.post(
            path, content=deep, headers={**headers, "Content-Type": "application/json"}
        )
        assert answer.status_code == 400, answer.text
        assert answer.json()["code"] == "bad_request"
        problem = answer.json()
        assert "nests 1001 levels" in problem["detail"]
        assert [e["source"] for e in problem["errors"]] == ["body"]  # as every bad_request


async def test_a_body_nested_within_the_bound_is_decoded_as_usual(api: Api) -> None:
    table = await api.create()
    inside = b'{"type": "lead", "cards": ' + b"[" * 31 + b"]" * 31 + b"}"
    answer = await api.client.post(
        f"/games/{table.game_id}/commands",
        content=inside,
        headers={**table.seat(0), "Content-Type": "application/json"},
    )
    assert answer.status_code == 400 and "cards" in answer.json()["detail"]


# --- a name twice in one object ------------------------------------------------------------


async def test_a_new_game_or_a_webhook_that_gives_a_name_twice_is_a_400_naming_it(
    api: Api,
) -> None:
    seats = b'"seats": [{"name": "a"}, {"name": "b"}]'
    bodies = [
        ("/games", b"{" + seats + b', "rules": {"stake": 1, "stake": 3}}', "stake"),
        ("/games", b'{"seats": [{"name": "a", "name": "c"}, {"name": "b"}]}', "name"),
        ("/games", b'{"dealer": 0, ' + seats + b', "dealer": 1}', "dealer"),
        ("/webhooks", b'{"url": "https://platform.test/a", "url": "https://b.test/"}', "url"),
    ]
    listed = (await api.client.get("/games", headers=OPERATOR)).json()["games"]
    for path, raw, name in bodies:
        answer = await api.client.post(
            path, content=raw, headers={**OPERATOR, "Content-Type": "application/json"}
        )
        assert answer.status_code == 400, (raw, answer.text)
        error = answer.json()
        assert error["code"] == "bad_request"
        assert error["detail"] == f"{name}: {TWICE}", error
        assert error["errors"] == [{"key": name, "message": TWICE, "source": "body"}]
    assert (await api.client.get("/games", headers=OPERATOR)).json()["games"] == listed
    assert (await api.client.get("/webhooks", headers=OPERATOR)).json() == []


async def test_the_same_name_in_two_objects_is_no_name_twice(api: Api) -> None:
    raw = b'{"seats": [{"name": "ann"}, {"name": "bob"}], "rules": {"stake": 2}}'
    answer = await api.client.post(
        "/games", content=raw, headers={**OPERATOR, "Content-Type": "application/json"}
    )
    assert answer.status_code == 201, answer.text
    assert [seat["name"] for seat in answer.json()["seats"]] == ["ann", "bob"]


# --- versions the game has not reached -------------------------------------------------------


async def test_a_replay_of_a_version_the_game_has_not_reached_is_a_404(api: Api) -> None:
    table = await api.create()
    answer = await api.client.get(
        f"/games/{table.game_id}/replay", params={"version": 999}, headers=OPERATOR
    )
    assert answer.status_code == 404, answer.text
    body = answer.json()
    assert (body["code"], body["version"]) == ("version_not_found", table.version)
    assert f"1 to {table.version}" in body["detail"]
    last = await api.get(f"/games/{table.game_id}/replay", version=table.version)
    assert last["version"] == table.version


async def test_last_event_id_is_admitted_exactly_as_the_openapi_pattern_says(api: Api) -> None:
    """The document's pattern and the server agree on every value: up to 15 digits (every
    version there can be, and below 2^53) are taken, 16 and more refused."""
    table = await api.create()
    await api.play(
        table, 0, {"type": "concede"}
    )  # a finished game's stream ends: it can be read whole
    schema = (await api.client.get("/schema/openapi.json")).json()
    stream = schema["paths"]["/games/{game_id}/stream"]["get"]
    (header,) = [p for p in stream["parameters"] if p["name"] == "Last-Event-ID"]
    pattern = re.compile(header["schema"]["pattern"])
    for value in ("", " 1 ", "0", "999999999999999", "000000000000007", "1000000000000000",
                  "9007199254740991", "9007199254740992", "99999999999999999"):  # fmt: skip
        answer = await api.client.get(
            f"/games/{table.game_id}/stream", headers={**OPERATOR, "Last-Event-ID": value}
        )
        assert (answer.status_code == 200) == bool(pattern.search(value)), (value, answer.text)


async def test_a_query_parameter_is_read_as_its_documented_type_and_nothing_looser(
    api: Api,
) -> None:
    """A boolean is `true` or `false` and an integer is digits, as the OpenAPI document
    types them: `follow=1` or `limit=1.0` is a 400 naming the parameter (the body of the
    same API refuses 1.0 for an integer too), never read as something else."""
    table = await api.create()
    await api.play(table, *THIRTY_ONE_GAME[0])
    game = f"/games/{table.game_id}"
    for path, name in (
        ("/events?follow=1", "follow"),
        ("/events?follow=True", "follow"),
        ("/events?follow=yes", "follow"),
        ("/events?follow=false&limit=1.0", "limit"),
        ("/events?follow=false&limit=%2B1", "limit"),
        ("/games?limit=1e1", "limit"),
        (f"{game}/events?after=0x1", "after"),
        (f"{game}/events?after=1.0", "after"),
        (f"{game}/replay?version=%201", "version"),
        ("/webhooks/deliveries?limit=2.0", "limit"),
    ):
        answer = await api.client.get(path, headers=OPERATOR)
        assert answer.status_code == 400, (path, answer.text)
        error = answer.json()
        assert [(e["key"], e["source"]) for e in error["errors"]] == [(name, "query")], error
    for path in ("/events?follow=false&limit=1", "/games?limit=2", f"{game}/events?after=1",
                 f"{game}/replay?version=1"):  # fmt: skip
        answer = await api.client.get(path, headers=OPERATOR)
        assert answer.status_code == 200, (path, answer.text)


async def test_every_integer_query_parameter_is_told_with_its_bounds_whatever_the_text(
    api: Api,
) -> None:
    """Below its least, above its most, or no number at all: one detail for each integer
    parameter of the served document, its bounds as the integers the document gives,
    optional parameters (a stream's `after`, a replay's `version`) as well."""
    table = await api.create()
    document = await api.get("/schema/openapi.json")
    checked = []
    for template, item in document["paths"].items():
        operation = item.get("get")
        path = template.replace("{game_id}", table.game_id)
        for parameter in (operation or {}).get("parameters", []):
            schema = parameter["schema"]
            if parameter["in"] != "query" or schema.get("type") != "integer" or "{" in path:
                continue
            least, most = schema["minimum"], schema["maximum"]
            said = f"{parameter['name']}: a whole number, in digits, from {least} to {most}"
            for text in (str(least - 1), str(most + 1), "abc", "1.5"):
                answer = await api.client.get(
                    path, params={parameter["name"]: text}, headers=OPERATOR
                )
                assert answer.status_code == 400, (path, text, answer.text)
                assert answer.json()["detail"] == said, (path, text, answer.json())
            checked.append(f"{template}?{parameter['name']}")
    assert {
        "/games?limit",
        "/games/{game_id}?seen",
        "/games/{game_id}/stream?after",
        "/games/{game_id}/replay?version",
        "/events?limit",
        "/webhooks/deliveries?limit",
    } <= set(checked), checked


async def test_a_patterned_query_parameter_matches_its_pattern_whole(api: Api) -> None:
    """A checkpoint (`after`) matches its pattern as JSON Schema reads it: the `$` is the
    end of the text, so a final line feed (which Python's `$` lets through) is a 400
    naming the parameter, where before the server stripped it and went on."""
    for value in ("0:0%0A", "0:0%0A%0A", "%0A0:0", "0:0%0D"):
        answer = await api.client.get(f"/events?follow=false&after={value}", headers=OPERATOR)
        assert answer.status_code == 400, (value, answer.text)
        error = answer.json()
        assert [(e["key"], e["source"]) for e in error["errors"]] == [("after", "query")], error
    for value in ("0:0", "%200:0%20"):
        answer = await api.client.get(f"/events?follow=false&after={value}", headers=OPERATOR)
        assert answer.status_code == 200, (value, answer.text)


async def test_a_resume_past_the_games_version_starts_over_with_the_table_as_it_is(
    api: Api,
) -> None:
    """A Last-Event-ID above the game's version (another game's, or a store restored from
    a backup) is no error an EventSource could recover from: the stream starts over with
    the current view, whose lower id tells the client so (README, the live view)."""
    table = await api.create()
    await api.play(table, 0, {"type": "concede"})
    version = (await api.view(table, OPERATOR))["version"]
    answer = await api.client.get(
        f"/games/{table.game_id}/stream", headers={**OPERATOR, "Last-Event-ID": str(version + 5)}
    )
    assert answer.status_code == 200, answer.text
    ids = [int(line[3:]) for line in answer.text.splitlines() if line.startswith("id:")]
    assert ids == [version]


async def test_a_draw_of_more_cards_than_any_pack_holds_is_a_400_naming_count(api: Api) -> None:
    """`count` is at most 52 (the largest pack): a larger one is no draw at any table, and
    would be kept in the record as the penalty's `asked`, past what a JavaScript number
    holds exactly."""
    table = await api.create()
    for count in (53, 2**63, 10**20):
        answer = await api.send(table, 1, {"type": "draw", "count": count})
        assert answer.status_code == 400, (count, answer.text)
        problem = answer.json()
        assert problem["code"] == "bad_request" and problem["errors"][0]["key"] == "count"
    assert (await api.view(table, OPERATOR))["version"] == table.version


async def test_a_card_with_space_around_it_or_a_letter_outside_ascii_is_no_card(api: Api) -> None:
    table = await api.create()
    for text in (" AS", "AS ", "as\t", "\u00a0AS", "a\u017f"):
        answer = await api.send(table, 0, {"type": "lead", "cards": [text]})
        assert answer.status_code == 400, (text, answer.text)
        assert answer.json()["code"] == "bad_card"
    deck = await api.client.post(
        "/games",
        json={"seats": [{"name": "a"}, {"name": "b"}], "deck": [" AS", *THIRTY_ONE_DECK[1:]]},
        headers=OPERATOR,
    )
    assert deck.status_code == 400 and deck.json()["code"] == "bad_card", deck.text


async def test_a_field_of_the_bodys_top_object_is_named_by_its_own_key(api: Api) -> None:
    """A missing or unknown top-level field, or one a check of the whole object refuses,
    is named by its key, not as `data` (the framework's name for the whole body)."""
    table = await api.create()
    game = f"/games/{table.game_id}/commands"
    for path, body, headers, key in (
        (game, {"type": "lead"}, table.seat(0), "cards"),
        (game, {"type": "draw", "x": 1}, table.seat(0), "x"),
        ("/webhooks", {}, OPERATOR, "url"),
        ("/webhooks", {"url": "https://a.example/x", "secret": "a-secret-of-16-or-more\n"},
         OPERATOR, "secret"),
        ("/games", {"seats": [{"name": "a"}, {"name": "b"}], "foo": 1}, OPERATOR, "foo"),
        ("/games", {}, OPERATOR, "seats"),
    ):  # fmt: skip
        answer = await api.client.post(path, json=body, headers=headers)
        assert answer.status_code == 400, (body, answer.text)
        problem = answer.json()
        assert [e["key"] for e in problem["errors"]] == [key], problem
        assert problem["detail"].startswith(f"{key}: "), problem
