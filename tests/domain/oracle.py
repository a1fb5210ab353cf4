"""docs/rules.md read a second time, without the domain's code: which card beats which, who
takes a trick, who draws in what order, what a side counts, who pays whom and who deals
next. tests/domain/test_oracles.py holds the recorded games of the domain against it.

Only the card notation and the rules' option names are shared with the domain; every rank,
point and verdict here is written out again from the page."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import permutations

# §1: high to low within a suit; the 52-card pack adds 5 4 3 2 below the 6
ORDER = ("A", "10", "K", "Q", "J", "9", "8", "7", "6", "5", "4", "3", "2")
WORTH = {"A": 11, "10": 10, "K": 4, "Q": 3, "J": 2}


def rank(card: str) -> str:
    return card[:-1]


def suit(card: str) -> str:
    return card[-1]


def worth(cards: Sequence[str]) -> int:
    return sum(WORTH.get(rank(c), 0) for c in cards)


def beats(card: str, other: str, trump: str | None) -> bool:
    """§1: of one suit and higher, or a trump against a card that is none."""
    if suit(card) == suit(other):
        return ORDER.index(rank(card)) < ORDER.index(rank(other))
    return suit(card) == trump


def covers(answer: Sequence[str], table: Sequence[str], trump: str | None) -> bool:
    """§3: each card on the table given a card of its own that beats it, by any pairing."""
    return len(answer) == len(table) and any(
        all(beats(a, t, trump) for a, t in zip(order, table, strict=True))
        for order in permutations(answer)
    )


def sides(teams: Sequence[Sequence[int]] | None, seats: int) -> list[tuple[int, ...]]:
    return [tuple(t) for t in teams] if teams else [(s,) for s in range(seats)]


def side_of(teams: Sequence[Sequence[int]] | None, seat: int) -> tuple[int, ...]:
    return next((tuple(t) for t in teams or () if seat in t), (seat,))


def counted(
    teams: Sequence[Sequence[int]] | None,
    piles: Sequence[Sequence[str]],
    bonus: Sequence[int],
    seat: int,
) -> int:
    """§5, §8.10: a seat's pile and compensation, pooled over its team."""
    return sum(worth(piles[s]) + bonus[s] for s in side_of(teams, seat))


def count_winner(
    teams: Sequence[Sequence[int]] | None, piles: Sequence[Sequence[str]], bonus: Sequence[int]
) -> int | None:
    """§5 most_points, §8.11: the first listed seat of the side with the highest total; None
    for a tie at the top. Cards still held count for nobody."""
    totals = [counted(teams, piles, bonus, side[0]) for side in sides(teams, len(piles))]
    best = max(totals)
    if totals.count(best) > 1:
        return None
    return sides(teams, len(piles))[totals.index(best)][0]


def pays(teams: Sequence[Sequence[int]] | None, seats: int, payer: int, amount: int) -> list[int]:
    """§5: `payer` pays `amount` to every other seat; in the team game each seat of its team
    pays it and each seat of the other team receives it."""
    if teams:
        own = side_of(teams, payer)
        return [-amount if s in own else amount for s in range(seats)]
    return [-amount * (seats - 1) if s == payer else amount for s in range(seats)]


def settlement(
    teams: Sequence[Sequence[int]] | None,
    seats: int,
    stake: int,
    *,
    winner: int | None,
    loser: int | None,
    pot: Sequence[int],
) -> list[int]:
    """§5 and §8.4: each seat's change of score when a deal ends (the stake already times
    the dave multiplier); the pot is paid whatever the ending."""
    payments = [0] * seats
    if winner is not None:
        payments = [-p for p in pays(teams, seats, winner, stake)]
    elif loser is not None:
        payments = pays(teams, seats, loser, stake)
    for seat, fine in enumerate(pot):
        payments = [a + b for a, b in zip(payments, pays(teams, seats, seat, fine), strict=True)]
    return payments


def next_dealer(
    seats: int, dealer: int, *, winner: int | None, loser: int | None
) -> tuple[int, str]:
    """§2's table: the winning seat; with two seats the offender's opponent; else the same."""
    if winner is not None:
        return winner, "winner"
    if loser is not None and seats == 2:
        return 1 - loser, "winner"
    return dealer, "same_dealer"


def draw_order(
    sizes: Sequence[int], held: Sequence[int], stock: int, taker: int, set_aside: bool
) -> list[int]:
    """§4: one card a draw, the taker first then clockwise, round after round, a full seat
    passed over, while the stock lasts; set aside, nobody draws unless everyone can fill."""
    seats = len(sizes)
    short = [max(0, size - n) for size, n in zip(sizes, held, strict=True)]
    if set_aside and sum(short) > stock:
        return []
    order: list[int] = []
    while any(short) and len(order) < stock:
        for k in range(seats):
            seat = (taker + k) % seats
            if short[seat] > 0 and len(order) < stock:
                order.append(seat)
                short[seat] -= 1
    return order
