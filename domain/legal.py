"""legal_commands(state, seat): every command the seat may send now without breaking a rule.

A faulty draw is never listed (it is a penalty, not a move); a declaration is listed on
every turn it may be made, true or not, because a false one is a legal, losing claim.
"""

from __future__ import annotations

from itertools import combinations

from domain.cards import SUIT_OF
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
from domain.rules import dave_enabled
from domain.state import Deal, Game
from domain.table import lead_limit


def legal_commands(state: Game, seat: int) -> list[PlayerCommand]:
    deal = state.deal
    if state.finished or deal is None or deal.turn != seat:
        return []
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


def leads(state: Game, deal: Deal) -> list[PlayerCommand]:
    limit = lead_limit(state, deal)
    hand = deal.hands[deal.turn]
    sizes = (1, 3) if state.rules.game == "kozel" else (1, 2, 3)
    moves: list[PlayerCommand] = []
    for size in sizes:
        if size <= limit:
            moves += [Lead(group) for group in combinations(hand, size) if _one_suit(group)]
    return moves


def responses(state: Game, deal: Deal) -> list[PlayerCommand]:
    assert deal.trick is not None
    return [Respond(cards) for cards in combinations(deal.hands[deal.turn], len(deal.trick.led))]


def _one_suit(cards: tuple[str, ...]) -> bool:
    suit = SUIT_OF[cards[0]]
    return all(SUIT_OF[c] == suit for c in cards)


def _claims(state: Game, deal: Deal, phase: str) -> list[PlayerCommand]:
    moves: list[PlayerCommand] = []
    if deal.trump is not None:
        moves.append(Declare("bura"))
    if phase == "lead" or state.rules.declare_on == "any_turn":
        moves.append(Declare("thirty_one"))
    if phase == "lead":
        if lead_limit(state, deal) == 0:
            moves.append(Pass())
        cube_free = deal.cube is None or deal.cube == deal.turn
        under_limit = deal.multiplier * 2 <= state.rules.dave_max_multiplier
        if dave_enabled(state.rules, len(state.seats)) and cube_free and under_limit:
            moves.append(Dave())
    return moves
