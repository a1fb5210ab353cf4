"""Creating a game under an Idempotency-Key: a retry is never a second game. The retry
answers with the first try's game, tokens and all, whichever way the request came (the
front door's or the framework's), whatever was played since, and however the body was
spelled; the same key with other options is 422; tokens are still stored only as hashes."""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from domain.rules import Rules
from infra.ports.events import (
    NO_METADATA,
    AppendResult,
    EventStore,
    Metadata,
    OutcomeUnknown,
    StoreUnavailable,
)
from services.http.games import creation_fingerprint_as_sent, dealt_deck
from services.http.schemas import CreateGame
from tests.api.conftest import OPERATOR, THIRTY_ONE_DECK, Api, bearer

# seat names of this run's own, so that the list shows which games these tests made
ANN, BOB = f"ann-{uuid.uuid4().hex[:8]}", f"bob-{uuid.uuid4().hex[:8]}"
BODY: dict[str, Any] = {
    "seats": [{"name": ANN}, {"name": BOB}],
    "rules": {"stake": 2},
    "deck": list(THIRTY_ONE_DECK),
    "dealer": 1,
}
# the same creation spelled another way: other order, other spacing, cards in lower case
RESPELLED = json.dumps(
    {
        "dealer": 1,
        "deck": [c.lower() for c in THIRTY_ONE_DECK],
        "rules": {"stake": 2},
        "seats": [{"name": ANN}, {"name": BOB}],
    },
    indent=3,
).encode()
# the two ways in: plain (the front door), and with a query it reads none of (the route)
WAYS = ["/games", "/games?way=framework&x=1"]


RUN = uuid.uuid4().hex[:8]  # the PostgreSQL database outlives a run: keys are this run's


def keyed(key: str) -> dict[str, str]:
    return {**OPERATOR, "Idempotency-Key": f"{RUN} {key}" if key not in (".", "..") else key}


async def listed(api: Api) -> list[str]:
    """The games these tests made in the last hour (the database may be shared), oldest
    first, every page of them."""
    since = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    found: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"created_since": since, "limit": 200}
        if cursor is not None:
            params["cursor"] = cursor
        page = await api.get("/games", **params)
        found += [g["game_id"] for g in page["games"] if g["seats"][0] == ANN]
        cursor = page["next_cursor"]
        if cursor is None:
            return found


@pytest.mark.parametrize("way", WAYS)
async def test_a_creation_retried_under_its_key_is_the_first_game(api: Api, way: str) -> None:
    before = await listed(api)
    first = await api.client.post(way, json=BODY, headers=keyed(f"table-7 {way}"))
    assert first.status_code == 201, first.text
    made = first.json()
    assert made["duplicate"] is False
    game_id = made["game_id"]
    # the game moves on before the retry: the retry still answers as the creation did
    conceded = await api.client.post(
        f"/games/{game_id}/commands",
        json={"type": "concede"},
        headers=bearer(made["seats"][0]["token"]),
    )
    assert conceded.status_code == 200, conceded.text
    for way_again in WAYS:
        again = await api.client.post(
            way_again,
            content=RESPELLED,
            headers={**keyed(f"table-7 {way}"), "Content-Type": "application/json"},
        )
        assert again.status_code == 201, again.text
        assert again.headers["location"] == first.headers["location"] == f"/games/{game_id}"
        assert again.json() == {**made, "duplicate": True}
    # one game, and its tokens are the ones both answers gave
    assert await listed(api) == [*before, game_id]
    for seat in made["seats"]:
        shown = await api.client.get(f"/games/{game_id}", headers=bearer(seat["token"]))
        assert shown.status_code == 200 and shown.json()["status"] == "finished"
    stored = await api.adapters.tokens.hashes(game_id)
    assert stored == [
        hashlib.sha256(t.encode()).digest()
        for t in [*(s["token"] for s in made["seats"]), made["spectator_token"]]
    ]


async def test_the_same_key_with_other_options_is_refused_and_deals_nothing(api: Api) -> None:
    first = await api.client.post("/games", json=BODY, headers=keyed("one-key"))
    assert first.status_code == 201, first.text
    before = await listed(api)
    others = [
        {**BODY, "seats": [{"name": ANN}, {"name": "cid"}]},
        {**BODY, "rules": {"stake": 3}},
        {**BODY, "dealer": 0},
        {**BODY, "seed": "another"},
        {"seats": BODY["seats"]},
    ]
    for way in WAYS:
        for other in others:
            answer = await api.client.post(way, json=other, headers=keyed("one-key"))
            assert answer.status_code == 422, answer.text
            problem = answer.json()
            assert problem["code"] == "idempotency_key_reused"
            assert "created another game" in problem["detail"]
    assert await listed(api) == before
    # the first game is as it was dealt
    assert (await api.get(f"/games/{first.json()['game_id']}"))["version"] == first.json()[
        "version"
    ]


