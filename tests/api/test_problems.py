"""Errors are RFC 9457 problem details from one registry (services/http/problems.py): every
code the domain and the services can raise is in it, the README's table is written from
it, every `type` resolves to its page, and every row, raised, answers as documented.

(tests/api/conftest.py also checks every error answer of every API test.)"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, get_args

import httpx
import pytest
from litestar import Litestar, get
from litestar.exceptions import (
    ClientException,
    HTTPException,
    MethodNotAllowedException,
    NotFoundException,
    SerializationException,
    ServiceUnavailableException,
    ValidationException,
)

from domain.errors import BadSetup, RuleViolation
from domain.vocabulary import PenaltyRule
from infra.ports.events import StoreUnavailable
from services.app.errors import Forbidden, GameNotFound, TicketInvalid, Unauthorized
from services.http.errors import HANDLERS
from services.http.problems import COMMAND_REFUSALS, FALLBACK, PROBLEM_JSON, PROBLEMS, table
from tests.api.conftest import OPERATOR, Api

ROOT = Path(__file__).resolve().parents[2]

# A code passed as a variable: the Literal type the variable is declared with.
TYPED_CODES = {"rule": PenaltyRule}


def _raised_codes() -> Iterator[tuple[str, str]]:
    """(where, code) for every code written in domain/ and services/: RuleViolation(...)
    and BadSetup(code=...) calls, `code = "..."` class attributes of the errors, and the
    codes handed to problem(), details() and error()."""
    for package in ("domain", "services"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name == "problems.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            where = str(path.relative_to(ROOT))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call):
                    yield from _codes_of_call(where, node)
                elif isinstance(node, ast.ClassDef):
                    for item in node.body:
                        if (
                            isinstance(item, ast.Assign)
                            and [t.id for t in item.targets if isinstance(t, ast.Name)] == ["code"]
                            and isinstance(item.value, ast.Constant)
                        ):
                            yield where, item.value.value


def _codes_of_call(where: str, call: ast.Call) -> Iterator[tuple[str, str]]:
    name = getattr(call.func, "id", getattr(call.func, "attr", ""))
    position = {"RuleViolation": 0, "problem": 0, "details": 0, "error": 1}.get(name)
    if position is not None and len(call.args) > position:
        yield from _constant(where, call.args[position])
    for keyword in call.keywords:
        if keyword.arg == "code" and name in {"BadSetup", "BadOption", "BadCard"}:
            yield from _constant(where, keyword.value)


def _constant(where: str, node: ast.expr) -> Iterator[tuple[str, str]]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield where, node.value
    elif isinstance(node, ast.Name) and node.id in TYPED_CODES:
        for code in get_args(TYPED_CODES[node.id]):
            yield where, code
    elif (isinstance(node, ast.Attribute) and node.attr == "code") or (
        isinstance(node, ast.Name) and node.id == "code"
    ):
        return  # passing on a code that was itself written (and scanned) elsewhere
    else:
        yield where, f"<not a constant: {ast.unparse(node)}>"


def test_every_code_the_domain_and_services_raise_is_registered() -> None:
    found = list(_raised_codes())
    assert len({code for _, code in found}) > 30  # the scan sees the codes
    missing = sorted({f"{where}: {code}" for where, code in found if code not in PROBLEMS})
    assert missing == []
    assert set(FALLBACK.values()) <= set(PROBLEMS)


# decide's functions for the server's own commands: their codes are never a seat's
SERVERS_OWN = {"_start", "_close_seeding"}


def _codes_a_seat_can_meet() -> set[str]:
    """Read from the code: every code domain/decide.py raises outside the server's own
    commands, the clock's (a seat whose time ran out), the table that changed since
    `seen` (TableChanged), and the game service's `busy` (other writers, every retry)."""
    found = {"table_changed", "busy"}
    decide = ast.parse((ROOT / "domain/decide.py").read_text(encoding="utf-8"))
    for function in decide.body:
        if isinstance(function, ast.FunctionDef) and function.name not in SERVERS_OWN:
            for node in ast.walk(function):
                if isinstance(node, ast.Call):
                    found |= {code for _, code in _codes_of_call("decide", node)}
    clock = ast.parse((ROOT / "domain/clock.py").read_text(encoding="utf-8"))
    for node in ast.walk(clock):
        if isinstance(node, ast.Call):
            found |= {code for _, code in _codes_of_call("clock", node)}
    return {code for code in found if PROBLEMS[code].status == 409}  # not a setup's 400s


