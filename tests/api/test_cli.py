"""The operator's command line on each store: export, import into an empty store, replay,
audit and verify."""

from __future__ import annotations

import json
import random
import sqlite3
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import msgspec
import pytest

from domain.bots import random_bot
from domain.commands import Dave, Draw
from domain.evolve import fold, replay
from domain.legal import legal_commands
from domain.state import NEW_GAME
from domain.views import ARBITER, view
from infra.ports.events import RecordedEvent
from infra.ports.games import IndexedGame
from services import cli
from services.app.bundle_check import EVENT_LINES
from services.app.codec import from_recorded
from services.bootstrap import Adapters
from services.cli.table_text import render
from services.pages.words import describe, goes_on
from tests import servers
from tests.api.conftest import (
    FIRST_TRICK,
    OPERATOR,
    THIRTY_ONE_GAME,
    Api,
    Body,
    app_on,
    serving,
)
from tests.tampering import Tables

# Real receivers, timers, documents or whole games per case: left out of make test-fast.
pytestmark = pytest.mark.slow

Where = dict[str, str]  # the environment that points the CLI at a store


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Where, Where]]:
    """A store holding games, and an empty one, on each adapter."""
    if request.param == "sqlite":
        yield (
            {"BURA_SQLITE_PATH": str(tmp_path / "games.db")},
            {"BURA_SQLITE_PATH": str(tmp_path / "empty.db")},
        )
        return
    admin = request.getfixturevalue("postgres_admin_url")
    with servers.fresh_database(admin) as full, servers.fresh_database(admin) as empty:
        yield {"BURA_DATABASE_URL": full}, {"BURA_DATABASE_URL": empty}


async def opened(where: Where) -> Adapters:
    if "BURA_DATABASE_URL" in where:
        return await servers.postgres_adapters(where["BURA_DATABASE_URL"])
    return await servers.sqlite_adapters(where["BURA_SQLITE_PATH"])


def play_games(where: Where) -> tuple[str, str]:
    """Through the API: a game won by 31, and one lost by an out-of-turn draw."""

    async def play() -> tuple[str, str]:
        adapters = await opened(where)
        app = app_on(adapters)
        try:
            async with serving(app) as client:
                api = Api(client, app, adapters)
                won, penalised = await api.create(), await api.create()
                for seat, command in THIRTY_ONE_GAME:
                    await api.play(won, seat, command)
                steps: list[tuple[int, Body]] = [*FIRST_TRICK, (1, {"type": "draw"})]
                for seat, command in steps:
                    await api.play(penalised, seat, command)
                return won.game_id, penalised.game_id
        finally:
            await adapters.close()

    return servers.run_async(play)


def rows(where: Where, game_id: str) -> list[RecordedEvent]:
    async def read() -> list[RecordedEvent]:
        adapters = await opened(where)
        try:
            return await adapters.store.read(game_id)
        finally:
            await adapters.close()

    return servers.run_async(read)


def bura(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: Where, *argv: str
) -> tuple[int, str]:
    """`bura ARGV` on the store `where`: its exit code and what it printed."""
    code, out, _ = bura_said(monkeypatch, capsys, where, *argv)
    return code, out


def exported_game(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: Where,
    tmp_path: Path,
) -> tuple[str, Path]:
    """A game played on `where` and exported as JSON Lines: its id and the file."""
    game, _ = play_games(where)
    export = tmp_path / "game.jsonl"
    code, out = bura(monkeypatch, capsys, where, "export", game, "--out", str(export))
    assert code == 0, out
    return game, export


def bura_said(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: Where, *argv: str
) -> tuple[int, str, str]:
    """`bura ARGV` on the store `where`: its exit code, its output and its error output."""
    for name in ("BURA_DATABASE_URL", "BURA_SQLITE_PATH"):
        monkeypatch.delenv(name, raising=False)
    for name, value in where.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    code = cli.main(list(argv))
    printed = capsys.readouterr()
    return code, printed.out, printed.err


