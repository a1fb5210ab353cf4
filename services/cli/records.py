"""The `bura` commands that read a game's record from the store: replay, audit, verify,
export and import."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import msgspec

from domain.audit import audit
from domain.events import Event, GameFinished, GameStarted
from domain.evolve import replay
from domain.fairness import verify_deals
from domain.views import ARBITER, view
from infra.ports.events import EventStore, Metadata, RecordedEvent
from infra.ports.games import AlreadyRematched
from services import bootstrap, config
from services.app.codec import from_recorded, to_new
from services.cli.errors import FAILED, NOT_FOUND, UNAVAILABLE, CliError
from services.cli.progress import Progress
from services.cli.table_text import render

_encode = msgspec.json.Encoder().encode


class ExportedEvent(msgspec.Struct, frozen=True):
    """One line of an export: a game's event as the store recorded it."""

    game_id: str
    version: int
    type: str
    schema_version: int
    data: msgspec.Raw
    actor: int | None = None
    command_id: str | None = None


async def _store(settings: config.Settings, *, existing: bool = True) -> EventStore:
    """The store the settings name; for reading, an embedded file that is not there is an
    error (opening it would only create an empty one)."""
    if existing and not settings.database_url and not os.path.exists(settings.sqlite_path):
        raise CliError(
            f"no store at {os.path.abspath(settings.sqlite_path)}: set BURA_SQLITE_PATH to the "
            "file the server uses (or BURA_DATABASE_URL)",
            UNAVAILABLE,
        )
    store, _ = await bootstrap.open_store(settings)
    return store


async def _rows(settings: config.Settings, game_id: str) -> list[RecordedEvent]:
    store = await _store(settings)
    try:
        rows = await store.read(game_id)
    finally:
        await store.close()
    if not rows:
        raise CliError(f"no game {game_id} in {_where(settings)}", NOT_FOUND)
    return rows


def _where(settings: config.Settings) -> str:
    return "the PostgreSQL store" if settings.database_url else settings.sqlite_path


async def _events(settings: config.Settings, game_id: str) -> list[tuple[int, Event]]:
    return [(r.version, from_recorded(r)) for r in await _rows(settings, game_id)]


async def cmd_replay(settings: config.Settings, game_id: str, version: int | None) -> int:
    events = await _events(settings, game_id)
    chosen = [e for v, e in events if version is None or v <= version]
    print(render(view(replay(chosen), ARBITER)))
    return 0


async def cmd_audit(settings: config.Settings, game_id: str) -> int:
    events = await _events(settings, game_id)
    findings = audit(e for _, e in events)
    if not findings:
        print(f"game {game_id}: no penalty and no false declaration in {len(events)} events")
    for f in findings:
        print(f"deal {f.deal}: {f.rule} by seat {f.seat} (events {f.versions[0]}-{f.versions[1]})")
        print(f"  rule: {f.text}")
        due = "nobody" if f.due is None else f"seat {f.due}"
        print(
            f"  table at version {f.before_version}: phase {f.phase}, due to draw: {due}, "
            f"hands {list(f.hand_sizes)}, stock {f.stock_count}"
        )
        if f.cards:
            print(f"  cards taken: {' '.join(f.cards)}")
        if f.claim:
            print(f"  claimed {f.claim}: had {f.value}, needed {f.needed}")
    return 0


async def cmd_verify(settings: config.Settings, game_id: str) -> int:
    events = [e for _, e in await _events(settings, game_id)]
    state = replay(events)
    if not state.finished:
        print(
            f"game {game_id} is not over: its seed is still secret (the operator may check "
            "it with the seed from the event store)"
        )
    checks = verify_deals(events, state.seed)
    for c in checks:
        print(
            f"deal {c.number}: commitment {'ok' if c.commitment_ok else 'MISMATCH'}, "
            f"shuffle {'ok' if c.shuffle_ok else 'MISMATCH'}"
            f"{' (operator-fixed deck)' if c.explicit else ''}"
        )
    ok = all(c.ok for c in checks)
    print("verified" if ok else "VERIFICATION FAILED")
    return 0 if ok else FAILED


async def cmd_export(settings: config.Settings, game_id: str, path: str) -> int:
    rows = await _rows(settings, game_id)
    progress = Progress("export", len(rows))
    with open(path, "wb") as out:
        for i, r in enumerate(rows, 1):
            line = ExportedEvent(
                game_id,
                r.version,
                r.type,
                r.schema_version,
                msgspec.Raw(r.data),
                r.metadata.actor,
                r.metadata.command_id,
            )
            out.write(_encode(line) + b"\n")
            progress(i)
    print(f"exported {len(rows)} events of game {game_id} to {path}")
    return 0


async def cmd_import(settings: config.Settings, path: str) -> int:
    decoder = msgspec.json.Decoder(ExportedEvent)
    with open(path, "rb") as f:
        try:
            lines = [decoder.decode(line) for line in f if line.strip()]
        except msgspec.DecodeError as e:
            raise CliError(f"{path} is not a bura export: {e}", FAILED) from None
    if not lines:
        raise CliError(f"{path} holds no events", FAILED)
    game_id = lines[0].game_id
    if [e.version for e in lines] != list(range(1, len(lines) + 1)):
        raise CliError(f"{path}: versions are not 1..{len(lines)} without gaps", FAILED)
    # Decode every line first, so a corrupt file never lands half-way.
    events = [from_recorded_line(e) for e in lines]
    started, last = events[0], events[-1]
    if not isinstance(started, GameStarted):
        raise CliError(f"{path}: the first event is {lines[0].type}, not game_started", FAILED)
    store = await _store(settings, existing=False)
    try:
        if await store.version(game_id):
            raise CliError(f"the store already has game {game_id}: nothing imported", FAILED)
        # the game joins the operator's list (GET /games), as if created here; a row left
        # by an import that failed before its first append goes first
        index = bootstrap.index_on(store)
        await index.remove(game_id)
        try:
            await index.add(game_id, started.seats, started.rules, rematch_of=started.rematch_of)
        except AlreadyRematched:  # that game has another rematch here: list it unlinked
            await index.add(game_id, started.seats, started.rules)
        progress = Progress("import", len(lines))
        for i, (line, event) in enumerate(zip(lines, events, strict=True), 1):
            await store.append(
                game_id,
                line.version - 1,
                [to_new(event)],
                Metadata(actor=line.actor, command_id=line.command_id),
            )
            progress(i)
        if isinstance(last, GameFinished):
            await index.finish(game_id, last.winners, last.reason)
    finally:
        await store.close()
    print(f"imported {len(lines)} events as game {game_id}")
    return 0


def from_recorded_line(line: ExportedEvent) -> Event:
    row = RecordedEvent(
        stream_id=line.game_id,
        version=line.version,
        type=line.type,
        data=bytes(line.data),
        schema_version=line.schema_version,
        metadata=Metadata(),
        recorded_at=datetime.now(UTC),
        tx_id=0,
        position=0,
    )
    return from_recorded(row)