async def test_a_commands_409s_are_the_refusals_a_seat_can_meet(api: Api) -> None:
    """sendCommand's 409 examples are the codes a seat's command can be refused with,
    each once, and none of the server's own commands' (a timeout's, a pause's end, a
    rematch's, a webhook's): an integrator reads what it must handle, nothing else."""
    assert len(COMMAND_REFUSALS) == len(set(COMMAND_REFUSALS))
    assert set(COMMAND_REFUSALS) == _codes_a_seat_can_meet()
    doc = await api.get("/schema/openapi.json")
    refused = doc["paths"]["/games/{game_id}/commands"]["post"]["responses"]["409"]
    examples = refused["content"]["application/problem+json"]["examples"]
    assert [e["value"]["code"] for e in examples.values()] == list(COMMAND_REFUSALS)
    assert not {"not_paused", "still_in_time", "rematch_exists", "webhook_configured"} & set(
        e["value"]["code"] for e in examples.values()
    )
    assert refused["description"].startswith("Refused: a rule of play forbids it")
    assert all(f"`{code}`" in refused["description"] for code in ("out_of_time", "busy"))


def test_the_readme_error_table_is_the_registry() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert table() in readme, "rewrite the README's error table: print(problems.table())"


def test_every_row_is_documented_with_a_status_title_and_sentence() -> None:
    for code, row in PROBLEMS.items():
        assert code == code.lower() and " " not in code
        assert 400 <= row.status < 600 and row.title and row.about.endswith((".", ")"))
        assert row.example


async def test_every_problem_type_resolves_to_its_page(api: Api) -> None:
    index = await api.client.get("/problems")
    assert index.status_code == 200 and index.headers["content-type"].startswith("text/html")
    for code, row in PROBLEMS.items():
        assert f'id="{code}"' in index.text
        page = await api.client.get(f"/problems/{code}")
        assert page.status_code == 200, code
        assert code in page.text and str(row.status) in page.text
    unknown = await api.client.get("/problems/no_such_code")
    assert unknown.status_code == 404 and unknown.json()["code"] == "not_found"
    # hardened as the pages are: no inline style (the pages' sheet), one main landmark
    for shown in (index, page):
        assert shown.headers["content-security-policy"].startswith("default-src 'self'")
        assert shown.headers["x-content-type-options"] == "nosniff"
        assert shown.headers["referrer-policy"] == "no-referrer"
        assert "<style" not in shown.text and shown.text.count("<main>") == 1
        assert 'name="viewport"' in shown.text


# How to raise each row through the app's own exception handlers.
def _raising(code: str) -> Callable[[], BaseException]:
    status = PROBLEMS[code].status
    special: dict[str, Callable[[], BaseException]] = {
        "bad_request": lambda: ValidationException("bad", extra=[{"key": "x", "message": "no"}]),
        "malformed_json": _malformed,
        "unauthorized": lambda: Unauthorized("unknown token"),
        "stream_ticket_invalid": lambda: TicketInvalid("used"),
        "forbidden": lambda: Forbidden("only the operator key may do this"),
        "game_not_found": lambda: GameNotFound("nope"),
        "not_found": lambda: NotFoundException(),
        "method_not_allowed": lambda: MethodNotAllowedException(headers={"Allow": "GET"}),
        "body_too_large": lambda: ClientException(status_code=413),
        "rate_limited": lambda: HTTPException(status_code=429, detail="slow down"),
        "internal_error": lambda: ZeroDivisionError("boom"),
        "store_unavailable": lambda: StoreUnavailable("connection refused"),
        "shutting_down": lambda: ServiceUnavailableException("draining"),
    }
    if code in special:
        return special[code]
    if status == 400:
        return lambda: BadSetup("bad", code=code)
    return lambda: RuleViolation(code, f"refused: {code}")


