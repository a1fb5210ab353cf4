"""A provably fair shuffle: the deck order follows from a secret seed, and a published
commitment (SHA-256 over the deal's seed and the order) lets anyone check it afterwards."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence

from domain.cards import Card


def deal_seed(game_seed: str, number: int) -> str:
    return hashlib.sha256(f"bura/deal/{game_seed}/{number}".encode()).hexdigest()


def commitment(seed: str, deck: Sequence[Card]) -> str:
    return hashlib.sha256(f"{seed}|{' '.join(deck)}".encode()).hexdigest()


def _words(seed: str, purpose: str) -> Iterator[int]:
    counter = 0
    while True:
        block = hashlib.sha256(f"{purpose}/{seed}/{counter}".encode()).digest()
        for i in range(0, 32, 8):
            yield int.from_bytes(block[i : i + 8], "big")
        counter += 1


def _below(words: Iterator[int], n: int) -> int:
    """Uniform in range(n), by rejection so no value is favoured."""
    limit = (1 << 64) - (1 << 64) % n
    while True:
        word = next(words)
        if word < limit:
            return word % n


def shuffled(seed: str, cards: Sequence[Card]) -> tuple[Card, ...]:
    """Fisher-Yates driven by SHA-256 of the seed: the same seed gives the same order."""
    order = list(cards)
    words = _words(seed, "shuffle")
    for i in range(len(order) - 1, 0, -1):
        j = _below(words, i + 1)
        order[i], order[j] = order[j], order[i]
    return tuple(order)


def draw_lot(seed: str, seats: int) -> int:
    return _below(_words(seed, "lot"), seats)
