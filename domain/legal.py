"""legal_commands(state, seat): every command the seat may send now without breaking a rule.

A faulty draw is never listed (it is a penalty, not a move); a declaration is listed on
every turn it may be made, true or not, because a false one is a legal, losing claim.
In the Czech game a seat not due to act may still lead a combination out of turn.
While a seat-shuffled deal waits for seeds, a seat that has not sent one may send one:
listed as `Seed(ANY_SEED)`, standing for every seed (1 to 128 printable ASCII characters).
"""

from __future__ import annotations

from itertools import combinations

from domain.cards import SUIT_OF, Card
from domain.combinations import combination, combination_leads, open_to_combinations, outranked
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
from domain.rules import dave_enabled
from domain.state import Deal, Game
from domain.table import lead_limit

ANY_SEED = "any seed"


def legal_commands(state: Game, seat: int) -> list[PlayerCommand]:
    deal = state.deal
    if state.seeding is not None:
        return [Seed(ANY_SEED)] if seat in seeding_seats(state) else []
    if state.finished or deal is None:
        return []
    if deal.turn != seat:
        return out_of_turn_leads(state, deal, seat)
    match deal.phase:
        case "draw":
            return [Draw(1), Concede()]
        case "dave_answer":
            return [DaveAnswer(True), DaveAnswer(False), Concede()]
        case "lead":
            return [*leads(state, deal), *_claims(state, deal, "lead"), Concede()]
        case "respond":
            return [*responses(state, deal), *_claims(state, deal, "respond"), Concede()]
    return []


def seeding_seats(state: Game) -> list[int]:
    """The seats whose seed the deal waits for (shuffle "seats")."""
    seeding = state.seeding
    if seeding is None:
        return []
    return [s for s in range(len(state.seats)) if s not in seeding.sent]


def claimants(state: Game) -> list[int]:
    """Seats, other than the one due, that may lead a combination out of turn right now."""
    deal = state.deal
    if state.finished or deal is None or not open_to_combinations(state, deal):
        return []
    return [
        s for s in range(len(state.seats)) if s != deal.turn and out_of_turn_leads(state, deal, s)
    ]


def out_of_turn_leads(state: Game, deal: Deal, seat: int) -> list[PlayerCommand]:
    return [Lead(group) for group in _unopposed(state, deal, seat)]


def combination_offers(state: Game, seat: int) -> list[tuple[Card, ...]]:
    """The combinations `seat` may lead now unless another seat's takes precedence: any of
    them out of turn; in turn, all but a bura (three trumps are an ordinary lead for the
    seat due, which no combination outranks)."""
    deal = state.deal
    if state.finished or deal is None or not open_to_combinations(state, deal):
        return []
    groups = combination_leads(deal.hands[seat], deal.trump)
    if seat != deal.turn:
        return groups
    return [g for g in groups if combination(g, deal.trump) != "bura"]


def _unopposed(state: Game, deal: Deal, seat: int) -> list[tuple[Card, ...]]:
    """The seat's combination offers that no other seat's combination takes precedence over."""
    return [
        group
        for group in combination_offers(state, seat)
        if not outranked(state, deal, seat, combination(group, deal.trump) or "")
    ]


def leads(state: Game, deal: Deal) -> list[PlayerCommand]:
    limit = lead_limit(deal)
    hand = deal.hands[deal.turn]
    sizes = (1, 3) if state.rules.game == "kozel" else (1, 2, 3)
    moves: list[PlayerCommand] = []
    offers = set(combination_offers(state, deal.turn))  # its molodka, its three aces
    for size in sizes:
        if size <= limit:
            moves += [
                Lead(group)
                for group in combinations(hand, size)
                if _one_suit(group) and group not in offers
            ]
    moves += [Lead(g) for g in _unopposed(state, deal, deal.turn)]  # as precedence allows
    return moves


def responses(state: Game, deal: Deal) -> list[PlayerCommand]:
    assert deal.trick is not None
    return [Respond(cards) for cards in combinations(deal.hands[deal.turn], len(deal.trick.led))]


def _one_suit(cards: tuple[Card, ...]) -> bool:
    suit = SUIT_OF[cards[0]]
    return all(SUIT_OF[c] == suit for c in cards)


def _claims(state: Game, deal: Deal, phase: str) -> list[PlayerCommand]:
    rules = state.rules
    moves: list[PlayerCommand] = []
    if deal.trump is not None and rules.combinations != "czech":
        moves.append(Declare("bura"))
    if rules.game == "kozel":
        moves.append(Declare("four_aces"))
    elif (phase == "lead" or rules.declare_on == "any_turn") and deal.turn not in deal.refuted:
        moves.append(Declare("thirty_one"))
    if phase == "lead":
        if lead_limit(deal) == 0:
            # played out: pass (or declare); there is nothing left to double (docs/rules.md §5)
            moves.append(Pass())
            return moves
        cube_free = deal.cube is None or deal.cube == deal.turn
        under_limit = deal.multiplier * 2 <= rules.dave_max_multiplier
        if dave_enabled(rules, len(state.seats)) and cube_free and under_limit:
            moves.append(Dave())
    return moves
