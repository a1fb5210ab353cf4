"""Checking an audit bundle (services/app/bundle.py) with nothing but the file: no server,
no database, no setting (`bura verify-bundle`, docs/fairness.md §5). Every problem says
where it is: the byte at which the JSON breaks, the path of a bad field, the first event
row whose link breaks, or the entry the record gives otherwise."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from domain.audit import as_recorded, audit
from domain.chain import HASH_HEX, ChainCheck, Row, check_chain, receipt, receipt_key
from domain.events import (
    DealLost,
    Declared,
    Event,
    GameFinished,
    GameStarted,
    PauseEnded,
    PenaltyApplied,
    PotPaid,
    TimedOut,
)
from domain.evolve import RecordBroken
from domain.fairness import DealCheck
from domain.playback import play_back
from domain.views import ARBITER, Viewer, redact
from infra.ports.events import Metadata, RecordedEvent
from services.app.bundle import Bundle, BundleRow, deals_of
from services.app.codec import Unreadable, from_recorded
from services.app.jsontext import named_twice

_decode = msgspec.json.Decoder(Bundle).decode
_spelled = msgspec.json.Encoder().encode


class Problem(msgspec.Struct, frozen=True):
    where: str  # a byte offset, or a path into the bundle: "events[7] (version 8)", "deals[0]"
    what: str


class Kept(msgspec.Struct, frozen=True):
    """What a seat or platform kept from an answer of the server: the record's version then,
    and its chain head (`hash`, the arbiter's) or its `receipt` (everyone's)."""

    version: int
    hash: str | None = None
    receipt: str | None = None

    def __str__(self) -> str:
        return f"kept {'head' if self.hash is not None else 'receipt'} of version {self.version}"


class BundleReport(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool
    game_id: str | None = None
    viewer: str | None = None
    rows: int = 0
    chain: ChainCheck | None = None
    deals: list[DealCheck] = []
    findings: int = 0
    replayed: bool = False  # a full replay was made and its findings compared
    kept: int = 0  # heads and receipts kept from the server's answers that the bundle holds
    unchecked: list[str] = []  # what this bundle's viewer could not check, and why
    problems: list[Problem] = []


def check_bundle(raw: bytes, kept: Sequence[Kept] = ()) -> BundleReport:
    """Everything in the bundle, checked against the record it holds: the format, the chain
    row by row, every deal against its commitments and seeds, and a full replay whose
    findings must be the bundle's; and each head or receipt `kept` from an answer of the
    server must be the bundle's at its version (rows cut from the end, or a record
    rewritten with every hash, show only so). Problems name where they are."""
    twice = named_twice(raw)
    if twice is not None:  # one reader keeps the first, another the last: two bundles
        return BundleReport(
            ok=False,
            problems=[
                Problem(
                    "the bundle",
                    f"an object gives `{twice}` twice: which one counts "
                    "is each reader's guess, so the file is no one record",
                )
            ],
        )
    try:
        bundle = _decode(raw)
    except msgspec.ValidationError as e:
        if _event_lines(raw):
            return BundleReport(ok=False, problems=[Problem("the bundle", EVENT_LINES)])
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
        # a file re-formatted (`jq .`) no longer hashes as recorded either: said first, as
        # what most likely happened, before the rows it breaks
        respelled: list[Problem] = []
        _check_spelling(raw, bundle, respelled)
        return _report(bundle, chain=chain, problems=[*respelled, *problems])
    events: list[Event] = []
    for i, row in enumerate(bundle.events):
        try:
            events.append(from_recorded(_recorded(bundle.game_id, row)))
        except Unreadable as e:
            problems.append(Problem(f"events[{i}] (version {row.version})", f"no event: {e}"))
    if problems:
        return _report(bundle, chain=chain, problems=problems)
    _check_table(bundle, events, problems)
    _check_flags(bundle, events, problems)
    if problems:
        return _report(bundle, chain=chain, problems=problems)
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
        unchecked.append(
            "the replay: a redacted record cannot be replayed; each finding is checked "
            "against the rows it names"
        )
        _check_findings(bundle, events, problems)
        ended = any(isinstance(e, GameFinished) for e in events)
        if bundle.finished != ended:  # the rows say whether the game ended, hidden or not
            problems.append(Problem("finished", f"the rows say {ended}"))
    else:
        try:
            state = play_back(events)  # every act decided again, its outcome the rules'
        except RecordBroken as broken:  # a forger who rewrote every hash after his edit
            where = (
                f"events[{broken.version - 1}] (version {broken.version})"
                if broken.version <= len(bundle.events)
                # the rules go on past the last row: a record that ends too soon
                else f"the end, after events[{len(events) - 1}] (version {len(events)})"
            )
            problems.append(Problem(where, str(broken)))
            return _report(
                bundle, chain=chain, deals=checks, unchecked=unchecked, problems=problems
            )
        if state.finished != bundle.finished:
            problems.append(Problem("finished", f"the replay says {state.finished}"))
        recomputed = [as_recorded(f) for f in audit(events, bundle.viewer)]
        _same("findings", recomputed, bundle.findings, problems)
        replayed = True
    _check_spelling(raw, bundle, problems)
    held, wrong, cannot = check_kept(
        {r.version: r.hash for r in bundle.events}, kept, seed=bundle.seed
    )
    problems += wrong
    unchecked += cannot
    return _report(
        bundle,
        chain=chain,
        deals=checks,
        replayed=replayed,
        kept=held,
        unchecked=unchecked,
        problems=problems,
    )


def check_kept(
    hashes: Mapping[int, str | None],
    kept: Sequence[Kept],
    *,
    record: str = "the bundle",
    seed: str | None = None,
) -> tuple[int, list[Problem], list[str]]:
    """Each head or receipt kept against the record's chain head at its version (`hashes`:
    version -> head, None where the record holds none): how many hold, what is wrong with
    the others, and those that could not be checked. A bundle and `bura import --head` on
    JSON Lines both check this way, `record` naming what was read."""
    last = max(hashes, default=0)
    held, problems, unchecked = 0, [], []
    for k in kept:
        if k.version not in hashes:
            problems.append(
                Problem(
                    str(k),
                    f"{record} ends at version {last}: the record held version "
                    f"{k.version} when the server gave this, so rows were removed from its end"
                    if k.version > last
                    else "no such version",
                )
            )
            continue
        head = hashes[k.version]
        if head is None:
            unchecked.append(f"{k}: {record} holds no hash at that version (it is redacted)")
            continue
        if k.hash is not None:
            if head != k.hash.lower():
                problems.append(Problem(str(k), _rewritten(record, "head", head, k.hash)))
                continue
        elif k.receipt is not None:
            if seed is None:
                unchecked.append(f"{k}: the game's seed, the receipts' key, is not in {record}")
                continue
            ours = receipt(receipt_key(seed), bytes.fromhex(head))
            if ours != k.receipt.lower():
                problems.append(Problem(str(k), _rewritten(record, "receipt", ours, k.receipt)))
                continue
        held += 1
    return held, problems, unchecked


def _rewritten(record: str, what: str, ours: str, theirs: str) -> str:
    return (
        f"{record}'s {what} at that version is {ours}, not the {theirs} the server gave: "
        "the record was changed after it was given"
    )


def _check_spelling(raw: bytes, bundle: Bundle, problems: list[Problem]) -> None:
    """The file is the one spelling of its record, as the server wrote it: compact JSON,
    the fields in their order, each string written one way. Another spelling of the same
    values (spaces, a final line feed, fields reordered, `\u0036` for `6`) holds the same
    record but not its bytes, so a digest of the file would not name the bundle exported."""
    ours = _spelled(bundle)
    if ours == raw:
        return
    at = next((i for i, (a, b) in enumerate(zip(ours, raw, strict=False)) if a != b), None)
    problems.append(
        Problem(
            f"byte {min(len(ours), len(raw)) if at is None else at}",
            "the file is not the bundle as the server wrote it (compact JSON, fields in "
            "their order, each string spelled one way): it was re-formatted or re-written, "
            "so its bytes are not the exported record's; verify the file as exported",
        )
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
    if row.hash is not None and HASH_HEX.fullmatch(row.hash):
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
        problems.append(
            Problem(
                "seats",
                f"the record gives {list(started.seats)}, the bundle says {list(bundle.seats)}",
            )
        )
    if bundle.rules != started.rules:
        problems.append(Problem("rules", "they differ from the rules the game was started with"))
    if not bundle.redacted and bundle.seed != started.seed:
        problems.append(Problem("seed", "it is not the seed the game was started with"))


def _check_flags(bundle: Bundle, events: list[Event], problems: list[Problem]) -> None:
    """Each row's `redacted` flag, and the bundle's, against what its viewer may see: the
    arbiter's bundle redacts nothing and any other viewer's always hides something (the
    deck). A row is flagged exactly when it is of a kind its viewer is shown redacted (what
    such a row hides, the rules always record), and no row shows what its viewer may not
    see."""
    viewer = bundle.viewer
    if bundle.redacted != (viewer != ARBITER):
        problems.append(
            Problem("redacted", "the arbiter's bundle is never redacted")
            if viewer == ARBITER
            else Problem("redacted", f"a bundle for {whom(viewer)} is always redacted")
        )
        return
    for i, (row, event) in enumerate(zip(bundle.events, events, strict=True)):
        shown = redact(event, viewer, bundle.rules)
        where = f"events[{i}] (version {row.version})"
        if shown != event:
            problems.append(Problem(where, f"it shows what {whom(viewer)} may not see"))
        elif row.redacted and shown is event:
            problems.append(
                Problem(f"{where}.redacted", f"nothing of it is hidden from {whom(viewer)}")
            )
        elif not row.redacted and shown is not event:
            problems.append(
                Problem(
                    f"{where}.redacted",
                    f"it withholds what {whom(viewer)} may not see, but is not flagged",
                )
            )
        if problems:
            return


def _check_findings(bundle: Bundle, events: list[Event], problems: list[Problem]) -> None:
    """A redacted bundle's findings, without a replay: each names an act and a verdict of
    the record (rows its viewer sees whole), of its seat and its rule; and every faulty
    draw of the record has its finding (one always loses the deal)."""
    named: set[int] = set()
    for i, finding in enumerate(bundle.findings):
        act, verdict = finding.versions[0], finding.versions[-1]
        shown = _act_of(events[act - 1]) if 1 <= act <= len(events) else None
        ended = events[verdict - 1] if 1 <= verdict <= len(events) else None
        if shown != (finding.rule, finding.seat):
            problems.append(
                Problem(
                    f"findings[{i}]", f"version {act} is no {finding.rule} of seat {finding.seat}"
                )
            )
        elif not (isinstance(ended, DealLost | PotPaid) and ended.seat == finding.seat):
            problems.append(
                Problem(f"findings[{i}]", f"version {verdict} is no verdict on seat {finding.seat}")
            )
        named.add(act)
    for version, event in enumerate(events, 1):
        if isinstance(event, PenaltyApplied) and version not in named:
            problems.append(
                Problem("findings", f"the {event.rule} at version {version} has no finding")
            )


def _act_of(event: Event) -> tuple[str, int] | None:
    """The rule and seat of an act a finding may name."""
    match event:
        case PenaltyApplied(rule=rule, seat=seat):
            return rule, seat
        case Declared(true=False, seat=seat):
            return "false_declaration", seat
        case TimedOut(clock="abandon", seat=seat):
            return "abandoned", seat
        case TimedOut(seat=seat) | PauseEnded(seat=seat):
            return "timeout", seat
    return None


def whom(viewer: Viewer | str | None) -> str:
    """A bundle's viewer in words: `seat 0` (a seat, by number or as the report writes it),
    `the spectator`, `the arbiter`."""
    seat = isinstance(viewer, int) or (isinstance(viewer, str) and viewer.isdigit())
    return f"seat {viewer}" if seat else f"the {viewer}"


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


EVENT_LINES = (
    "not an audit bundle but a game's events as JSON Lines (`bura export --jsonl`): "
    "verify the game's audit bundle (`bura export GAME`, or GET /games/{id}/bundle); "
    "`bura import` takes either"
)


def _event_lines(raw: bytes) -> bool:
    """Whether `raw` begins as an export of event rows, one JSON object a line."""
    first = raw.lstrip().split(b"\n", 1)[0]
    try:
        row = msgspec.json.decode(first)
    except msgspec.DecodeError:
        return False
    return isinstance(row, dict) and {"game_id", "version", "type", "data"} <= row.keys()


def _path(message: str) -> str:
    """msgspec says where a value is wrong as "- at `$.events[3].hash`"."""
    marker = "at `$"
    if marker in message:
        return message.split(marker, 1)[1].split("`", 1)[0].lstrip(".") or "the bundle"
    return "the bundle"