@pytest.mark.parametrize(
    ("first", "again"),
    [
        ({"stake": 2}, {"stake": 2, "dave": True, "hand_size": [3, 3]}),
        ({"stake": 2, "dave": True}, {"stake": 2}),
        ({"stake": 2, "hand_size": [3, 3]}, {"stake": 2, "dave": None}),
    ],
)
async def test_the_seat_dependent_defaults_spelled_out_or_not_are_the_same_creation(
    api: Api, first: dict[str, Any], again: dict[str, Any]
) -> None:
    """`dave` and `hand_size` left out are what a view's `rules` spells out (`true` at two
    seats, three cards each): a retry that sends the view's `rules` back is the first
    game, and the same key with another value still is another creation."""
    key = keyed(f"spelled-{uuid.uuid4().hex}")
    made = await api.client.post("/games", json={**BODY, "rules": first}, headers=key)
    assert made.status_code == 201, made.text
    retried = await api.client.post("/games", json={**BODY, "rules": again}, headers=key)
    assert retried.status_code == 201, retried.text
    assert retried.json()["duplicate"] and retried.json()["game_id"] == made.json()["game_id"]
    other = await api.client.post(
        "/games", json={**BODY, "rules": {**first, "dave": False}}, headers=key
    )
    assert other.status_code == 422, other.text


async def test_a_creation_recorded_by_an_earlier_release_is_found_by_its_exact_retry(
    api: Api,
) -> None:
    """Earlier releases recorded the fingerprint of the body as sent (`dave` left out
    hashed as null): a retry of that body under its key is still the game it made."""
    key = f"{RUN} earlier-{uuid.uuid4().hex}"
    wanted = msgspec.convert(BODY, CreateGame)
    deck = dealt_deck(wanted)
    made = await api.service.create(
        [s.name for s in wanted.seats],
        wanted.rules,
        dealer=wanted.dealer,
        deck=deck,
        key=key,
        said=creation_fingerprint_as_sent(wanted, deck),  # as an earlier release said it
    )
    retried = await api.client.post(
        "/games", json=BODY, headers={**OPERATOR, "Idempotency-Key": key}
    )
    assert retried.status_code == 201, retried.text
    assert retried.json()["duplicate"] and retried.json()["game_id"] == made.game_id


async def test_keys_are_the_operators_own_and_tokens_are_as_unguessable(api: Api) -> None:
    """Another key is another game; the id tells nothing of the key; tokens of a keyed
    game are as long as random ones, differ from seat to seat, and are stored hashed."""
    answers = [
        (await api.client.post("/games", json=BODY, headers=keyed(key))).json()
        for key in ("a", "b", "table-42")
    ]
    ids = [a["game_id"] for a in answers]
    assert len(set(ids)) == 3
    tokens = [t for a in answers for t in [*(s["token"] for s in a["seats"]), a["spectator_token"]]]
    assert len(set(tokens)) == len(tokens)
    for answer in answers:
        assert "table-42" not in answer["game_id"]
        for token in [*(s["token"] for s in answer["seats"]), answer["spectator_token"]]:
            game, _, secret = token.partition(".")
            assert game == answer["game_id"] and len(secret) == 32
    # a seat's token is that seat's, the spectator's a spectator's
    table = answers[2]
    seat_one = await api.client.get(
        f"/games/{table['game_id']}", headers=bearer(table["seats"][1]["token"])
    )
    assert seat_one.json()["seats"][1]["hand"] == ["6H", "7H", "8H"]
    assert seat_one.json()["seats"][0]["hand"] != ["AS", "10S", "KS"]
    watcher = await api.client.get(
        f"/games/{table['game_id']}", headers=bearer(table["spectator_token"])
    )
    assert watcher.status_code == 200
    assert all(s["hand"] != ["6H", "7H", "8H"] for s in watcher.json()["seats"])
    # an unkeyed creation is as before: a fresh game every time
    plain = [(await api.client.post("/games", json=BODY, headers=OPERATOR)).json() for _ in "ab"]
    assert plain[0]["game_id"] != plain[1]["game_id"] and plain[0]["duplicate"] is False


