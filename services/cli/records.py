"""The `bura` commands that read a game's record from the store: replay, audit, verify,
export (the audit bundle, or JSON Lines) and import (either, all or nothing); and
verify-bundle, which needs no store at all."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Sequence

import msgspec

from domain.chain import HASH_HEX
from domain.events import Event, GameFinished, GameStarted
from domain.evolve import replay
from domain.views import ARBITER, review
from infra.ports.events import Conflict, EventStore, OutcomeUnknown, RecordedEvent
from infra.ports.games import AlreadyRematched
from services import bootstrap, config
from services.app.bundle import Bundle, make_bundle
from services.app.bundle_check import BundleReport, Kept, check_bundle, check_kept, whom
from services.app.callers import GAME_ID
from services.app.codec import from_recorded
from services.app.results import AuditFinding, TableView, Verification, with_head
from services.app.reviews import audited, check_record, intact
from services.cli.errors import FAILED, NOT_FOUND, UNAVAILABLE, USAGE, CliError, shown
from services.cli.exports import (
    BadExport,
    ExportedEvent,
    as_recorded,
    batches,
    exported,
    parse_export,
)
from services.cli.progress import Progress
from services.cli.table_text import finding_lines, render
from services.pages.words import describe, goes_on


async def _store(settings: config.Settings, *, existing: bool = True) -> EventStore:
    """The store the settings name; for reading, an embedded file that is not there is an
    error (opening it would only create an empty one)."""
    if existing and not settings.database_url and not os.path.exists(settings.sqlite_path):
        raise CliError(
            f"no store at {os.path.abspath(settings.sqlite_path)}: set BURA_SQLITE_PATH to the "
            "file the server uses (or BURA_DATABASE_URL)",
            UNAVAILABLE,
        )
    store, _ = await bootstrap.open_store(settings, migrating=not existing)
    return store


async def _read(settings: config.Settings, store: EventStore, game_id: str) -> list[RecordedEvent]:
    """The game's record, from the standby when one is set (topped up from `store`)."""
    record = await bootstrap.open_record(settings, store)
    try:
        return await record.read(game_id)
    finally:
        await bootstrap.close_record(record, store)


async def _rows(settings: config.Settings, game_id: str) -> list[RecordedEvent]:
    """The game's whole record, refused (RecordChanged: one line, exit 1) unless its chain
    holds and it was not cut short, as the API's replay and audit refuse it."""
    rows, finished = await _record(settings, game_id)
    intact(game_id, rows, finished)
    return rows


def _named(settings: config.Settings, game_id: str) -> None:
    """A GAME that no game id can be (the API's pattern, services/app/callers.py) names no
    game, as the API's 404 says of it: told before any store is asked (PostgreSQL would
    refuse its bytes, SQLite could not even bind them)."""
    if not GAME_ID.fullmatch(game_id):
        raise CliError(
            f"no game {shown(game_id)} in {_where(settings)}: a game id is 1 to 64 letters, "
            "digits, '-' or '_'",
            NOT_FOUND,
        )


async def _record(settings: config.Settings, game_id: str) -> tuple[list[RecordedEvent], bool]:
    """The game's rows, and whether the games index holds it finished."""
    _named(settings, game_id)
    store = await _store(settings)
    try:
        # the index first: it is written after the end's rows, so rows read after it hold
        # the end of a game it holds finished (a server may be ending it now), unless cut
        found = await bootstrap.index_on(store).get(game_id)
        rows = await _read(settings, store, game_id)
    finally:
        await store.close()
    if not rows:
        raise CliError(f"no game {game_id} in {_where(settings)}", NOT_FOUND)
    return rows, found is not None and found.status == "finished"


def _where(settings: config.Settings) -> str:
    return "the PostgreSQL store" if settings.database_url else settings.sqlite_path


class ReplayText(msgspec.Struct, frozen=True):
    """`bura replay --json`: the whole table at a version, as the operator's replay
    (GET /games/{id}/replay) shows it: its view carries the record's `chain_head` and
    `receipt` at that version."""

    game_id: str
    version: int
    view: TableView


class AuditText(msgspec.Struct, frozen=True):
    """`bura audit --json`: the findings with the seats' names, as GET /audit has them."""

    game_id: str
    version: int
    seats: tuple[str, ...]
    findings: list[AuditFinding]


_json = msgspec.json.Encoder()


