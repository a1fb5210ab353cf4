"""Two bots that only ever send legal commands: a random one and a greedy one."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Protocol, TypeVar

from domain.cards import POINTS, STRENGTH, SUIT_OF, Card, covers
from domain.commands import (
    Concede,
    Dave,
    DaveAnswer,
    Declare,
    Draw,
    Lead,
    Pass,
    PlayerCommand,
    Respond,
)
from domain.legal import legal_commands
from domain.state import Deal, Game
from domain.table import claim_points, lead_limit

T = TypeVar("T")


class Chance(Protocol):
    """The part of random.Random a bot uses; the caller owns the seed."""

    def random(self) -> float: ...

    def choice(self, seq: Sequence[T]) -> T: ...


def random_bot(state: Game, seat: int, chance: Chance) -> PlayerCommand:
    """Plays a random legal move; claims, daves and concessions only now and then."""
    moves = legal_commands(state, seat)
    play = [m for m in moves if isinstance(m, Lead | Respond | Draw | DaveAnswer)]
    other = [m for m in moves if not isinstance(m, Lead | Respond | Draw | DaveAnswer)]
    if not play or (other and chance.random() < 0.03):
        claims = [m for m in other if not isinstance(m, Concede)] or other
        return chance.choice(claims if chance.random() < 0.9 else other)
    return chance.choice(play)


def greedy_bot(state: Game, seat: int, chance: Chance) -> PlayerCommand:
    """Covers as cheaply as it can, leads its most valuable suit, shows bura, and declares
    only when its own count of its tricks reaches the target."""
    deal = state.deal
    assert deal is not None
    hand = deal.hands[seat]
    trumps = [c for c in hand if SUIT_OF[c] == deal.trump]
    match deal.phase:
        case "draw":
            return Draw(1)
        case "dave_answer":
            return DaveAnswer(len(trumps) >= 2 or claim_points(state, deal, seat) >= 20)
        case "respond" if len(trumps) >= 3:
            return Declare("bura")
        case "respond":
            return Respond(_cheapest_answer(deal, hand))
        case "lead" if len(trumps) >= 3:
            return Declare("bura")
        case "lead" if claim_points(state, deal, seat) >= state.rules.target_points:
            return Declare("thirty_one")
        case "lead" if lead_limit(state, deal) == 0:
            return Pass()
        case "lead":
            legal = legal_commands(state, seat)
            if Dave() in legal and claim_points(state, deal, seat) >= 25 and len(trumps) >= 2:
                return Dave()
            return Lead(_best_lead(state, deal, hand))
    return Concede()


def _cost(cards: Sequence[Card], trump: str | None) -> tuple[int, int, int]:
    return (
        sum(1 for c in cards if SUIT_OF[c] == trump),
        sum(POINTS[c] for c in cards),
        sum(STRENGTH[c] for c in cards),
    )


def _cheapest_answer(deal: Deal, hand: tuple[Card, ...]) -> tuple[Card, ...]:
    assert deal.trick is not None
    table = deal.trick.winning
    options = list(combinations(hand, len(table)))
    winning = [o for o in options if covers(o, table, deal.trump)]
    pool = winning or options
    return min(pool, key=lambda o: _cost(o, deal.trump))


def _best_lead(state: Game, deal: Deal, hand: tuple[Card, ...]) -> tuple[Card, ...]:
    limit = lead_limit(state, deal)
    sizes = (3, 1) if state.rules.game == "kozel" else (3, 2, 1)
    groups: list[tuple[Card, ...]] = []
    for size in sizes:
        if size <= limit:
            groups += [g for g in combinations(hand, size) if len({SUIT_OF[c] for c in g}) == 1]
    return max(groups, key=lambda g: (sum(POINTS[c] for c in g), -_cost(g, deal.trump)[0]))
