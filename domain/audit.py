"""The arbiter's reading of a game: every penalty and false declaration, with evidence."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from domain.cards import Card
from domain.events import DealLost, Declared, Event, PenaltyApplied
from domain.evolve import evolve
from domain.state import NEW_GAME, Game

RULE_TEXT = {
    "double_draw": "RULES.md 4: taking two cards at once («двойной подъём») loses the deal",
    "extra_card": "RULES.md 4: drawing with a full hand («подъём лишней карты») loses the deal",
    "out_of_turn_draw": "RULES.md 4: drawing when another seat is due, or when no draw is due "
    "(«чужой подъём»), loses the deal",
    "false_declaration": "RULES.md 5: declaring 31 without the points, or bura without three "
    "trumps, loses the deal",
}


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    rule: str
    text: str
    deal: int
    seat: int  # the seat that acted
    due: int | None  # a faulty draw: the seat due to draw, None when no draw was due;
    # a declaration: the seat whose turn it was
    turn: int  # the seat the table was waiting for, whatever it was waiting for
    phase: str  # what the table was waiting for: lead, respond, draw, dave_answer
    hand_sizes: tuple[int, ...]
    stock_count: int
    cards: tuple[Card, ...] | None = None  # cards taken by a faulty draw
    claim: str | None = None
    value: int | None = None  # a declaration: the points (or trumps) the seat really had
    needed: int | None = None
    pile: tuple[Card, ...] | None = None  # a declaration of 31: the tricks that were counted
    hand: tuple[Card, ...] | None = None  # a declaration of bura: the hand it was judged on
    before_version: int  # the table state the verdict was judged on
    versions: tuple[int, ...]  # the events that prove it: the act and the verdict


def audit(events: Iterable[Event]) -> list[Finding]:
    findings: list[Finding] = []
    state: Game = NEW_GAME
    pending: dict[str, object] | None = None
    for event in events:
        before = state
        state = evolve(state, event)
        deal = before.deal
        match event:
            case PenaltyApplied(seat=seat, rule=rule, due=due, cards=cards) if deal is not None:
                pending = dict(
                    rule=rule, deal=deal.number, seat=seat, due=due, turn=deal.turn,
                    phase=deal.phase,
                    hand_sizes=tuple(len(h) for h in deal.hands), stock_count=len(deal.stock),
                    cards=cards, before_version=before.version, act=state.version,
                )
            case Declared(seat=seat, claim=claim, value=value, needed=needed, true=False) if (
                deal is not None
            ):
                pending = dict(
                    rule="false_declaration", deal=deal.number, seat=seat, due=deal.turn,
                    turn=deal.turn, phase=deal.phase, hand_sizes=tuple(len(h) for h in deal.hands),
                    stock_count=len(deal.stock), claim=claim, value=value, needed=needed,
                    pile=deal.piles[seat] if claim == "thirty_one" else None,
                    hand=deal.hands[seat] if claim == "bura" else None,
                    before_version=before.version, act=state.version,
                )
            case DealLost(seat=seat) if pending is not None and pending["seat"] == seat:
                act = pending.pop("act")
                rule = str(pending["rule"])
                findings.append(
                    msgspec.convert(
                        {**pending, "text": RULE_TEXT[rule], "versions": (act, state.version)},
                        Finding,
                    )
                )
                pending = None
    return findings
