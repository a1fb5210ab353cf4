"""No live view leaks a card: every card code in every SSE message a seat or a spectator
receives is one that viewer may see at that version, for every event type played."""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from domain.bots import random_bot
from domain.cards import SUIT_OF
from domain.commands import Declare, PlayerCommand
from domain.events import (
    EVENT_TYPES,
    BuraShown,
    CardDealt,
    CardDrawn,
    CardsLed,
    CardsResponded,
    Event,
    FourAcesShown,
    PenaltyApplied,
    TrumpTurned,
)
from domain.evolve import evolve
from domain.legal import legal_commands
from domain.naming import snake
from domain.shuffle import deal_seed
from domain.state import NEW_GAME, Game
from harness.sse import Stream
from tests.decks import dealing_order
from tests.e2e.conftest import StartService
from tests.e2e.play import Table

CARD = re.compile(r"^(10|[2-9JQKA])[SHDC]$")

# Seat 1 (first to act after dealer 0) is dealt three hearts, and hearts are trumps: bura.
BURA_DECK = list(dealing_order([["AS", "KS", "QS"], ["AH", "10H", "KH"]], "6H", dealer=0))
ACES_DECK = list(
    dealing_order([["KS", "QS", "JS", "9S"], ["AH", "AS", "AD", "AC"]], "6H", dealer=0)
)
# Between them these tables play every event type (bot seeds found by simulating them);
# should a change of the rules move that, more games are played, up to ROUNDS each.
TABLES: list[tuple[int, dict[str, Any]]] = [
    (
        31,
        {
            "seats": 2,
            "seed": "leak-one",
            "dealer": 0,
            "deck": BURA_DECK,
            "rules": {"match_target": 2},
        },
    ),
    (
        8,
        {
            "seats": 3,
            "seed": "leak-two",
            "rules": {
                "match_target": 2,
                "closed_discard": True,
                "false_declaration": "pay_pot",
                "open_seats": [2],
                "compensation": 5,
            },
        },
    ),
    (
        36,
        {
            "seats": 2,
            "seed": "leak-three",
            "rules": {"match_target": 2, "trumps": False, "first_lead_compensation": 10},
        },
    ),
    (
        15,
        {
            "seats": 2,
            "seed": "leak-four",
            "dealer": 0,
            "deck": ACES_DECK,
            "rules": {"match_target": 2, "game": "kozel"},
        },
    ),
    (31, {"seats": 2, "seed": "leak-five", "rules": {"match_target": 2}}),
    (
        5,
        {
            "seats": 2,
            "seed": "leak-six",
            "rules": {"match_target": 2, "shuffle": "seats", "closed_discard": True},
        },
    ),
    # A clock whose first timeout pauses the table until the operator resumes it.
    (
        5,
        {
            "seats": 2,
            "seed": "leak-six",
            "rules": {"match_target": 2, "turn_seconds": 1, "on_timeout": "pause"},
        },
    ),
]
ROUNDS = 3


