"""Schemathesis against the app's own OpenAPI, with every check it has: generated requests,
valid and invalid, as every role and on live, finished and unknown games (streams
included), never meet a server error and never an answer the document does not describe."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from litestar import Litestar
from schemathesis.checks import CheckContext
from schemathesis.python import asgi
from schemathesis.specs.openapi.checks import ignored_auth, positive_data_acceptance

from services.config import Settings
from services.http.app import create_app
from tests import servers
from tests.api.conftest import (
    FIRST_TRICK,
    OPERATOR,
    OPERATOR_KEY,
    THIRTY_ONE_DECK,
    THIRTY_ONE_GAME,
    Api,
)

# Examples per operation, generation mode, game and role: more where a body is generated.
EXAMPLES = 5
BODY_EXAMPLES = 15
MODES = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)
Game = dict[str, Any]
ROLES = ("operator", "seat0", "seat1", "spectator", "other_game", "forged", "nobody")


@pytest.fixture(params=["sqlite", "postgres"])
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Litestar]:
    """The app opening its own store, as in production: schemathesis runs it on an event
    loop of its own, in another thread. Generated requests register webhook endpoints at
    made-up URLs: this replica never delivers, and its database is its own, so no other
    test's replica ever sends to them."""
    with ExitStack() as stack:
        if request.param == "sqlite":
            where = Settings(
                operator_key=OPERATOR_KEY,
                sqlite_path=str(tmp_path / "events.db"),
                webhook_delivery=False,
                rate_limits=False,
            )
        else:
            admin = request.getfixturevalue("postgres_admin_url")
            where = Settings(
                operator_key=OPERATOR_KEY,
                database_url=stack.enter_context(servers.fresh_database(admin)),
                webhook_delivery=False,
                rate_limits=False,
            )
        yield create_app(where)
        asgi.shutdown_lifespans()


class Tables:
    """Games to aim generated requests at, made through the same in-process client."""

    def __init__(self, app: Litestar) -> None:
        self.client = asgi.get_client(app)
        self.finished = self.create()
        for seat, command in THIRTY_ONE_GAME:
            self.command(self.finished, seat, command)
        self.live = self.create()

    def create(self) -> Game:
        answer = self.client.post(
            "/games",
            headers=OPERATOR,
            json={
                "seats": [{"name": "ann"}, {"name": "bob"}],
                "deck": THIRTY_ONE_DECK,
                "dealer": 1,
            },
        )
        assert answer.status_code == 201, answer.text
        created: Game = answer.json()
        return created

    def command(self, game: Game, seat: int, body: dict[str, Any]) -> None:
        answer = self.client.post(
            f"/games/{game['game_id']}/commands",
            json=body,
            headers=bearer(game["seats"][seat]["token"]),
        )
        assert answer.status_code == 200, answer.text

    def a_live_game(self) -> Game:
        """The live game, dealt afresh once generated commands have ended it."""
        state = self.client.get(f"/games/{self.live['game_id']}", headers=OPERATOR).json()
        if state["status"] != "in_progress":
            self.live = self.create()
            for seat, command in FIRST_TRICK:
                self.command(self.live, seat, command)
        return self.live

    def roles(self, game: Game) -> dict[str, dict[str, str]]:
        """Each role's headers for this game (ROLES)."""
        other = self.finished if game is not self.finished else self.live
        return {
            "operator": OPERATOR,
            "seat0": bearer(game["seats"][0]["token"]),
            "seat1": bearer(game["seats"][1]["token"]),
            "spectator": bearer(game["spectator_token"]),
            "other_game": bearer(other["seats"][0]["token"]),
            "forged": bearer(f"{game['game_id']}.forged"),
            "nobody": {},
        }


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# What a schema-valid request may still be refused with: rules the schema cannot express.
# A list cursor is opaque: only the server knows which texts it gave (`bad_cursor`).
# So is a feed checkpoint (`bad_checkpoint`): only the store knows which it gave. And an
# Idempotency-Key (`idempotency_key_reused`): only the server knows what it was sent with.
SEMANTIC = {
    "bad_option", "bad_deck", "bad_dealer", "bad_card", "bad_setup", "bad_cursor",
    "bad_checkpoint", "idempotency_key_reused",
}  # fmt: skip


