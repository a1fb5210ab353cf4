"""The leak matrix: for every variant, every endpoint, every viewer (each seat, the
spectator, another game's token) and every version, nothing is shown that the viewer may
not see (docs/rules.md §9).

What a viewer may know is worked out here from the rules themselves, independently of
domain/views.py: the cards dealt or drawn to its own seat or to an open seat, the cards
shown face up to the table (leads, face-up answers, the turned trump, a bura or four aces
shown), its own face-down answers; and, once a classic game is over, everything (its seed
is revealed, and with it every deal). Bots play each game through the API with faults
thrown in (faulty draws, false declarations), so the audit has findings to show.

Redaction happens in the service, the same for both stores: the matrix runs on SQLite (the
store fixture's PostgreSQL run adds nothing but time); tests/e2e/test_leaks.py checks the
live streams across real processes on PostgreSQL and Redis.
"""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from domain.bots import random_bot
from domain.commands import Declare, Draw, PlayerCommand
from domain.events import (
    AnyEvent,
    BuraShown,
    CardDealt,
    CardDrawn,
    CardsLed,
    CardsResponded,
    Event,
    FourAcesShown,
    GameFinished,
    PenaltyApplied,
    TrumpTurned,
)
from domain.evolve import replay
from domain.legal import claimants, legal_commands
from domain.rules import Rules
from domain.state import Game
from domain.table import claim_points
from tests.api.conftest import OPERATOR, Api, Table, bearer, cards_in

VARIANTS: dict[str, tuple[int, dict[str, Any]]] = {
    "classic": (2, {}),
    "closed_discard": (2, {"closed_discard": True}),
    "pay_pot": (3, {"closed_discard": True, "false_declaration": "pay_pot"}),
    "open_seat": (2, {"open_seats": [0], "compensation": 10}),
    "both_open": (2, {"open_seats": [0, 1]}),
    "four_open": (2, {"hand_size": [4, 3], "open_seats": [0]}),
    "no_trumps": (2, {"trumps": False, "first_lead_compensation": 10}),
    "czech": (3, {"combinations": "czech"}),
    "deck_32": (2, {"deck": 32}),
    "teams": (4, {"deck": 52, "teams": [[0, 2], [1, 3]], "target_points": 41}),
    "kozel": (3, {"game": "kozel"}),
    "reject": (2, {"penalties": "reject"}),
}
FAULTS = 0.06  # chance that a move is a faulty draw, and again a false declaration
SPECTATOR = None
_events = msgspec.json.Decoder(list[AnyEvent])

pytestmark = [pytest.mark.parametrize("adapters", ["sqlite"], indirect=True), pytest.mark.slow]


def knowledge(events: list[Event], viewer: int | None, rules: Rules) -> list[set[str]]:
    """known[v]: every card `viewer` (a seat, or None: the spectator) may know at version v."""
    everything = {c for e in events for c in cards_in(msgspec.to_builtins(e))}
    shown_seats = {viewer, *rules.open_seats}
    known: set[str] = set()
    by_version = [set(known)]
    for event in events:
        match event:
            case CardDealt(seat=seat, card=card) | CardDrawn(seat=seat, card=card, face_up=False):
                if seat in shown_seats and card is not None:
                    known.add(card)
            case CardDrawn(card=card, face_up=True) | TrumpTurned(card=card):
                known.add(card or "")
            case PenaltyApplied(seat=seat, cards=cards) if seat in shown_seats:
                known |= set(cards or ())
            case CardsLed(cards=cards) | BuraShown(cards=cards) | FourAcesShown(cards=cards):
                known |= set(cards)
            case CardsResponded(seat=seat, cards=cards, face_down=face_down):
                if not face_down or seat == viewer:
                    known |= set(cards or ())
            case GameFinished() if not rules.closed_discard:
                known = set(everything)  # the seed is revealed: every deal can be rebuilt
        by_version.append(set(known))
    return by_version


def leaked(payload: Any, allowed: set[str]) -> set[str]:
    return set(cards_in(payload)) - allowed


