"""Bad input never yields a 500 or changes a game; every error says what was wrong."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import OPERATOR, Api

# (what, raw body, status, code, a word the detail must contain)
BAD_COMMANDS: list[tuple[str, bytes, int, str, str]] = [
    ("truncated JSON", b'{"type": "draw"', 400, "malformed_json", "JSON"),
    ("not JSON", b"draw one card please", 400, "malformed_json", "JSON"),
    ("not UTF-8", b'{"type": "\xff\xfe"}', 400, "malformed_json", "JSON"),
    ("empty body", b"", 400, "bad_request", ""),
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


@pytest.mark.parametrize(("key", "says"), [("k" * 201, "<= 200"), ("", ">= 1")])
async def test_a_bad_idempotency_key_is_refused(api: Api, key: str, says: str) -> None:
    table = await api.create()
    before = await api.version(table)
    answer = await api.client.post(
        f"/games/{table.game_id}/commands",
        json={"type": "lead", "cards": ["AS"]},
        headers={**table.seat(0), "Idempotency-Key": key},
    )
    assert answer.status_code == 400, answer.text
    assert "idempotency_key" in answer.json()["detail"] and says in answer.json()["detail"]
    assert await api.version(table) == before


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
    assert "idempotency_key" in answer.json()["detail"]
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