def _malformed() -> BaseException:
    try:
        raise SerializationException("bad json")
    except SerializationException as cause:
        error = ClientException("bad json")
        error.__cause__ = cause
        return error


@pytest.mark.parametrize("code", sorted(PROBLEMS))
async def test_every_row_raised_answers_as_documented(code: str) -> None:
    make = _raising(code)

    @get("/raise", sync_to_thread=False)
    def raising() -> None:
        raise make()

    app = Litestar([raising], exception_handlers=HANDLERS, logging_config=None)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://bura.test"
    ) as client:
        answer = await client.get("/raise")
    body: dict[str, Any] = answer.json()
    assert answer.status_code == PROBLEMS[code].status, body
    assert answer.headers["content-type"] == PROBLEM_JSON
    assert body["code"] == code and body["type"] == f"/problems/{code}"
    assert body["status"] == answer.status_code and body["title"] == PROBLEMS[code].title
    assert body["instance"] == "/raise"
    if answer.status_code == 401:
        assert answer.headers["www-authenticate"].startswith('Bearer realm="bura"')
    if code == "method_not_allowed":
        assert answer.headers["allow"] == "GET, HEAD"  # HEAD wherever GET: head.py


async def test_401_names_the_scheme_and_says_when_a_token_was_refused(api: Api) -> None:
    none = await api.client.get("/games/abc")
    assert none.status_code == 401
    assert none.headers["www-authenticate"] == 'Bearer realm="bura"'
    forged = await api.client.get("/games/abc", headers={"Authorization": "Bearer abc.forged"})
    assert forged.status_code == 401
    assert forged.headers["www-authenticate"] == 'Bearer realm="bura", error="invalid_token"'


async def test_a_method_a_path_does_not_serve_is_a_405_with_allow(api: Api) -> None:
    for method, path in (("TRACE", "/games"), ("DELETE", "/games/abc"), ("PUT", "/health/live")):
        answer = await api.client.request(method, path, headers=OPERATOR)
        assert answer.status_code == 405, (method, path)
        assert answer.json()["code"] == "method_not_allowed"
        assert "GET" in answer.headers["allow"] or "POST" in answer.headers["allow"]


async def test_problems_keep_the_extension_members_clients_read(api: Api) -> None:
    bad = await api.client.post(
        "/games",
        json={"seats": [{"name": "a"}, {"name": "b"}], "rules": {"stake": 0}},
        headers=OPERATOR,
    )
    assert bad.status_code == 400
    assert bad.json()["code"] == "bad_option" and bad.json()["option"] == "stake"
    field = await api.client.post("/games", json={"seats": "two"}, headers=OPERATOR)
    assert field.json()["code"] == "bad_request" and field.json()["errors"]
    table_ = await api.create()
    refused = await api.send(table_, 1, {"type": "lead", "cards": ["6H"]})
    body = refused.json()
    assert refused.status_code == 409 and body["code"] == "not_your_turn"
    assert body["instance"] == f"/games/{table_.game_id}/commands"
    assert body["version"] == table_.version  # the table the refusal was judged on


async def test_instance_is_the_path_as_sent_and_errors_name_key_message_and_source(
    api: Api,
) -> None:
    """`instance` is a URI reference: the path with its percent-encoding, no query. Each
    of `errors` is a FieldError (`key`, `message`, `source`), which the document names."""
    missing = await api.client.get("/games/a%20b?x=1", headers=OPERATOR)
    assert missing.status_code == 404 and missing.json()["instance"] == "/games/a%20b"
    field = await api.client.post("/games", json={"seats": "two"}, headers=OPERATOR)
    assert field.json()["errors"] == [
        {"key": "seats", "message": "Expected `array`, got `str`", "source": "body"}
    ]
    assert field.json()["instance"] == "/games"
    query = await api.client.get("/games?limit=0", headers=OPERATOR)
    [error] = query.json()["errors"]
    assert (error["key"], error["source"]) == ("limit", "query"), error
    schemas = (await api.get("/schema/openapi.json"))["components"]["schemas"]
    items = schemas["ProblemDetails"]["properties"]["errors"]
    assert "FieldError" in json.dumps(items), items
    assert set(schemas["FieldError"]["required"]) == {"key", "message", "source"}
