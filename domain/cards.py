"""Cards in the `10H` notation: decks, rank order (the ten above the king), points, beating."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import permutations

from domain.errors import BadCard

Card = str  # canonical upper-case code: rank then suit letter, e.g. "10H", "AS"
Suit = str  # "S", "H", "D" or "C"

SUITS: tuple[Suit, ...] = ("S", "H", "D", "C")
# High to low within a suit; 2-5 exist only in the 52-card pack.
RANKS: tuple[str, ...] = ("A", "10", "K", "Q", "J", "9", "8", "7", "6", "5", "4", "3", "2")
_RANK_POINTS = {"A": 11, "10": 10, "K": 4, "Q": 3, "J": 2}
_DECK_RANKS = {36: RANKS[:9], 32: RANKS[:8], 52: RANKS}

SUIT_OF: dict[Card, Suit] = {}
STRENGTH: dict[Card, int] = {}  # larger is higher within a suit
POINTS: dict[Card, int] = {}
for _suit in SUITS:
    for _i, _rank in enumerate(RANKS):
        _card = _rank + _suit
        SUIT_OF[_card] = _suit
        STRENGTH[_card] = len(RANKS) - _i
        POINTS[_card] = _RANK_POINTS.get(_rank, 0)


def deck(size: int = 36) -> tuple[Card, ...]:
    """A fresh pack in a fixed order: suit by suit, high to low."""
    try:
        ranks = _DECK_RANKS[size]
    except KeyError:
        raise BadCard(f"no {size}-card pack: choose 36, 32 or 52") from None
    return tuple(rank + suit for suit in SUITS for rank in ranks)


def parse_card(text: str) -> Card:
    """`10h` -> `10H`; anything that is not a card raises BadCard naming the text (space
    around it too, and any letter outside ASCII that upper-cases into one: `aſ`)."""
    code = text.upper() if text.isascii() else ""
    if code not in SUIT_OF:
        raise BadCard(
            f"{text!r} is not a card: write rank then suit, ranks 2-10 J Q K A, "
            "suits S H D C (e.g. 10H, AS)"
        )
    return code


def parse_cards(texts: Iterable[str]) -> tuple[Card, ...]:
    return tuple(parse_card(t) for t in texts)


def points(cards: Iterable[Card]) -> int:
    return sum(POINTS[c] for c in cards)


def beats(card: Card, other: Card, trump: Suit | None) -> bool:
    """Same suit and higher, or a trump against a non-trump."""
    suit = SUIT_OF[card]
    if suit == SUIT_OF[other]:
        return STRENGTH[card] > STRENGTH[other]
    return suit == trump


def covers(response: Sequence[Card], table: Sequence[Card], trump: Suit | None) -> bool:
    """Whether each table card can be given its own response card that beats it.

    The responder does not say which card covers which: every pairing is tried (a lead
    is at most four cards, so at most 24 pairings).
    """
    if len(response) != len(table):
        return False
    if len(table) == 1:
        return beats(response[0], table[0], trump)
    return any(
        all(beats(r, t, trump) for r, t in zip(order, table, strict=True))
        for order in permutations(response)
    )


def count_trumps(cards: Iterable[Card], trump: Suit | None) -> int:
    return 0 if trump is None else sum(1 for c in cards if SUIT_OF[c] == trump)
