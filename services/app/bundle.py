"""The audit bundle: one self-contained file holding a game's record as it was stored (every
event with its row metadata and chain hash), its shuffle commitments, the revealed seeds,
the rules and the audit's findings, so that anyone can check it with no server and no
database (`bura verify-bundle`; the format is in docs/fairness.md).

It is one compact JSON object with no whitespace, so that every byte of it is either the
record itself, covered by the hash chain, or something the record lets the checker
recompute: a byte changed anywhere is found, and said where. A seat's bundle of a
closed-discard game leaves out what the seat may not see (docs/rules.md §9), and holds no
hash at all (each would let its holder test guesses at the hidden cards): the checker says
what it could not check."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import msgspec

from domain.audit import Finding, audit
from domain.chain import ChainCheck, Row, check_chain
from domain.events import (
    DealStarted,
    Event,
    GameStarted,
    SeedingClosed,
    SeedingOpened,
    SeedRevealed,
)
from domain.evolve import replay
from domain.fairness import DealCheck, verify_deals
from domain.rules import Rules
from domain.shuffle import deal_seed, seated_deal_seed
from domain.views import ARBITER, Viewer, disclosed_to, redact
from infra.ports.events import Metadata, RecordedEvent
from services.app.codec import from_recorded

FORMAT: Literal["bura-audit-bundle/1"] = "bura-audit-bundle/1"
_HEX = re.compile("[0-9a-f]{64}")


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
    viewer: int | Literal["arbiter", "spectator"]  # whose bundle it is
    redacted: bool  # some rows are redacted for that viewer
    seats: tuple[str, ...]
    rules: Rules
    seed: str | None  # the game's seed, when the viewer may see it
    finished: bool
    head: BundleHead | None  # the last row: the record's chain head (None when redacted)
    events: list[BundleRow]
    deals: list[BundleDeal]
    findings: list[Finding]  # the audit (domain/audit.py) as the viewer may see it


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(Bundle).decode


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
        findings=audit(events, shown_as),
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


# -- checking a bundle, with nothing but the file --------------------------------------------


class Problem(msgspec.Struct, frozen=True):
    where: str  # a byte offset, or a path into the bundle: "events[7] (version 8)", "deals[0]"
    what: str


class BundleReport(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool
    game_id: str | None = None
    viewer: str | None = None
    rows: int = 0
    chain: ChainCheck | None = None
    deals: list[DealCheck] = []
    findings: int = 0
    replayed: bool = False  # a full replay was made and its findings compared
    unchecked: list[str] = []  # what this bundle's viewer could not check, and why
    problems: list[Problem] = []


def check_bundle(raw: bytes) -> BundleReport:
    """Everything in the bundle, checked against the record it holds: the format, the chain
    row by row, every deal against its commitments and seeds, and a full replay whose
    findings must be the bundle's. Problems name where they are."""
    try:
        bundle = _decode(raw)
    except msgspec.ValidationError as e:
        return BundleReport(
            ok=False, problems=[Problem(_path(str(e)), f"not a bura audit bundle: {e}")]
        )
    except msgspec.DecodeError as e:
        return BundleReport(ok=False, problems=[Problem(_byte(raw, str(e)), f"not JSON: {e}")])
    problems: list[Problem] = []
    unchecked: list[str] = []
    chain: ChainCheck | None = None
    if bundle.redacted:
        _withheld(bundle, problems)
        unchecked.append(
            "the chain: a redacted bundle holds no hash, since each would let the cards "
            "hidden from its viewer be guessed; the arbiter's bundle proves the record"
        )
    else:
        chain = _chain(bundle, problems)
    if problems:
        return _report(bundle, chain=chain, problems=problems)
    events: list[Event] = []
    for i, row in enumerate(bundle.events):
        try:
            events.append(from_recorded(_recorded(bundle.game_id, row)))
        except (msgspec.DecodeError, msgspec.ValidationError, KeyError) as e:
            problems.append(Problem(f"events[{i}] (version {row.version})", f"no event: {e}"))
    if problems:
        return _report(bundle, chain=chain, problems=problems)
    _check_table(bundle, events, problems)
    deals = deals_of(events, bundle.seed)
    _same("deals", deals, bundle.deals, problems)
    checks = [d.check for d in deals if d.check is not None]
    for i, d in enumerate(deals):
        if d.check is None:
            unchecked.append(f"deal {d.number}: its seeds are secret to this viewer")
        elif not d.check.ok:
            problems.append(
                Problem(f"deals[{i}] (deal {d.number}, version {d.version})", _failed(d.check))
            )
    replayed = False
    if bundle.redacted:
        unchecked.append("the replay and its findings: a redacted record cannot be replayed")
    else:
        state = replay(events)
        if state.finished != bundle.finished:
            problems.append(Problem("finished", f"the replay says {state.finished}"))
        _same("findings", audit(events, bundle.viewer), bundle.findings, problems)
        replayed = True
    return _report(
        bundle,
        chain=chain,
        deals=checks,
        replayed=replayed,
        unchecked=unchecked,
        problems=problems,
    )


