"""Creating games: options and decks refused with a 400 that names what is wrong, seat
tokens that cannot be guessed and are stored only as hashes; a store that is down."""

from __future__ import annotations

import hashlib
import sqlite3
from typing import Any

import pytest

from domain import cards as pack
from harness.databases import free_port
from infra.memory.hints import InProcessHintBus
from infra.ports.events import EventStore
from infra.postgres.store import PostgresEventStore
from infra.postgres.tokens import PostgresSeatTokens
from infra.sqlite.store import SqliteEventStore
from services.bootstrap import adapters_on
from tests import servers
from tests.api.conftest import OPERATOR, THIRTY_ONE_DECK, Api, app_on, serving

TWO = [{"name": "ann"}, {"name": "bob"}]
THREE = [*TWO, {"name": "cid"}]

# (what, body, code, a word the detail must contain)
BAD_GAMES: list[tuple[str, dict[str, Any], str, str]] = [
    ("dave with three seats", {"seats": THREE, "rules": {"dave": True}}, "bad_option", "dave"),
    ("unknown option", {"seats": TWO, "rules": {"jokers": 2}}, "bad_request", "jokers"),
    (
        "hand_size of the wrong length",
        {"seats": TWO, "rules": {"hand_size": [3, 3, 3]}},
        "bad_option",
        "hand_size",
    ),
    ("a bad option value", {"seats": TWO, "rules": {"deck": 40}}, "bad_request", "deck"),
    ("a stake of nothing", {"seats": TWO, "rules": {"stake": 0}}, "bad_option", "stake"),
    (
        "Kozel for six",
        {"seats": [*THREE, *THREE], "rules": {"game": "kozel"}},
        "bad_option",
        "Kozel",
    ),
    (
        "teams without the 52-card pack",
        {"seats": [*TWO, *TWO], "rules": {"teams": [[0, 2], [1, 3]]}},
        "bad_option",
        "teams",
    ),
    ("one seat", {"seats": TWO[:1]}, "bad_request", "seats"),
    ("seven seats", {"seats": [*THREE, *THREE, *TWO[:1]]}, "bad_request", "seats"),
    ("no seats", {"rules": {}}, "bad_request", "seats"),
    ("an empty name", {"seats": [{"name": ""}, {"name": "bob"}]}, "bad_request", "name"),
    ("a dealer off the table", {"seats": TWO, "dealer": 2}, "bad_dealer", "dealer"),
    ("a dealer that is no seat", {"seats": TWO, "dealer": 9}, "bad_request", "dealer"),
    ("a deck one card short", {"seats": TWO, "deck": THIRTY_ONE_DECK[:-1]}, "bad_deck", "36-card"),
    (
        "a deck with a card twice",
        {"seats": TWO, "deck": [*THIRTY_ONE_DECK[:-1], "AS"]},
        "bad_deck",
        "twice",
    ),
    (
        "a deck with a bad code",
        {"seats": TWO, "deck": [*THIRTY_ONE_DECK[:-1], "1X"]},
        "bad_card",
        "1X",
    ),
    ("a deck of another pack", {"seats": TWO, "deck": list(pack.deck(32))}, "bad_deck", "36-card"),
    ("a deck too long", {"seats": TWO, "deck": [*pack.deck(52), "AS"]}, "bad_request", "deck"),
    ("an unknown field", {"seats": TWO, "table": 5}, "bad_request", "table"),
    (
        "a name with a NUL (PostgreSQL's text holds none)",
        {"seats": [{"name": "ann"}, {"name": "b\u0000b"}]},
        "bad_request",
        "seats[1].name",
    ),
]


@pytest.mark.parametrize(("what", "body", "code", "says"), BAD_GAMES, ids=[b[0] for b in BAD_GAMES])
async def test_a_bad_game_is_a_400_naming_what_is_wrong(
    api: Api, what: str, body: dict[str, Any], code: str, says: str
) -> None:
    answer = await api.client.post("/games", json=body, headers=OPERATOR)
    assert answer.status_code == 400, answer.text
    error = answer.json()
    assert error["code"] == code
    assert says in error["detail"] or says == error.get("option"), error


async def test_an_explicit_deck_is_read_in_any_case_and_dealt_as_given(api: Api) -> None:
    table = await api.create(deck=[c.lower() for c in THIRTY_ONE_DECK])
    seen = await api.view(table)
    assert [s["hand"] for s in seen["seats"]] == [["AS", "10S", "KS"], ["6H", "7H", "8H"]]
    assert seen["trump"] == "6C" and seen["stock"][0] == "9D" and seen["stock"][-1] == "6C"


async def test_seat_tokens_are_unguessable_and_only_their_hashes_are_stored(api: Api) -> None:
    tables = [await api.create(seats=3, deck=None) for _ in range(3)]
    tokens = [t for table in tables for t in [*table.tokens, table.spectator]]
    assert len(set(tokens)) == len(tokens)
    for table in tables:
        for token in [*table.tokens, table.spectator]:
            game, _, secret = token.partition(".")
            assert game == table.game_id
            assert len(secret) >= 32  # 192 random bits, URL-safe base64
        stored = await api.adapters.tokens.hashes(table.game_id)
        assert stored == [
            hashlib.sha256(t.encode()).digest() for t in [*table.tokens, table.spectator]
        ]
        everything = await stored_text(api.store, table.game_id)
        assert table.game_id in everything  # the dump does see the game's rows
        for token in [*table.tokens, table.spectator]:
            secret = token.partition(".")[2]
            assert secret not in everything
            assert secret.encode().hex() not in everything