def test_export_then_import_into_an_empty_store_replays_the_same_game(
    stores: tuple[Where, Where],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    full, empty = stores
    game, _ = play_games(full)
    export = tmp_path / "game.jsonl"
    code, out = bura(monkeypatch, capsys, full, "export", game, "--out", str(export))
    assert code == 0 and f"exported {len(rows(full, game))} events" in out
    code, out = bura(monkeypatch, capsys, empty, "import", str(export))
    assert code == 0 and f"as game {game}" in out

    source, copy = rows(full, game), rows(empty, game)
    assert [
        (r.version, r.type, r.data, r.schema_version, r.metadata.actor, r.metadata.command_id)
        for r in copy
    ] == [
        (r.version, r.type, r.data, r.schema_version, r.metadata.actor, r.metadata.command_id)
        for r in source
    ]
    events = [from_recorded(r) for r in source]
    names = ("p0", "p1")
    for version in range(1, len(source) + 1):
        _, before = bura(monkeypatch, capsys, full, "replay", game, "--version", str(version))
        _, after = bura(monkeypatch, capsys, empty, "replay", game, "--version", str(version))
        assert after == before
        # inside one command's events, the table waits for no seat: what follows is said
        here, later = source[version - 1], source[version] if version < len(source) else None
        inside = later is not None and goes_on(
            (here.type, here.metadata.correlation_id), (later.type, later.metadata.correlation_id)
        )
        follows = (version + 1, describe(events[version], names)) if inside else None
        assert before.strip() == render(view(replay(events[:version]), ARBITER), follows)
    _, latest = bura(monkeypatch, capsys, empty, "replay", game)
    assert "result: winners [0] (thirty_one)" in latest
    indexed = listed(empty, game)
    assert indexed is not None and (indexed.status, indexed.version) == ("finished", len(source))
    assert indexed.winners == (0,) and indexed.seats == ("p0", "p1")


def listed(where: Where, game_id: str) -> IndexedGame | None:
    async def get() -> IndexedGame | None:
        adapters = await opened(where)
        try:
            return await adapters.games.get(game_id)
        finally:
            await adapters.close()

    return servers.run_async(get)


def test_audit_and_verify_on_the_command_line(
    stores: tuple[Where, Where],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    full, _ = stores
    won, penalised = play_games(full)
    code, out = bura(monkeypatch, capsys, full, "audit", penalised)
    assert code == 0
    assert "deal 1: out_of_turn_draw by seat 1" in out
    assert "due to draw: seat 0" in out
    code, out = bura(monkeypatch, capsys, full, "audit", won)
    assert code == 0 and "no penalty and no false declaration" in out
    code, out = bura(monkeypatch, capsys, full, "verify", won)
    assert code == 0
    assert f"chain: {len(rows(full, won))} rows rehashed, head " in out
    assert "deal 1 (version 3): commitment ok, shuffle ok (operator-fixed deck)" in out
    assert out.strip().endswith("verified")


def test_the_command_line_says_when_there_is_no_such_game(
    stores: tuple[Where, Where],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, empty = stores
    assert rows(empty, "anything-at-all") == []  # the store exists, and is empty
    code, _, said = bura_said(monkeypatch, capsys, empty, "replay", "nope")
    assert code == 4
    assert said.startswith("bura replay: no game nope") and said.count("\n") == 1


def test_a_record_that_no_longer_folds_is_one_line_naming_the_event(
    stores: tuple[Where, Where],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """A row edited so that it cannot apply to the table before it: replay, audit and
    export say so in one line naming the row where the chain breaks and, once every hash
    is rewritten after it, the event that cannot apply (no traceback, and no file left
    behind by the export); verify names the row."""
    full, _ = stores
    game, _ = play_games(full)
    dealt = next(r.version for r in rows(full, game) if r.type == "card_dealt")

    async def edit() -> None:
        adapters = await opened(full)
        try:
            await Tables(adapters.store).rewrite(game, "card_dealt", seat=7)
        finally:
            await adapters.close()

    servers.run_async(edit)
    out = tmp_path / "bundle.json"
    commands = (("replay",), ("audit",), ("export", "--out", str(out)))

    def refused(said: str) -> None:
        for command, *more in commands:
            code, _, told = bura_said(monkeypatch, capsys, full, command, game, *more)
            assert code == 1, told
            assert told.startswith(f"bura {command}: {said}") or (
                command == "export" and told.startswith(f"bura export: game {game}: its hash")
            ), told
            assert told.count("\n") == 1 and "bura verify" in told
        assert not out.exists()

    refused(
        f"the game's record is broken: its hash chain breaks at version {dealt} (card_dealt): "
        "the row does not hash to its recorded hash"
    )
    code, printed, _ = bura_said(monkeypatch, capsys, full, "verify", game)
    assert code == 1 and f"BROKEN at version {dealt}" in printed

    async def rechain() -> None:  # the forger rewrites every hash after the edit
        adapters = await opened(full)
        try:
            await Tables(adapters.store).rechain(game)
        finally:
            await adapters.close()

    servers.run_async(rechain)
    refused(
        f"the game's record is broken: event {dealt} (card_dealt) cannot apply to the table "
        "before it"
    )
    code, printed, _ = bura_said(monkeypatch, capsys, full, "verify", game)
    assert code == 1 and "rows rehashed" in printed  # the chain holds: the table does not
    assert f"playback: BROKEN at version {dealt}: event {dealt} (card_dealt) cannot" in printed
    assert printed.strip().endswith("VERIFICATION FAILED")


def test_migrate_applies_once_and_then_reports_up_to_date(
    postgres_admin_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with servers.fresh_database(postgres_admin_url, migrated=False) as url:
        code, out = bura(monkeypatch, capsys, {"BURA_DATABASE_URL": url}, "migrate")
        assert code == 0 and "applied: 001_events.sql" in out
        code, out = bura(monkeypatch, capsys, {"BURA_DATABASE_URL": url}, "migrate")
        assert code == 0 and "nothing, up to date" in out


def test_migrate_without_a_database_url_says_why(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("BURA_DATABASE_URL", raising=False)
    monkeypatch.setenv("BURA_SQLITE_PATH", str(tmp_path / "x.db"))
    assert cli.main(["migrate"]) == 2
    assert "BURA_DATABASE_URL is not set" in capsys.readouterr().err


@pytest.mark.parametrize("missing", ["database", "role"])
def test_a_postgresql_store_that_refuses_the_session_is_unavailable_in_one_line(
    postgres_admin_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    missing: str,
) -> None:
    """A URL naming a database or a role the server does not have is exit 3 (the store
    cannot be opened) with the server's reason, for reading and for migrating alike."""
    url = urlsplit(postgres_admin_url)
    if missing == "database":
        url = url._replace(path="/no_such_bura_database")
    else:
        url = url._replace(netloc=f"no_such_bura_role@{url.hostname}:{url.port or 5432}")
    where = {"BURA_DATABASE_URL": urlunsplit(url)}
    for argv in (("audit", "some-game"), ("verify", "some-game"), ("migrate",)):
        code, _, said = bura_said(monkeypatch, capsys, where, *argv)
        assert code == 3, said
        assert said.count("\n") == 1 and "Traceback" not in said
        assert said.startswith(f"bura {argv[0]}: the event store is unavailable: ")
        assert f"no_such_bura_{missing}" in said


def test_reading_a_postgresql_store_never_migrates_it_and_a_reader_role_suffices(
    postgres_admin_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`replay`, `audit`, `verify` and `export` only read: against a database without the
    schema they say to run `bura migrate` (exit 3) and create nothing; a role that may only
    SELECT reads a migrated store; one that may not even that is refused in one line."""
    role = f"bura_reader_{uuid.uuid4().hex[:8]}"

    async def sql(url: str, *statements: str) -> list[Any]:
        conn = await asyncpg.connect(url)
        try:
            return [await conn.fetch(s) for s in statements]
        finally:
            await conn.close()

    with servers.fresh_database(postgres_admin_url, migrated=False) as bare:
        for argv in (("audit", "g"), ("verify", "g"), ("replay", "g"), ("export", "g")):
            code, _, said = bura_said(monkeypatch, capsys, {"BURA_DATABASE_URL": bare}, *argv)
            assert code == 3, said
            assert said.count("\n") == 1 and "run `bura migrate`" in said, said
        (tables,) = servers.run_async(
            lambda: sql(bare, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        )
        assert tables == []  # nothing was created
    with servers.fresh_database(postgres_admin_url) as migrated:
        reader = urlunsplit(
            urlsplit(migrated)._replace(netloc=f"{role}@{urlsplit(migrated).netloc.split('@')[-1]}")
        )
        servers.run_async(lambda: sql(migrated, f"CREATE ROLE {role} LOGIN"))
        try:
            where = {"BURA_DATABASE_URL": reader}
            code, _, said = bura_said(monkeypatch, capsys, where, "audit", "no-such-game")
            assert code == 3 and said.count("\n") == 1, said
            assert "the database refused: InsufficientPrivilegeError" in said
            servers.run_async(
                lambda: sql(
                    migrated,
                    f"GRANT USAGE ON SCHEMA public TO {role}",
                    f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}",
                )
            )
            code, _, said = bura_said(monkeypatch, capsys, where, "audit", "no-such-game")
            assert code == 4 and "no game no-such-game" in said, said
        finally:
            servers.run_async(lambda: sql(migrated, f"DROP OWNED BY {role}", f"DROP ROLE {role}"))


def test_simulate_prints_deals_by_reason_and_speed(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = bura(
        monkeypatch,
        capsys,
        {"BURA_SQLITE_PATH": str(tmp_path / "x.db")},
        "simulate",
        "--games",
        "60",
        "--seats",
        "3",
        "--seed",
        "7",
        "--bot",
        "greedy",
    )
    assert code == 0
    assert "60 games, 3 seats, greedy bots, seed 7" in out
    assert "deals by result:" in out and "games/s" in out and "events per game" in out


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("--seats", "-1"), "seats: a table has 2 to 6 seats, not -1"),
        (("--seats", "0"), "seats: a table has 2 to 6 seats, not 0"),
        (("--seats", "7"), "seats: a table has 2 to 6 seats, not 7"),
        (("--games", "-3"), "games must be at least 1, not -3"),
        (("--games", "0"), "games must be at least 1, not 0"),
    ],
)
def test_simulate_refuses_a_number_out_of_range_quoting_it(
    argv: tuple[str, ...],
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The value given, not what was made of it (`--seats -1` is no table of 0 seats)."""
    code, out, err = bura_said(monkeypatch, capsys, {}, "simulate", "--games", "2", *argv)
    assert (code, out, err) == (2, "", f"bura simulate: {said}\n")


def test_long_runs_draw_a_progress_bar_on_a_terminal_only() -> None:
    import io

    from services.cli.progress import Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen, pipe = Terminal(), io.StringIO()
    for stream in (screen, pipe):
        bar = Progress("export", 100, stream)
        for done in range(1, 101):
            bar(done)
    assert screen.getvalue().endswith("\rexport [" + "#" * 30 + "] 100/100\n")
    assert screen.getvalue().count("\r") <= 31  # redrawn only as the bar grows
    assert pipe.getvalue() == ""


# --- export and import of whole games ---------------------------------------------------------


async def play_with_everything(api: Api, seed: str) -> str:
    """A game of several deals through the API: keyed and unkeyed commands, some with
    `seen`, daves offered and answered, faulty draws judged as penalties."""
    chance = random.Random(seed)
    rules = {"match_target": 4, "dave_max_multiplier": 2}
    table = await api.create(rules=rules, deck=None, seed=seed)
    state = NEW_GAME
    for n in range(3000):
        state = fold(state, map(from_recorded, await api.store.read(table.game_id, state.version)))
        if state.finished:
            return table.game_id
        deal = state.deal
        assert deal is not None
        legal = legal_commands(state, deal.turn)
        if deal.phase == "draw" and deal.stock and chance.random() < 0.04:
            seat, command = 1 - deal.turn, Draw()  # out of turn: a penalty
        elif Dave() in legal and chance.random() < 0.4:
            seat, command = deal.turn, Dave()
        else:
            seat, command = deal.turn, random_bot(state, deal.turn, chance)
        body = msgspec.to_builtins(command)
        if chance.random() < 0.5:
            body["seen"] = state.version
        key = f"{seed}-{n}" if chance.random() < 0.7 else None
        await api.play(table, seat, body, key=key)
    raise AssertionError("the game did not end")


def test_games_with_keys_penalties_and_daves_import_whole_and_replay_equal_at_every_version(
    stores: tuple[Where, Where],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    full, empty = stores

    async def play() -> list[str]:
        adapters = await opened(full)
        app = app_on(adapters)
        try:
            async with serving(app) as client:
                api = Api(client, app, adapters)
                return [await play_with_everything(api, f"round-trip-{n}") for n in range(2)]
        finally:
            await adapters.close()

    games = servers.run_async(play)
    for game in games:
        export = tmp_path / f"{game}.jsonl"
        assert bura(monkeypatch, capsys, full, "export", game, "--out", str(export))[0] == 0
        code, out = bura(monkeypatch, capsys, empty, "import", str(export))
        assert code == 0, out
        source, copy = rows(full, game), rows(empty, game)
        assert f"imported {len(source)} events" in out
        assert [same_row(r) for r in copy] == [same_row(r) for r in source]
        kinds = {r.type for r in source}
        assert {"penalty_applied", "dave_offered", "deal_started"} <= kinds, kinds
        assert sum(r.type == "deal_started" for r in source) >= 3

    async def compare() -> None:
        a, b = await opened(full), await opened(empty)
        app_a, app_b = app_on(a), app_on(b)
        try:
            async with serving(app_a) as one, serving(app_b) as other:
                for game in games:
                    ids = {r.metadata.command_id for r in await a.store.read(game)} - {None}
                    assert len(ids) > 50
                    for command_id in ids:
                        assert command_id is not None
                        found = await a.store.find_command(game, command_id)
                        assert found is not None
                        assert found.fingerprint or found.actor is None  # a seat's, or creation
                        assert await b.store.find_command(game, command_id) == found
                    last = await a.store.version(game)
                    for version in range(1, last + 1):
                        path = f"/games/{game}/replay?version={version}"
                        here = await one.get(path, headers=OPERATOR)
                        there = await other.get(path, headers=OPERATOR)
                        assert here.status_code == there.status_code == 200, there.text
                        assert unchained(here.json()) == unchained(there.json()), (game, version)
                    audits = [
                        (await c.get(f"/games/{game}/audit", headers=OPERATOR)).json()["findings"]
                        for c in (one, other)
                    ]
                    assert audits[0] and len(audits[0]) == len(audits[1])
                    for before, after in zip(*audits, strict=True):
                        before.pop("recorded_at"), after.pop("recorded_at")
                        assert before == after
        finally:
            await a.close()
            await b.close()

    servers.run_async(compare)


def unchained(replay: dict[str, Any]) -> dict[str, Any]:
    """A replay but its chain head and receipt, which hash when each row was recorded."""
    view = {k: v for k, v in replay["view"].items() if k not in ("chain_head", "receipt")}
    return {**replay, "view": view}


def same_row(r: RecordedEvent) -> tuple[object, ...]:
    """Everything a row records but when (and so its chain hash): an import is recorded anew."""
    m = r.metadata
    return (r.version, r.type, r.data, r.schema_version, m.command_id, m.actor, m.correlation_id)


def test_an_export_keeps_every_rows_metadata(
    stores: tuple[Where, Where],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    full, _ = stores
    _, penalised = play_games(full)
    export = tmp_path / "game.jsonl"
    bura(monkeypatch, capsys, full, "export", penalised, "--out", str(export))
    lines = [json.loads(line) for line in export.read_text().splitlines()]
    stored = rows(full, penalised)
    assert [line["hash"] for line in lines] == [r.hash.hex() for r in stored]
    assert [line["correlation_id"] for line in lines] == [r.metadata.correlation_id for r in stored]
    assert [datetime.fromisoformat(line["recorded_at"]) for line in lines] == [
        r.recorded_at for r in stored
    ]
    seats = [line for line in lines if line["actor"] is not None]
    assert seats and all(line["command_id"] and line["fingerprint"] for line in seats)


def test_an_import_into_a_store_that_holds_the_game_is_refused_and_writes_nothing(
    stores: tuple[Where, Where],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    full, empty = stores
    game, export = exported_game(monkeypatch, capsys, full, tmp_path)
    before = rows(full, game)
    code, _, said = bura_said(monkeypatch, capsys, full, "import", str(export))
    assert code == 1
    assert f"already holds game {game}" in said and "nothing was imported" in said
    assert said.count("\n") == 1 and "Traceback" not in said
    assert rows(full, game) == before
    assert rows(empty, game) == []


@pytest.mark.parametrize(
    "spoil",
    [
        "a line cut short",
        "an unreadable event",
        "a command id used twice",
        "a gap",
        "a name given twice",
        "a field no export has",
    ],
)
def test_a_bad_export_is_refused_whole(
    stores: tuple[Where, Where],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    spoil: str,
) -> None:
    full, empty = stores
    game, export = exported_game(monkeypatch, capsys, full, tmp_path)
    lines = [json.loads(line) for line in export.read_text().splitlines()]
    last = len(lines) - 1
    if spoil == "a line cut short":
        text = "\n".join(json.dumps(line) for line in lines)[:-20]
    else:
        if spoil == "an unreadable event":
            lines[last]["data"] = {"type": lines[last]["type"], "nonsense": True}
        elif spoil == "a command id used twice":
            keyed = [n for n, line in enumerate(lines) if line["command_id"]]
            lines[keyed[-1]]["command_id"] = lines[keyed[0]]["command_id"]
        elif spoil == "a field no export has":
            lines[last]["zzz"] = 1
        elif spoil == "a gap":
            del lines[last - 1]
        text = "\n".join(json.dumps(line) for line in lines)
        if spoil == "a name given twice":
            text = text.replace('{"game_id"', '{"version": 1, "game_id"', 1)
    export.write_text(text + "\n")
    code, _, said = bura_said(monkeypatch, capsys, empty, "import", str(export))
    assert code == 1, said
    assert said.count("\n") == 1 and "Traceback" not in said
    assert rows(empty, game) == []


def test_an_export_written_before_the_metadata_was_complete_still_imports(
    stores: tuple[Where, Where],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    full, empty = stores
    game, export = exported_game(monkeypatch, capsys, full, tmp_path)
    old_fields = ("game_id", "version", "type", "schema_version", "data", "actor", "command_id")
    lines = [json.loads(line) for line in export.read_text().splitlines()]
    export.write_text("".join(json.dumps({k: row[k] for k in old_fields}) + "\n" for row in lines))
    code, _, said = bura_said(monkeypatch, capsys, empty, "import", str(export))
    assert code == 1 and "holds no hashes" in said and "--unverified" in said, said
    assert rows(empty, game) == []  # nothing proves such a file: it takes asking
    code, out = bura(monkeypatch, capsys, empty, "import", str(export), "--unverified")
    assert code == 0, out

    def meaning(r: RecordedEvent) -> tuple[object, ...]:  # this file's JSON was re-spaced
        return (r.version, r.type, json.loads(r.data), r.metadata.command_id, r.metadata.actor)

    assert [meaning(r) for r in rows(empty, game)] == [meaning(r) for r in rows(full, game)]


MALFORMED = [
    ("postgresql://postgres@127.0.0.1:notaport/x", "the port 'notaport' is no port number"),
    ("postgresql://postgres@127.0.0.1:99999/x", "the port '99999' is no port number"),
    ("postgresql://postgres@127.0.0.1:5432/x?sslmode=bogus", "`sslmode` parameter must be one"),
    ("postgresql://postgres@[::1/x", "Invalid IPv6 URL"),
]


@pytest.mark.parametrize(("url", "wrong"), MALFORMED)
def test_a_malformed_postgresql_url_is_a_bad_setting_in_one_line(
    url: str,
    wrong: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A URL asyncpg cannot read (where the port is no number or out of range, an unknown
    sslmode, a broken address) is exit 2 naming the variable, for every command that opens
    a store and for `bura serve`, before anything is tried; the URL (which may hold a
    password) is not repeated."""
    bundle = tmp_path / "some.bura.json"
    bundle.write_text("{}")
    commands = [
        ("verify", "G"), ("audit", "G"), ("replay", "G"), ("export", "G"), ("migrate",),
        ("import", str(bundle)), ("serve",),
    ]  # fmt: skip
    for argv in commands:
        code, _, said = bura_said(monkeypatch, capsys, {"BURA_DATABASE_URL": url}, *argv)
        assert code == 2, said
        assert said.startswith(
            f"bura {argv[0]}: bad setting: BURA_DATABASE_URL is no usable PostgreSQL URL: {wrong}"
        ), said
        assert said.count("\n") == 1 and "Traceback" not in said and url not in said
    # the standby's URL is read the same way, and named
    monkeypatch.setenv("BURA_READ_DATABASE_URL", url)
    well_formed = {"BURA_DATABASE_URL": "postgresql://postgres@127.0.0.1:5432/x"}
    code, _, said = bura_said(monkeypatch, capsys, well_formed, "audit", "G")
    assert code == 2, said
    assert said.startswith("bura audit: bad setting: BURA_READ_DATABASE_URL is no usable"), said


def test_a_sqlite_file_that_cannot_be_opened_is_unavailable_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """BURA_SQLITE_PATH where no file can be made (under a directory that cannot be
    created) or that is a directory: exit 3, one line naming the setting."""
    game, export = exported_game(
        monkeypatch, capsys, {"BURA_SQLITE_PATH": str(tmp_path / "games.db")}, tmp_path
    )
    nowhere = {"BURA_SQLITE_PATH": "/proc/nope/bura.sqlite3"}
    code, _, said = bura_said(monkeypatch, capsys, nowhere, "import", str(export))
    assert code == 3, said
    assert said == (
        "bura import: the event store is unavailable: cannot open /proc/nope/bura.sqlite3 "
        "(BURA_SQLITE_PATH): cannot make its directory /proc/nope: No such file or directory\n"
    )
    folder = {"BURA_SQLITE_PATH": str(tmp_path)}
    for argv in (("import", str(export)), ("replay", game), ("verify", game)):
        code, _, said = bura_said(monkeypatch, capsys, folder, *argv)
        assert code == 3, said
        assert said == (
            f"bura {argv[0]}: the event store is unavailable: cannot open {tmp_path}: "
            "unable to open database file (BURA_SQLITE_PATH)\n"
        )


def test_a_path_that_names_no_readable_file_is_one_line_with_its_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """FILE of `verify-bundle` and `import`: nothing there, a directory or a path under a
    file is 4 (no such file); a file that cannot be read is 2 (a bad argument). `export
    --out` where no file can be written is 2. Never exit 1, which says a check failed."""
    where = {"BURA_SQLITE_PATH": str(tmp_path / "games.db")}
    game, export = exported_game(monkeypatch, capsys, where, tmp_path)
    cases = [
        (str(tmp_path), 4, f"{tmp_path} is a directory, not a file"),
        (str(tmp_path / "nothing.json"), 4, f"no such file: {tmp_path / 'nothing.json'}"),
        (str(export / "x"), 4, f"no such file: {export / 'x'}"),  # under a file
        ("/proc/self/mem", 2, "cannot read /proc/self/mem: Input/output error"),
    ]
    empty = {"BURA_SQLITE_PATH": str(tmp_path / "empty.db")}
    for command in ("verify-bundle", "import"):
        for path, code, told in cases:
            exit_code, _, said = bura_said(monkeypatch, capsys, empty, command, path)
            assert (exit_code, said) == (code, f"bura {command}: {told}\n")
    assert not (tmp_path / "empty.db").exists()  # refused before any store was opened
    code, _, said = bura_said(monkeypatch, capsys, where, "export", game, "--out", str(tmp_path))
    assert (code, said) == (
        2,
        f"bura export: --out {tmp_path}: cannot write a file there: Is a directory\n",
    )
    missing = tmp_path / "no-such-folder" / "game.bura.json"
    code, _, said = bura_said(monkeypatch, capsys, where, "export", game, "--out", str(missing))
    assert code == 2 and said.startswith(f"bura export: --out {missing}: "), said


def test_run_outside_the_repository_the_command_line_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, said = bura_said(monkeypatch, capsys, {}, "audit", "some-game")
    assert code == 3
    assert said.count("\n") == 1 and "Traceback" not in said
    assert said.startswith("bura audit: no store at ") and "BURA_SQLITE_PATH" in said
    assert not (tmp_path / "var").exists()  # reading never creates an empty store


def play_keyed_game(where: Where) -> str:
    """The 31 walk-through with an Idempotency-Key on every command: commands that write
    two events under one key (a response and the trick) must import as one append each."""

    async def play() -> str:
        adapters = await opened(where)
        app = app_on(adapters)
        try:
            async with serving(app) as client:
                api = Api(client, app, adapters)
                table = await api.create()
                for n, (seat, command) in enumerate(THIRTY_ONE_GAME):
                    await api.play(table, seat, command, key=f"key-{n}")
                return table.game_id
        finally:
            await adapters.close()

    return servers.run_async(play)


def test_export_writes_a_bundle_that_verifies_offline_and_imports_whole(
    stores: tuple[Where, Where],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    full, empty = stores
    game = play_keyed_game(full)
    bundle = tmp_path / "game.bura.json"
    code, out = bura(monkeypatch, capsys, full, "export", game, "--out", str(bundle))
    assert code == 0 and "audit bundle" in out
    code, out = bura(monkeypatch, capsys, {}, "verify-bundle", str(bundle))
    assert code == 0 and out.strip().endswith("verified")
    assert "chain: " in out and "replay: the record plays back" in out

    raw = bundle.read_bytes()
    at = raw.index(b'"type":"cards_led"') + 9  # inside the first lead's payload
    broken = tmp_path / "broken.bura.json"
    broken.write_bytes(raw[:at] + bytes([raw[at] ^ 1]) + raw[at + 1 :])
    code, out = bura(monkeypatch, capsys, {}, "verify-bundle", str(broken))
    assert code == 1
    assert out.strip().splitlines()[-1].startswith("VERIFICATION FAILED at events[")
    code, _, said = bura_said(monkeypatch, capsys, {}, "import", str(broken))
    assert code == 1 and "does not verify" in said

    code, out = bura(monkeypatch, capsys, empty, "import", str(bundle))
    assert code == 0 and f"as game {game}" in out
    keep = [
        (r.version, r.type, r.data, r.metadata.actor, r.metadata.command_id,
         r.metadata.correlation_id)
        for r in rows(full, game)
    ]  # fmt: skip
    assert [
        (r.version, r.type, r.data, r.metadata.actor, r.metadata.command_id,
         r.metadata.correlation_id)
        for r in rows(empty, game)
    ] == keep  # fmt: skip
    code, out = bura(monkeypatch, capsys, empty, "verify", game)
    assert code == 0 and out.strip().endswith("verified")


def test_export_as_json_lines_still_round_trips(
    stores: tuple[Where, Where],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    full, empty = stores
    game = play_keyed_game(full)
    lines = tmp_path / "game.jsonl"
    code, _ = bura(monkeypatch, capsys, full, "export", game, "--jsonl", "--out", str(lines))
    assert code == 0 and len(lines.read_bytes().splitlines()) == len(rows(full, game))
    code, _ = bura(monkeypatch, capsys, empty, "import", str(lines))
    assert code == 0
    assert [r.data for r in rows(empty, game)] == [r.data for r in rows(full, game)]
    # the lines are no bundle, and verify-bundle says what they are and what to verify
    code, out = bura(monkeypatch, capsys, {}, "verify-bundle", str(lines))
    assert code == 1
    assert out.strip().splitlines()[-1] == f"VERIFICATION FAILED at the bundle: {EVENT_LINES}"


def test_an_edited_json_lines_export_is_refused_as_the_store_would_be(
    stores: tuple[Where, Where],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An import must not launder an edit: the chain the lines carry is rehashed (a row
    edited with its hash left stale, or with its hash dropped), and a file too old to hold
    hashes is still checked by its deals and a replay."""
    full, empty = stores
    game = play_keyed_game(full)
    lines = tmp_path / "game.jsonl"
    code, _ = bura(monkeypatch, capsys, full, "export", game, "--jsonl", "--out", str(lines))
    assert code == 0
    raw = lines.read_bytes().splitlines(keepends=True)
    led = next(n for n, line in enumerate(raw) if b'"type":"cards_led"' in line)
    lead = json.loads(raw[led])["data"]
    card = lead["cards"][0]
    dealt = [json.loads(line)["data"] for line in raw[:led]]
    # a card in another seat's hand
    other = next(
        d["card"] for d in dealt if d["type"] == "card_dealt" and d["seat"] != lead["seat"]
    )
    edited = raw[led].replace(json.dumps(card).encode(), json.dumps(other).encode(), 1)
    assert edited != raw[led]

    def spliced(line: bytes) -> list[bytes]:
        return [*raw[:led], line, *raw[led + 1 :]]

    def refused(text: bytes, version: int, *flags: str) -> None:
        spoiled = tmp_path / "spoiled.jsonl"
        spoiled.write_bytes(text)
        code, _, said = bura_said(monkeypatch, capsys, empty, "import", str(spoiled), *flags)
        assert code == 1, said
        assert said.startswith(f"bura import: {spoiled} does not verify, at version {version}")
        assert said.count("\n") == 1 and "Traceback" not in said
        assert rows(empty, game) == []

    # the hash left as it was
    refused(b"".join(spliced(edited)), led + 1)
    # the edited row's hash dropped: the rest still carry theirs
    row = json.loads(edited)
    row["hash"] = None
    unhashed = msgspec.json.encode(row) + b"\n"
    refused(b"".join(spliced(unhashed)), led + 1)
    # a hash that is not one
    row["hash"] = "zz" * 32
    refused(b"".join(spliced(msgspec.json.encode(row) + b"\n")), led + 1)

    # every hash dropped, as in an export older than them: refused unless asked for, and
    # then the replay still finds the card that seat never held
    def old(line: bytes) -> bytes:
        kept = json.loads(line)
        del kept["hash"], kept["recorded_at"]
        return msgspec.json.encode(kept) + b"\n"

    stripped = tmp_path / "stripped.jsonl"
    stripped.write_bytes(b"".join(old(line) for line in raw))
    code, _, said = bura_said(monkeypatch, capsys, empty, "import", str(stripped))
    assert code == 1 and "holds no hashes" in said and said.count("\n") == 1, said
    refused(b"".join(old(line) for line in spliced(edited)), led + 1, "--unverified")
    # a row whose data is no event at all: named, with what it is not
    shapeless = json.loads(raw[led])
    shapeless["data"] = {"type": "cards_led", "what": "no such field"}
    spoiled = tmp_path / "shapeless.jsonl"
    spoiled.write_bytes(b"".join(spliced(msgspec.json.encode(shapeless) + b"\n")))
    code, _, said = bura_said(monkeypatch, capsys, empty, "import", str(spoiled))
    assert code == 1 and said.count("\n") == 1, said
    assert f"version {led + 1} is unreadable" in said and "no event this server reads" in said
    assert rows(empty, game) == []
    # and the same file unedited imports when asked, saying on stderr what it could not check
    code, out, said = bura_said(monkeypatch, capsys, empty, "import", str(stripped), "--unverified")
    assert code == 0, said
    assert "holds no hashes" in said and f"as game {game}" in out


def test_verify_names_the_first_version_a_tampered_store_breaks(
    stores: tuple[Where, Where],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    full, _ = stores
    won, _ = play_games(full)

    async def remove_row() -> None:
        adapters = await opened(full)
        try:
            store = adapters.store
            if "BURA_DATABASE_URL" in full:
                await store.pool.execute(  # type: ignore[attr-defined]
                    "DELETE FROM events WHERE stream_id = $1 AND version = 7", won
                )
            else:
                await store.db.run(  # type: ignore[attr-defined]
                    lambda db: db.execute(
                        "DELETE FROM events WHERE stream_id = ? AND version = 7", (won,)
                    )
                )
        finally:
            await adapters.close()

    servers.run_async(remove_row)
    code, out = bura(monkeypatch, capsys, full, "verify", won)
    assert code == 1
    assert "chain: BROKEN at version 7: version 7 is missing" in out
    assert out.strip().endswith("VERIFICATION FAILED")


def test_verify_finds_rows_removed_from_the_end_of_a_finished_game(
    stores: tuple[Where, Where],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """A record cut before its end keeps a valid chain; the games index still holds the
    game finished, and `bura verify` says the record ends before the game's end."""
    full, _ = stores
    won, _ = play_games(full)

    async def cut() -> int:
        adapters = await opened(full)
        try:
            rows = await adapters.store.read(won)
            end = next(r.version for r in rows if r.type == "game_finished")
            for version in range(rows[-1].version, end - 1, -1):
                await Tables(adapters.store).delete(won, version)
            return end
        finally:
            await adapters.close()

    end = servers.run_async(cut)
    code, out = bura(monkeypatch, capsys, full, "verify", won)
    assert code == 1, out
    assert f"chain: BROKEN at version {end}: the games index holds this game as finished" in out
    assert "removed from its end" in out and out.strip().endswith("VERIFICATION FAILED")
    # nor is it exported: a bundle of what is left would verify by itself
    out_file = str(tmp_path / "cut.bura.json")
    for argv in (("export", won, "--out", out_file), ("export", won, "--jsonl", "--out", "-")):
        code, printed, said = bura_said(monkeypatch, capsys, full, *argv)
        assert code == 1 and not printed, (argv, printed)
        assert said.startswith("bura export: the game's record is broken: the games index")
        assert "rows were removed from its end; `bura verify` names the row" in said
        assert not Path(out_file).exists()


def test_the_readers_leave_a_sqlite_file_byte_for_byte_and_refuse_one_of_another_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`replay`, `audit`, `verify` and `export` only read: a store kept as evidence keeps
    its bytes, and a mistyped path to another program's database is refused (exit 3), not
    given Bura's tables (they migrated any file that existed)."""
    where = {"BURA_SQLITE_PATH": str(tmp_path / "games.db")}
    game, _ = exported_game(monkeypatch, capsys, where, tmp_path)
    kept = (tmp_path / "games.db").read_bytes()
    readers = [("replay", game), ("audit", game), ("verify", game), ("export", game, "--out", "-")]
    for argv in readers:
        code, _, said = bura_said(monkeypatch, capsys, where, *argv)
        assert code == 0, (argv, said)
        assert (tmp_path / "games.db").read_bytes() == kept, argv
    other = tmp_path / "customers.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE customers (name TEXT)")
        db.execute("INSERT INTO customers VALUES ('ann')")
    db.close()
    before = other.read_bytes()
    for argv in (("replay", game), ("verify", game), ("export", game, "--out", "-")):
        code, _, said = bura_said(monkeypatch, capsys, {"BURA_SQLITE_PATH": str(other)}, *argv)
        assert (code, said) == (
            3,
            f"bura {argv[0]}: the event store is unavailable: {other} holds no bura store "
            "(BURA_SQLITE_PATH)\n",
        ), argv
    assert other.read_bytes() == before


def test_json_lines_cut_at_a_command_s_end_are_refused_by_a_kept_head_and_told_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON Lines carry no end: a finished game's file cut after one of its commands
    imports as a shorter, unfinished game (a penalty in dispute gone with the rest). A head
    kept from the server refuses it; without one, the import says where the file ends."""
    game, export = exported_game(
        monkeypatch, capsys, {"BURA_SQLITE_PATH": str(tmp_path / "games.db")}, tmp_path
    )
    lines = export.read_bytes().splitlines()
    records = [json.loads(line) for line in lines]
    assert records[-1]["type"] == "game_finished"
    head = f"{records[-1]['version']}:{records[-1]['hash']}"
    ends = [
        i + 1
        for i in range(len(records) - 1)
        if records[i]["command_id"] != records[i + 1]["command_id"]
    ]
    cut_at = ends[len(ends) // 2]  # after a command in the middle of the game
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"\n".join(lines[:cut_at]) + b"\n")
    into = {"BURA_SQLITE_PATH": str(tmp_path / "into.db")}
    code, _, said = bura_said(monkeypatch, capsys, into, "import", str(cut), "--head", head)
    assert (code, said) == (
        1,
        f"bura import: {cut} does not verify, kept head of version {len(records)}: the file "
        f"ends at version {cut_at}: the record held version {len(records)} when the server "
        "gave this, so rows were removed from its end; nothing was imported\n",
    )
    wrong = f"{cut_at}:{'0' * 64}"
    code, _, said = bura_said(monkeypatch, capsys, into, "import", str(cut), "--head", wrong)
    assert (code, said) == (
        1,
        f"bura import: {cut} does not verify, kept head of version {cut_at}: the file's head "
        f"at that version is {records[cut_at - 1]['hash']}, not the {'0' * 64} the server "
        "gave: the record was changed after it was given; nothing was imported\n",
    )
    code, out, said = bura_said(monkeypatch, capsys, into, "import", str(cut))
    assert code == 0 and out.startswith(f"imported {cut_at} events"), (out, said)
    assert said == (
        f"bura import: {cut} ends at version {cut_at} (chain head "
        f"{records[cut_at - 1]['hash']}), its game unfinished; JSON Lines carry no end, so a "
        "file cut at a command's end imports as a shorter game: check it with --head "
        "VERSION:HASH, or move the record as a bundle\n"
    )
    whole = {"BURA_SQLITE_PATH": str(tmp_path / "whole.db")}
    code, out, said = bura_said(monkeypatch, capsys, whole, "import", str(export), "--head", head)
    assert (code, said) == (0, ""), said
    assert game in out


def test_a_re_formatted_bundle_is_told_as_re_formatted_not_as_rows_changed_or_no_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`jq .` of a bundle was read by `import` as JSON Lines ("Input data was truncated"),
    and a line before it as lines that are no events; `verify-bundle` said its first row
    was changed, which reads as tampering."""
    where = {"BURA_SQLITE_PATH": str(tmp_path / "games.db")}
    game, _ = play_games(where)
    bundle = tmp_path / "game.bura.json"
    assert bura(monkeypatch, capsys, where, "export", game, "--out", str(bundle))[0] == 0
    pretty = tmp_path / "pretty.bura.json"
    pretty.write_text(json.dumps(json.loads(bundle.read_bytes()), indent=2))
    spaced = tmp_path / "spaced.bura.json"
    spaced.write_bytes(b"\n" + bundle.read_bytes())
    into = {"BURA_SQLITE_PATH": str(tmp_path / "into.db")}
    for changed in (pretty, spaced):
        code, _, said = bura_said(monkeypatch, capsys, into, "import", str(changed))
        assert code == 1 and "it was re-formatted or re-written" in said, said
        code, out, _ = bura_said(monkeypatch, capsys, into, "verify-bundle", str(changed))
        failed = [line for line in out.splitlines() if "VERIFICATION FAILED" in line]
        assert code == 1 and "re-formatted" in failed[0], out
