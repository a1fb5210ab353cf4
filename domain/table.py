"""Questions about the table that decide, evolve, views and bots all ask."""

from __future__ import annotations

from collections.abc import Sequence

from domain.cards import POINTS, Card
from domain.rules import Rules, hand_sizes
from domain.state import Deal, Game


def next_seat(seat: int, seats: int) -> int:
    return (seat + 1) % seats


def team_of(rules: Rules, seat: int) -> tuple[int, ...]:
    if rules.teams is None:
        return (seat,)
    for team in rules.teams:
        if seat in team:
            return team
    return (seat,)


def sides(rules: Rules, seats: int) -> tuple[tuple[int, ...], ...]:
    """Who plays together: the two teams, or every seat for itself."""
    return rules.teams or tuple((s,) for s in range(seats))


def clockwise(seat: int, seats: int) -> list[int]:
    """Every seat, starting from `seat`."""
    return [(seat + k) % seats for k in range(seats)]


def seat_points(deal: Deal, seat: int) -> int:
    """Points in a seat's trick pile plus any compensation it was given."""
    return sum(POINTS[c] for c in deal.piles[seat]) + deal.bonus[seat]


def claim_points(game: Game, deal: Deal, seat: int) -> int:
    """The points a declaration of 31 is judged by: the seat's, or its team's pooled."""
    return sum(seat_points(deal, s) for s in team_of(game.rules, seat))


def known_points(game: Game, deal: Deal, seat: int) -> int:
    """What `seat` itself can count toward a claim: its side's tricks and compensation, less
    the cards other seats put in face down (closed_discard), which it never saw."""
    unseen = {c for s, cards in enumerate(deal.face_down) if s != seat for c in cards}
    return sum(
        sum(POINTS[c] for c in deal.piles[s] if c not in unseen) + deal.bonus[s]
        for s in team_of(game.rules, seat)
    )


def lead_limit(deal: Deal) -> int:
    """How many cards the leader may lead: 3 at most, and no more than any seat can answer."""
    return min(3, *(len(h) for h in deal.hands))


def remove(hand: tuple[Card, ...], cards: Sequence[Card]) -> tuple[Card, ...]:
    """The hand without the cards played from it; a card it does not hold is an error (the
    rules never record one, so a record that does was edited)."""
    missing = [c for c in cards if c not in hand]
    if missing:
        raise ValueError(f"{', '.join(missing)} not in the hand {', '.join(hand) or '(empty)'}")
    return tuple(c for c in hand if c not in cards)


def take(stock: tuple[Card, ...], cards: Sequence[Card]) -> tuple[Card, ...]:
    """The stock without the cards taken from its top; they must be its top cards (the
    rules never record others, so a record that does was edited)."""
    top = stock[: len(cards)]
    if tuple(cards) != top:
        raise ValueError(
            f"{', '.join(cards)} taken, but the stock's top is {', '.join(top) or '(empty)'}"
        )
    return stock[len(cards) :]


def replace_at(
    items: tuple[tuple[Card, ...], ...], seat: int, value: tuple[Card, ...]
) -> tuple[tuple[Card, ...], ...]:
    return (*items[:seat], value, *items[seat + 1 :])


def draw_order(
    rules: Rules, deal: Deal, hands: Sequence[Sequence[Card]], taker: int
) -> tuple[int, ...]:
    """Seats due to draw after a trick, one card each: the taker first, then clockwise,
    round after round, full seats skipped, while the stock lasts."""
    seats = len(hands)
    sizes = hand_sizes(rules, seats)
    needs = [max(0, sizes[s] - len(hands[s])) for s in range(seats)]
    stock = len(deal.stock)
    if rules.short_stock == "set_aside" and sum(needs) > stock:
        return ()
    order: list[int] = []
    for round_ in range(max(needs, default=0)):
        for k in range(seats):
            seat = (taker + k) % seats
            if needs[seat] > round_ and len(order) < stock:
                order.append(seat)
    return tuple(order)
