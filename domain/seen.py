"""The table as one seat sees it, for a bot that plays over the public API: a Game that
agrees with the seat's view (its own hand, open hands, the trick, every count, the trump),
with each card it cannot see filled in by a card it has not seen, in no particular order.

legal_commands on it lists the seat's legal moves (a Czech precedence that depends on
hidden hands may still be refused by the server), and known_points counts the tricks the
seat took, from `piles`: the cards of each trick, which the seat saw as they were played.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from domain.cards import Card, covers, deck
from domain.state import Deal, Game, Response, Trick
from domain.views import TrickView, View
from domain.vocabulary import Phase


def as_seen(view: View, piles: Sequence[Sequence[Card]] = ()) -> Game:
    seats = len(view.seats)
    taken: tuple[tuple[Card, ...], ...] = tuple(tuple(p) for p in piles) or ((),) * seats
    seen: set[Card] = set(view.hand or ())
    for seat in view.seats:
        seen |= set(seat.hand or ())
    trick = _trick(view.trick, view.trump_suit) if view.trick else None
    if view.trick is not None:
        seen |= set(view.trick.led)
        for response in view.trick.responses:
            seen |= set(response.cards or ())
    if view.trump is not None:
        seen.add(view.trump)
    seen |= {c for pile in taken for c in pile}
    unseen = (c for c in deck(view.rules.deck) if c not in seen)
    fill = _filler(unseen)
    hands = tuple(
        tuple(s.hand) if s.hand is not None else tuple(next(fill) for _ in range(s.cards))
        for s in view.seats
    )
    stock_count = view.stock_count
    stock = tuple(next(fill) for _ in range(stock_count - (1 if view.trump else 0)))
    if view.trump is not None and stock_count:
        stock = (*stock, view.trump)
    # a finished game's last deal is over; while seeding there is no deal to play yet
    phase: Phase = (
        "over"
        if view.phase == "finished"
        else ("dealing" if view.phase == "seeding" else view.phase)
    )
    deal = Deal(
        number=view.deal,
        dealer=view.dealer if view.dealer is not None else 0,
        deck=(),
        commitment=view.commitment or "",
        stock=stock,
        hands=hands,
        piles=taken,
        tricks=tuple(s.tricks for s in view.seats),
        bonus=(0,) * seats,
        trump=view.trump_suit,
        trump_card=view.trump,
        phase=phase,
        turn=view.turn if view.turn is not None else 0,
        leader=view.trick.leader if view.trick else (view.turn or 0),
        trick=trick,
        draws=view.draws,
        multiplier=view.dave.multiplier,
        cube=view.dave.may_offer,
        dave_from=view.dave.offered_by,
        face_down=((),) * seats,
        pot=view.pot or (0,) * seats,
        refuted=_refuted(view),
    )
    return Game(
        seats=tuple(s.name for s in view.seats),
        rules=view.rules,
        version=view.version,
        dealer=view.dealer,
        deal=deal,
        score=view.score,
        winners=view.result.winners if view.result else None,
        reason=view.result.reason if view.result else None,
        started=True,
    )


def _filler(cards: Iterator[Card]) -> Iterator[Card]:
    yield from cards
    while True:  # more hidden cards than unseen ones: the view counts what it cannot show
        yield from deck(52)


def _trick(shown: TrickView, trump: str | None) -> Trick:
    winning = tuple(shown.led)
    responses = []
    for response in shown.responses:
        cards = tuple(response.cards) if response.cards is not None else ()
        if response.beat and cards and covers(cards, winning, trump):
            winning = cards
        responses.append(Response(response.seat, cards, response.beat, response.face_down))
    return Trick(
        leader=shown.leader,
        led=tuple(shown.led),
        winning=winning,
        winner=shown.winner,
        responses=tuple(responses),
        combination=shown.combination,
    )


def _refuted(view: View) -> tuple[int, ...]:
    """The seat itself, when its own `moves` leave the 31 out: no field of the view says
    its 31 was found false since the last trick (pay_pot, `already_declared`), but where
    a 31 could not be declared anyway, counting the seat refuted changes nothing."""
    seat, moves = view.seat, view.moves
    if seat is None or moves is None or "thirty_one" in moves.declare:
        return ()
    return (seat,)
