"""Games played over HTTP: a table created with the operator key, its state folded locally
from the arbiter's events, and bots that pick their moves with domain.legal on it."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import msgspec

from domain.commands import Draw, PlayerCommand
from domain.events import AnyEvent, Event, TimedOut
from domain.evolve import evolve
from domain.legal import seeding_seats
from domain.state import NEW_GAME, Game
from harness.processes import OPERATOR, bearer

Bot = Callable[[Game, int, random.Random], PlayerCommand]


class Envelope(msgspec.Struct):
    version: int
    event: AnyEvent


class Page(msgspec.Struct):
    version: int
    events: list[Envelope]


_page = msgspec.json.Decoder(Page).decode
_encode = msgspec.json.Encoder().encode


class Table:
    """A game on the server, and the arbiter's full state of it as this client last saw."""

    def __init__(self, created: dict[str, Any]) -> None:
        self.game_id: str = created["game_id"]
        self.tokens: list[str] = [s["token"] for s in created["seats"]]
        self.spectator: str = created["spectator_token"]
        self.state: Game = NEW_GAME
        self.events: list[tuple[int, Event]] = []
        self.acked: list[int] = []  # versions the server acknowledged to our commands

    @classmethod
    async def create(
        cls, client: httpx.AsyncClient, base: str, seats: int = 2, **options: Any
    ) -> Table:
        body = {"seats": [{"name": f"bot{i}"} for i in range(seats)], **options}
        answer = await client.post(f"{base}/games", json=body, headers=OPERATOR)
        assert answer.status_code == 201, answer.text
        table = cls(answer.json())
        await table.sync(client, base)
        return table

    def stream_url(self, base: str) -> str:
        return f"{base}/games/{self.game_id}/stream"

    async def sync(self, client: httpx.AsyncClient, base: str) -> Game:
        """Fold in the events after the version we have, as the arbiter sees them."""
        answer = await client.get(
            f"{base}/games/{self.game_id}/events",
            params={"after": self.state.version},
            headers=OPERATOR,
        )
        assert answer.status_code == 200, answer.text
        for envelope in _page(answer.content).events:
            assert envelope.version == self.state.version + 1, "a gap in the events"
            self.state = evolve(self.state, envelope.event)
            self.events.append((envelope.version, envelope.event))
        return self.state

    async def send(
        self,
        client: httpx.AsyncClient,
        base: str,
        seat: int,
        command: PlayerCommand,
        key: str | None = None,
    ) -> httpx.Response:
        headers = {
            **bearer(self.tokens[seat]),
            "Idempotency-Key": key or uuid.uuid4().hex,
            "Content-Type": "application/json",
        }
        answer = await client.post(
            f"{base}/games/{self.game_id}/commands", content=_encode(command), headers=headers
        )
        if answer.status_code == 200:
            self.acked.append(answer.json()["version"])
        return answer

    def next_move(
        self, bot: Bot, chance: random.Random, faults: float = 0.0
    ) -> tuple[int, PlayerCommand]:
        """The bot's move for the seat due to act; with probability `faults`, a draw by
        any seat instead (out of turn, two cards, or with a full hand: a penalty)."""
        waiting = seeding_seats(self.state)
        if waiting:  # the seats' shuffle: the deal waits for seeds, in any order
            seat = chance.choice(waiting)
            return seat, bot(self.state, seat, chance)
        deal = self.state.deal
        assert deal is not None and not self.state.finished
        if faults and len(deal.stock) >= 2 and chance.random() < faults:
            return chance.randrange(len(self.state.seats)), Draw(chance.choice((1, 2)))
        return deal.turn, bot(self.state, deal.turn, chance)

    async def play(
        self,
        client: httpx.AsyncClient,
        base: str,
        bot: Bot,
        chance: random.Random,
        moves: int = 10_000,
        faults: float = 0.0,
    ) -> Game:
        """Play up to `moves` commands (to the end by default); every one must be taken."""
        await self.sync(client, base)
        for _ in range(moves):
            if self.state.finished:
                break
            seat, command = self.next_move(bot, chance, faults)
            answer = await self.send(client, base, seat, command)
            assert answer.status_code == 200, f"{command}: {answer.status_code} {answer.text}"
            await self.sync(client, base)
        return self.state

    async def play_with_pauses(
        self,
        client: httpx.AsyncClient,
        base: str,
        bot: Bot,
        chance: random.Random,
        moves: int = 10_000,
    ) -> Game:
        """At a table with `on_timeout: "pause"`: wait for the first seat to time out,
        then play to the end, the operator resuming every pause (a bot too slow for the
        clock is refused `out_of_time` and its seat paused like any other)."""
        async with asyncio.timeout(60):
            while not any(isinstance(e, TimedOut) for _, e in self.events):
                await asyncio.sleep(0.1)
                await self.sync(client, base)
        for _ in range(moves):
            state = await self.sync(client, base)
            if state.finished:
                break
            if state.clock is not None and state.clock.paused:
                resumed = await client.post(f"{base}/games/{self.game_id}/resume", headers=OPERATOR)
                assert resumed.status_code in (200, 409), resumed.text
                continue
            seat, command = self.next_move(bot, chance)
            answer = await self.send(client, base, seat, command)
            refused = answer.json().get("code") if answer.status_code == 409 else None
            assert answer.status_code == 200 or refused == "out_of_time", answer.text
        return self.state
