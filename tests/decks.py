"""Stacked decks, for every test tier: the explicit deck (docs/rules.md §2) that deals
known hands, turns a known trump and leaves known cards on top of the stock."""

from __future__ import annotations

from collections.abc import Sequence

from domain.cards import Card, deck


def _cards(cards: Sequence[str] | str) -> list[Card]:
    return cards.split() if isinstance(cards, str) else list(cards)


def dealing_order(
    hands: Sequence[Sequence[str] | str],
    trump: str | None,
    stock: Sequence[str] | str = (),
    *,
    dealer: int,
    size: int = 36,
) -> tuple[Card, ...]:
    """The deck, in dealing order, that deals `hands` (by seat; "AS 6S QD" or a list), turns
    `trump` (None: a game without trumps) and leaves `stock` on top of the stock, then the
    rest of the `size`-card pack in its fixed order. Cards go one at a time from the seat
    after the dealer."""
    seats = len(hands)
    split = [_cards(h) for h in hands]
    order: list[Card] = []
    for round_ in range(max(len(h) for h in split)):
        for k in range(1, seats + 1):
            seat = (dealer + k) % seats
            if round_ < len(split[seat]):
                order.append(split[seat][round_])
    order += [*([trump] if trump else []), *_cards(stock)]
    assert len(set(order)) == len(order), "a card is stacked twice"
    return tuple(order) + tuple(c for c in deck(size) if c not in order)