@schemathesis.check
def semantic_refusals_only(ctx: CheckContext, response: Any, case: schemathesis.Case) -> None:
    """A schema-valid request is accepted, or refused for what the schema cannot say."""
    meta = case.meta
    if meta is None or meta.generation.mode is not schemathesis.GenerationMode.POSITIVE:
        return
    if response.status_code in (400, 422):
        body = response.json()
        if body.get("code") == "bad_request" and all(
            _WHOLE_FLOAT.search(e.get("message", "")) for e in body.get("errors") or [{}]
        ):
            return  # 2.0 for an integer: JSON Schema's `integer` takes it, the README does not
        if body.get("code") == "bad_request" and all(
            e.get("key") == "url" and e.get("message", "").endswith("is no IPv6 address")
            for e in body.get("errors") or [{}]
        ):
            return  # the pattern says [hex, colons and dots]; which are addresses, it cannot
        assert body.get("code") in SEMANTIC, f"a schema-valid request was refused: {response.text}"


_WHOLE_FLOAT = re.compile(r"^Expected `int[^`]*`, got `float`$")


_ENFORCED: set[str] = set()


@schemathesis.check
def auth_is_enforced(ctx: CheckContext, response: Any, case: schemathesis.Case) -> None:
    """What `ignored_auth` checks, for headers this test sets itself: an operation that
    asks for a token and answered 2xx answers 401 or 403 without it, and with a forged one.
    (schemathesis takes the tokens given to it through `as_strategy(headers=...)` for
    generated ones once it mutates the headers of a negative case, and then fails any 2xx.)"""
    label = case.operation.label
    if not 200 <= response.status_code < 300 or label in _ENFORCED:
        return
    if not case.operation.definition.raw.get("security"):
        return
    kept = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    query = {k: v for k, v in (case.query or {}).items() if k != "ticket"}
    for auth in ({}, {"Authorization": "Bearer 0123456789abcdef.forged"}):
        answer = case.derive(headers={**kept, **auth}, query=query).call()
        assert answer.status_code in (401, 403), f"{label} answered {answer.status_code} {auth}"
    _ENFORCED.add(label)


