"""Two seats racing on PostgreSQL, every command carrying the version its player saw.

Two replicas serve the same games, each seat playing through its own replica from two
clients at once (a phone and a laptop, or a client that fires twice); every command is
a legal move on the table its client saw, sent after a moment's thought, while the other
client and the other seat go on playing. Thousands of commands in all: not one penalty
comes of another client's move (each such command is 409 table_changed), no event is
lost or doubled, and every acknowledged move is in the store.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
import msgspec

from domain.bots import random_bot
from domain.decide import decide
from domain.errors import RuleViolation
from domain.events import Declared, PenaltyApplied
from domain.evolve import replay
from domain.views import redact
from harness.processes import OPERATOR, bearer
from tests.e2e.conftest import StartService
from tests.e2e.play import Table

COMMANDS = 2000  # in all, then the players stop
GAMES = 3  # played at once, each by four clients
TIME_GUARD = 600.0  # seconds: a run that has not got there by then is itself a failure

_encode = msgspec.json.Encoder().encode


@dataclass
class Tally:
    sent: int = 0
    moves: int = 0
    changed: int = 0  # 409 table_changed
    spared: int = 0  # of those, commands that on the table they met would have been penalties
    others: list[str] = field(default_factory=list)  # any other answer: must stay empty
    acked: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # game -> 200 bodies
    seats: dict[str, list[int]] = field(default_factory=dict)  # game -> seat of each body


def a_penalty(events: list[Any]) -> bool:
    return any(
        isinstance(e, PenaltyApplied) or (isinstance(e, Declared) and not e.true) for e in events
    )


async def client_loop(
    client: httpx.AsyncClient,
    base: str,
    table: Table,
    seat: int,
    chance: random.Random,
    tally: Tally,
    until: float,
) -> None:
    while tally.sent < COMMANDS and time.monotonic() < until:
        state = await table.sync(client, base)
        if state.finished:
            return
        deal = state.deal
        assert deal is not None
        if deal.turn != seat:
            await asyncio.sleep(0.002)
            continue
        command = msgspec.structs.replace(random_bot(state, seat, chance), seen=state.version)
        await asyncio.sleep(chance.random() * 0.01)  # the player thinks; the table may move
        headers = {**bearer(table.tokens[seat]), "Content-Type": "application/json"}
        if chance.random() < 0.5:
            headers["Idempotency-Key"] = uuid.uuid4().hex
        tally.sent += 1
        answer = await client.post(
            f"{base}/games/{table.game_id}/commands", content=_encode(command), headers=headers
        )
        body = answer.json()
        if answer.status_code == 200:
            tally.moves += 1
            tally.acked.setdefault(table.game_id, []).append(body)
            tally.seats.setdefault(table.game_id, []).append(seat)
        elif answer.status_code == 409 and body["code"] == "table_changed":
            tally.changed += 1
            # What it would have been without `seen`, on the table it met instead:
            await table.sync(client, base)
            met = replay(e for _, e in table.events[: body["version"]])
            try:
                judged = decide(met, msgspec.structs.replace(command, seen=None), seat)
            except RuleViolation:
                judged = []
            tally.spared += a_penalty(judged)
        else:
            tally.others.append(f"{answer.status_code} {answer.text}")


async def test_two_seats_racing_with_seen_never_cause_each_other_a_penalty(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    one, two = await start_service(), await start_service()
    replicas = [one.url, two.url]  # seat 0 plays through one, seat 1 through the other
    tally = Tally()
    until = time.monotonic() + TIME_GUARD
    games: list[str] = []
    number = 0

    async def table_of_four() -> None:
        nonlocal number
        while tally.sent < COMMANDS and time.monotonic() < until:
            number += 1
            created = await Table.create(
                client, one.url, seed=f"race-{number}", rules={"match_target": 3}
            )
            games.append(created.game_id)
            loops = []
            for seat in (0, 1):
                for device in range(2):
                    mine = Table(
                        {
                            "game_id": created.game_id,
                            "seats": [{"token": t} for t in created.tokens],
                            "spectator_token": created.spectator,
                        }
                    )
                    chance = random.Random(f"{number}-{seat}-{device}")
                    loops.append(
                        client_loop(client, replicas[seat], mine, seat, chance, tally, until)
                    )
            await asyncio.gather(*loops)

    await asyncio.gather(*(table_of_four() for _ in range(GAMES)))

    print(
        f"\n{tally.sent} commands on {len(games)} games: {tally.moves} moves, "
        f"{tally.changed} table_changed, {tally.spared} of which would have been penalties"
    )
    assert tally.sent >= COMMANDS, "the time guard stopped the players"
    assert tally.others == []  # every answer a move or table_changed: nothing else judged
    assert tally.changed > 0 and tally.spared > 0, "the clients never raced"

    for game in games:
        table = Table({"game_id": game, "seats": [], "spectator_token": ""})
        await table.sync(client, one.url)
        stored = dict(table.events)
        assert list(stored) == list(range(1, table.state.version + 1))  # none lost
        assert not any(isinstance(e, PenaltyApplied) for e in stored.values())
        claimed: list[int] = []
        for body, seat in zip(tally.acked.get(game, []), tally.seats.get(game, []), strict=True):
            for shown in body["events"]:
                event = redact(stored[shown["version"]], seat, table.state.rules)
                assert shown["event"] == msgspec.json.decode(_encode(event))  # in the store
                claimed.append(shown["version"])
        assert len(claimed) == len(set(claimed))  # none told twice
        created = [v for v in stored if v not in claimed]
        assert created == list(range(1, len(created) + 1))  # the rest: the game's creation
        audit = await client.get(f"{one.url}/games/{game}/audit", headers=OPERATOR)
        for finding in audit.json()["findings"]:  # a false claim, made on the table it named
            assert finding["seen_carried"] and finding["seen"] == finding["before_version"]
