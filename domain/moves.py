"""What a seat may send now, as its view shows it: legal_commands folded into a compact,
client-ready shape (leads as suit groups, the respond count, claims, yes/no acts).

It lists only what the seat can know. The one rule that hangs on hidden cards is the
precedence of Czech combinations (docs/rules.md §8.8): whether a combination lead is
accepted depends on the others' hands. Judging it here would tell the seat, without its
saying a word, that someone holds a stronger combination; so a combination is offered
unless a hand the seat can see (an open seat's) takes precedence, and it is marked
`contested` while a hand it cannot see still might (the lead is then refused with
`combination_outranked`, as the table's announcement would tell it). Everything else
offered is exactly what decide accepts.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations as subsets

import msgspec

from domain.cards import SUIT_OF, Card, Suit
from domain.combinations import combination, outranked
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
from domain.legal import ANY_SEED, combination_offers, legal_commands
from domain.state import Game
from domain.vocabulary import Claim, Combination


class LeadGroup(msgspec.Struct, frozen=True, kw_only=True):
    """Lead any `count` of these cards together (all of one suit), for each count listed."""

    suit: Suit
    cards: tuple[Card, ...]
    counts: tuple[int, ...]


class CombinationLead(msgspec.Struct, frozen=True, kw_only=True):
    """A Czech combination to lead as it stands (docs/rules.md §8.8): out of turn, or in
    turn a molodka or three aces (a bura in turn is an ordinary lead: nothing outranks it)."""

    cards: tuple[Card, ...]
    combination: Combination
    # a hand this seat cannot see may take precedence: then 409 combination_outranked
    contested: bool


class Moves(msgspec.Struct, frozen=True, kw_only=True):
    """Every command the seat may send now: `lead` and `combinations` are `lead` commands,
    `respond` the number of cards (any of the hand) a `respond` takes, `declare` the
    claims a `declare` may make, and each flag a command with nothing to choose (`draw`
    one card; `dave_answer` with accept true or false; `seed` with any value of 1 to 128
    printable ASCII characters, the seats' shuffle)."""

    lead: tuple[LeadGroup, ...] = ()
    combinations: tuple[CombinationLead, ...] = ()
    respond: int | None = None
    draw: bool = False
    declare: tuple[Claim, ...] = ()
    dave: bool = False
    dave_answer: bool = False
    pass_: bool = msgspec.field(default=False, name="pass")
    concede: bool = False
    seed: bool = False


NOTHING = Moves()


def moves(state: Game, seat: int) -> Moves:
    deal = state.deal
    legal = legal_commands(state, seat)
    if any(isinstance(c, Seed) for c in legal):
        return Moves(seed=True)  # the deal waits for the seats' seeds: nothing else to do
    if deal is None or (not legal and not combination_offers(state, seat)):
        return NOTHING
    offers = _offers(state, seat)
    offered = {frozenset(o.cards) for o in offers}
    groups: dict[Suit, tuple[set[Card], set[int]]] = {}
    respond: int | None = None
    declare: list[Claim] = []
    acts: set[type] = set()  # the commands with nothing to choose
    for command in legal:
        if isinstance(command, Lead):
            cards = command.cards
            if offered and frozenset(cards) in offered:
                continue
            cards_of, counts = groups.setdefault(SUIT_OF[cards[0]], (set(), set()))
            cards_of.update(cards)
            counts.add(len(cards))
        elif isinstance(command, Respond):
            respond = len(command.cards)
        elif isinstance(command, Declare):
            declare.append(command.claim)
        else:
            acts.add(type(command))
    hand = deal.hands[seat]
    return Moves(
        lead=tuple(
            LeadGroup(
                suit=suit,
                cards=tuple(c for c in hand if c in cards_of),
                counts=tuple(sorted(counts)),
            )
            for suit, (cards_of, counts) in groups.items()
        ),
        combinations=tuple(offers),
        respond=respond,
        draw=Draw in acts,  # legal_commands lists a draw of one card only
        declare=tuple(declare),
        dave=Dave in acts,
        dave_answer=DaveAnswer in acts,  # listed with both answers
        pass_=Pass in acts,
        concede=Concede in acts,
    )


def _offers(state: Game, seat: int) -> list[CombinationLead]:
    deal = state.deal
    assert deal is not None
    others = [s for s in range(len(state.seats)) if s != seat]
    seen = [s for s in others if s in state.rules.open_seats]
    offers = []
    for group in combination_offers(state, seat):
        kind = combination(group, deal.trump)
        assert kind is not None
        if not outranked(state, deal, seat, kind, among=seen):
            offers.append(
                CombinationLead(cards=group, combination=kind, contested=len(seen) < len(others))
            )
    return offers


def commands(offer: Moves, hand: Sequence[Card]) -> list[PlayerCommand]:
    """Every command `offer` stands for, written out (the `respond` count over `hand`)."""
    out: list[PlayerCommand] = []
    for group in offer.lead:
        for count in group.counts:
            out += [Lead(cards) for cards in subsets(group.cards, count)]
    out += [Lead(c.cards) for c in offer.combinations]
    if offer.respond is not None:
        out += [Respond(cards) for cards in subsets(hand, offer.respond)]
    if offer.draw:
        out.append(Draw(1))
    out += [Declare(claim) for claim in offer.declare]
    if offer.dave:
        out.append(Dave())
    if offer.dave_answer:
        out += [DaveAnswer(True), DaveAnswer(False)]
    if offer.pass_:
        out.append(Pass())
    if offer.concede:
        out.append(Concede())
    if offer.seed:
        out.append(Seed(ANY_SEED))
    return out
