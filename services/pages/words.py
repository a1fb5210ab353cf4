"""The table in words, shared by the pages and the command line: cards as people say them,
who the table waits for, and each event as one line naming the seats."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from domain.audit import Finding
from domain.cards import Card
from domain.events import (
    CardDealt,
    CardDrawn,
    CardsLed,
    CardsResponded,
    DealerChosen,
    DealLost,
    DealStarted,
    DealWon,
    Declared,
    Event,
    GameFinished,
    GameStarted,
    PenaltyApplied,
    StakeSettled,
    TrickTaken,
    TrumpTurned,
)

RANK_NAMES = {
    "A": "ace",
    "K": "king",
    "Q": "queen",
    "J": "jack",
    "10": "ten",
    "9": "nine",
    "8": "eight",
    "7": "seven",
    "6": "six",
    "5": "five",
    "4": "four",
    "3": "three",
    "2": "two",
}
SUIT_NAMES = {"S": "spades", "H": "hearts", "D": "diamonds", "C": "clubs"}
SUIT_SIGNS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
VERBS = {
    "lead": "lead",
    "respond": "respond",
    "draw": "draw",
    "dave_answer": "answer the dave",
    "seeding": "send seeds",
}


def card_name(card: Card) -> str:
    """ "QS" -> "queen of spades": what a screen reader says for a card."""
    return f"{RANK_NAMES[card[:-1]]} of {SUIT_NAMES[card[-1]]}"


def card_sign(card: Card) -> str:
    """ "QS" -> "Q♠": what the page shows."""
    return card[:-1] + SUIT_SIGNS[card[-1]]


def cards_named(cards: Sequence[Card] | None) -> str:
    if cards is None:
        return "hidden cards"
    return ", ".join(card_name(c) for c in cards) or "no card"


def seat_named(seat: int | None, names: Sequence[str]) -> str:
    if seat is None:
        return "nobody"
    name = names[seat] if 0 <= seat < len(names) else "?"
    return f"seat {seat} ({name})"


def waiting_for(finding: Finding, names: Sequence[str]) -> str:
    """What the table was waiting for when the act came: a draw is due from a seat only in
    the draw phase; at the lead (where a false 31 is declared) it waits for the leader."""
    if finding.phase == "draw" and finding.due is not None:
        return f"{seat_named(finding.due, names)} to draw"
    verb = VERBS.get(finding.phase, finding.phase)
    told = f"{seat_named(finding.turn, names)} to {verb}"
    if finding.rule in ("out_of_turn_draw", "double_draw", "extra_card") and finding.due is None:
        told += " (no draw was due)"
    return told


def describe(event: Event, names: Sequence[str]) -> str:
    """One line for an event as the viewer may see it (a hidden card says so)."""

    def who(seat: int | None) -> str:
        return seat_named(seat, names)

    match event:
        case GameStarted(seats=seats):
            return "the game starts: " + ", ".join(seats)
        case DealerChosen(seat=seat, by=chosen_by):
            return f"{who(seat)} deals (by {chosen_by})"
        case DealStarted(number=number, commitment=commitment):
            return f"deal {number} starts; commitment {commitment[:16]}…"
        case CardDealt(seat=seat, card=card):
            return f"{who(seat)} is dealt {card_name(card) if card else 'a hidden card'}"
        case TrumpTurned(card=card):
            return f"trump turned: {card_name(card)}"
        case CardsLed(seat=seat, cards=cards):
            return f"{who(seat)} leads {cards_named(cards)}"
        case CardsResponded(seat=seat, cards=cards, count=count, beat=beat, face_down=down):
            shown = f"{count} cards face down" if cards is None else cards_named(cards)
            return f"{who(seat)} responds with {shown}{' (beats)' if beat else ''}" + (
                " face down" if down and cards is not None else ""
            )
        case TrickTaken(seat=seat):
            return f"{who(seat)} takes the trick"
        case CardDrawn(seat=seat, card=card):
            return f"{who(seat)} draws {card_name(card) if card else 'a hidden card'}"
        case PenaltyApplied(seat=seat, rule=rule, due=due, cards=cards):
            return (
                f"penalty: {rule} by {who(seat)}, "
                f"{'due to draw: ' + who(due) if due is not None else 'no draw was due'}; "
                f"took {cards_named(cards)}"
            )
        case Declared(seat=seat, claim=claim, value=value, needed=needed, true=true):
            return (
                f"{who(seat)} declares {claim}: {value} of {needed}, {'true' if true else 'FALSE'}"
            )
        case DealWon(seat=seat, reason=reason):
            return f"{who(seat)} wins the deal ({reason})"
        case DealLost(seat=seat, reason=reason):
            return f"{who(seat)} loses the deal ({reason})"
        case StakeSettled(deal=deal, payments=payments):
            return f"deal {deal} settled: " + ", ".join(
                f"{names[s] if s < len(names) else s} {p:+d}" for s, p in enumerate(payments)
            )
        case GameFinished(winners=winners, reason=reason):
            return f"the game is over: {', '.join(who(w) for w in winners)} ({reason})"
    fields = msgspec.to_builtins(event)
    kind = fields.pop("type", type(event).__name__)
    by = f" by {who(fields.pop('seat'))}" if "seat" in fields else ""
    rest = ", ".join(f"{k} {v}" for k, v in fields.items() if v is not None)
    return f"{kind}{by}" + (f": {rest}" if rest else "")
