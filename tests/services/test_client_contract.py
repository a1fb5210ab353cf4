"""The Python client and the command contract (README: The command contract), against
answers made here (httpx's MockTransport): a command whose retries run out without an
answer says the key it was sent under, and the key looks it up; a command answer and a
created game keep the record's receipt; a 408 is sent again; and a token no header can
carry is a bad argument, never a network error."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from bura_client import (
    ApiError,
    Client,
    CommandStatus,
    OutcomeUnknown,
    Unavailable,
)

from services.cli import play as bura_play
from services.cli.errors import USAGE, CliError

COMMAND = {"type": "draw"}
ANSWER = {
    "version": 8,
    "duplicate": False,
    "events": [{"version": 8, "event": {"type": "card_drawn", "seat": 0, "count": 1}}],
    "chain_head": None,
    "receipt": "r" * 64,
    "command_id": "k-1",
}


def _client(handler: Any, **options: Any) -> Client:
    return Client("http://bura.test", transport=httpx.MockTransport(handler), **options)


def test_a_command_without_an_answer_to_the_end_says_its_key_and_is_settled_by_it(
    slept: list[float],
) -> None:
    sent: list[tuple[str | None, Any]] = []
    lost = True

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            assert request.url.raw_path == b"/games/g1/commands/my%2Fkey%20%2B1"
            return httpx.Response(
                200,
                json={
                    "command_id": "my/key +1",
                    "status": "applied",
                    "seat": 0,
                    "version": 8,
                    "events": ANSWER["events"],
                    "recorded_at": "2025-01-01T00:00:00Z",
                },
            )
        sent.append((request.headers.get("idempotency-key"), json.loads(request.content)))
        if lost:
            raise httpx.ReadTimeout("the answer was lost", request=request)
        return httpx.Response(200, json={**ANSWER, "duplicate": True, "command_id": "my/key +1"})

    with _client(answer, retries=3) as client:
        seat = client.seat("g1", "g1.a")
        seat.version = 7
        with pytest.raises(OutcomeUnknown) as raised:
            seat.send(COMMAND, key="my/key +1")
        unknown = raised.value
        assert unknown.command_id == "my/key +1"
        assert isinstance(unknown, httpx.TransportError)  # still caught as a network error
        assert isinstance(unknown.error, httpx.ReadTimeout) and unknown.__cause__ is unknown.error
        assert len(sent) == 3 and {key for key, _ in sent} == {"my/key +1"}
        # the contract's two ways on: the lookup ...
        found = seat.lookup(unknown.command_id)
        assert isinstance(found, CommandStatus) and found.applied
        assert (found.seat, found.version, found.recorded_at) == (0, 8, "2025-01-01T00:00:00Z")
        # ... or the same command again under the same key: the same body, `seen` included
        seat.version = 8
        lost = False
        again = seat.send(COMMAND, key=unknown.command_id)
        assert again.duplicate and again.key == again.command_id == "my/key +1"
        assert sent[-1] == ("my/key +1", {"type": "draw", "seen": 7})


def test_an_unknown_command_is_looked_up_as_unknown(slept: list[float]) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        body = {"command_id": "k", "status": "unknown", "seat": None, "version": None}
        return httpx.Response(200, json={**body, "recorded_at": None})

    with _client(answer) as client:
        found = client.seat("g1", "g1.a").lookup("k")
    assert not found.applied and found.events == [] and found.version is None


@pytest.mark.parametrize("seen", [True, False])
def test_a_view_read_after_an_answer_says_the_version_the_seat_saw(seen: bool) -> None:
    """Behind a load balancer the read may reach a replica that has not heard of the
    command yet: `?seen=` makes it read the store (README: What a seat may do now)."""
    asked: list[httpx.URL] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url)
        if request.method == "POST":
            return httpx.Response(200, json=ANSWER)
        return httpx.Response(200, json={"version": 8, "status": "in_progress"})

    with _client(answer) as client:
        seat = client.seat("g1", "g1.a", seen=seen)
        seat.view()  # nothing seen yet: nothing to say
        seat.send(COMMAND)
        seat.view()
    assert "seen" not in asked[0].params
    assert asked[2].params.get("seen") == ("8" if seen else None)


def test_a_command_error_after_its_retries_names_its_key(slept: list[float]) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, json={"code": "outcome_unknown", "detail": "lost"})

    with _client(answer, retries=2) as client, pytest.raises(Unavailable) as raised:
        client.seat("g1", "g1.a").send(COMMAND, key="k-9")
    assert raised.value.command_id == "k-9" and raised.value.code == "outcome_unknown"


def test_a_command_answer_keeps_the_receipt_and_a_created_game_its_record() -> None:
    created = {
        "game_id": "g1",
        "version": 1,
        "seats": [{"seat": 0, "name": "ann", "token": "g1.a"}],
        "spectator_token": "g1.s",
        "chain_head": "c" * 64,
        "receipt": "r" * 64,
        "commitment": "d" * 64,
        "shuffle": None,
        "rematch_of": "g0",
    }

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/games":
            return httpx.Response(201, json=created)
        return httpx.Response(200, json=ANSWER)

    with _client(answer) as client:
        game = client.create_game(["ann"], token="operator")
        outcome = client.seat("g1", "g1.a").send(COMMAND, key="k-1")
    assert (game.chain_head, game.receipt, game.commitment) == ("c" * 64, "r" * 64, "d" * 64)
    assert (game.shuffle, game.rematch_of) == (None, "g0")
    assert (outcome.command_id, outcome.receipt, outcome.chain_head) == ("k-1", "r" * 64, None)


@pytest.mark.parametrize("what", ["command", "create_game", "view"])
def test_a_408_is_sent_again(slept: list[float], what: str) -> None:
    keys: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        keys.append(request.headers.get("idempotency-key"))
        if len(keys) == 1:
            return httpx.Response(408, json={"code": "request_timeout", "detail": "slow"})
        if request.url.path == "/games":
            body = {"game_id": "g1", "version": 1, "seats": [], "spectator_token": "g1.s"}
            return httpx.Response(201, json=body)
        return httpx.Response(200, json=ANSWER)

    with _client(answer) as client:
        if what == "command":
            client.seat("g1", "g1.a").send(COMMAND)
        elif what == "create_game":
            client.create_game(["ann"], token="operator")
        else:
            client.seat("g1", "g1.a").view()
    assert len(keys) == 2 and keys[0] == keys[1]


@pytest.mark.parametrize("call", ["send", "view", "follow", "create_game"])
def test_a_header_that_cannot_be_written_is_never_sent_again(slept: list[float], call: str) -> None:
    asked = 0

    def answer(request: httpx.Request) -> httpx.Response:
        nonlocal asked
        asked += 1
        raise httpx.LocalProtocolError("Illegal header value", request=request)

    with _client(answer) as client, pytest.raises(httpx.LocalProtocolError) as raised:
        seat = client.seat("g1", "g1.a ")
        if call == "send":
            seat.send(COMMAND)
        elif call == "view":
            seat.view()
        elif call == "follow":
            list(seat.follow())
        else:
            client.create_game(["ann"], token="operator ")
    assert type(raised.value) is httpx.LocalProtocolError
    assert not isinstance(raised.value, ApiError)
    assert asked == 1 and slept == []


@pytest.mark.parametrize("token", ["g1.secret ", " g1.secret", "g1.sec\nret"])
def test_bura_play_with_a_token_no_header_can_carry_is_a_bad_argument(
    monkeypatch: pytest.MonkeyPatch, slept: list[float], token: str
) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        raise httpx.LocalProtocolError("Illegal header value", request=request)

    monkeypatch.setattr(
        bura_play, "Client", lambda url: Client(url, transport=httpx.MockTransport(answer))
    )
    with pytest.raises(CliError) as raised:
        bura_play.main("http://bura.test", "g1", token, "greedy", 1, True)
    said = str(raised.value)
    assert raised.value.exit_code == USAGE, said
    assert said.startswith("--token") and "\n" not in said
    assert "secret" not in said  # the token itself is not echoed


def test_a_retry_with_the_cards_in_another_order_repeats_the_first_body(
    slept: list[float],
) -> None:
    """The seat's version moved on (a view) between the lost answer and the retry: the
    retry still sends the first body, its `seen` included, whatever the cards' order."""
    bodies: list[Any] = []

    def answer(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"version": 12, "status": "in_progress"})
        bodies.append(json.loads(request.content))
        if len(bodies) == 1:
            raise httpx.ReadError("lost", request=request)
        return httpx.Response(200, json={**ANSWER, "duplicate": True})

    with _client(answer, retries=1) as client:
        seat = client.seat("g1", "g1.a")
        seat.version = 10
        with pytest.raises(OutcomeUnknown) as lost:
            seat.lead("AS", "KS")
        seat.view()  # now at 12
        seat.send({"type": "lead", "cards": ["ks", "AS"]}, key=lost.value.command_id)
        # a process started again has a new Seat: the error's body is what it resends
        assert lost.value.body == bodies[0]
        again = client.seat("g1", "g1.a")
        again.view()  # at 12, as the first try was not
        again.send(lost.value.body, key=lost.value.command_id)
    assert (
        bodies[2] == bodies[1] == bodies[0] == {"type": "lead", "cards": ["AS", "KS"], "seen": 10}
    )