def card_codes(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if CARD.match(value):
            yield value
    elif isinstance(value, list):
        for item in value:
            yield from card_codes(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from card_codes(item)


def may_see(state: Game, event: Event, viewer: int | None) -> set[str]:
    """What docs/rules.md lets the viewer (a seat, or None for a spectator) see at this point."""
    seen: set[str] = set()
    deal = state.deal
    rules = state.rules
    known = {viewer, *rules.open_seats}
    if deal is not None:
        for seat in known - {None}:
            seen |= set(deal.hands[seat])  # type: ignore[index]
        if deal.trick is not None:
            seen |= set(deal.trick.led)
            for response in deal.trick.responses:
                if not response.face_down or response.seat == viewer:
                    seen |= set(response.cards)
        if deal.stock and deal.stock[-1] == deal.trump_card:
            seen.add(deal.trump_card)
    match event:
        case CardsLed(cards=cards) | BuraShown(cards=cards) | FourAcesShown(cards=cards):
            seen |= set(cards)
        case CardsResponded(seat=seat, cards=cards, face_down=down) if cards:
            seen |= set(cards) if not down or seat == viewer else set()
        case TrumpTurned(card=card):
            seen.add(card)
        case CardDrawn(seat=seat, card=card, face_up=up) if card and (up or seat in known):
            seen.add(card)
        case CardDealt(seat=seat, card=card) if card and seat in known:
            seen.add(card)
        case PenaltyApplied(seat=seat, cards=cards) if cards and seat in known:
            seen |= set(cards)
    return seen


def show_bot(state: Game, seat: int, chance: random.Random) -> PlayerCommand:
    """The random bot, that shows bura or four aces whenever it holds them."""
    deal = state.deal
    if deal is None:  # the deal waits for its seed
        return random_bot(state, seat, chance)
    legal = legal_commands(state, seat)
    hand = deal.hands[seat]
    if Declare("bura") in legal and sum(SUIT_OF[c] == deal.trump for c in hand) >= 3:
        return Declare("bura")
    if Declare("four_aces") in legal and sum(c[:-1] == "A" for c in hand) == 4:
        return Declare("four_aces")
    return random_bot(state, seat, chance)


@dataclass
class Watched:
    table: Table
    streams: dict[int | None, Stream]  # by seat; None: the spectator


async def play_and_watch(
    client: httpx.AsyncClient, base: str, options: dict[str, Any], number: int
) -> Watched:
    """One game played to its end, watched from its first version by every seat and the
    spectator."""
    table = await Table.create(client, base, **options)
    url = table.stream_url(base)
    viewers: dict[int | None, str] = {**dict(enumerate(table.tokens)), None: table.spectator}
    streams = {v: Stream(client, url, token, last_id=0) for v, token in viewers.items()}
    for stream in streams.values():
        await stream.__aenter__()
    if options["rules"].get("on_timeout") == "pause":
        await table.play_with_pauses(client, base, show_bot, random.Random(number))
    else:
        await table.play(client, base, show_bot, random.Random(number), faults=0.02)
    for stream in streams.values():
        await stream.event("end", timeout=10)
        await stream.close()
    return Watched(table, streams)


def check(watched: Watched) -> tuple[set[str], int]:
    """Assert that no message leaks; the event types played and the own cards seen."""
    table = watched.table
    states: dict[int, Game] = {}
    state = NEW_GAME
    for version, event in table.events:
        state = evolve(state, event)
        states[version] = state
    events = dict(table.events)
    own = 0
    for viewer, stream in watched.streams.items():
        who = "spectator" if viewer is None else f"seat {viewer}"
        assert [m.id for m in stream.views] == list(range(1, table.state.version + 1)), who
        for message in stream.views:
            assert message.id is not None
            allowed = may_see(states[message.id], events[message.id], viewer)
            shown = set(card_codes(message.data))
            assert shown <= allowed, (
                f"{table.game_id} v{message.id} ({message.data['event']['type']}): "
                f"{who} sees {shown - allowed}"
            )
            if table.state.rules.closed_discard:  # the seed would give the deck order away
                assert table.state.seed not in message.raw, f"{who} sees the seed"
                for number in range(1, len(table.state.deals) + 2):  # and a deal's seed
                    assert deal_seed(table.state.seed, number) not in message.raw, who
            deal = states[message.id].deal
            if viewer is not None and deal is not None:
                own += len(shown & set(deal.hands[viewer]))
    return {snake(type(e).__name__) for _, e in table.events}, own


async def test_no_stream_shows_a_viewer_a_card_it_may_not_see(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    service = await start_service()
    played: set[str] = set()
    own = 0
    for round_ in range(ROUNDS):
        games = await asyncio.gather(
            *(
                play_and_watch(client, service.url, options, number + 1000 * round_)
                for number, options in TABLES
            )
        )
        for watched in games:
            types, seen = check(watched)
            played |= types
            own += seen
        if played >= set(EVENT_TYPES):
            break
    assert own > 0, "the test found no own cards at all: is it looking?"
    missing = set(EVENT_TYPES) - played
    assert not missing, (
        f"event types never played, so never checked for leaks: {sorted(missing)}; "
        "add a table to TABLES that plays them"
    )
