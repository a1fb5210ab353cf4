"""Two bots that only ever send legal commands: a random one and a greedy one.

A bot is asked for a move by the seat due to act, or, in the Czech game, by a seat that may
lead a combination out of turn (`legal.claimants`); then it leads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Protocol, TypeVar

from domain.cards import POINTS, STRENGTH, SUIT_OF, Card, covers
from domain.combinations import combination
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
    Seed,
)
from domain.legal import legal_commands, seeding_seats
from domain.state import Deal, Game
from domain.table import known_points, lead_limit

T = TypeVar("T")


class Chance(Protocol):
    """The part of random.Random a bot uses; the caller owns the seed."""

    def random(self) -> float: ...

    def choice(self, seq: Sequence[T]) -> T: ...


def seed_of(chance: Chance) -> Seed:
    """A seed of 16 hex digits, as a client would make one (shuffle "seats")."""
    return Seed("".join(chance.choice("0123456789abcdef") for _ in range(16)))


def random_bot(state: Game, seat: int, chance: Chance) -> PlayerCommand:
    """Plays a random legal move; claims, daves and concessions only now and then."""
    if seat in seeding_seats(state):
        return seed_of(chance)
    moves = legal_commands(state, seat)
    play = [m for m in moves if isinstance(m, Lead | Respond | Draw | DaveAnswer)]
    other = [m for m in moves if not isinstance(m, Lead | Respond | Draw | DaveAnswer)]
    if not play or (other and chance.random() < 0.03):
        claims = [m for m in other if not isinstance(m, Concede)] or other
        return chance.choice(claims if chance.random() < 0.9 else other)
    return chance.choice(play)


def greedy_bot(state: Game, seat: int, chance: Chance) -> PlayerCommand:
    """Covers as cheaply as it can, leads its most valuable cards (a bura first), shows
    bura or four aces, and declares only when the points it could see reach the target."""
    if seat in seeding_seats(state):
        return seed_of(chance)
    deal = state.deal
    assert deal is not None
    hand = deal.hands[seat]
    legal = legal_commands(state, seat)
    trumps = [c for c in hand if SUIT_OF[c] == deal.trump]
    points = known_points(state, deal, seat)
    if Declare("bura") in legal and len(trumps) >= 3:
        return Declare("bura")
    if Declare("four_aces") in legal and sum(1 for c in hand if c[:-1] == "A") == 4:
        return Declare("four_aces")
    match deal.phase:
        case _ if seat != deal.turn:
            return _best_lead(state, deal, legal)
        case "draw":
            return Draw(1)
        case "dave_answer":
            return DaveAnswer(len(trumps) >= 2 or points >= 20)
        case "respond":
            return Respond(_cheapest_answer(deal, hand))
        case "lead" if Declare("thirty_one") in legal and points >= state.rules.target_points:
            return Declare("thirty_one")
        case "lead" if Pass() in legal:
            return Pass()
        case "lead":
            if Dave() in legal and points >= 25 and len(trumps) >= 2:
                return Dave()
            return _best_lead(state, deal, legal)
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


def _best_lead(state: Game, deal: Deal, legal: list[PlayerCommand]) -> Lead:
    """A led bura first (it wins the deal), then the most points, sparing trumps."""
    czech = state.rules.combinations == "czech"

    def worth(lead: Lead) -> tuple[int, int, int]:
        kind = combination(lead.cards, deal.trump) if czech else None
        bura = 1 if kind == "bura" else 0
        return (bura, sum(POINTS[c] for c in lead.cards), -_cost(lead.cards, deal.trump)[0])

    return max((m for m in legal if isinstance(m, Lead)), key=worth)


def safest_act(state: Game, seat: int) -> PlayerCommand:
    """What the server plays for a seat whose time ran out (`on_timeout: "auto_play"`,
    docs/rules.md §13.3): the act the table waits for, risking as little as it can. A draw
    when one is due; the cheapest answer (the cheapest that beats, if any does); the lowest
    single card to lead; a pass when nothing can be led; a dave declined, since accepting
    would double the stake of a deal nobody is there to play. It never claims, offers a dave
    or concedes: those are the player's own decisions."""
    deal = state.deal
    assert deal is not None and deal.turn == seat
    hand = deal.hands[seat]
    match deal.phase:
        case "draw":
            return Draw(1)
        case "dave_answer":
            return DaveAnswer(False)
        case "respond":
            return Respond(_cheapest_answer(deal, hand))
        case "lead" if lead_limit(deal) == 0:
            return Pass()
        case "lead":
            return Lead((min(hand, key=lambda c: _cost((c,), deal.trump)),))
    raise ValueError(f"nothing is due in phase {deal.phase}")
