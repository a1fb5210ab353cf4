"""A provably fair shuffle: the deck order follows from a secret seed, and a published
commitment (SHA-256 over the deal's seed and the order) lets anyone check it afterwards.

With `shuffle: "seats"` the seats add to it: the server first publishes the SHA-256 of its
seed for the deal, then every seat sends a seed of its own, and the deal's seed is
HMAC-SHA256 keyed by the server's seed over the seats' seeds in seat order and the deal
number, so neither the server nor any seat alone can choose the deck. docs/fairness.md
writes the whole algorithm out, with test vectors."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator, Sequence

from domain.cards import Card
from domain.chain import field


def deal_seed(game_seed: str, number: int) -> str:
    """The server's seed for deal `number`: with `shuffle: "server"` the deal's seed itself,
    with `"seats"` the HMAC key the seats' seeds are mixed under. Revealing it tells
    nothing of the game's seed or of any other deal."""
    return hashlib.sha256(f"bura/deal/{game_seed}/{number}".encode()).hexdigest()


def seed_commitment(server_seed: str) -> str:
    """What the server publishes before any seat sends its seed: SHA-256 of its seed."""
    return hashlib.sha256(server_seed.encode()).hexdigest()


def seated_deal_seed(server_seed: str, seeds: Sequence[str], number: int) -> str:
    """HMAC-SHA256(key: the server's seed, message: each seat's seed in seat order, then
    the deal number, each framed as in the chain: a 4-byte big-endian length, the UTF-8
    bytes). A missing seed is the empty text."""
    message = b"".join(field(s) for s in seeds) + field(number)
    return hmac.new(server_seed.encode(), message, hashlib.sha256).hexdigest()


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