async def cmd_replay(
    settings: config.Settings, game_id: str, version: int | None, as_json: bool = False
) -> int:
    rows = await _rows(settings, game_id)
    if version is not None and not 1 <= version <= len(rows):
        raise CliError(f"game {game_id} has versions 1 to {len(rows)}, not {version}", NOT_FOUND)
    events: list[Event] = [from_recorded(r) for r in rows]
    at = len(rows) if version is None else version
    # as services/app/reviews.py Reviews.replay: the table at `at`, with the head there
    current = replay(events)
    state = current if at == len(events) else replay(events[:at])
    table = with_head(review(state, ARBITER), current, ARBITER, rows[at - 1].hash)
    if as_json:
        print(_json.encode(ReplayText(game_id, table.version, table)).decode())
        return 0
    here, after = rows[at - 1], rows[at] if at < len(rows) else None
    follows = None
    if after is not None and goes_on(
        (here.type, here.metadata.correlation_id), (after.type, after.metadata.correlation_id)
    ):
        follows = (after.version, describe(events[at], _names(rows)))
    print(render(table, follows))
    return 0


def _names(rows: list[RecordedEvent]) -> tuple[str, ...]:
    started = from_recorded(rows[0])
    return started.seats if isinstance(started, GameStarted) else ()


async def cmd_audit(settings: config.Settings, game_id: str, as_json: bool = False) -> int:
    rows = await _rows(settings, game_id)
    findings = audited(rows)
    names = _names(rows)
    if as_json:
        print(_json.encode(AuditText(game_id, len(rows), names, findings)).decode())
        return 0
    if not findings:
        print(f"game {game_id}: no penalty and no false declaration in {len(rows)} events")
    for f in findings:
        for line in finding_lines(f, names):
            print(line)
    return 0


async def cmd_verify(settings: config.Settings, game_id: str) -> int:
    """The record as stored: its hash chain row by row, then every deal (with the game's
    seed, which the operator's store holds even before the game ends)."""
    rows, finished = await _record(settings, game_id)
    verification = check_record(game_id, rows, finished)
    for line in verification_lines(verification):
        print(line)
    print("verified" if verification.ok else "VERIFICATION FAILED")
    return 0 if verification.ok else FAILED


def verification_lines(verification: Verification) -> list[str]:
    chain = verification.chain
    if chain.ok:
        lines = [f"chain: {chain.rows} rows rehashed, head {chain.head}"]
    else:
        lines = [f"chain: BROKEN at version {chain.first_bad_version}: {chain.problem}"]
    if verification.unreadable_version is not None:
        lines.append(f"version {verification.unreadable_version}: its payload is no event")
    playback = verification.playback
    if not playback.ok:
        lines.append(
            f"playback: BROKEN at version {playback.first_bad_version}: {playback.problem}"
        )
    elif verification.unreadable_version is None:
        lines.append("playback: every event applies to the table before it")
    for c in verification.deals:
        seats = ""
        if c.shuffle == "seats":
            missing = f", seats {list(c.missing)} sent none (counted empty)" if c.missing else ""
            seats = (
                f", server seed {'ok' if c.server_commitment_ok else 'MISMATCH'}"
                f", seats' seeds {'ok' if c.seeds_ok else 'MISMATCH'}{missing}"
            )
        lines.append(
            f"deal {c.number} (version {c.version}): commitment "
            f"{'ok' if c.commitment_ok else 'MISMATCH'}, shuffle "
            f"{'ok' if c.shuffle_ok else 'MISMATCH'}{seats}"
            f"{' (operator-fixed deck)' if c.explicit else ''}"
        )
    return lines


async def cmd_export(settings: config.Settings, game_id: str, path: str, jsonl: bool) -> int:
    """The audit bundle (docs/fairness.md), or with `jsonl` every stored row as JSON Lines,
    with all its metadata (the commands' fingerprints included). `path` "-" is stdout."""
    _named(settings, game_id)
    if not path:
        raise CliError("--out is empty: name a file (or - for stdout)", USAGE)
    store = await _store(settings)
    try:
        indexed = await bootstrap.index_on(store).get(game_id)  # first, as in `_record`
        rows = await _read(settings, store, game_id)
        if not rows:
            raise CliError(f"no game {game_id} in {_where(settings)}", NOT_FOUND)
        # a record whose chain breaks, or cut short (a bundle of what is left would verify
        # by itself): refused as a broken record, RecordChanged, one line, exit 1
        intact(game_id, rows, indexed is not None and indexed.status == "finished")
        fingerprints: dict[str, str | None] = {}
        if jsonl:
            for command_id in {r.metadata.command_id for r in rows} - {None}:
                assert command_id is not None
                found = await store.find_command(game_id, command_id)
                fingerprints[command_id] = found.fingerprint if found is not None else None
    finally:
        await store.close()
    # a broken record is refused before anything is written, as a bundle's (make_bundle
    # reads every row and plays them back): RecordBroken, one line, exit 1
    if not jsonl:
        _write(path, [make_bundle(game_id, rows)])
        _said(path, f"exported {len(rows)} events of game {game_id} to {path} (an audit bundle)")
        return 0
    replay([from_recorded(r) for r in rows])
    progress = Progress("export", len(rows))

    def lines() -> Iterable[bytes]:
        for i, line in enumerate(exported(rows, fingerprints), 1):
            yield line
            progress(i)

    _write(path, lines())
    _said(path, f"exported {len(rows)} events of game {game_id} to {path}")
    return 0