class Matrix:
    """One game, checked from every side after every move."""

    def __init__(self, api: Api, table: Table, other: Table, seed: str) -> None:
        self.api = api
        self.table = table
        self.other = other  # another game: its tokens must open nothing here
        self.seed = seed
        self.checked = 0
        self.first = table.version

    def viewers(self) -> list[tuple[int | None, dict[str, str]]]:
        seats = list(enumerate(self.table.tokens))
        return [(seat, bearer(token)) for seat, token in seats] + [(SPECTATOR, self.table.watcher)]

    async def arbiter_events(self) -> list[Event]:
        page = await self.api.get(f"/games/{self.table.game_id}/events")
        return list(_events.decode(msgspec.json.encode([e["event"] for e in page["events"]])))

    def no_secret(self, payload: Any, allowed: set[str], may_see_seed: bool, where: str) -> None:
        assert not leaked(payload, allowed), (where, leaked(payload, allowed))
        if not may_see_seed:
            assert self.seed not in msgspec.json.encode(payload).decode(), where
        self.checked += 1

    async def answer(self, path: str, headers: dict[str, str], **params: Any) -> Any:
        reply = await self.api.client.get(path, headers=headers, params=params)
        return reply.status_code, reply.json() if reply.content else None

    async def check_now(self, events: list[Event], rules: Rules, finished: bool) -> None:
        game = f"/games/{self.table.game_id}"
        version = len(events)
        for viewer, headers in self.viewers():
            allowed = knowledge(events, viewer, rules)[version]
            seed_out = finished and not rules.closed_discard
            for path in (game, f"{game}/events"):
                status, body = await self.answer(path, headers)
                assert status == 200, (path, body)
                self.no_secret(body, allowed, seed_out, f"{path} as {viewer} at {version}")
            for review in ("replay", "audit", "verify"):
                status, body = await self.answer(f"{game}/{review}", headers)
                if not finished:
                    assert status == 403, (review, viewer, body)  # opens when the game is over
                    self.no_secret(body, set(), False, f"{review} refused")
        if version == self.first or finished:
            await self.check_other_game_tokens()

    async def check_other_game_tokens(self) -> None:
        game = f"/games/{self.table.game_id}"
        for path in ("", "/events", "/replay", "/audit", "/verify", "/stream"):
            for token in [*self.other.tokens, self.other.spectator]:
                status, body = await self.answer(f"{game}{path}", bearer(token))
                assert status == 403, (path, body)
                self.no_secret(body, set(), False, f"{path} with another game's token")

    async def check_after_the_end(self, events: list[Event], rules: Rules) -> None:
        game = f"/games/{self.table.game_id}"
        seed_out = not rules.closed_discard
        for viewer, headers in self.viewers():
            known = knowledge(events, viewer, rules)
            final = known[-1]
            for review in ("audit", "verify"):
                status, body = await self.answer(f"{game}/{review}", headers)
                assert status == 200, (review, viewer, body)
                self.no_secret(body, final, seed_out, f"{review} as {viewer}")
            for version in range(1, len(events) + 1):
                status, body = await self.answer(f"{game}/replay", headers, version=version)
                assert status == 200, (version, body)
                self.no_secret(body, final, seed_out, f"replay {version} as {viewer}")
            # every version's stream message, from the first (the stream ends with the game)
            reply = await self.api.client.get(
                f"{game}/stream", headers={**headers, "Last-Event-ID": "0"}
            )
            messages = [
                msgspec.json.decode(line[len("data: ") :])
                for line in reply.text.splitlines()
                if line.startswith('data: {"version"')
            ]
            assert [m["version"] for m in messages] == list(range(1, len(events) + 1))
            for m in messages:
                v = m["version"]
                last = v == len(events)
                self.no_secret(m, known[v], seed_out and last, f"stream {v} as {viewer}")


def fault(state: Game, chance: random.Random) -> tuple[int, PlayerCommand] | None:
    """Now and then a faulty draw by any seat, or a declaration of 31 without the points."""
    deal = state.deal
    assert deal is not None
    roll = chance.random()
    if roll < FAULTS and deal.stock:
        return chance.randrange(len(state.seats)), Draw(chance.choice([1, 1, 2]))
    if roll < 2 * FAULTS and deal.phase == "lead" and state.rules.game == "bura":
        seat = deal.turn
        short = claim_points(state, deal, seat) < state.rules.target_points
        if short and Declare("thirty_one") in legal_commands(state, seat):
            return seat, Declare("thirty_one")
    return None


@pytest.mark.parametrize("variant", list(VARIANTS))
async def test_no_endpoint_shows_any_viewer_a_card_it_may_not_see(api: Api, variant: str) -> None:
    seats, options = VARIANTS[variant]
    seed = f"matrix-{variant}-seed-kept-secret"
    rules = {"match_target": 3, **options}
    table = await api.create(seats=seats, rules=rules, deck=None, dealer=None, seed=seed)
    other = await api.create(seats=2, deck=None, dealer=None, seed="another-game")
    matrix = Matrix(api, table, other, seed)
    chance = random.Random(variant)
    for _ in range(1500):
        events = await matrix.arbiter_events()
        state = replay(events)
        await matrix.check_now(events, state.rules, state.finished)
        if state.finished:
            break
        assert state.deal is not None
        move = fault(state, chance)
        if move is None:
            seat = next(iter(claimants(state)), state.deal.turn)
            move = seat, random_bot(state, seat, chance)
        seat, command = move
        body = msgspec.to_builtins(command)
        answer = await api.send(table, seat, body)
        assert answer.status_code in (200, 409), answer.text
        after = await matrix.arbiter_events() if answer.status_code == 200 else events
        # the answer shows the sender its own command's events, nothing more
        allowed = knowledge(after, seat, state.rules)[-1] | set(cards_in(body))
        seed_out = replay(after).finished and not state.rules.closed_discard
        matrix.no_secret(answer.json(), allowed, seed_out, f"{command} by {seat}")
    else:
        pytest.fail(f"{variant}: no end after 1500 moves")
    await matrix.check_after_the_end(events, state.rules)
    audit = await api.get(f"/games/{table.game_id}/audit", OPERATOR)
    findings = len(audit["findings"])
    if variant != "reject":
        assert findings > 0, "no penalty or false declaration was played: pick another seed"
    assert matrix.checked > 100
