"""The Python client's retries and live stream when the server (or a proxy) misbehaves,
against answers made here (httpx's MockTransport): a stream refused to the end of its
reconnects, a stream that closes before `end`, a half-open connection, a Retry-After
given as a date, `Client(retries=4)`, and game creation, which carries no Idempotency-Key."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
from bura_client import ApiError, Client, OutcomeUnknown, RateLimited, StreamEnded, Unavailable
from bura_client.retries import retry_after

from services.cli import play as bura_play
from services.cli.errors import FAILED, UNAVAILABLE, CliError

Handler = Callable[[httpx.Request], httpx.Response]
CREATED = {
    "game_id": "g1",
    "version": 1,
    "seats": [
        {"seat": 0, "name": "ann", "token": "g1.a"},
        {"seat": 1, "name": "bob", "token": "g1.b"},
    ],
    "spectator_token": "g1.s",
}


def _frame(version: int) -> str:
    view = {"version": version, "status": "in_progress", "due": None, "seat": 0}
    return f"id: {version}\nevent: view\ndata: {json.dumps({'version': version, 'view': view})}\n\n"


def _problem(status: int, code: str, **headers: str) -> httpx.Response:
    return httpx.Response(status, json={"code": code, "detail": code}, headers=headers)


def _client(handler: Handler, **options: Any) -> Client:
    return Client("http://bura.test", transport=httpx.MockTransport(handler), **options)


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [
        (503, "store_unavailable", Unavailable),
        (429, "rate_limited", RateLimited),
        (500, "internal_error", ApiError),
        (502, "error", ApiError),
    ],
)
def test_a_stream_refused_to_the_end_of_its_reconnects_raises_the_api_error(
    slept: list[float], status: int, code: str, kind: type[ApiError]
) -> None:
    asked = 0

    def answer(request: httpx.Request) -> httpx.Response:
        nonlocal asked
        asked += 1
        return _problem(status, code, **{"Retry-After": "1"})

    with _client(answer) as client, pytest.raises(kind) as raised:
        list(client.seat("g1", "token").follow(reconnects=3))
    assert type(raised.value) is kind
    assert (raised.value.status, raised.value.code) == (status, code)
    assert asked == 4 and len(slept) == 3


def _play_against(monkeypatch: pytest.MonkeyPatch, stream: Handler) -> CliError:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/stream"):
            return stream(request)
        return httpx.Response(200, json={"version": 3, "status": "in_progress", "seat": 0})

    monkeypatch.setattr(
        bura_play, "Client", lambda url: Client(url, transport=httpx.MockTransport(answer))
    )
    with pytest.raises(CliError) as raised:
        bura_play.main("http://bura.test", "g1", "g1.secret", "greedy", 1, True)
    return raised.value


@pytest.mark.parametrize(("status", "code"), [(503, "store_unavailable"), (429, "rate_limited")])
def test_bura_play_says_in_one_line_and_exit_3_a_stream_busy_to_the_end(
    monkeypatch: pytest.MonkeyPatch, slept: list[float], status: int, code: str
) -> None:
    failed = _play_against(monkeypatch, lambda request: _problem(status, code))
    assert failed.exit_code == UNAVAILABLE
    assert f"{status} {code}" in str(failed) and "\n" not in str(failed)


def test_a_stream_that_keeps_closing_before_its_end_backs_off_and_gives_up(
    slept: list[float],
) -> None:
    asked: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.headers.get("last-event-id"))
        if len(asked) > 50:  # what the client did without a limit: for ever
            raise RuntimeError("reconnected without end")
        body = _frame(4) if len(asked) == 1 else ""
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    got: list[int | None] = []
    with _client(answer) as client, pytest.raises(StreamEnded):
        for message in client.seat("g1", "token").follow(reconnects=5):
            got.append(message.id)
    assert got == [4]
    assert asked == [None, *["4"] * 5]  # the first, then 5 reconnects, each resumed
    assert len(slept) == 5 and all(wait > 0 for wait in slept)


def test_bura_play_says_a_stream_that_keeps_closing_ended_before_the_game(
    monkeypatch: pytest.MonkeyPatch, slept: list[float]
) -> None:
    asked = 0

    def stream(request: httpx.Request) -> httpx.Response:
        nonlocal asked
        asked += 1
        if asked > 100:
            raise RuntimeError("reconnected without end")
        return httpx.Response(200, text="", headers={"content-type": "text/event-stream"})

    failed = _play_against(monkeypatch, stream)
    assert failed.exit_code == FAILED
    assert "the stream ended before the game did" in str(failed)


class _HalfOpen(httpx.SyncByteStream):
    """A version, then nothing: the read times out."""

    def __iter__(self) -> Iterator[bytes]:
        yield _frame(5).encode()
        raise httpx.ReadTimeout("nothing read")


def test_a_silent_stream_times_out_and_resumes_with_last_event_id(slept: list[float]) -> None:
    asked: list[tuple[str | None, object]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append((request.headers.get("last-event-id"), request.extensions["timeout"]))
        if len(asked) == 1:
            return httpx.Response(
                200, stream=_HalfOpen(), headers={"content-type": "text/event-stream"}
            )
        body = _frame(6) + "event: end\ndata: {}\n\n"
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    with _client(answer) as client:
        got = [m.id for m in client.seat("g1", "token").follow()]
    assert got == [5, 6, None]
    assert [last for last, _ in asked] == [None, "5"]
    read = [timeout["read"] for _, timeout in asked]  # type: ignore[index]
    assert all(r is not None and 15 < r <= 60 for r in read), read


def test_client_takes_a_number_of_attempts_as_its_retries(slept: list[float]) -> None:
    asked = 0

    def answer(request: httpx.Request) -> httpx.Response:
        nonlocal asked
        asked += 1
        return _problem(503, "store_unavailable")

    with _client(answer, retries=4) as client, pytest.raises(Unavailable):
        client.seat("g1", "token").view()
    assert asked == 4 and len(slept) == 3


@pytest.mark.parametrize("ahead", [timedelta(seconds=3), timedelta(seconds=-30)])
def test_a_retry_after_given_as_a_date_is_waited_for(slept: list[float], ahead: timedelta) -> None:
    when = format_datetime(datetime.now(UTC) + ahead, usegmt=True)
    answers = iter([_problem(429, "rate_limited", **{"Retry-After": when})])

    def answer(request: httpx.Request) -> httpx.Response:
        return next(answers, httpx.Response(200, json={"version": 2}))

    with _client(answer) as client:
        assert client.seat("g1", "token").view()["version"] == 2
    assert len(slept) == 1 and 0 <= slept[0] <= max(0, ahead.total_seconds()) + 0.01


def test_retry_after_reads_seconds_dates_and_nonsense() -> None:
    assert retry_after("2") == 2.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # long past
    assert retry_after("soon") is None and retry_after(None) is None
    assert retry_after("nan") is None
    limited = RateLimited(429, {"code": "rate_limited"}, {"retry-after": "soon"})
    assert limited.retry_after == 1.0


def _failing_once(failure: httpx.Response | Exception, asked: list[httpx.Request]) -> Handler:
    """A server whose first answer to the creation is `failure`, then the game."""

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        if len(asked) == 1:
            if isinstance(failure, Exception):
                raise failure
            return failure
        return httpx.Response(201, json=CREATED)

    return answer


@pytest.mark.parametrize(
    "failure",
    [
        _problem(500, "internal_error"),
        _problem(502, "error"),
        _problem(503, "outcome_unknown"),
        httpx.ReadTimeout("the answer was lost"),
        httpx.RemoteProtocolError("closed before the answer"),
    ],
)
def test_a_creation_that_may_have_reached_the_server_is_sent_again_under_its_key(
    slept: list[float], failure: httpx.Response | Exception
) -> None:
    """A lost answer is retried with the same Idempotency-Key: the server answers with the
    game the first try made, if it did, so no second game is dealt."""
    asked: list[httpx.Request] = []
    with _client(_failing_once(failure, asked)) as client:
        assert client.create_game(["ann", "bob"], token="operator").game_id == "g1"
    assert len(asked) == 2
    keys = {request.headers["idempotency-key"] for request in asked}
    assert len(keys) == 1 and keys.pop().startswith("create-")
    asked.clear()
    with _client(_failing_once(failure, asked)) as client:
        client.create_game(["ann", "bob"], token="operator", key="table 9")
    assert [request.headers["idempotency-key"] for request in asked] == ["table 9"] * 2


def test_a_creation_whose_retries_are_spent_names_its_key(slept: list[float]) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return _problem(503, "outcome_unknown")

    with _client(answer, retries=2) as client, pytest.raises(ApiError) as raised:
        client.create_game(["ann", "bob"], token="operator", key="table 10")
    assert raised.value.command_id == "table 10" and raised.value.code == "outcome_unknown"


@pytest.mark.parametrize(
    "failure",
    [
        _problem(429, "rate_limited", **{"Retry-After": "1"}),
        _problem(503, "store_unavailable"),
        _problem(503, "shutting_down"),
        httpx.ConnectError("refused"),
    ],
)
def test_a_game_is_created_again_when_nothing_was_done(
    slept: list[float], failure: httpx.Response | Exception
) -> None:

    asked: list[httpx.Request] = []
    with _client(_failing_once(failure, asked)) as client:
        assert client.create_game(["ann", "bob"], token="operator").game_id == "g1"
    assert len(asked) == 2


def test_a_creation_that_never_got_an_answer_names_its_key(slept: list[float]) -> None:
    """No answer to the end of the retries: OutcomeUnknown with the key, so that the
    caller can ask again under it (the key it made would otherwise be lost)."""

    def answer(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("dropped", request=request)

    with _client(answer, retries=3) as client, pytest.raises(OutcomeUnknown) as raised:
        client.create_game(["ann", "bob"], token="operator")
    assert raised.value.command_id.startswith("create-")
    assert isinstance(raised.value, httpx.TransportError)


def test_presence_is_no_progress_of_a_stream_that_keeps_being_cut(slept: list[float]) -> None:
    """Each cut makes the other seat reconnect, which sends a presence message: that must
    not reset the count of failures in a row, or `reconnects` is never reached."""
    asked = 0

    def answer(request: httpx.Request) -> httpx.Response:
        nonlocal asked
        asked += 1
        if asked > 50:
            raise RuntimeError("reconnected without end")
        body = _frame(4) if asked == 1 else 'event: presence\ndata: {"seat": 1}\n\n'
        return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})

    events: list[str] = []
    with _client(answer) as client, pytest.raises(StreamEnded):
        for message in client.seat("g1", "token").follow(reconnects=3):
            events.append(message.event)
    assert events == ["view", "presence", "presence", "presence"]
    assert asked == 4  # the first and 3 reconnects, each cut again: then it gives up


def test_a_long_retry_after_is_waited_out_up_to_a_minute(slept: list[float]) -> None:
    tries = 0

    def answer(request: httpx.Request) -> httpx.Response:
        nonlocal tries
        tries += 1
        if tries == 1:
            return _problem(429, "rate_limited", **{"Retry-After": "30"})
        if tries == 2:
            return _problem(429, "rate_limited", **{"Retry-After": "600"})
        return httpx.Response(200, json={"version": 3, "status": "in_progress"})

    with _client(answer) as client:
        client.seat("g1", "token").view()
    assert slept == [30.0, 60.0]


def test_bura_play_acts_only_on_a_latest_view(monkeypatch: pytest.MonkeyPatch) -> None:
    """A message the server had already moved on from (`latest` false: between the events
    of one command) is not acted on, nor even checked with a read; the latest one is."""
    due = {"status": "in_progress", "seat": 0, "due": "lead", "hand": ["AS"]}
    frames = [
        (2, {**due, "version": 2}, False),
        (3, {"version": 3, "status": "finished", "seat": 0, "due": None}, True),
    ]
    data = [
        (v, json.dumps({"version": v, "view": view, "latest": latest}))
        for v, view, latest in frames
    ]
    stream = "".join(f"id: {v}\nevent: view\ndata: {d}\n\n" for v, d in data)
    stream += 'event: end\ndata: {"reason": "game_over"}\n\n'
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(f"{request.method} {request.url.path}")
        if request.url.path.endswith("/stream"):
            return httpx.Response(200, text=stream, headers={"content-type": "text/event-stream"})
        return httpx.Response(200, json={"version": 1, "status": "in_progress", "seat": 0})

    monkeypatch.setattr(
        bura_play, "Client", lambda url: Client(url, transport=httpx.MockTransport(answer))
    )
    last = bura_play.play("http://bura.test", "g1", "g1.secret", out=lambda line: None)
    assert last["status"] == "finished"
    assert asked == ["GET /games/g1", "GET /games/g1/stream"]  # no read of v2, no command


class _Cut(httpx.SyncByteStream):
    """A stream's 200, then the connection reset by a proxy mid-body."""

    def __iter__(self) -> Iterator[bytes]:
        yield b": keep-alive\n\n"
        raise httpx.RemoteProtocolError("peer closed connection without sending complete body")


