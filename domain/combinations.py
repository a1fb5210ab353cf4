"""The Czech rules' (CZ) combinations (`combinations: "czech"`): bura, three aces and molodka, which
their holder may lead out of turn at the start of a trick.

Precedence (bura > three aces > molodka, ties to the seat that would lead earlier) is judged
when a combination is led: it is accepted only if no other seat holds a stronger one and no
seat that would lead earlier holds one as strong. The table cannot ask everyone at once, so
the order of the commands stands in for who spoke first, and the rank decides among them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import combinations as subsets

from domain.cards import SUIT_OF, Card, Suit, covers
from domain.state import Deal, Game
from domain.table import lead_limit
from domain.vocabulary import Combination

RANK = {"bura": 3, "three_aces": 2, "molodka": 1}


def combination(cards: Sequence[Card], trump: Suit | None) -> Combination | None:
    """What three led cards are: three trumps, three aces, three of one plain suit."""
    if len(cards) != 3:
        return None
    suits = {SUIT_OF[c] for c in cards}
    if suits == {trump}:
        return "bura"
    if all(c[:-1] == "A" for c in cards):
        return "three_aces"
    return "molodka" if len(suits) == 1 else None


def strongest(hand: Sequence[Card], trump: Suit | None) -> int:
    """The rank of the best combination in a hand, 0 for none."""
    kinds = (combination(group, trump) for group in subsets(hand, 3))
    return max((RANK[k] for k in kinds if k is not None), default=0)


def combination_leads(hand: Sequence[Card], trump: Suit | None) -> list[tuple[Card, ...]]:
    return [group for group in subsets(hand, 3) if combination(group, trump) is not None]


def open_to_combinations(game: Game, deal: Deal) -> bool:
    """The start of a trick, in the Czech game, with every seat able to answer three cards."""
    return (
        game.rules.combinations == "czech"
        and deal.phase == "lead"
        and deal.trick is None
        and lead_limit(deal) >= 3
    )


def outranked(
    game: Game, deal: Deal, seat: int, kind: str, among: Collection[int] | None = None
) -> bool:
    """Whether another seat's combination takes precedence over `seat` leading `kind`;
    with `among`, judged on those seats' hands only (the ones a viewer can see)."""
    seats = len(game.seats)
    order = [(deal.turn + k) % seats for k in range(seats)]
    rank = RANK[kind]
    for other in order:
        if other == seat or (among is not None and other not in among):
            continue
        best = strongest(deal.hands[other], deal.trump)
        earlier = order.index(other) < order.index(seat)
        if best > rank or (earlier and best == rank):
            return True
    return False


def can_beat(hand: Sequence[Card], led: Sequence[Card], trump: Suit | None) -> bool:
    return any(covers(group, led, trump) for group in subsets(hand, len(led)))
