"""Creations under one Idempotency-Key on two replicas at once, on the real PostgreSQL and
Redis. Only the try whose append makes the game writes its seats' tokens and settles its
row in the games index: a try that loses (the same options, or others, which are 422) leaves
neither the list nor any seat's token changed, so every seat of the game plays on every
replica, and the spectator watches."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from domain.rules import Rules
from services.app.callers import token_hash
from tests.api.conftest import OPERATOR, bearer
from tests.api.replicas import Replica, two_replicas

RUN = uuid.uuid4().hex[:8]


def body(names: list[str], stake: int) -> dict[str, Any]:
    return {"seats": [{"name": n} for n in names], "rules": {"stake": stake}}


TWO = body([f"ann-{RUN}", f"bob-{RUN}"], 2)
THREE = body([f"x-{RUN}", f"y-{RUN}", f"z-{RUN}"], 3)


@pytest.fixture
async def replicas(database_url: str, redis_url: str) -> AsyncIterator[tuple[Replica, Replica]]:
    async with two_replicas(database_url, redis_url) as pair:
        yield pair


def keyed(key: str) -> dict[str, str]:
    return {**OPERATOR, "Idempotency-Key": f"{RUN} {key}"}


async def the_game_as_made(replicas: tuple[Replica, Replica], made: dict[str, Any]) -> None:
    """The game `made` (its creation's answer) is listed as it was dealt, stores exactly
    its seats' and spectator's token hashes, and each token is its seat's on both
    replicas (each asked once, so one of them reads the hashes from the store)."""
    game_id = made["game_id"]
    names = [s["name"] for s in made["seats"]]
    one, _ = replicas
    assert one.api.adapters.index is not None
    indexed = await one.api.adapters.index.get(game_id)
    assert indexed is not None and list(indexed.seats) == names, (indexed, names)
    tokens = [s["token"] for s in made["seats"]] + [made["spectator_token"]]
    stored = await one.api.adapters.tokens.hashes(game_id)
    assert stored == [token_hash(t) for t in tokens]
    for replica in replicas:
        client: httpx.AsyncClient = replica.api.client
        for seat, token in enumerate(tokens):
            shown = await client.get(f"/games/{game_id}", headers=bearer(token))
            assert shown.status_code == 200, shown.text
            if seat < len(names):
                assert (shown.json()["viewer"], shown.json()["seat"]) == ("seat", seat)
            else:
                assert shown.json()["viewer"] == "spectator"


async def test_a_row_another_try_wrote_first_is_settled_by_the_try_that_made_the_game(
    replicas: tuple[Replica, Replica],
) -> None:
    """Another try under the key, with other options, wrote its row first and had not yet
    appended: the try that makes the game writes the row over, and the other try's 422
    changes nothing."""
    one, two = replicas
    game_id = one.api.runtime.seating.game_for(f"{RUN} settled")
    index = one.api.adapters.index
    assert index is not None
    await index.add(game_id, [s["name"] for s in THREE["seats"]], Rules(stake=3), keyed=True)
    made = await one.api.client.post("/games", json=TWO, headers=keyed("settled"))
    assert made.status_code == 201 and made.json()["duplicate"] is False, made.text
    assert made.json()["game_id"] == game_id
    refused = await two.api.client.post("/games", json=THREE, headers=keyed("settled"))
    assert refused.status_code == 422, refused.text
    assert refused.json()["code"] == "idempotency_key_reused"
    await the_game_as_made(replicas, made.json())
    indexed = await index.get(game_id)
    assert indexed is not None and indexed.rules.stake == 2


async def test_tries_with_other_options_at_once_on_two_replicas_leave_one_game_whole(
    replicas: tuple[Replica, Replica],
) -> None:
    for round_ in range(6):
        key = f"race {round_}"
        sends = [
            replica.api.client.post("/games", json=options, headers=keyed(key))
            for replica, options in zip(replicas * 4, (TWO, THREE) * 4, strict=True)
        ]
        answers = await asyncio.gather(*sends)
        codes = sorted({a.status_code for a in answers})
        assert set(codes) <= {201, 422}, [a.text for a in answers]
        made = [a.json() for a in answers if a.status_code == 201]
        assert len({m["game_id"] for m in made}) == 1
        assert [m["duplicate"] for m in made].count(False) == 1
        first = next(m for m in made if not m["duplicate"])
        assert all({**m, "duplicate": False} == first for m in made)
        refused = [a.json()["code"] for a in answers if a.status_code == 422]
        assert set(refused) <= {"idempotency_key_reused"}
        await the_game_as_made(replicas, first)


async def test_tries_with_the_same_options_at_once_on_two_replicas_answer_one_game(
    replicas: tuple[Replica, Replica],
) -> None:
    for round_ in range(6):
        key = f"same {round_}"
        sends = [
            replica.api.client.post("/games", json=TWO, headers=keyed(key))
            for replica in replicas * 5
        ]
        answers = await asyncio.gather(*sends)
        assert {a.status_code for a in answers} == {201}, [a.text for a in answers]
        made = [a.json() for a in answers]
        assert [m["duplicate"] for m in made].count(False) == 1
        first = next(m for m in made if not m["duplicate"])
        assert all({**m, "duplicate": False} == first for m in made)
        await the_game_as_made(replicas, first)


async def test_a_rematch_tried_at_once_on_two_replicas_under_one_key_is_one_rematch(
    replicas: tuple[Replica, Replica],
) -> None:
    one, _ = replicas
    for round_ in range(4):
        table = await one.api.create()
        await one.api.play(table, 0, {"type": "concede"})
        path = f"/games/{table.game_id}/rematch"
        sends = [
            replica.api.client.post(path, json={"seed": "s"}, headers=keyed(f"rematch {round_}"))
            for replica in replicas * 4
        ]
        answers = await asyncio.gather(*sends)
        assert {a.status_code for a in answers} == {201}, [a.text for a in answers]
        made = [a.json() for a in answers]
        assert len({m["game_id"] for m in made}) == 1
        assert [m["duplicate"] for m in made].count(False) == 1
        shown = await one.api.get(f"/games/{table.game_id}")
        assert shown["rematch"] == made[0]["game_id"]
        await the_game_as_made(replicas, next(m for m in made if not m["duplicate"]))