@pytest.mark.slow
def test_generated_requests_never_meet_a_server_error(app: Litestar) -> None:
    schema = schemathesis.openapi.from_asgi("/schema/openapi.json", app)
    tables = Tables(app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {
        "POST /games",
        "POST /games/{game_id}/commands",
        "GET /games/{game_id}/replay",
        "GET /games/{game_id}/stream",
    } <= {o.label for o in operations}
    seen: Counter[tuple[str, int]] = Counter()
    for operation in operations:
        for mode in MODES:
            try:
                for game_id, headers in aims(tables, operation):
                    cases = operation.as_strategy(mode, path_parameters=game_id, headers=headers)
                    examples = BODY_EXAMPLES if operation.body else EXAMPLES
                    seen.update(exercise(cases, examples))
            except Unsatisfiable:
                # Nothing of this operation can be made invalid (no body, no query, the
                # path given): there is no negative case to send.
                assert mode is schemathesis.GenerationMode.NEGATIVE
                assert not operation.body and not operation.query
    # The requests went deep: past auth, to the rules, and to every kind of refusal.
    statuses = {status for _, status in seen}
    assert {200, 201, 400, 401, 403, 404, 409} <= statuses, seen
    assert seen["POST /games/{game_id}/commands", 200] > 0, seen
    assert sum(n for (label, _), n in seen.items() if label.endswith("/stream")) > 50, seen
    assert sum(seen.values()) >= 1000, sum(seen.values())


def aims(
    tables: Tables, operation: schemathesis.APIOperation
) -> Iterator[tuple[dict[str, str] | None, dict[str, str] | None]]:
    """Path and headers to send: the finished and the live game as each role, then
    whatever schemathesis makes up (unknown games) as the operator, a seat and nobody."""
    if "{game_id}" in operation.path:
        # An open stream of a live game would not end here: streams go to finished games.
        live = not operation.path.endswith("/stream")
        for kind in ("finished", "live") if live else ("finished",):
            for role in ROLES:
                game = tables.finished if kind == "finished" else tables.a_live_game()
                yield {"game_id": game["game_id"]}, tables.roles(game)[role] or None
    roles = tables.roles(tables.finished)
    public = operation.path.startswith(("/health", "/problems"))
    for role in ("operator", "seat0", "nobody") if not public else ("nobody",):
        yield None, roles[role] or None


def exercise(
    cases: st.SearchStrategy[schemathesis.Case], examples: int
) -> Counter[tuple[str, int]]:
    seen: Counter[tuple[str, int]] = Counter()

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(cases)
    def run(case: schemathesis.Case) -> None:
        if case.operation.path == "/events":
            case.query = {**(case.query or {}), "follow": "false"}  # a live feed never ends
        response = case.call()
        seen[case.operation.label, response.status_code] += 1
        # Every built-in check but two, each replaced by a check of our own: a body the
        # schema allows may still break a rule the schema cannot say (contradictory table
        # options, a deck that is not the full pack, a string that is no card): those, and
        # only those, are 400s with a documented code (`semantic_refusals_only`); and
        # `auth_is_enforced` probes without a token and with a forged one, as
        # `ignored_auth` does for tokens it knows were given (see there).
        case.validate_response(
            response,
            excluded_checks=[positive_data_acceptance, ignored_auth],
            additional_checks=[semantic_refusals_only, auth_is_enforced],
        )

    run()
    return seen


async def test_a_creations_answer_requires_every_member_it_always_carries(api: Api) -> None:
    """`duplicate` and `rematch_of` are in every creation's answer (false and null on a
    first, plain one): a generated client must not type them as possibly absent."""
    schemas = (await api.get("/schema/openapi.json"))["components"]["schemas"]
    created = await api.client.post(
        "/games", json={"seats": [{"name": "a"}, {"name": "b"}]}, headers=OPERATOR
    )
    assert set(schemas["CreatedGame"]["required"]) == set(created.json()), created.json()


async def test_a_list_entry_requires_every_member_it_always_carries(api: Api) -> None:
    """`rematch_of` and `rematch` are in every entry of the operator's list (null without a
    link): the document requires them, as it does in a creation's answer."""
    schemas = (await api.get("/schema/openapi.json"))["components"]["schemas"]
    await api.create()
    page = await api.get("/games", limit=1)
    (entry,) = page["games"]
    assert set(schemas["GameSummary"]["required"]) == set(entry), entry
    assert set(schemas["GamePage"]["required"]) == set(page), page


async def test_an_operations_error_examples_are_the_codes_it_can_answer(api: Api) -> None:
    """A 400 or a 401 lists what the operation can answer, not every code of the status:
    a ticket's refusal only where a ticket is taken (the stream), a cursor's only on the
    list, a checkpoint's only on the feed, a body's and a card's only where one is read; a
    rematch's 409 is one of its two, and its description says what each means."""
    paths = (await api.get("/schema/openapi.json"))["paths"]

    def examples(path: str, method: str, status: str) -> set[str]:
        answer = paths[path][method]["responses"][status]
        return set(answer["content"]["application/problem+json"]["examples"])

    ticketed = [("/games/{game_id}/stream", "get")]
    for path, item in paths.items():
        for method, operation in item.items():
            if "401" in operation.get("responses", {}):
                wanted = {"unauthorized"} | (
                    {"stream_ticket_invalid"} if (path, method) in ticketed else set()
                )
                assert examples(path, method, "401") == wanted, (path, method)
    assert examples("/games", "get", "400") == {"bad_request", "bad_cursor"}
    assert examples("/events", "get", "400") == {"bad_request", "bad_checkpoint"}
    assert examples("/games/{game_id}", "get", "400") == {"bad_request"}
    assert examples("/games/{game_id}/commands", "post", "400") == {
        "bad_request",
        "malformed_json",
        "bad_card",
    }
    assert "bad_cursor" not in examples("/games", "post", "400")
    rematch = paths["/games/{game_id}/rematch"]["post"]["responses"]["409"]
    assert examples("/games/{game_id}/rematch", "post", "409") == {
        "game_not_finished",
        "rematch_exists",
    }
    assert "`game_not_finished`: " in rematch["description"]
    assert examples("/games/{game_id}/resume", "post", "409") == {"not_paused", "game_over", "busy"}
    assert "table_changed" not in rematch["description"]