async def stored_text(store: EventStore, game_id: str) -> str:
    """Every stored row of a game, in every table, as text (bytes also as hex)."""
    if isinstance(store, SqliteEventStore):
        with sqlite3.connect(store.db.path) as db:
            tables = [
                r[0]
                for r in db.execute(
                    "SELECT name FROM sqlite_master WHERE "
                    "type = 'table' AND name NOT LIKE 'sqlite_%'"
                )
                if any(c[1] == "stream_id" for c in db.execute(f"PRAGMA table_info({r[0]})"))
            ]
            rows = [
                row
                for t in tables
                for row in db.execute(f"SELECT * FROM {t} WHERE stream_id = ?", (game_id,))
            ]
        return " ".join(
            v.hex() + " " + v.decode(errors="replace") if isinstance(v, bytes) else str(v)
            for row in rows
            for v in row
        )
    assert isinstance(store, PostgresEventStore)
    tables = await store.pool.fetch(
        "SELECT table_name FROM information_schema.columns "
        "WHERE column_name = 'stream_id' AND table_schema = 'public'"
    )
    rows = [
        r
        for t in tables
        for r in await store.pool.fetch(
            f"SELECT t::text FROM {t[0]} AS t WHERE stream_id = $1", game_id
        )
    ]
    return " ".join(r[0] for r in rows)


async def test_a_store_that_cannot_be_reached_is_a_503_that_says_so(tmp_path: Any) -> None:
    closed_port = await PostgresEventStore.open(
        f"postgresql://postgres@127.0.0.1:{free_port()}/test", min_size=0, connect_timeout=2
    )
    closed_file = await servers.sqlite_adapters(str(tmp_path / "gone.db"))
    await closed_file.close()
    closed = [
        adapters_on(closed_port, PostgresSeatTokens(closed_port.pool), InProcessHintBus()),
        closed_file,
    ]
    for adapters in closed:
        async with serving(app_on(adapters)) as client:
            calls = [
                client.post("/games", json={"seats": TWO}, headers=OPERATOR),
                client.get(f"/games/{'a' * 32}", headers=OPERATOR),
                client.get(
                    f"/games/{'a' * 32}/events",
                    headers={"Authorization": f"Bearer {'a' * 32}.some-seat-token"},
                ),
                # the webhooks are kept in the same store (their operations document 503)
                client.get("/webhooks", headers=OPERATOR),
                client.post("/webhooks", json={"url": "https://a.example/x"}, headers=OPERATOR),
                client.get("/webhooks/deliveries", headers=OPERATOR),
                # the feed, from the start and from a checkpoint (looked up in the store)
                client.get("/events", params={"follow": "false"}, headers=OPERATOR),
                client.get("/events", params={"follow": "false", "after": "1:1"}, headers=OPERATOR),
            ]
            for call in calls:
                answer = await call
                assert answer.status_code == 503, answer.text
                error = answer.json()
                assert error["code"] == "store_unavailable"
                assert "event store cannot be reached" in error["detail"]
                # the driver's text names the database's host and port: the log has it
                assert "127.0.0.1" not in error["detail"], error
                # a write is sent again (nothing was written); a read is asked again
                if answer.request.method == "GET":
                    assert error["detail"].endswith(": ask again in a moment"), error
                else:
                    assert "nothing was written: send it again" in error["detail"], error
            ready = await client.get("/health/ready")
            assert ready.status_code == 503 and ready.json()["store"].startswith("unavailable")
            assert (await client.get("/health/live")).status_code == 200
    await closed_port.close()


async def test_every_201_says_where_what_it_made_is_found(api: Api) -> None:
    """A created game's Location is its view, by the front door's way (a plain creation)
    and the framework's (one sent with a query parameter it then reads none of) alike; a
    rematch's is the new game's; a stream ticket's is the stream it opens."""
    body = {"seats": [{"name": "a"}, {"name": "b"}]}
    for path in ("/games", "/games?x=1&y=2"):
        answer = await api.client.post(path, json=body, headers=OPERATOR)
        assert answer.status_code == 201, answer.text
        game_id = answer.json()["game_id"]
        assert answer.headers["location"] == f"/games/{game_id}"
        shown = await api.client.get(answer.headers["location"], headers=OPERATOR)
        assert shown.status_code == 200, shown.text
    table = await api.create()
    await api.play(table, 0, {"type": "concede"})
    rematch = await api.client.post(f"/games/{table.game_id}/rematch", headers=OPERATOR)
    assert rematch.status_code == 201, rematch.text
    assert rematch.headers["location"] == f"/games/{rematch.json()['game_id']}"
    ticket = await api.client.post(f"/games/{table.game_id}/stream-tickets", headers=OPERATOR)
    assert ticket.status_code == 201, ticket.text
    assert ticket.headers["location"] == ticket.json()["stream"]
    opened = await api.client.get(ticket.headers["location"])  # the game is over: it ends
    assert opened.status_code == 200 and "event: end" in opened.text


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ({"seats": TWO, "rules": {"stake2": 1}}, "rules.stake2"),  # unknown inside `rules`
        ({"seats": [{"name": "ann"}, {"nick": "bob"}]}, "seats[1].nick"),
        ({"seats": [{"name": "ann"}, {}]}, "seats[1].name"),  # missing inside a seat
        ({"seats": TWO, "rules": {"stake": "1"}}, "rules.stake"),  # as a wrong type was
        ({"seats": TWO, "bogus": 1}, "bogus"),
    ],
)
async def test_a_field_unknown_or_missing_inside_an_object_is_keyed_by_its_path(
    api: Api, body: dict[str, Any], key: str
) -> None:
    answer = await api.client.post("/games", json=body, headers=OPERATOR)
    assert answer.status_code == 400, answer.text
    error = answer.json()
    assert error["code"] == "bad_request"
    assert [e["key"] for e in error["errors"]] == [key], error
    assert error["detail"].startswith(f"{key}: "), error
