"""Checking a recorded game against its shuffle commitments (docs/fairness.md).

A deal is checked once its seed can be known: from the game's seed (the arbiter's, or
revealed when the game ends), or, at a table whose seats shuffle, from the server seed
revealed when the deal ended. Given a seat's own (redacted) record it checks every deal
whose server seed that seat has seen, so a seat can see its seed went into the deal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from domain import cards as pack
from domain.events import (
    DealStarted,
    Event,
    GameStarted,
    SeedingClosed,
    SeedingOpened,
    SeedRevealed,
    SeedSent,
)
from domain.shuffle import commitment, deal_seed, seated_deal_seed, seed_commitment, shuffled


class DealCheck(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    number: int
    version: int  # the deal's deal_started event
    shuffle: Literal["server", "seats"]
    commitment: str
    commitment_ok: bool  # sha256(seed, deck) equals the commitment published before play
    shuffle_ok: bool  # the recorded deck is the seed's shuffle (or the operator's fixed order)
    explicit: bool
    # shuffle "seats": the server seed hashes to what was published before any seat's seed,
    # and the seeds it was mixed with are each seat's own, in seat order
    server_commitment: str | None = None
    server_commitment_ok: bool | None = None
    seeds: tuple[str, ...] | None = None
    missing: tuple[int, ...] = ()
    seeds_ok: bool | None = None
    ok: bool


class _Seeding(msgspec.Struct, kw_only=True):
    opened: SeedingOpened
    sent: dict[int, str | None]
    closed: SeedingClosed | None = None
    revealed: str | None = None


def verify_deals(events: Sequence[Event], seed: str | None) -> list[DealCheck]:
    """Every deal of the record (from version 1) whose seed can be known: `seed` is the
    game's, or None to rely on the server seeds revealed in the record itself."""
    size, seats = 36, 0
    seedings: dict[int, _Seeding] = {}
    for event in events:
        match event:
            case SeedingOpened(number=number):
                seedings[number] = _Seeding(opened=event, sent={})
            case SeedSent(seat=seat, value=value) if seedings:
                seedings[max(seedings)].sent[seat] = value
            case SeedingClosed(number=number) if number in seedings:
                seedings[number].closed = event
            case SeedRevealed(number=number, server_seed=revealed) if number in seedings:
                seedings[number].revealed = revealed
    checks: list[DealCheck] = []
    for version, event in enumerate(events, start=1):
        if isinstance(event, GameStarted):
            size, seats = event.rules.deck, len(event.seats)
        elif isinstance(event, DealStarted):
            seeding = seedings.get(event.number)
            if seeding is None:
                check = _server_deal(event, version, seed, size)
            else:
                check = _seated_deal(event, version, seed, size, seats, seeding)
            if check is not None:
                checks.append(check)
    return checks


def _server_deal(event: DealStarted, version: int, seed: str | None, size: int) -> DealCheck | None:
    if seed is None or (event.explicit and event.deck is None):
        return None  # nothing to check it with
    committed, dealt = _deck(event, deal_seed(seed, event.number), size)
    return DealCheck(
        number=event.number,
        version=version,
        shuffle="server",
        commitment=event.commitment,
        commitment_ok=committed,
        shuffle_ok=dealt,
        explicit=event.explicit,
        ok=committed and dealt,
    )


def _seated_deal(
    event: DealStarted, version: int, seed: str | None, size: int, seats: int, seeding: _Seeding
) -> DealCheck | None:
    closed = seeding.closed
    known = [s for s in (deal_seed(seed, event.number) if seed else None, seeding.revealed) if s]
    if closed is None or not known:
        return None  # its server seed is still secret to this record
    published = seeding.opened.server_commitment
    server_ok = all(seed_commitment(s) == published for s in known) and len(set(known)) == 1
    seeds_ok = len(closed.seeds) == seats and all(
        _own_seed(seat, closed, seeding) for seat in range(seats)
    )
    deadline = seeding.opened.deadline
    if closed.missing:  # only the deadline may leave a seed out
        at = closed.at
        seeds_ok = seeds_ok and deadline is not None and at is not None and at >= deadline
    mixed = seated_deal_seed(known[0], closed.seeds, event.number)
    committed, dealt = _deck(event, mixed, size)
    return DealCheck(
        number=event.number,
        version=version,
        shuffle="seats",
        commitment=event.commitment,
        commitment_ok=committed,
        shuffle_ok=dealt,
        explicit=event.explicit,
        server_commitment=published,
        server_commitment_ok=server_ok,
        seeds=closed.seeds,
        missing=closed.missing,
        seeds_ok=seeds_ok,
        ok=committed and dealt and server_ok and seeds_ok and not event.explicit,
    )


def _own_seed(seat: int, closed: SeedingClosed, seeding: _Seeding) -> bool:
    """The seed mixed in for `seat` is the one it sent (a redacted one is taken as sent),
    or empty because it sent none."""
    if seat in closed.missing:
        return seat not in seeding.sent and closed.seeds[seat] == ""
    if seat not in seeding.sent:
        return False
    sent = seeding.sent[seat]
    return sent is None or sent == closed.seeds[seat]


def _deck(event: DealStarted, seed: str, size: int) -> tuple[bool, bool]:
    """(commitment_ok, shuffle_ok) of a deal against its seed; a redacted deck is checked
    through the commitment alone, which fixes the whole order."""
    if event.explicit:
        assert event.deck is not None
        return commitment(seed, event.deck) == event.commitment, True
    derived = shuffled(seed, pack.deck(size))
    deck = derived if event.deck is None else event.deck
    return commitment(seed, deck) == event.commitment, deck == derived