def test_a_body_refused_as_another_commands_is_not_sent_again(slept: list[float]) -> None:
    bodies: list[Any] = []

    def answer(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        if len(bodies) == 1:
            return httpx.Response(
                422, json={"code": "idempotency_key_reused", "detail": "another command"}
            )
        return httpx.Response(200, json=ANSWER)

    with _client(answer) as client:
        seat = client.seat("g1", "g1.a")
        seat.version = 11
        with pytest.raises(ApiError):
            seat.send({"type": "draw"}, key="k")  # sent with seen 11: not the key's first
        seat.send({"type": "draw", "seen": 10}, key="k")  # the caller's own, as it says
    assert bodies == [{"type": "draw", "seen": 11}, {"type": "draw", "seen": 10}]


@pytest.mark.parametrize("body", ["[]", "null", '"oops"'])
def test_an_error_answer_that_is_no_object_is_retried_by_its_status(
    slept: list[float], body: str
) -> None:
    asked = 0

    def answer(request: httpx.Request) -> httpx.Response:
        nonlocal asked
        asked += 1
        return httpx.Response(503, text=body, headers={"content-type": "application/json"})

    with _client(answer, retries=3) as client, pytest.raises(Unavailable):
        client.seat("g1", "g1.a").view()
    assert asked == 3


def test_a_success_that_is_no_json_object_is_an_api_error() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, text="<html>portal</html>", headers={"content-type": "text/html"}
        )

    with _client(answer) as client, pytest.raises(ApiError) as raised:
        client.seat("g1", "g1.a").view()
    assert raised.value.status == 200 and "text/html" in raised.value.detail


