"""docs/rules.md §2 and the compensations of section 8: the shuffle, one card at a time clockwise,
the trump turned, and the points some seats receive before play."""

from __future__ import annotations

from collections.abc import Sequence

from domain import cards as pack
from domain.cards import Card
from domain.events import (
    CardDealt,
    CompensationGiven,
    DealStarted,
    Event,
    SeedingClosed,
    SeedingOpened,
    TrumpTurned,
)
from domain.rules import Rules, hand_sizes
from domain.shuffle import commitment, deal_seed, seated_deal_seed, seed_commitment, shuffled
from domain.state import Game, Shuffle
from domain.table import clockwise, next_seat, sides


def start_deal(
    game: Game, number: int, dealer: int, order: Sequence[Card] | None = None
) -> list[Event]:
    """A new deal: dealt at once from the server's seed, or, at a table whose seats shuffle,
    opened for their seeds. The seeding deadline is stamped on by decide, which alone
    knows the time."""
    if game.rules.shuffle == "seats":
        server_seed = deal_seed(game.seed, number)
        return [
            SeedingOpened(
                number=number, server_commitment=seed_commitment(server_seed), deadline=None
            )
        ]
    return deal_cards(game, number, dealer, order)


def close_seeding(game: Game, shuffle: Shuffle, at: int | None) -> list[Event]:
    """Seeding ends: the seeds as they are (a missing one is empty), then the deal shuffled
    from HMAC-SHA256(server seed, seeds in seat order, deal number)."""
    seats = range(len(game.seats))
    seeds = tuple(shuffle.seeds[s] or "" for s in seats)
    missing = tuple(s for s in seats if s not in shuffle.sent)
    closed = SeedingClosed(number=shuffle.number, seeds=seeds, missing=missing, at=at)
    seed = seated_deal_seed(deal_seed(game.seed, shuffle.number), seeds, shuffle.number)
    assert game.dealer is not None
    return [closed, *deal_cards(game, shuffle.number, game.dealer, None, seed)]


def deal_cards(
    game: Game,
    number: int,
    dealer: int,
    order: Sequence[Card] | None,
    seed: str | None = None,
) -> list[Event]:
    """The deal: shuffle (or the operator's order), one card at a time clockwise from the
    seat after the dealer up to each seat's hand size, then the trump card turned. `seed`
    is the deal's seed when the seats helped make it, else the server's alone is used."""
    rules = game.rules
    seats = len(game.seats)
    seed = seed if seed is not None else deal_seed(game.seed, number)
    deck = tuple(order) if order is not None else shuffled(seed, pack.deck(rules.deck))
    events: list[Event] = [
        DealStarted(
            number=number,
            dealer=dealer,
            commitment=commitment(seed, deck),
            deck=deck,
            explicit=order is not None,
        )
    ]
    sizes = hand_sizes(rules, seats)
    dealt = 0
    for round_ in range(max(sizes)):
        for k in range(1, seats + 1):
            seat = (dealer + k) % seats
            if sizes[seat] > round_:
                events.append(CardDealt(seat, deck[dealt]))
                dealt += 1
    if rules.trumps:
        events.append(TrumpTurned(deck[dealt]))
    return events + compensations(rules, seats, dealer)


def compensations(rules: Rules, seats: int, dealer: int) -> list[Event]:
    events: list[Event] = []
    if rules.compensation:
        # «другой даёт ему за это несколько очков компенсации»: each open seat receives its
        # points toward 31 from the closed side; nobody's tricks are reduced by them.
        events += [CompensationGiven(s, rules.compensation, "open_seat") for s in rules.open_seats]
    if rules.first_lead_compensation:
        # «За право первого хода ... дают компенсацию»: the first leader pays for the lead,
        # once to every other side (a team pools points, so one of its seats receives them).
        leader = next_seat(dealer, seats)
        for side in sides(rules, seats):
            if leader not in side:
                receiver = next(s for s in clockwise(leader, seats) if s in side)
                events.append(
                    CompensationGiven(receiver, rules.first_lead_compensation, "first_lead")
                )
    return events