def _chain(bundle: Bundle, problems: list[Problem]) -> ChainCheck | None:
    rows = [_chain_row(bundle.game_id, i, r, problems) for i, r in enumerate(bundle.events)]
    if problems:
        return None
    chain = check_chain(bundle.game_id, rows)
    if not chain.ok:
        index = (chain.first_bad_version or 1) - 1
        what = str(chain.problem)
        if chain.first_bad_version == 1:
            what += " (or game_id is not the game this record is of)"
        problems.append(Problem(f"events[{index}] (version {chain.first_bad_version})", what))
    elif not bundle.events:
        problems.append(Problem("events", "the record is empty"))
    else:
        last = bundle.events[-1]
        if bundle.head is None or (bundle.head.version, bundle.head.hash) != (
            last.version,
            last.hash,
        ):
            problems.append(
                Problem("head", f"the last row is version {last.version}, hash {last.hash}")
            )
    return chain


def _withheld(bundle: Bundle, problems: list[Problem]) -> None:
    """A redacted bundle: rows 1..n of the game, and no hash anywhere."""
    if bundle.head is not None:
        problems.append(Problem("head", "a redacted bundle holds no hash"))
    for i, row in enumerate(bundle.events):
        where = f"events[{i}] (version {row.version})"
        if row.version != i + 1:
            problems.append(Problem(where, f"version {i + 1} is given as {row.version}"))
        elif row.hash is not None:
            problems.append(Problem(f"events[{i}].hash", "a redacted bundle holds no hash"))
        if problems:
            return


def _report(bundle: Bundle, **parts: Any) -> BundleReport:
    problems = parts.pop("problems")
    return BundleReport(
        ok=not problems,
        game_id=bundle.game_id,
        viewer=str(bundle.viewer),
        rows=len(bundle.events),
        findings=len(bundle.findings),
        problems=problems,
        **parts,
    )


def _chain_row(game_id: str, index: int, row: BundleRow, problems: list[Problem]) -> Row:
    # one spelling only (64 lower-case hex digits), so no byte of it can change unseen
    if row.hash is not None and _HEX.fullmatch(row.hash):
        digest = bytes.fromhex(row.hash)
    else:
        problems.append(Problem(f"events[{index}].hash", "not 64 lower-case hex digits"))
        digest = b""
    return Row(
        stream_id=game_id,
        version=row.version,
        type=row.type,
        schema_version=row.schema_version,
        data=bytes(row.data),
        command_id=row.command_id,
        actor=row.actor,
        correlation_id=row.correlation_id,
        recorded_at=row.recorded_at,
        hash=digest,
    )


def _recorded(game_id: str, row: BundleRow) -> RecordedEvent:
    at = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=row.recorded_at)
    return RecordedEvent(
        stream_id=game_id,
        version=row.version,
        type=row.type,
        data=bytes(row.data),
        schema_version=row.schema_version,
        metadata=Metadata(
            command_id=row.command_id, actor=row.actor, correlation_id=row.correlation_id
        ),
        recorded_at=at,
        tx_id=0,
        position=0,
        hash=bytes.fromhex(row.hash) if row.hash is not None else b"",
    )


def _check_table(bundle: Bundle, events: list[Event], problems: list[Problem]) -> None:
    """The bundle's summary fields against the record's first event."""
    started = events[0] if events else None
    if not isinstance(started, GameStarted):
        problems.append(Problem("events[0] (version 1)", "the record does not start a game"))
        return
    if bundle.seats != started.seats:
        problems.append(Problem("seats", f"the record seats {list(started.seats)}"))
    if bundle.rules != started.rules:
        problems.append(Problem("rules", "they differ from the rules the game was started with"))
    if not bundle.redacted and bundle.seed != started.seed:
        problems.append(Problem("seed", "it is not the seed the game was started with"))


def _same(
    where: str,
    recomputed: Sequence[msgspec.Struct],
    given: Sequence[msgspec.Struct],
    problems: list[Problem],
) -> None:
    found = _difference(
        msgspec.to_builtins(list(recomputed)), msgspec.to_builtins(list(given)), where
    )
    if found is not None:
        path, ours, theirs = found
        problems.append(
            Problem(path, f"the record gives {_short(ours)}, the bundle says {_short(theirs)}")
        )


def _difference(ours: object, theirs: object, path: str) -> tuple[str, object, object] | None:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in ours.keys() | theirs.keys():
            found = _difference(ours.get(key), theirs.get(key), f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            found = _difference(a, b, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if ours != theirs or type(ours) is not type(theirs):
        if isinstance(ours, list) and isinstance(theirs, list):
            return path, f"{len(ours)} entries", f"{len(theirs)}"
        return path, ours, theirs
    return None


def _short(value: object) -> str:
    text = msgspec.json.encode(value).decode()
    return text if len(text) <= 80 else text[:77] + "..."


def _failed(check: DealCheck) -> str:
    wrong = [
        name
        for name in ("commitment_ok", "shuffle_ok", "server_commitment_ok", "seeds_ok")
        if getattr(check, name) is False
    ]
    return "the deal does not verify: " + ", ".join(wrong)


def _byte(raw: bytes, message: str) -> str:
    """Where the JSON breaks: msgspec says `(byte N)`, except for bad UTF-8 (found here)
    and a file cut short (at its end)."""
    marker = "(byte "
    if marker in message:
        return "byte " + message.split(marker, 1)[1].split(")", 1)[0]
    try:
        raw.decode()
    except UnicodeDecodeError as e:
        return f"byte {e.start}"
    return f"byte {len(raw)}"


def _path(message: str) -> str:
    """msgspec says where a value is wrong as "- at `$.events[3].hash`"."""
    marker = "at `$"
    if marker in message:
        return message.split(marker, 1)[1].split("`", 1)[0].lstrip(".") or "the bundle"
    return "the bundle"