def test_every_seat_command_has_its_method() -> None:
    bodies: list[Any] = []

    def answer(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=ANSWER)

    with _client(answer) as client:
        seat = client.seat("g1", "g1.a", seen=False)
        seat.draw(2)
        seat.draw()
        seat.seed("mine")
    assert bodies == [
        {"type": "draw", "count": 2},
        {"type": "draw"},
        {"type": "seed", "value": "mine"},
    ]


def test_the_operators_calls_rematch_rule_list_and_the_bundle() -> None:
    """What the API offers the operator, through the client: a rematch under a key, the
    ruling on a paused clock, the list page after page, and the bundle byte for byte."""
    asked: list[httpx.Request] = []
    created = {
        "game_id": "g2",
        "version": 10,
        "seats": [{"seat": 0, "name": "ann", "token": "g2.a"}],
        "spectator_token": "g2.s",
        "rematch_of": "g1",
    }
    bundle = b'{"format":"bura-bundle",  "kept": "as served"}'

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        path, cursor = request.url.path, request.url.params.get("cursor")
        if path == "/games/g1/rematch":
            return httpx.Response(201, json=created)
        if path == "/games/g1/resume":
            return httpx.Response(200, json={**ANSWER, "command_id": "bura-1"})
        if path == "/games" and cursor is None:
            return httpx.Response(200, json={"games": [{"game_id": "a"}], "next_cursor": "c1"})
        if path == "/games":
            return httpx.Response(200, json={"games": [{"game_id": "b"}], "next_cursor": None})
        if path == "/games/g1/bundle":
            return httpx.Response(200, content=bundle)
        return httpx.Response(404, json={"code": "not_found", "detail": path})

    with _client(answer) as client:
        rematch = client.rematch("g1", token="op", seed="again", key="r-1")
        ruled = client.resume("g1", token="op", verdict="lose_deal")
        listed = [g["game_id"] for g in client.games(token="op", status="finished", limit=1)]
        kept = client.seat("g1", "op").bundle()
    assert rematch.game_id == "g2" and rematch.rematch_of == "g1"
    assert asked[0].headers["idempotency-key"] == "r-1"
    assert json.loads(asked[0].content) == {"seed": "again"}
    assert json.loads(asked[1].content) == {"verdict": "lose_deal"}
    assert ruled.version == 8 and ruled.command_id == "bura-1"
    assert listed == ["a", "b"]
    assert asked[3].url.params["cursor"] == "c1" and asked[3].url.params["status"] == "finished"
    assert kept == bundle