async def test_tries_at_once_under_one_key_make_one_game(api: Api) -> None:
    before = await listed(api)
    answers = await asyncio.gather(
        *(api.client.post(way, json=BODY, headers=keyed("at-once")) for way in WAYS * 2)
    )
    assert {a.status_code for a in answers} == {201}, [a.text for a in answers]
    games = {a.json()["game_id"] for a in answers}
    assert len(games) == 1
    assert sorted(a.json()["duplicate"] for a in answers).count(False) >= 1
    firsts = {json.dumps({**a.json(), "duplicate": None}, sort_keys=True) for a in answers}
    assert len(firsts) == 1, "every answer is the one game's, tokens and all"
    assert await listed(api) == [*before, *games]


async def test_a_row_left_by_a_try_that_never_appended_does_not_block_the_retry(
    api: Api,
) -> None:
    """A try whose append never happened (its answer lost with the store) may leave the
    game's row in the operator's list; the retry under the same key deals the game."""
    game_id = api.runtime.seating.game_for(f"{RUN} lost-try")
    assert api.adapters.index is not None
    await api.adapters.index.add(game_id, [ANN, BOB], Rules())
    answer = await api.client.post("/games", json=BODY, headers=keyed("lost-try"))
    assert answer.status_code == 201, answer.text
    assert answer.json()["game_id"] == game_id and answer.json()["duplicate"] is False
    assert (await listed(api)).count(game_id) == 1
    indexed = await api.adapters.index.get(game_id)
    assert indexed is not None and indexed.rules.stake == 2


async def test_a_key_out_of_pattern_is_a_400_naming_the_header(api: Api) -> None:
    for key in ("x" * 201, ".", ".."):
        answer = await api.client.post("/games", json=BODY, headers=keyed(key))
        assert answer.status_code == 400, answer.text
        [error] = answer.json()["errors"]
        assert (error["key"], error["source"]) == ("idempotency-key", "header"), error


class LostAnswers:
    """The store, but every append's answer is lost and found again, as PostgreSQL's
    adapter finds a command id after a broken connection (`recovered`)."""

    def __init__(self, store: EventStore) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def append(
        self, stream_id: str, expected: int, events: Any, metadata: Metadata = NO_METADATA
    ) -> AppendResult:
        await self.store.append(stream_id, expected, events, metadata)
        assert metadata.command_id is not None
        found = await self.store.find_command(stream_id, metadata.command_id)
        assert found is not None
        return msgspec.structs.replace(found, duplicate=True, recovered=True)


