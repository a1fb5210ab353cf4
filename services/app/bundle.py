"""The audit bundle: one self-contained file holding a game's record as it was stored (every
event with its row metadata and chain hash), its shuffle commitments, the revealed seeds,
the rules and the audit's findings, so that anyone can check it with no server and no
database (`bura verify-bundle`, services/app/bundle_check.py; the format is in
docs/fairness.md §5).

It is one compact JSON object with no whitespace, so that every byte of it is either the
record itself, covered by the hash chain, or something the record lets the checker
recompute: a byte changed anywhere is found, and said where. A seat's bundle of a
closed-discard game leaves out what the seat may not see (docs/rules.md §9), and holds no
hash at all (each would let its holder test guesses at the hidden cards)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from domain.audit import RecordedFinding, as_recorded, audit
from domain.events import DealStarted, Event, SeedingClosed, SeedingOpened, SeedRevealed
from domain.evolve import replay
from domain.fairness import DealCheck, verify_deals
from domain.rules import Rules
from domain.shuffle import deal_seed, seated_deal_seed
from domain.views import ARBITER, Viewer, disclosed_to, redact
from infra.ports.events import RecordedEvent
from services.app.codec import from_recorded

FORMAT: Literal["bura-audit-bundle/1"] = "bura-audit-bundle/1"


class BundleRow(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One event row as stored; `data` is its payload byte for byte (for a row the bundle's
    viewer may not see whole, the redacted payload, and `redacted` is true)."""

    version: int
    type: str
    schema_version: int
    data: msgspec.Raw
    command_id: str | None
    actor: int | None
    correlation_id: str | None
    recorded_at: int  # microseconds since 1970-01-01 UTC
    # hex SHA-256, chained onto the row before (domain/chain.py); None throughout a redacted
    # bundle, where any hash would let its viewer test guesses at what is hidden from it
    hash: str | None
    redacted: bool


class BundleHead(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    version: int
    hash: str


class BundleDeal(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A deal's shuffle: what was published before play, the seeds, and the check of it."""

    number: int
    version: int  # its deal_started event
    shuffle: Literal["server", "seats"]
    commitment: str
    server_commitment: str | None  # shuffle "seats"
    seeds: tuple[str, ...] | None  # shuffle "seats": every seat's, "" where missing
    missing: tuple[int, ...]
    server_seed: str | None  # shuffle "seats", once revealed to this viewer
    deal_seed: str | None  # the seed the deck was shuffled from, when this viewer may know it
    check: DealCheck | None  # None: its seeds are secret to this viewer


class Bundle(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    format: Literal["bura-audit-bundle/1"]
    game_id: str
    # whose eyes the record is shown with: the caller's, or "arbiter" once nothing in it is
    # hidden from the caller (a game over whose seed is out: docs/rules.md §9)
    viewer: int | Literal["arbiter", "spectator"]
    redacted: bool  # some rows are redacted for that viewer
    seats: tuple[str, ...]
    rules: Rules
    seed: str | None  # the game's seed, when the viewer may see it
    finished: bool
    head: BundleHead | None  # the last row: the record's chain head (None when redacted)
    events: list[BundleRow]
    deals: list[BundleDeal]
    findings: list[RecordedFinding]  # the audit (domain/audit.py) as the viewer may see it


_encode = msgspec.json.Encoder().encode


def make_bundle(game_id: str, rows: Sequence[RecordedEvent], viewer: Viewer = ARBITER) -> bytes:
    """The bundle of a whole record as `viewer` may see it (docs/rules.md §9: once a game
    is over everyone sees it all, as the arbiter does, and gets the arbiter's bundle, unless
    it was played with closed discard)."""
    events = [from_recorded(r) for r in rows]
    state = replay(events)
    shown_as = disclosed_to(state, viewer)
    seen = [redact(e, shown_as, state.rules) for e in events]
    out = [
        BundleRow(
            version=r.version,
            type=r.type,
            schema_version=r.schema_version,
            data=msgspec.Raw(r.data if shown == e else _encode(shown)),
            command_id=r.metadata.command_id,
            actor=r.metadata.actor,
            correlation_id=r.metadata.correlation_id,
            recorded_at=r.recorded_micros,
            hash=r.hash.hex() if shown_as == ARBITER else None,
            redacted=shown != e,
        )
        for r, e, shown in zip(rows, events, seen, strict=True)
    ]
    seed = state.seed if shown_as == ARBITER else None
    bundle = Bundle(
        format=FORMAT,
        game_id=game_id,
        viewer=shown_as,
        redacted=any(r.redacted for r in out),
        seats=state.seats,
        rules=state.rules,
        seed=seed,
        finished=state.finished,
        head=BundleHead(rows[-1].version, rows[-1].hash.hex()) if shown_as == ARBITER else None,
        events=out,
        deals=deals_of(seen, seed),
        findings=[as_recorded(f) for f in audit(events, shown_as)],
    )
    return _encode(bundle)


def deals_of(events: Sequence[Event], seed: str | None) -> list[BundleDeal]:
    """Every deal's shuffle as far as `events` (and the game's `seed`, if known) tell it."""
    checks = {c.number: c for c in verify_deals(events, seed)}
    opened: dict[int, SeedingOpened] = {}
    closed: dict[int, SeedingClosed] = {}
    deals: list[BundleDeal] = []
    for version, event in enumerate(events, start=1):
        match event:
            case SeedingOpened(number=number):
                opened[number] = event
            case SeedingClosed(number=number):
                closed[number] = event
            case DealStarted(number=number):
                deals.append(_deal(event, version, opened.get(number), closed.get(number), seed))
    revealed = {e.number: e.server_seed for e in events if isinstance(e, SeedRevealed)}
    return [
        msgspec.structs.replace(
            d,
            server_seed=revealed.get(d.number),
            deal_seed=_mixed(d, revealed.get(d.number), seed),
            check=checks.get(d.number),
        )
        for d in deals
    ]


def _deal(
    event: DealStarted,
    version: int,
    opened: SeedingOpened | None,
    closed: SeedingClosed | None,
    seed: str | None,
) -> BundleDeal:
    return BundleDeal(
        number=event.number,
        version=version,
        shuffle="seats" if opened is not None else "server",
        commitment=event.commitment,
        server_commitment=opened.server_commitment if opened is not None else None,
        seeds=closed.seeds if closed is not None else None,
        missing=closed.missing if closed is not None else (),
        server_seed=None,
        deal_seed=None,
        check=None,
    )


def _mixed(deal: BundleDeal, revealed: str | None, seed: str | None) -> str | None:
    server = deal_seed(seed, deal.number) if seed else revealed
    if server is None:
        return None
    if deal.shuffle == "server":
        return server
    assert deal.seeds is not None
    return seated_deal_seed(server, deal.seeds, deal.number)
