"""Every endpoint as every role: who may do what, and that no hidden card ever reaches a
seat or a spectator."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.api.conftest import (
    OPERATOR,
    THIRTY_ONE_GAME,
    Api,
    Body,
    Table,
    bearer,
    cards_in,
)

ROLES = ("nobody", "bad_token", "operator", "seat0", "seat1", "spectator", "other_game")
PASS: Body = {"type": "pass"}  # refused with 409 for both seats at the start: changes nothing


def headers_of(role: str, table: Table, other: Table) -> dict[str, str]:
    return {
        "nobody": {},
        "bad_token": bearer(f"{table.game_id}.not-a-real-token"),
        "operator": OPERATOR,
        "seat0": table.seat(0),
        "seat1": table.seat(1),
        "spectator": table.watcher,
        "other_game": other.seat(0),
    }[role]


def expected(endpoint: str, role: str, finished: bool) -> int | None:
    """The status each role gets; None where a 200 stream would never end here."""
    if role in ("nobody", "bad_token"):
        return 401
    if endpoint == "create":
        return 201 if role == "operator" else 403
    if role == "other_game":
        return 403
    if endpoint == "command":
        if role in ("operator", "spectator"):
            return 403
        return 409  # past auth: the pass itself is refused by the rules
    if endpoint in ("replay", "audit", "verify", "bundle") and role != "operator" and not finished:
        return 403
    if endpoint == "stream" and not finished:
        return None  # an open live stream: the SSE tests read those with a real server
    return 200


ENDPOINTS = (
    "create", "command", "view", "events", "replay", "audit", "verify", "bundle", "stream"
)  # fmt: skip


async def call(api: Api, endpoint: str, table: Table, headers: dict[str, str]) -> httpx.Response:
    base = f"/games/{table.game_id}"
    match endpoint:
        case "create":
            body = {"seats": [{"name": "a"}, {"name": "b"}]}
            return await api.client.post("/games", json=body, headers=headers)
        case "command":
            return await api.client.post(f"{base}/commands", json=PASS, headers=headers)
        case "view":
            return await api.client.get(base, headers=headers)
        case "stream":
            return await api.client.get(f"{base}/stream", headers=headers)
        case _:
            return await api.client.get(f"{base}/{endpoint}", headers=headers)


async def walk(api: Api, table: Table, other: Table, finished: bool) -> None:
    version = await api.version(table)
    for endpoint in ENDPOINTS:
        for role in ROLES:
            status = expected(endpoint, role, finished)
            if status is None:
                continue
            answer = await call(api, endpoint, table, headers_of(role, table, other))
            assert answer.status_code == status, (endpoint, role, answer.text)
            if status >= 400:
                error = answer.json()
                assert error["code"] and error["detail"], (endpoint, role, error)
            if status == 401:
                assert error["code"] == "unauthorized"
            if status == 403:
                assert error["code"] == "forbidden"
    assert await api.version(table) == version, "the walk changed the game"


async def test_every_endpoint_as_every_role_while_playing_and_after(api: Api) -> None:
    table, other = await api.create(), await api.create()
    await walk(api, table, other, finished=False)
    for seat, command in THIRTY_ONE_GAME:
        await api.play(table, seat, command)
    await walk(api, table, other, finished=True)


async def test_an_unknown_game_is_404_for_the_operator_and_403_for_a_seat(api: Api) -> None:
    table = await api.create()
    for path in ("", "/events", "/replay", "/audit", "/verify", "/bundle", "/stream"):
        url = f"/games/{'0' * 32}{path}"
        assert (await api.client.get(url, headers=OPERATOR)).status_code == 404
        assert (await api.client.get(url, headers=table.seat(0))).status_code == 403
        assert (await api.client.get(url)).status_code == 401
        answer = await api.client.get(url, headers=OPERATOR)
        assert answer.json()["code"] == "game_not_found"
    command = await api.client.post(f"/games/{'0' * 32}/commands", json=PASS, headers=table.seat(0))
    assert command.status_code == 403


@pytest.mark.parametrize("scheme", ["Basic", "Token", ""])
async def test_only_bearer_tokens_are_read(api: Api, scheme: str) -> None:
    table = await api.create()
    answer = await api.client.get(
        f"/games/{table.game_id}", headers={"Authorization": f"{scheme} {table.tokens[0]}"}
    )
    assert answer.status_code == 401
    assert "Bearer" in answer.json()["detail"]


# --- no hidden card ever leaves for the wrong viewer ---------------------------------


def secrets_of(arbiter: Body, viewer: int | None) -> set[str]:
    """Cards the viewer may not know now: other seats' hands and the stock, but for the
    turned trump card, which lies face up."""
    hidden = set(arbiter["stock"] or ())
    for s in arbiter["seats"]:
        if s["seat"] != viewer:
            hidden |= set(s["hand"] or ())
    return hidden - {arbiter["trump"]}


def assert_hides(payload: Any, hidden: set[str], where: str) -> None:
    leaked = set(cards_in(payload)) & hidden
    assert not leaked, f"{where} shows hidden cards {sorted(leaked)}"


def assert_view_hides(seen: Body, viewer: int | None) -> None:
    assert seen["stock"] is None
    for s in seen["seats"]:
        assert s["pile"] is None
        if s["seat"] != viewer:
            assert s["hand"] is None, s
    if viewer is None:
        assert seen["hand"] is None
    if seen["status"] == "in_progress":
        assert seen["seed"] is None


def assert_events_hide(events: list[Body], viewer: int | None) -> None:
    for envelope in events:
        event = envelope["event"]
        match event["type"]:
            case "card_dealt" | "card_drawn" if event["seat"] != viewer:
                assert event["card"] is None or event.get("face_up"), event
            case "penalty_applied" if event["seat"] != viewer:
                assert event["cards"] is None, event
            case "deal_started":
                assert event["deck"] is None, event
            case "game_started":
                assert event["seed"] is None, event


async def assert_nothing_leaks(
    api: Api, table: Table, answers: dict[int | None, list[Body]]
) -> None:
    arbiter = await api.view(table)
    finished = arbiter["status"] == "finished"
    for viewer, headers in ((0, table.seat(0)), (1, table.seat(1)), (None, table.watcher)):
        hidden = secrets_of(arbiter, viewer)
        seen = await api.view(table, headers)
        assert_view_hides(seen, viewer)
        assert_hides(seen, hidden, f"the view of {viewer}")
        events = await api.events(table, headers)
        assert len(events) == arbiter["version"]
        assert_events_hide(events, viewer)
        assert_hides(events, hidden, f"the events of {viewer}")
        for answer in answers.get(viewer, []):
            assert_events_hide(answer["events"], viewer)
            assert_hides(answer, hidden, f"a command answer to {viewer}")
        if finished:  # the stream of a finished game ends, so it can be read here
            stream = await api.client.get(f"/games/{table.game_id}/stream", headers=headers)
            assert stream.status_code == 200
            messages = [
                json.loads(line[5:])
                for line in stream.text.splitlines()
                if line.startswith("data:")
            ]
            assert messages[0]["view"]["version"] == arbiter["version"]
            assert_view_hides(messages[0]["view"], viewer)
            assert_hides(messages, hidden, f"the stream of {viewer}")


async def test_no_seat_or_spectator_ever_sees_a_hidden_card(api: Api) -> None:
    table = await api.create()
    answers: dict[int | None, list[Body]] = {0: [], 1: []}
    await assert_nothing_leaks(api, table, answers)
    for seat, command in THIRTY_ONE_GAME:
        answers[seat].append(await api.play(table, seat, command))
        await assert_nothing_leaks(api, table, answers)
    # Faulty draws: the cards the offender took stay hidden from the other seat.
    penalised = await api.create(deck=None, dealer=None, seed="leaks")
    start = await api.view(penalised)
    offender = 1 - start["turn"]
    taken = await api.play(penalised, offender, {"type": "draw", "count": 2})
    await assert_nothing_leaks(api, penalised, {offender: [taken]})
    events = await api.events(penalised, penalised.seat(1 - offender))
    assert any(
        e["event"]["type"] == "penalty_applied" and e["event"]["cards"] is None for e in events
    )


async def test_the_spectator_sees_no_hand_and_seats_only_their_own(api: Api) -> None:
    table = await api.create()
    watcher = await api.view(table, table.watcher)
    assert watcher["viewer"] == "spectator" and watcher["seat"] is None
    assert watcher["hand"] is None and all(s["hand"] is None for s in watcher["seats"])
    for seat in (0, 1):
        seen = await api.view(table, table.seat(seat))
        assert (seen["viewer"], seen["seat"]) == ("seat", seat)
        assert seen["hand"] == seen["seats"][seat]["hand"]
        assert seen["seats"][1 - seat]["hand"] is None
    arbiter = await api.view(table)
    assert all(s["hand"] for s in arbiter["seats"]) and arbiter["stock"]
    # The leak checks above can fail: the arbiter's view shows what a seat may not see.
    hidden = secrets_of(arbiter, 0)
    assert len(hidden) == 36 - 3 - 1  # all but its own hand and the turned trump
    with pytest.raises(AssertionError):
        assert_hides(arbiter, hidden, "the arbiter's view")


async def test_a_401_asks_for_the_token_the_endpoint_takes(api: Api) -> None:
    """Without a token, an operator-only endpoint asks for the operator key, never for "a
    seat token" that it would then refuse (403); a game's own endpoints take either."""
    table = await api.create()
    game = f"/games/{table.game_id}"
    operator_only = [
        ("GET", "/games"),
        ("POST", "/games"),
        ("GET", "/events"),
        ("GET", "/webhooks"),
        ("GET", "/webhooks/deliveries"),
        ("POST", f"{game}/rematch"),
        ("POST", f"{game}/resume"),
    ]
    for method, path in operator_only:
        answer = await api.client.request(method, path)
        assert answer.status_code == 401, (path, answer.text)
        assert answer.json()["detail"] == "send 'Authorization: Bearer <operator key>'", path
    for method, path in [("GET", game), ("POST", f"{game}/commands")]:
        answer = await api.client.request(method, path, json=PASS)
        assert answer.status_code == 401, (path, answer.text)
        assert "<operator key or seat token>" in answer.json()["detail"], path