async def test_a_creation_whose_answer_the_store_lost_is_the_first_and_is_told(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store lost its answer and found the key: the creation is this request's own
    (not a duplicate), and what follows an append is done (the hint, the observers)."""
    told: list[str] = []
    api.service.observe(lambda game_id, state: told.append(game_id))
    monkeypatch.setattr(api.service, "store", LostAnswers(api.store))
    answer = await api.client.post("/games", json=BODY, headers=keyed("lost-answer"))
    assert answer.status_code == 201, answer.text
    made = answer.json()
    assert made["duplicate"] is False and made["version"] >= 1
    assert told == [made["game_id"]]
    again = await api.client.post("/games", json=BODY, headers=keyed("lost-answer"))
    assert again.json() == {**made, "duplicate": True}


async def test_a_rematch_retried_under_its_key_is_the_first_rematch(api: Api) -> None:
    table = await api.create()
    await api.play(table, 0, {"type": "concede"})
    path = f"/games/{table.game_id}/rematch"
    first = await api.client.post(path, json={"seed": "s1"}, headers=keyed("rematch"))
    assert first.status_code == 201, first.text
    made = first.json()
    assert made["rematch_of"] == table.game_id and made["duplicate"] is False
    again = await api.client.post(path, json={"seed": "s1"}, headers=keyed("rematch"))
    assert again.status_code == 201, again.text
    assert again.json() == {**made, "duplicate": True}
    assert again.headers["location"] == f"/games/{made['game_id']}"
    # the game has its rematch: without the key (or under another) it is a 409, as ever
    for headers in (OPERATOR, keyed("another rematch")):
        refused = await api.client.post(path, headers=headers)
        assert refused.status_code == 409 and refused.json()["code"] == "rematch_exists"
    # the key with another seed, or for a creation, names another game
    for way, body in ((path, {"seed": "s2"}), (path, None), ("/games", BODY)):
        reused = await api.client.post(way, json=body, headers=keyed("rematch"))
        assert reused.status_code == 422, reused.text
        assert reused.json()["code"] == "idempotency_key_reused"
    shown = await api.get(f"/games/{table.game_id}")
    assert shown["rematch"] == made["game_id"]
    seat = await api.client.get(
        f"/games/{made['game_id']}", headers=bearer(made["seats"][1]["token"])
    )
    assert seat.status_code == 200 and seat.json()["rematch_of"] == table.game_id


async def test_seats_not_written_after_the_game_was_dealt_are_an_unknown_outcome_then_found(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a key the seats' tokens are written once the append has made the game: if
    that write fails, the answer is 503 outcome_unknown naming the key (never
    store_unavailable, "nothing was written"), and the retry finds the game and writes
    the seats, whose tokens then play."""
    tokens = api.service.seating.tokens
    save = tokens.save
    failures = [StoreUnavailable("the seats' table cannot be reached")]

    async def failing(stream_id: str, token_hashes: Any) -> None:
        if failures:
            raise failures.pop()
        await save(stream_id, token_hashes)

    monkeypatch.setattr(tokens, "save", failing)
    first = await api.client.post("/games", json=BODY, headers=keyed("seats-lost"))
    assert first.status_code == 503, first.text
    assert first.json()["code"] == "outcome_unknown"
    assert first.json()["command_id"] == f"{RUN} seats-lost"
    again = await api.client.post("/games", json=BODY, headers=keyed("seats-lost"))
    assert again.status_code == 201 and again.json()["duplicate"] is True, again.text
    made = again.json()
    shown = await api.client.get(
        f"/games/{made['game_id']}", headers=bearer(made["seats"][1]["token"])
    )
    assert shown.status_code == 200 and shown.json()["seat"] == 1


class AnswersLost(LostAnswers):
    """The store, but the answer of the next append (while `losing`) is lost after it was
    written and not found again: an unknown outcome naming the append's command id, as
    PostgreSQL's adapter raises when it cannot find the id."""

    losing = True

    async def append(
        self, stream_id: str, expected: int, events: Any, metadata: Metadata = NO_METADATA
    ) -> AppendResult:
        written = await self.store.append(stream_id, expected, events, metadata)
        if self.losing:
            self.losing = False
            raise OutcomeUnknown("the connection broke", metadata.command_id)
        return written


async def test_a_creation_sent_without_a_key_whose_answer_was_lost_is_found_by_the_key_told(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A creation (and a rematch) sent with no Idempotency-Key is made under a key of the
    server's own, which the unknown outcome names: sent again with it and the same body, it
    answers with the game the first try made (a second game was dealt, with tokens nobody
    had). The advice names no lookup: none finds a game by a creation's key."""
    lost = AnswersLost(api.store)
    monkeypatch.setattr(api.service, "store", lost)
    first = await api.client.post("/games", json=BODY, headers=OPERATOR)
    assert first.status_code == 503 and first.json()["code"] == "outcome_unknown", first.text
    key = first.json()["command_id"]
    assert key.startswith("bura-") and "GET /games" not in first.json()["detail"]
    assert f"the same body with Idempotency-Key {key!r}" in first.json()["detail"]
    again = await api.client.post("/games", json=BODY, headers=keyed_raw(key))
    assert again.status_code == 201 and again.json()["duplicate"] is True, again.text
    made = again.json()
    seat = await api.client.get(
        f"/games/{made['game_id']}", headers=bearer(made["seats"][0]["token"])
    )
    assert seat.status_code == 200 and seat.json()["version"] == made["version"]

    await api.client.post(
        f"/games/{made['game_id']}/commands",
        json={"type": "concede"},
        headers=bearer(made["seats"][seat.json()["turn"]]["token"]),
    )
    lost.losing = True
    path = f"/games/{made['game_id']}/rematch"
    first = await api.client.post(path, headers=OPERATOR)
    assert first.status_code == 503 and first.json()["code"] == "outcome_unknown", first.text
    key = first.json()["command_id"]
    again = await api.client.post(path, headers=keyed_raw(key))
    assert again.status_code == 201 and again.json()["duplicate"] is True, again.text
    assert (await api.get(f"/games/{made['game_id']}"))["rematch"] == again.json()["game_id"]


def keyed_raw(key: str) -> dict[str, str]:
    """The operator's headers with this exact key (not made this run's)."""
    return {**OPERATOR, "Idempotency-Key": key}
