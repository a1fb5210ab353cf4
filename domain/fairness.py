"""Checking a recorded game against its shuffle commitments, once its seed is revealed."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from domain import cards as pack
from domain.events import DealStarted, Event, GameStarted
from domain.shuffle import commitment, deal_seed, shuffled


class DealCheck(msgspec.Struct, frozen=True, kw_only=True):
    number: int
    commitment: str
    commitment_ok: bool  # sha256(seed, recorded deck) equals the published commitment
    shuffle_ok: bool  # the recorded deck is the seed's shuffle (or the operator's fixed order)
    explicit: bool
    ok: bool


def verify_deals(events: Sequence[Event], seed: str) -> list[DealCheck]:
    size = 36
    checks: list[DealCheck] = []
    for event in events:
        if isinstance(event, GameStarted):
            size = event.rules.deck
        if isinstance(event, DealStarted) and event.deck is not None:
            dseed = deal_seed(seed, event.number)
            committed = commitment(dseed, event.deck) == event.commitment
            dealt = event.explicit or shuffled(dseed, pack.deck(size)) == event.deck
            checks.append(
                DealCheck(
                    number=event.number,
                    commitment=event.commitment,
                    commitment_ok=committed,
                    shuffle_ok=dealt,
                    explicit=event.explicit,
                    ok=committed and dealt,
                )
            )
    return checks