def _said(path: str, line: str) -> None:
    """What an export did: on stdout, unless the export itself went there."""
    print(line, file=sys.stderr if path == "-" else sys.stdout)


def _write(path: str, chunks: Iterable[bytes]) -> None:
    """`chunks` into the file `--out` names, whole or not at all: into a temporary file
    beside it, synced, then renamed over it, so that a failed write (a full disk, a size
    limit) leaves no truncated file and any file already there untouched. "-" is stdout;
    a path that is no regular file (/dev/full, a FIFO) is written in place, as no rename
    can replace it. A path where no file can be written (a directory, a folder that is not
    there, no right to, a write that fails) is USAGE, in one line naming it."""
    if path == "-":
        out = sys.stdout.buffer
        for chunk in chunks:
            out.write(chunk)
        out.flush()
        return
    try:
        found = os.stat(path)
    except FileNotFoundError:
        found = None
    except OSError as e:
        raise _unwritable(path, e) from None
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise _unwritable(path, IsADirectoryError(21, "Is a directory"))
    if found is not None and not stat.S_ISREG(found.st_mode):
        try:
            with open(path, "wb") as device:
                for chunk in chunks:
                    device.write(chunk)
        except OSError as e:
            raise _unwritable(path, e) from None
        return
    folder = os.path.dirname(path) or "."
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(
            dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".part"
        )
        with os.fdopen(handle, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        # the mode an open() would have given (or the replaced file's), not mkstemp's 0600
        os.chmod(temporary, stat.S_IMODE(found.st_mode) if found else 0o666 & ~_umask())
        os.replace(temporary, path)
        temporary = None
    except OSError as e:
        raise _unwritable(path, e) from None
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    with contextlib.suppress(OSError):  # the rename itself made durable
        directory = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _unwritable(path: str, e: OSError) -> CliError:
    return CliError(f"--out {path}: cannot write a file there: {e.strerror or e}", USAGE)


def read_file(path: str) -> bytes:
    """The bytes of the file an argument names. No file there (nothing at all, or a
    directory) is NOT_FOUND; one that cannot be read (no right to, an I/O error) is
    USAGE, a bad argument: each in one line, with the system's reason. `-` is stdin (as
    `export --out -` is stdout: `bura export G --out - | bura verify-bundle -`)."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as f:
            return f.read()
    except (FileNotFoundError, NotADirectoryError):  # not there, or under a file
        raise CliError(f"no such file: {path}", NOT_FOUND) from None
    except IsADirectoryError:
        raise CliError(f"{path} is a directory, not a file", NOT_FOUND) from None
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}", USAGE) from None


def cmd_verify_bundle(path: str, kept: Sequence[Kept] = ()) -> int:
    """An audit bundle checked with nothing but the file (no store, no server), and with
    the heads and receipts kept from the server's answers, if any are given."""
    report = check_bundle(read_file(path), kept)
    for line in bundle_lines(report):
        print(line)
    if report.ok:
        print("verified" if not report.unchecked else "verified, as far as this viewer may see")
        return 0
    first = report.problems[0]
    print(f"VERIFICATION FAILED at {first.where}: {first.what}")
    return FAILED


def bundle_lines(report: BundleReport) -> list[str]:
    lines = []
    if report.game_id is not None:
        lines.append(
            f"bundle of game {report.game_id}, as {whom(report.viewer)} sees it: {report.rows} rows"
        )
    if report.chain is not None and report.chain.ok:
        lines.append(f"chain: {report.chain.rows} rows rehashed, head {report.chain.head}")
    for c in report.deals:
        lines.append(
            f"deal {c.number} (version {c.version}): "
            # an operator-fixed deck is no shuffle: said as `bura verify` says it
            + ("" if c.explicit else f"{c.shuffle} shuffle, ")
            + ("every commitment holds" if c.ok else "DOES NOT VERIFY")
            + (" (operator-fixed deck)" if c.explicit else "")
        )
    if report.replayed:
        lines.append(
            f"replay: the record plays back; its {report.findings} finding(s) are the bundle's"
        )
    if report.kept:
        lines.append(f"kept: {report.kept} head(s) or receipt(s) given, each the bundle's")
    lines += [f"not checked: {u}" for u in report.unchecked]
    lines += [f"problem at {p.where}: {p.what}" for p in report.problems]
    return lines


async def cmd_import(
    settings: config.Settings, path: str, unverified: bool = False, heads: Sequence[Kept] = ()
) -> int:
    """An audit bundle or a JSON Lines export, appended as the commands that made it (one
    append a command, under its id) in one transaction: the whole game or nothing. Each
    head kept from the server (`--head VERSION:HASH`) must be the file's at its version."""
    rows = read_export(path, unverified, heads)
    game_id = rows[0].game_id
    started = from_recorded(as_recorded(rows[0]))
    last = from_recorded(as_recorded(rows[-1]))
    if not isinstance(started, GameStarted):
        raise CliError(f"{path}: the first event is {rows[0].type}, not game_started", FAILED)
    appends = batches(rows)
    store = await _store(settings, existing=False)
    try:
        if await store.version(game_id):
            raise CliError(
                f"{_where(settings)} already holds game {game_id}: nothing was imported", FAILED
            )
        # the game joins the operator's list (GET /games), as if created here; a row left
        # by an import that failed before its append goes first
        index = bootstrap.index_on(store)
        await index.remove(game_id)
        try:
            await index.add(game_id, started.seats, started.rules, rematch_of=started.rematch_of)
        except AlreadyRematched:  # that game has another rematch here: list it unlinked
            await index.add(game_id, started.seats, started.rules)
        try:
            result = await store.append_batches(game_id, appends)
        except Conflict:
            held = await store.version(game_id)
            raise CliError(
                f"{_where(settings)} already holds game {game_id} ({held} events): "
                "nothing was imported",
                FAILED,
            ) from None
        except OutcomeUnknown as e:
            raise CliError(
                f"the store's answer was lost ({e}): game {game_id} was imported whole or "
                "not at all; `bura replay` tells which, and importing again is safe",
                UNAVAILABLE,
            ) from None
        written = await store.version(game_id)
        if isinstance(last, GameFinished):
            await index.finish(game_id, last.winners, last.reason)
    finally:
        await store.close()
    if (result.first_version, result.last_version, written) != (1, len(rows), len(rows)):
        raise CliError(
            f"game {game_id}: {len(rows)} events in {path}, but the store holds {written}",
            FAILED,
        )
    Progress("import", len(rows))(len(rows))
    print(f"imported {len(rows)} events in {len(appends)} appends as game {game_id}")
    if not heads and not isinstance(last, GameFinished) and rows[-1].hash is not None:
        # nothing in JSON Lines marks their end (a bundle says whether the game finished)
        print(
            f"bura import: {path} ends at version {len(rows)} (chain head {rows[-1].hash}), "
            "its game unfinished; JSON Lines carry no end, so a file cut at a command's "
            "end imports as a shorter game: check it with --head VERSION:HASH, or move "
            "the record as a bundle",
            file=sys.stderr,
        )
    return 0


def read_export(
    path: str, unverified: bool = False, heads: Sequence[Kept] = ()
) -> list[ExportedEvent]:
    """The rows of an export, checked before anything is written: an audit bundle (which
    must verify, and must not be a redacted one) or JSON Lines (whose chain, deals and
    replay must hold, as `bura verify` would find them in the store it came from), and
    each head kept from the server."""
    raw = read_file(path)
    bundle = _is_bundle(raw)
    try:
        lines = _bundle_lines(path, raw, heads) if bundle else raw.splitlines()
        rows = parse_export(lines, path)
    except BadExport as e:
        raise CliError(str(e), FAILED) from None
    game_id = rows[0].game_id
    if not GAME_ID.fullmatch(game_id):  # no command nor request could ever reach it
        raise CliError(
            f"{path}: the game id {shown(game_id) or repr(game_id)} is no game id (1 to 64 "
            "letters, digits, '-' or '_'): nothing was imported",
            FAILED,
        )
    if not bundle:  # a bundle was checked whole as it was read, its heads with it
        _check_lines(path, rows, unverified)
        _check_heads(path, rows, heads)
    return rows


def _check_heads(path: str, rows: list[ExportedEvent], heads: Sequence[Kept]) -> None:
    """The heads kept from the server against the file, as a bundle's are checked."""
    _, wrong, cannot = check_kept({r.version: r.hash for r in rows}, heads, record="the file")
    for said in [f"{p.where}: {p.what}" for p in wrong] + cannot:
        raise CliError(f"{path} does not verify, {said}; nothing was imported", FAILED)


def _is_bundle(raw: bytes) -> bool:
    """One JSON object with a `format` (however spelled: re-formatted, a line before it),
    not lines of events: checked as a bundle, so that what is wrong with it is said as a
    bundle's fault rather than as lines that are no events."""
    if raw.startswith(b'{"format":'):
        return True
    try:
        whole = msgspec.json.decode(raw)
    except msgspec.DecodeError:  # JSON Lines, or no JSON at all
        return False
    return isinstance(whole, dict) and "format" in whole


def _check_lines(path: str, rows: list[ExportedEvent], unverified: bool) -> None:
    """A JSON Lines export checked as the store it came from would be: the hash chain
    rehashed row by row, every deal against its commitments, and a replay. A file where
    only some rows hold a hash has had rows edited. One that holds none (written before
    the hashes were exported, or stripped of them) proves nothing of its rows: it is
    imported only when asked (`--unverified`), checked by its deals and replay alone."""
    hashless = [r.version for r in rows if r.hash is None or r.recorded_at is None]
    if len(hashless) == len(rows) and not unverified:
        raise CliError(
            f"{path} holds no hashes: nothing proves its rows are the record they claim to "
            "be (an edit leaves no trace without them); `bura import --unverified` takes "
            "it anyway, checked by its deals and replay alone",
            FAILED,
        )
    if hashless and len(hashless) < len(rows):
        raise CliError(
            f"{path} does not verify, at version {hashless[0]}: the row has no hash or no "
            "recorded_at, while other rows have theirs",
            FAILED,
        )
    for r in rows:
        if r.hash is not None and not HASH_HEX.fullmatch(r.hash):
            raise CliError(
                f"{path} does not verify, at version {r.version}: its hash is not 64 "
                "lower-case hex digits",
                FAILED,
            )
    recorded = [
        msgspec.structs.replace(as_recorded(r), hash=bytes.fromhex(r.hash) if r.hash else b"")
        for r in rows
    ]
    verification = check_record(rows[0].game_id, recorded)
    if not hashless and not verification.chain.ok:
        chain = verification.chain
        raise CliError(
            f"{path} does not verify, at version {chain.first_bad_version}: {chain.problem}",
            FAILED,
        )
    for c in verification.deals:
        if not c.ok:
            raise CliError(
                f"{path} does not verify, at version {c.version}: deal {c.number}'s shuffle "
                "does not match its commitments (`bura verify` after an import would say the "
                "same)",
                FAILED,
            )
    if verification.unreadable_version is not None:  # parse_export has read every row
        raise CliError(
            f"{path} does not verify, at version {verification.unreadable_version}: the row "
            "is no event this server reads",
            FAILED,
        )
    if not verification.playback.ok:  # check_record has played the record back
        raise CliError(
            f"{path} does not verify, at version {verification.playback.first_bad_version}: "
            f"{verification.playback.problem}",
            FAILED,
        )
    if hashless:
        print(
            f"{path} holds no hashes (an export older than them): its deals and replay were "
            "checked, its chain could not be",
            file=sys.stderr,
        )


def _whose(viewer: int | str) -> str:
    return f"{whom(viewer)}'s"


def _bundle_lines(path: str, raw: bytes, heads: Sequence[Kept] = ()) -> list[bytes]:
    """A bundle's rows as JSON Lines of an export, for the same checks and batches."""
    report = check_bundle(raw, heads)
    if not report.ok:
        first = report.problems[0]
        raise CliError(f"{path} does not verify, at {first.where}: {first.what}", FAILED)
    bundle = msgspec.json.decode(raw, type=Bundle)
    if bundle.redacted:
        raise CliError(
            f"{path} is {_whose(bundle.viewer)} bundle, redacted: it lacks the cards "
            "hidden from it, so it cannot be imported (import the operator's bundle)",
            FAILED,
        )
    encode = msgspec.json.Encoder().encode
    return [
        encode(
            ExportedEvent(
                game_id=bundle.game_id,
                version=r.version,
                type=r.type,
                schema_version=r.schema_version,
                data=r.data,
                actor=r.actor,
                command_id=r.command_id,
                correlation_id=r.correlation_id,
            )
        )
        for r in bundle.events
    ]