def _cut(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, stream=_Cut(), headers={"content-type": "text/event-stream"})


def test_a_stream_cut_after_it_opened_to_the_end_of_its_reconnects_ended(
    slept: list[float],
) -> None:
    """A proxy that resets each stream once it has opened: the server answered every
    time, so the client's verdict is the stream's end, not an unreachable server."""
    with _client(_cut) as client, pytest.raises(StreamEnded):
        list(client.seat("g1", "token").follow(reconnects=3))
    assert len(slept) == 3


def test_bura_play_says_a_stream_cut_again_and_again_ended_before_the_game(
    monkeypatch: pytest.MonkeyPatch, slept: list[float]
) -> None:
    failed = _play_against(monkeypatch, _cut)
    assert failed.exit_code == FAILED
    assert "the stream ended before the game did" in str(failed)


def test_bura_play_at_a_url_with_a_path_names_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """404 `not_found` (no such path, not `game_not_found`): --url is no API's root."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"code": "not_found", "detail": "Not Found"})

    monkeypatch.setattr(
        bura_play, "Client", lambda url: Client(url, transport=httpx.MockTransport(answer))
    )
    with pytest.raises(CliError) as raised:
        bura_play.main("http://bura.test/schema/swagger", "g1", "g1.secret", "greedy", 1, True)
    assert raised.value.exit_code == UNAVAILABLE
    assert "--url" in str(raised.value) and "404 not_found" in str(raised.value)
