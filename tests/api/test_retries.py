"""Idempotent retries and racing seats: a retry is never a second move, a race never a
corrupt game."""

from __future__ import annotations

import asyncio
import random

import msgspec
import pytest

from domain.commands import Concede, Declare, Draw, Lead, PlayerCommand
from domain.evolve import replay
from domain.legal import legal_commands
from domain.state import Game
from infra.memory.hints import InProcessHintBus
from services.app import codec, games
from services.app.codec import from_recorded
from services.app.games import GameService
from tests.api.conftest import FIRST_TRICK, THIRTY_ONE_GAME, Api, Body, Table, table_only

DRAW: Body = {"type": "draw"}


async def after_first_trick(api: Api) -> Table:
    table = await api.create()
    for seat, command in FIRST_TRICK:
        await api.play(table, seat, command)
    return table  # seat 0 is due to draw, then seat 1, three rounds


async def stored_versions(api: Api, table: Table) -> list[int]:
    return [r.version for r in await api.store.read(table.game_id)]


async def test_a_retried_command_returns_the_first_answer_and_appends_nothing(api: Api) -> None:
    table = await api.create()
    lead = {"type": "lead", "cards": ["AS"]}
    first = await api.play(table, 0, lead, key="lead-1")
    again = await api.play(table, 0, lead, key="lead-1")
    assert first["duplicate"] is False and again["duplicate"] is True
    assert again["version"] == first["version"]
    assert again["events"] == first["events"]
    assert await stored_versions(api, table) == list(range(1, first["version"] + 1))


async def test_a_retried_draw_is_never_a_second_draw(api: Api) -> None:
    table = await after_first_trick(api)
    first = await api.play(table, 0, DRAW, key="draw-1")
    # Seat 1 is due now: a second draw by seat 0 would be out of turn and lose the deal.
    again = await api.play(table, 0, DRAW, key="draw-1")
    assert again == {**first, "duplicate": True}
    state = await api.view(table)
    assert state["status"] == "in_progress" and state["version"] == first["version"]
    assert [e["event"]["type"] for e in first["events"]] == ["card_drawn"]


async def test_a_draw_retried_after_the_other_seat_moved_is_still_the_first_draw(
    api: Api,
) -> None:
    table = await after_first_trick(api)
    first = await api.play(table, 0, DRAW, key="draw-1")
    other = await api.play(table, 1, DRAW, key="draw-2")
    # Seat 0 is due to draw again: a new draw would be legal, the retry must not be one.
    ahead = await api.view(table)
    again = await api.play(table, 0, DRAW, key="draw-1")
    assert again == {**first, "duplicate": True}
    assert await api.view(table) == ahead
    assert other["version"] == ahead["version"]
    assert len(ahead["seats"][0]["hand"]) == 1


async def test_a_retry_after_the_game_ended_still_returns_the_first_answer(api: Api) -> None:
    table = await api.create()
    for seat, command in THIRTY_ONE_GAME[:-1]:
        await api.play(table, seat, command)
    won = await api.play(table, 0, THIRTY_ONE_GAME[-1][1], key="the-claim")
    again = await api.play(table, 0, THIRTY_ONE_GAME[-1][1], key="the-claim")
    assert again == {**won, "duplicate": True}


async def test_a_key_used_by_another_seat_is_refused(api: Api) -> None:
    table = await after_first_trick(api)
    await api.play(table, 0, DRAW, key="shared")
    ahead = await api.view(table)
    # Seat 1 is due: its draw would be legal, but the key is seat 0's.
    refused = await api.send(table, 1, DRAW, key="shared")
    assert refused.status_code == 422
    assert refused.json()["code"] == "idempotency_key_reused"
    assert "another seat" in refused.json()["detail"]
    assert await api.view(table) == ahead


async def test_a_key_sent_again_with_another_body_is_refused_not_answered_with_the_first(
    api: Api,
) -> None:
    """The first command under the key was a lead; a draw under it must not be told "done,
    duplicate" with the lead's events: the client would believe it had drawn."""
    table = await api.create()
    await api.play(table, 0, {"type": "lead", "cards": ["AS"]}, key="k-1")
    ahead = await api.view(table)
    for other in (
        {"type": "lead", "cards": ["10S"]},
        {"type": "lead", "cards": ["AS", "10S"]},
        {"type": "draw"},
        {"type": "lead", "cards": ["AS"], "seen": table.version},
    ):
        refused = await api.send(table, 0, other, key="k-1")
        assert refused.status_code == 422, (other, refused.text)
        assert refused.json()["code"] == "idempotency_key_reused"
        assert "another command" in refused.json()["detail"]
    assert await api.view(table) == ahead


async def test_the_same_command_written_differently_is_the_same_retry(api: Api) -> None:
    table = await api.create()
    first = await api.play(table, 0, {"type": "lead", "cards": ["AS", "10S"]}, key="k-1")
    again = await api.play(table, 0, {"type": "lead", "cards": ["as", "10s"]}, key="k-1")
    assert again == {**first, "duplicate": True}
    drawn = await after_first_trick(api)
    once = await api.play(drawn, 0, {"type": "draw"}, key="d-1")
    twice = await api.play(drawn, 0, {"type": "draw", "count": 1}, key="d-1")
    assert twice == {**once, "duplicate": True}