def test_a_key_refused_for_another_body_still_sends_its_first_body_again() -> None:
    """A command under a key, another command under the same key (422), then the first
    again: the first's body is sent as it was, its `seen` included, so the server answers
    it as a duplicate rather than refusing it as a third command."""
    bodies: list[Any] = []

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        if body != bodies[0]:
            return httpx.Response(
                422, json={"code": "idempotency_key_reused", "detail": "another command"}
            )
        return httpx.Response(200, json={**ANSWER, "version": 11})

    with _client(answer) as client:
        seat = client.seat("g1", "g1.a")
        seat.version = 10
        seat.send({"type": "lead", "cards": ["AS"]}, key="k1")  # the seat now saw 11
        with pytest.raises(ApiError) as refused:
            seat.send({"type": "lead", "cards": ["KS"]}, key="k1")
        assert refused.value.code == "idempotency_key_reused"
        seat.send({"type": "lead", "cards": ["AS"]}, key="k1")
    first = {"type": "lead", "cards": ["AS"], "seen": 10}
    assert bodies == [first, {"type": "lead", "cards": ["KS"], "seen": 11}, first]


@pytest.mark.parametrize(
    "failure",
    [
        httpx.Response(500, json={"code": "internal_error", "detail": "x"}),
        httpx.Response(503, json={"code": "outcome_unknown", "detail": "x"}),
        httpx.RemoteProtocolError("closed before the answer"),
    ],
)
def test_a_ruling_that_may_have_been_made_is_not_sent_again(
    slept: list[float], failure: httpx.Response | Exception
) -> None:
    """POST /resume takes no Idempotency-Key: after an answer that may come from a ruling
    made (a 500, a 503 outcome_unknown, a connection lost once the request was sent), a
    second send could rule the next pause. The error is raised, nothing is resent."""
    asked: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        if isinstance(failure, Exception):
            raise failure
        return failure

    with _client(answer) as client, pytest.raises((ApiError, httpx.TransportError)):
        client.resume("g1", token="op", verdict="play_on")
    assert len(asked) == 1 and slept == []


def test_the_bundle_is_read_again_on_the_answers_every_read_is(slept: list[float]) -> None:
    """A 503 and a lost answer, then the bundle: its bytes as served."""
    bundle = b'{"format":"bura-bundle",  "kept": "as served"}'
    asked = 0

    def answer(request: httpx.Request) -> httpx.Response:
        nonlocal asked
        asked += 1
        if asked == 1:
            return httpx.Response(503, json={"code": "store_unavailable", "detail": "x"})
        if asked == 2:
            raise httpx.RemoteProtocolError("closed before the answer")
        return httpx.Response(200, content=bundle)

    with _client(answer) as client:
        assert client.seat("g1", "op").bundle() == bundle
    assert asked == 3 and len(slept) == 2
