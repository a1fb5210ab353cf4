"""The operator's command line on each store: export, import into an empty store, replay,
audit and verify."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from domain.evolve import replay
from domain.views import ARBITER, view
from infra.ports.events import RecordedEvent
from infra.ports.games import IndexedGame
from services import cli
from services.app.codec import from_recorded
from services.bootstrap import Adapters
from services.cli.table_text import render
from tests import servers
from tests.api.conftest import FIRST_TRICK, THIRTY_ONE_GAME, Api, Body, app_on, serving

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
    for name in ("BURA_DATABASE_URL", "BURA_SQLITE_PATH"):
        monkeypatch.delenv(name, raising=False)
    for name, value in where.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    code = cli.main(list(argv))
    return code, capsys.readouterr().out


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
    for version in range(1, len(source) + 1):
        _, before = bura(monkeypatch, capsys, full, "replay", game, "--version", str(version))
        _, after = bura(monkeypatch, capsys, empty, "replay", game, "--version", str(version))
        assert after == before
        assert before.strip() == render(view(replay(events[:version]), ARBITER))
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
    for name in ("BURA_DATABASE_URL", "BURA_SQLITE_PATH"):  # only the empty store's own
        monkeypatch.delenv(name, raising=False)
    for name, value in empty.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    code = cli.main(["replay", "nope"])
    said = capsys.readouterr().err
    assert code == 4
    assert said.startswith("bura replay: no game nope") and said.count("\n") == 1


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


def test_run_outside_the_repository_the_command_line_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("BURA_DATABASE_URL", "BURA_SQLITE_PATH"):
        monkeypatch.delenv(name, raising=False)
    capsys.readouterr()
    assert cli.main(["audit", "some-game"]) == 3
    said = capsys.readouterr().err
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
    code = cli.main(["import", str(broken)])
    assert code == 1 and "does not verify" in capsys.readouterr().err

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