async def test_a_retry_may_give_the_cards_in_another_order(api: Api) -> None:
    """The order of a lead's (or an answer's) cards means nothing to the game, so a client
    rebuilding the body from a set is still known as the same retry."""
    table = await api.create()
    first = await api.play(table, 0, {"type": "lead", "cards": ["AS", "10S"]}, key="k-1")
    again = await api.play(table, 0, {"type": "lead", "cards": ["10s", "AS"]}, key="k-1")
    assert again == {**first, "duplicate": True}
    answered = await api.play(table, 1, {"type": "respond", "cards": ["6H", "7H"]}, key="r-1")
    reordered = await api.play(table, 1, {"type": "respond", "cards": ["7H", "6H"]}, key="r-1")
    assert reordered == {**answered, "duplicate": True}
    other = await api.send(table, 1, {"type": "respond", "cards": ["6H", "8H"]}, key="r-1")
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"


async def test_a_command_recorded_before_cards_were_sorted_is_still_known_by_its_retry(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release before this one kept the cards in the order sent in the fingerprint: the
    exact retry of a command it recorded is a duplicate after the upgrade, not a 422."""
    table = await api.create()
    with monkeypatch.context() as before:
        before.setattr(games, "fingerprint", codec.fingerprint_as_sent)
        first = await api.play(table, 0, {"type": "lead", "cards": ["AS", "10S"]}, key="k-1")
    found = await api.store.find_command(table.game_id, "k-1")
    assert found is not None and found.fingerprint != codec.fingerprint(
        Lead(cards=("AS", "10S"))
    )  # recorded as the older release did
    again = await api.play(table, 0, {"type": "lead", "cards": ["AS", "10S"]}, key="k-1")
    assert again == {**first, "duplicate": True}


async def test_a_key_whose_command_was_refused_names_nothing_and_may_be_used_again(
    api: Api,
) -> None:
    table = await api.create()
    refused = await api.send(table, 0, {"type": "lead", "cards": ["6D"]}, key="k-1")
    assert refused.status_code == 409
    played = await api.play(table, 0, {"type": "lead", "cards": ["AS"]}, key="k-1")
    assert played["duplicate"] is False and played["command_id"] == "k-1"


async def test_concurrent_identical_retries_append_once(api: Api) -> None:
    table = await after_first_trick(api)
    before = await api.version(table)
    answers = await asyncio.gather(*(api.send(table, 0, DRAW, key="burst") for _ in range(8)))
    assert {a.status_code for a in answers} == {200}, [a.text for a in answers]
    bodies = [a.json() for a in answers]
    assert sorted(b["duplicate"] for b in bodies) == [False] + [True] * 7
    assert {b["version"] for b in bodies} == {before + 1}
    assert all(b["events"] == bodies[0]["events"] for b in bodies)
    assert await stored_versions(api, table) == list(range(1, before + 2))
    assert (await api.view(table))["status"] == "in_progress"


async def test_concurrent_identical_retries_across_service_instances_append_once(
    api: Api,
) -> None:
    """Replicas of the service on one store, each with its own cache, get the same
    retried draw at once: the store's command id is the one guard."""
    table = await after_first_trick(api)
    before = await api.version(table)
    replicas = [GameService(api.store, api.runtime.seating, InProcessHintBus()) for _ in range(3)]
    draw = Draw(1)
    outcomes = await asyncio.gather(
        *(r.execute(table.game_id, 0, draw, command_id="replicated") for r in replicas)
    )
    assert sorted(o.duplicate for o in outcomes) == [False, True, True]
    assert {o.version for o in outcomes} == {before + 1}
    assert await stored_versions(api, table) == list(range(1, before + 2))


# --- races ----------------------------------------------------------------------------


def as_body(command: PlayerCommand) -> Body:
    body: Body = msgspec.to_builtins(command)
    return body


async def test_both_seats_racing_never_corrupt_the_game(api: Api) -> None:
    """Each round every seat fires several commands at once: the seat due to act some of
    its legal moves, the other one moves that become legal only if it wins the race. The
    store lets exactly one win each version; the rest are refused or re-decided."""
    chance = random.Random(7)
    rules = {"penalties": "reject", "no_claim": "most_points", "match_target": 2}
    table = await api.create(rules=rules, deck=None, seed="race")
    answered: list[Body] = []
    for _round in range(400):
        state = await replica(api, table)
        if state.finished:
            break
        turn = state.deal.turn  # type: ignore[union-attr]
        mine = legal_commands(state, turn)
        moves = [m for m in mine if not isinstance(m, Concede | Declare)] or mine
        shots = [(turn, m) for m in chance.sample(moves, min(3, len(moves)))]
        # The other seat's guesses at what it may do next: a draw, a card of its own.
        other = 1 - turn
        hand = state.deal.hands[other]  # type: ignore[union-attr]
        guesses: list[Body] = [
            DRAW,
            {"type": "respond", "cards": [chance.choice(hand)]} if hand else DRAW,
            {"type": "lead", "cards": hand[:1]},
        ]
        sends = [api.send(table, s, as_body(m)) for s, m in shots]
        sends += [api.send(table, other, g) for g in guesses]
        for answer in await asyncio.gather(*sends):
            assert answer.status_code in (200, 409), answer.text
            if answer.status_code == 200:
                answered.append(answer.json())
    events = await api.store.read(table.game_id)
    versions = [r.version for r in events]
    assert versions == list(range(1, len(versions) + 1))
    # Every accepted answer names its own versions; together they cover the game once.
    claimed = [e["version"] for a in answered for e in a["events"]]
    assert sorted(claimed) == list(range(table.version + 1, len(versions) + 1))
    assert api.service.metrics.registry.get_sample_value("bura_append_conflicts_total") > 0
    live = await api.view(table)
    replayed = await api.get(f"/games/{table.game_id}/replay", version=live["version"])
    assert table_only(replayed["view"]) == table_only(live)
    assert live["status"] == "finished"


async def replica(api: Api, table: Table) -> Game:
    """The game folded from its stored events."""
    rows = await api.store.read(table.game_id)
    state = replay(from_recorded(r) for r in rows)
    assert state.version == len(rows)
    return state
