"""The operator's command line: `bura serve | migrate | simulate | replay | audit | verify |
export | import`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

import msgspec

from domain.audit import audit
from domain.events import Event
from domain.evolve import replay
from domain.views import ARBITER, view
from infra.records import Metadata, RecordedEvent
from services import config
from services.codec import from_recorded, to_new
from services.fairness import verify_deals
from services.ports import EventStore
from services.progress import Progress
from services.table_text import render

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


async def _store(settings: config.Settings) -> EventStore:
    if settings.database_url:
        from infra.migrate import migrate
        from infra.postgres_store import PostgresEventStore

        await migrate(settings.database_url)
        return await PostgresEventStore.open(settings.database_url)
    from infra.sqlite_store import SqliteEventStore

    return await SqliteEventStore.open(settings.sqlite_path)


async def _rows(settings: config.Settings, game_id: str) -> list[RecordedEvent]:
    store = await _store(settings)
    try:
        rows = await store.read(game_id)
    finally:
        await store.close()
    if not rows:
        raise SystemExit(f"no game {game_id}")
    return rows


async def _events(settings: config.Settings, game_id: str) -> list[tuple[int, Event]]:
    return [(r.version, from_recorded(r)) for r in await _rows(settings, game_id)]


async def cmd_replay(settings: config.Settings, game_id: str, version: int | None) -> None:
    events = await _events(settings, game_id)
    chosen = [e for v, e in events if version is None or v <= version]
    state = replay(chosen)
    print(render(view(state, ARBITER)))


async def cmd_audit(settings: config.Settings, game_id: str) -> int:
    events = await _events(settings, game_id)
    findings = audit(e for _, e in events)
    if not findings:
        print(f"game {game_id}: no penalty and no false declaration in {len(events)} events")
    for f in findings:
        print(f"deal {f.deal}: {f.rule} by seat {f.seat} (events {f.versions[0]}-{f.versions[1]})")
        print(f"  rule: {f.text}")
        due = "nobody" if f.due is None else f"seat {f.due}"
        print(f"  table at version {f.before_version}: phase {f.phase}, due to draw: {due}, "
              f"hands {list(f.hand_sizes)}, stock {f.stock_count}")
        if f.cards:
            print(f"  cards taken: {' '.join(f.cards)}")
        if f.claim:
            print(f"  claimed {f.claim}: had {f.value}, needed {f.needed}")
    return 0


async def cmd_verify(settings: config.Settings, game_id: str) -> int:
    events = [e for _, e in await _events(settings, game_id)]
    state = replay(events)
    if not state.finished:
        print(f"game {game_id} is not over: its seed is still secret (the operator may check "
              "it with the seed from the event store)")
    checks = verify_deals(events, state.seed)
    for c in checks:
        print(f"deal {c.number}: commitment {'ok' if c.commitment_ok else 'MISMATCH'}, "
              f"shuffle {'ok' if c.shuffle_ok else 'MISMATCH'}"
              f"{' (operator-fixed deck)' if c.explicit else ''}")
    ok = all(c.ok for c in checks)
    print("verified" if ok else "VERIFICATION FAILED")
    return 0 if ok else 1


async def cmd_export(settings: config.Settings, game_id: str, path: str) -> int:
    rows = await _rows(settings, game_id)
    progress = Progress("export", len(rows))
    with open(path, "wb") as out:
        for i, r in enumerate(rows, 1):
            line = ExportedEvent(game_id, r.version, r.type, r.schema_version, msgspec.Raw(r.data),
                                 r.metadata.actor, r.metadata.command_id)
            out.write(_encode(line) + b"\n")
            progress(i)
    print(f"exported {len(rows)} events of game {game_id} to {path}")
    return 0


async def cmd_import(settings: config.Settings, path: str) -> int:
    decoder = msgspec.json.Decoder(ExportedEvent)
    with open(path, "rb") as f:
        lines = [decoder.decode(line) for line in f if line.strip()]
    if not lines:
        raise SystemExit(f"{path} holds no events")
    game_id = lines[0].game_id
    if [e.version for e in lines] != list(range(1, len(lines) + 1)):
        raise SystemExit(f"{path}: versions are not 1..{len(lines)} without gaps")
    store = await _store(settings)
    try:
        # Decode every line first, so a corrupt file never lands half-way.
        events = [from_recorded_line(e) for e in lines]
        progress = Progress("import", len(lines))
        for i, (line, event) in enumerate(zip(lines, events, strict=True), 1):
            await store.append(game_id, line.version - 1, [to_new(event)],
                               Metadata(actor=line.actor, command_id=line.command_id))
            progress(i)
    finally:
        await store.close()
    print(f"imported {len(lines)} events as game {game_id}")
    return 0


def from_recorded_line(line: ExportedEvent) -> Event:
    row = RecordedEvent(
        stream_id=line.game_id, version=line.version, type=line.type, data=bytes(line.data),
        schema_version=line.schema_version, metadata=Metadata(), recorded_at=datetime.now(UTC),
        tx_id=0, position=0,
    )
    return from_recorded(row)


def cmd_serve(settings: config.Settings) -> int:
    from services.server import serve

    return serve(settings)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bura", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the HTTP API")
    sub.add_parser("migrate", help="apply the SQL migrations to BURA_DATABASE_URL")
    sim = sub.add_parser("simulate", help="play bot games and print a summary")
    sim.add_argument("--games", type=int, default=200)
    sim.add_argument("--seats", type=int, default=2)
    sim.add_argument("--seed", type=int, default=1)
    sim.add_argument("--bot", choices=["random", "greedy"], default="random")
    rep = sub.add_parser("replay", help="print the table of a game at a version")
    rep.add_argument("game")
    rep.add_argument("--version", type=int)
    aud = sub.add_parser("audit", help="print each penalty and false declaration with evidence")
    aud.add_argument("game")
    ver = sub.add_parser("verify", help="check every deal against its shuffle commitment")
    ver.add_argument("game")
    exp = sub.add_parser("export", help="write a game's events as JSON Lines")
    exp.add_argument("game")
    exp.add_argument("--out", default=None)
    imp = sub.add_parser("import", help="load a JSON Lines export into the store")
    imp.add_argument("file")
    args = parser.parse_args(argv)

    try:
        settings = config.load()
    except config.ConfigError as error:
        print(f"bura: bad setting: {error}", file=sys.stderr)
        return 2
    match args.command:
        case "serve":
            return cmd_serve(settings)
        case "migrate":
            if not settings.database_url:
                print("bura migrate: BURA_DATABASE_URL is not set (SQLite migrates itself)",
                      file=sys.stderr)
                return 2
            from infra.migrate import migrate

            applied = asyncio.run(migrate(settings.database_url))
            print("applied: " + (", ".join(applied) if applied else "nothing, up to date"))
            return 0
        case "simulate":
            from services.simulate import print_summary, simulate

            progress = Progress("simulate", args.games)
            print_summary(simulate(args.games, args.seats, args.seed, args.bot, progress))
            return 0
        case "replay":
            asyncio.run(cmd_replay(settings, args.game, args.version))
            return 0
        case "audit":
            return asyncio.run(cmd_audit(settings, args.game))
        case "verify":
            return asyncio.run(cmd_verify(settings, args.game))
        case "export":
            return asyncio.run(cmd_export(settings, args.game, args.out or f"{args.game}.jsonl"))
        case "import":
            return asyncio.run(cmd_import(settings, args.file))
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
