"""The `bura` command line at its edges (README: The command line): arguments that are no
text or no game id, servers that are not Bura's, writes that fail, readers that go away,
argparse's own errors. Each is one line on stderr and the exit code the README gives,
never a traceback."""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from harness.databases import free_port
from harness.processes import ROOT
from services import cli
from services.cli import records
from tests import servers
from tests.api.conftest import OPERATOR, Api, app_on, serving
from tests.api.test_cli import Where, bura_said, opened, play_games, rows
from tests.tampering import Tables

NOT_UTF8 = b"\xff\xfe".decode("utf-8", "surrogateescape")  # as Python hands over such argv


@pytest.fixture(params=["sqlite", "postgres"])
def full(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Where]:
    """A store on each adapter (it holds games once a test plays them)."""
    if request.param == "sqlite":
        yield {"BURA_SQLITE_PATH": str(tmp_path / "games.db")}
        return
    admin = request.getfixturevalue("postgres_admin_url")
    with servers.fresh_database(admin) as url:
        yield {"BURA_DATABASE_URL": url}


@pytest.fixture
def sqlite(tmp_path: Path) -> Where:
    return {"BURA_SQLITE_PATH": str(tmp_path / "games.db")}


def one_line(said: str, command: str) -> None:
    assert said.startswith(f"bura {command}: ") and said.count("\n") == 1, said
    assert "Traceback" not in said


def bura_process(
    where: Where, *argv: str | bytes, timeout: float = 60, **kw: object
) -> subprocess.CompletedProcess[bytes]:
    """`bura ARGV` as a process of its own, on the store `where`."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("BURA_DATABASE_URL", "BURA_SQLITE_PATH")
    }
    env.update(where)
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "services.cli", *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=timeout,
        **kw,
    )


# --- GAME: no game id, no text ----------------------------------------------------------


@pytest.mark.parametrize(
    "game",
    [NOT_UTF8, "é", "../games", "G?x=1", "", "x" * 65],
    ids=["not-utf8", "not-ascii", "a-path", "a-query", "empty", "too-long"],
)
def test_a_game_that_no_game_id_can_be_is_no_such_game_on_either_store(
    full: Where,
    game: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """As the API answers 404 for such an id: exit 4, told before any store is asked (on
    SQLite its bytes could not even be bound, PostgreSQL refuses them as DataError)."""
    play_games(full)  # the store is there, and holds games
    out = tmp_path / "out.bura.json"
    for command, *more in (("replay",), ("audit",), ("verify",), ("export", "--out", str(out))):
        code, _, said = bura_said(monkeypatch, capsys, full, command, game, *more)
        assert code == 4, said
        one_line(said, command)
        assert said.startswith(f"bura {command}: no game "), said
    assert not out.exists()


@pytest.mark.slow
def test_argv_bytes_that_are_no_utf8_are_one_line(sqlite: Where) -> None:
    play_games(sqlite)
    for command in ("replay", "audit", "verify", "export"):
        done = bura_process(sqlite, command, b"\xff\xfe")
        said = done.stderr.decode()
        assert done.returncode == 4, said
        assert said == (
            f"bura {command}: no game \\xff\\xfe in {sqlite['BURA_SQLITE_PATH']}: a game id is "
            "1 to 64 letters, digits, '-' or '_'\n"
        )


# --- bura play: arguments checked before any request, and servers that are not Bura's ---


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--game", ""),
        ("--game", "../games"),
        ("--game", "g1?x=1"),
        ("--game", NOT_UTF8),
        ("--token", "g1.é"),
        ("--token", "g1.a\x07b"),
        ("--url", f"http://127.0.0.1:8751/{NOT_UTF8}"),
        ("--url", "http://"),
        ("--url", "ftp://127.0.0.1:8751"),
    ],
    ids=lambda value: ascii(value)[1:-1],  # xdist's reports carry no lone surrogate
)
def test_play_refuses_an_argument_no_request_can_carry_naming_it(
    option: str,
    value: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Exit 2 naming the option, before any request: the address here answers nothing, so
    a request tried would be exit 3."""
    given = {"--url": f"http://127.0.0.1:{free_port()}", "--game": "g1", "--token": "g1.secret"}
    given[option] = value
    argv = ["play", *(x for pair in given.items() for x in pair)]
    code, _, said = bura_said(monkeypatch, capsys, {}, *argv)
    assert code == 2, said
    one_line(said, "play")
    assert said.startswith(f"bura play: {option} "), said
    assert "secret" not in said  # the token is never echoed


class Foreign(BaseHTTPRequestHandler):
    """Another kind of server at --url: each path's answer chosen by the test."""

    answers: ClassVar[dict[str, tuple[int, str, bytes]]] = {}

    def do_GET(self) -> None:
        status, kind, body = self.answers.get(self.path.split("?")[0], (404, "text/html", b""))
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def foreign() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Foreign)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


PAGE = b"<!doctype html><html><body><h1>Welcome to nginx!</h1>" + b"x" * 400 + b"</body></html>"


@pytest.mark.parametrize(
    "answer",
    [
        (200, "text/html", PAGE),
        (200, "application/json", b"{}"),
        (200, "application/json", b'{"version": 3}'),
        (200, "application/json", b"[1, 2]"),
        (404, "text/html", PAGE),
        (401, "text/html", PAGE),
        (501, "text/html", PAGE),  # a plain HTTP server's "not implemented"
        (500, "text/plain", b"Internal Server Error"),  # after the client's retries
    ],
)
def test_play_against_a_server_that_is_not_bura_says_so_in_one_line(
    answer: tuple[int, str, bytes],
    foreign: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Exit 3 (the server cannot be used), never a traceback nor the page itself."""
    Foreign.answers = {"/games/g1": answer}
    code, _, said = bura_said(
        monkeypatch, capsys, {}, "play", "--url", foreign, "--game", "g1", "--token", "g1.s"
    )
    assert code == 3, said
    one_line(said, "play")
    assert "is --url a Bura server?" in said and "<" not in said, said


@pytest.mark.parametrize(
    ("answer", "told"),
    [
        (
            (200, "application/json", b'{"hello": "world", "version": "1.0"}'),
            "with JSON that is no Bura view (a version that is no number)",
        ),
        ((200, "application/json", b"[1, 2]"), "with JSON that is no Bura view (no JSON object)"),
        ((200, "text/html", PAGE), "with text/html, not a Bura view"),
        ((301, "text/html", PAGE), "with 301 and text/html, not a Bura view"),
    ],
    ids=["a-version-no-number", "an-array", "a-page", "a-redirect"],
)
def test_play_says_what_a_success_that_is_no_view_was(
    answer: tuple[int, str, bytes],
    told: str,
    foreign: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """JSON is never called "not JSON", and a success is no problem answer (README: "JSON
    that is no view: one line says so"): exit 3."""
    Foreign.answers = {"/games/g1": answer}
    code, _, said = bura_said(
        monkeypatch, capsys, {}, "play", "--url", foreign, "--game", "g1", "--token", "g1.s"
    )
    assert code == 3, said
    one_line(said, "play")
    assert said == (
        f"bura play: the server at {foreign} answered GET /games/g1 {told}: is --url a Bura "
        "server?\n"
    )


def test_play_refuses_a_url_with_a_user_or_password_before_any_request(
    foreign: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """httpx would send them as Basic auth in place of the seat's Bearer token (and the 401
    would blame the token): exit 2 naming --url, the password not echoed, nothing asked."""
    asked: list[str] = []
    Foreign.answers = {}
    monkeypatch.setattr(Foreign, "log_message", lambda self, *args: asked.append(self.path))
    for userinfo in ("bob:hunter2@", "bob@", ":hunter2@"):
        url = foreign.replace("http://", f"http://{userinfo}")
        code, _, said = bura_said(
            monkeypatch, capsys, {}, "play", "--url", url, "--game", "g1", "--token", "g1.s"
        )
        assert code == 2, said
        one_line(said, "play")
        assert said.startswith("bura play: --url holds a user name or password"), said
        assert "hunter2" not in said and "bob" not in said, said
    assert asked == []


# --- export: whole or not at all --------------------------------------------------------


def test_export_to_a_device_that_fails_is_one_line_naming_it(
    sqlite: Where, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    game, _ = play_games(sqlite)
    for flags in ((), ("--jsonl",)):
        code, _, said = bura_said(
            monkeypatch, capsys, sqlite, "export", game, "--out", "/dev/full", *flags
        )
        assert (code, said) == (
            2,
            "bura export: --out /dev/full: cannot write a file there: No space left on device\n",
        )


def test_export_out_empty_is_refused_and_out_dash_is_stdout(
    sqlite: Where,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    game, _ = play_games(sqlite)
    monkeypatch.chdir(tmp_path)
    code, _, said = bura_said(monkeypatch, capsys, sqlite, "export", game, "--out", "")
    assert (code, said) == (2, "bura export: --out is empty: name a file (or - for stdout)\n")
    assert not (tmp_path / f"{game}.bura.json").exists()
    code, out, said = bura_said(monkeypatch, capsys, sqlite, "export", game, "--out", "-")
    assert code == 0, said
    assert json.loads(out)["game_id"] == game  # the bundle itself, and nothing else
    assert said.startswith(f"exported 35 events of game {game} to - (an audit bundle)")
    code, out, said = bura_said(
        monkeypatch, capsys, sqlite, "export", game, "--out", "-", "--jsonl"
    )
    assert code == 0, said
    assert [json.loads(line)["version"] for line in out.splitlines()] == list(range(1, 36))
    assert "-" not in os.listdir(tmp_path)  # no file named -


@pytest.fixture
def postgres(postgres_admin_url: str) -> Iterator[Where]:
    with servers.fresh_database(postgres_admin_url) as url:
        yield {"BURA_DATABASE_URL": url}


@pytest.mark.slow
def test_an_export_that_cannot_be_written_whole_leaves_the_file_there_untouched(
    postgres: Where, tmp_path: Path
) -> None:
    """A write that fails midway (a file size limit, `ulimit -f 4`): no truncated file,
    the good file already at the path as it was, no temporary file left; one line. (On
    PostgreSQL: a SQLite store's own files would meet the limit first.)"""
    game, _ = play_games(postgres)
    folder = tmp_path / "out"
    folder.mkdir()
    for flags, name in (((), "game.bura.json"), (("--jsonl",), "game.jsonl")):
        target = folder / name
        target.write_bytes(b"the good export\n")

        def limited() -> None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

        done = bura_process(
            postgres, "export", game, "--out", str(target), *flags, preexec_fn=limited
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.decode() == (
            f"bura export: --out {target}: cannot write a file there: File too large\n"
        )
        assert target.read_bytes() == b"the good export\n"
        assert sorted(os.listdir(folder)) == sorted({"game.bura.json", name})
        # unlimited, the same export replaces it whole
        done = bura_process(postgres, "export", game, "--out", str(target), *flags)
        assert done.returncode == 0, done.stderr
        assert len(target.read_bytes()) > 4096


@pytest.mark.parametrize("payload", [b"\x00not json at all", b'{"type": "no_such_event"}'])
def test_export_as_json_lines_refuses_a_broken_record_as_the_bundle_does(
    full: Where,
    payload: bytes,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    game, _ = play_games(full)

    async def spoil() -> None:
        adapters = await opened(full)
        try:
            await Tables(adapters.store).overwrite(game, 5, payload)
        finally:
            await adapters.close()

    servers.run_async(spoil)
    for flags, out in (((), "g.bura.json"), (("--jsonl",), "g.jsonl")):
        path = tmp_path / out
        code, _, said = bura_said(
            monkeypatch, capsys, full, "export", game, "--out", str(path), *flags
        )
        assert code == 1, said
        one_line(said, "export")
        assert said.startswith("bura export: the game's record is broken: "), said
        assert "version 5 (" in said and "bura verify" in said
        assert not path.exists()


# --- replay --json: the replay's view, head and receipt included --------------------------


def test_replay_as_json_is_the_operators_replay_with_its_head_and_receipt(
    full: Where, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    game, _ = play_games(full)

    async def answered(version: int | None) -> dict[str, object]:
        adapters = await opened(full)
        app = app_on(adapters)
        try:
            async with serving(app) as client:
                api = Api(client, app, adapters)
                if version is None:
                    return await api.get(f"/games/{game}/replay")
                return await api.get(f"/games/{game}/replay", OPERATOR, version=version)
        finally:
            await adapters.close()

    for version in (3, 12, None):
        argv = ["replay", game, "--json"] + ([] if version is None else ["--version", str(version)])
        code, out, said = bura_said(monkeypatch, capsys, full, *argv)
        assert code == 0, said
        told = json.loads(out)
        api = servers.run_async(lambda: answered(version))  # noqa: B023 (run at once)
        assert told["view"]["chain_head"] and told["view"]["receipt"]
        assert {"version": told["version"], "view": told["view"]} == api


# --- words -------------------------------------------------------------------------------


def test_replay_while_dealing_says_who_leads_and_an_empty_hand_reads_as_a_dash(
    sqlite: Where, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    game, _ = play_games(sqlite)
    code, out, _ = bura_said(monkeypatch, capsys, sqlite, "replay", game, "--version", "3")
    assert code == 0
    assert "to deal" not in out  # no seat deals: the server does
    assert "  dealing: seat 0 (p0) leads once the cards are out" in out
    assert "  seat 0 p0           hand -  " in out and "  seat 1 p1           hand -  " in out


def test_replay_of_a_16_digit_version_past_the_end_is_not_reached_not_a_usage_error(
    sqlite: Where, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The API takes versions to 2^53 - 1 (404 version_not_found past the game); the
    command line refused 16 digits as "no whole number above 0" (exit 2)."""
    game, _ = play_games(sqlite)
    for version in ("1000000000000000", "9007199254740991"):
        code, _, said = bura_said(monkeypatch, capsys, sqlite, "replay", game, "--version", version)
        assert code == 4 and f"not {version}" in said, said
    # leading zeros are no part of the number: 20 characters that are version 1000
    code, _, said = bura_said(
        monkeypatch, capsys, sqlite, "replay", game, "--version", "0" * 16 + "1000"
    )
    assert code == 4 and "not 1000" in said, said


def test_replay_in_the_middle_of_a_penalty_says_the_command_goes_on_as_the_page_does(
    sqlite: Where, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """bob drew out of turn: at each version between that request's first event and its
    last, the table waits for no seat (bob is not due, ann has been passed over), and the
    text says which version follows and what it says, as the arbiter's page does."""
    _, penalised = play_games(sqlite)
    recorded = rows(sqlite, penalised)
    request = recorded[-1].metadata.correlation_id
    within = [r.version for r in recorded[:-1] if r.metadata.correlation_id == request]
    assert len(within) >= 2 and recorded[within[0] - 1].type == "penalty_applied"
    for version in within:
        code, out, _ = bura_said(
            monkeypatch, capsys, sqlite, "replay", penalised, "--version", str(version)
        )
        assert code == 0
        waits = next(line for line in out.splitlines() if line.startswith("  waiting for "))
        assert waits.startswith(
            f"  waiting for nobody: the same command goes on with version {version + 1}: "
        ) or waits.startswith("  waiting for nobody: deal 1 is over"), (version, waits)
    code, out, _ = bura_said(
        monkeypatch, capsys, sqlite, "replay", penalised, "--version", str(within[0])
    )
    assert "waiting for seat" not in out and "(p1) loses the deal (out of turn draw)" in out, out


def test_verify_bundle_says_operator_fixed_deck_as_verify_does(
    sqlite: Where,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    game, _ = play_games(sqlite)  # dealt from a deck the operator fixed
    bundle = tmp_path / "g.bura.json"
    assert bura_said(monkeypatch, capsys, sqlite, "export", game, "--out", str(bundle))[0] == 0
    code, out, _ = bura_said(monkeypatch, capsys, {}, "verify-bundle", str(bundle))
    assert code == 0
    assert "deal 1 (version 3): every commitment holds (operator-fixed deck)" in out
    assert "server shuffle" not in out
    code, out, _ = bura_said(monkeypatch, capsys, sqlite, "verify", game)
    assert "deal 1 (version 3): commitment ok, shuffle ok (operator-fixed deck)" in out


# --- argparse, and what nothing foresaw ---------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["replay"], "bura replay: the following arguments are required: game\n"),
        (["nope"], "bura: argument command: invalid choice: 'nope'"),
        (
            ["replay", "g", "--version", "0"],
            "bura replay: argument --version: '0': VERSION is a whole number above 0\n",
        ),
        (
            ["replay", "g", "--version", "-1"],
            "bura replay: argument --version: '-1': VERSION is a whole number above 0\n",
        ),
        (
            ["replay", "g", "--version", "1_0"],
            "bura replay: argument --version: '1_0': VERSION is a whole number above 0\n",
        ),
        (  # past what the API takes (2^53 - 1); 16 digits below it are versions
            ["replay", "g", "--version", "9007199254740992"],
            "bura replay: argument --version: '9007199254740992': VERSION is at most "
            "9007199254740991\n",
        ),
        (  # past Python's own limit for reading digits: told the same, never converted
            ["replay", "g", "--version", "9" * 5000],
            f"bura replay: argument --version: '{'9' * 5000}': VERSION is at most "
            "9007199254740991\n",
        ),
        (
            ["replay", "g", "--version", "0" * 30],
            f"bura replay: argument --version: '{'0' * 30}': VERSION is a whole number above 0\n",
        ),
        (  # said by the command it was given to, as its other usage errors are
            ["replay", "g", "--bogus"],
            "bura replay: unrecognized arguments: --bogus\n",
        ),
        (
            ["verify-bundle", "f", "--receipt", "-3:" + "a" * 64],
            f"bura verify-bundle: argument --receipt: '-3:{'a' * 64}': VERSION is a whole "
            "number above 0\n",
        ),
        (
            ["verify-bundle", "f", "--head", "-3:" + "a" * 64],
            f"bura verify-bundle: argument --head: '-3:{'a' * 64}': VERSION is a whole "
            "number above 0\n",
        ),
    ],
)
def test_a_bad_argument_is_one_line_and_exit_2(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(said) and err.count("\n") == 1, err


def test_help_is_still_whole(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(["replay", "--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: bura replay") and "--version" in out and out.count("\n") > 4


def test_help_says_the_exit_codes_and_the_defaults_the_readme_gives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for argv in (["--help"], ["simulate", "--help"], ["replay", "--help"]):
        with pytest.raises(SystemExit):
            cli.main(argv)
        said = " ".join(capsys.readouterr().out.split())
        if argv == ["--help"]:
            assert "Exit codes: 0 done; 1 the thing asked did not hold" in said
            assert all(f"{code} " in said for code in (2, 3, 4, 70, 141))
        elif argv[0] == "simulate":
            for told in ("(default 200)", "(default 2)", "(default 1)", "(default random)"):
                assert told in said, said
        else:
            assert "--version N" in said, said


def test_a_failure_nothing_foresaw_is_still_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*_: object) -> int:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(records, "cmd_verify_bundle", broken)
    code, _, said = bura_said(monkeypatch, capsys, {}, "verify-bundle", "f")
    assert code == 70
    one_line(said, "verify-bundle")
    assert "ZeroDivisionError: a bug" in said


def test_serve_on_a_host_that_is_no_address_is_a_bad_setting(
    sqlite: Where, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BURA_HOST", "999.1.1.1")
    monkeypatch.setenv("BURA_PORT", str(free_port()))
    for command in ("serve", "demo"):
        code, out, said = bura_said(monkeypatch, capsys, sqlite, command)
        assert code == 2, said
        one_line(said, command)
        assert "bad setting: BURA_HOST='999.1.1.1' is no address to listen on" in said
        assert "Bura server on" not in out


# --- processes: a reader that goes away, a demo that cannot start -------------------------


@pytest.mark.slow
def test_a_reader_that_goes_away_is_no_failed_verification(sqlite: Where, tmp_path: Path) -> None:
    """`bura verify-bundle good.json | head -0`: no message, and exit 141 (128 + SIGPIPE),
    never 1 (which says the verification failed)."""
    game, _ = play_games(sqlite)
    bundle = tmp_path / "g.bura.json"
    assert bura_process(sqlite, "export", game, "--out", str(bundle)).returncode == 0
    env = {**os.environ, **sqlite}
    for argv in (["verify-bundle", str(bundle)], ["replay", game], ["export", game, "--out", "-"]):
        reader, writer = os.pipe()
        os.close(reader)  # gone before the first line is written
        try:
            done = subprocess.run(
                [sys.executable, "-m", "services.cli", *argv],
                cwd=ROOT,
                env=env,
                stdout=writer,
                stderr=subprocess.PIPE,
                timeout=60,
            )
        finally:
            os.close(writer)
        assert (done.returncode, done.stderr) == (141, b""), (argv, done.stderr)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("option", "value"),
    [("--name", ""), ("--name", "x" * 65), ("--seed", "")],
)
def test_demo_refuses_a_bad_option_before_serving(sqlite: Where, option: str, value: str) -> None:
    env = {**sqlite, "BURA_PORT": str(free_port())}
    done = bura_process(env, "demo", option, value, timeout=30)
    said = done.stderr.decode()
    assert done.returncode == 2, said
    one_line(said, "demo")
    assert said.startswith(f"bura demo: {option} must be 1 to "), said
    assert b"Bura server on" not in done.stdout


@pytest.mark.slow
def test_a_demo_whose_game_cannot_be_opened_stops_saying_why(sqlite: Where) -> None:
    """The server refuses the game (here: every request's deadline passes at once): one
    line with the problem's detail, and the process stops, non-zero (503: exit 3)."""
    env = {**sqlite, "BURA_PORT": str(free_port()), "BURA_REQUEST_DEADLINE_SECONDS": "0.000001"}
    done = bura_process(env, "demo", timeout=60)
    said = [line for line in done.stderr.decode().splitlines() if line.startswith("bura demo")]
    assert done.returncode == 3, done.stderr
    assert said == [
        "bura demo: could not open a demo game: the server answered 503 store_unavailable: "
        "the event store cannot be reached (the request's deadline passed before the store "
        "was asked); nothing was written: send it again"
    ]
    assert b"play against the bot" not in done.stdout


@pytest.mark.slow
def test_serve_announces_itself_only_once_it_serves(tmp_path: Path) -> None:
    """The banner says where the server listens: printed once its store is open, never by
    a server that then exits 3 because its store cannot be opened."""
    under_a_file = tmp_path / "a-file"
    under_a_file.write_text("not a directory")
    failed = bura_process(
        {"BURA_SQLITE_PATH": str(under_a_file / "db.sqlite"), "BURA_PORT": str(free_port())},
        "serve",
        timeout=60,
    )
    assert failed.returncode == 3, failed.stderr
    assert b"Bura server on" not in failed.stdout and b"OpenAPI" not in failed.stdout
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("BURA_DATABASE_URL",)},
        "BURA_SQLITE_PATH": str(tmp_path / "db.sqlite"),
        "BURA_PORT": str(port),
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "services.cli", "serve"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline().decode()
        assert first.startswith(f"Bura server on http://127.0.0.1:{port}"), first
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # listening by the time it said so
        # the document the README says the banner names, and it is there
        named = re.findall(r"http://\S+", server.stdout.readline().decode())
        assert named == [
            f"http://127.0.0.1:{port}/schema/openapi.json",
            f"http://127.0.0.1:{port}/schema/swagger",
        ], named
        with urllib.request.urlopen(named[0], timeout=10) as answer:
            assert json.load(answer)["openapi"].startswith("3.")
    finally:
        server.terminate()
        server.wait(timeout=30)


# --- a second outside review ---------------------------------------------------------------


@pytest.mark.parametrize("game_id", ["bad id", "", "x" * 65, "a\u0000b"])
def test_import_refuses_a_game_id_no_request_could_name(
    full: Where,
    game_id: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--unverified` took any id: it stored a game no command nor request could then read
    (and PostgreSQL refused a NUL as a store failure, exit 3). Refused, exit 1, nothing
    written."""
    source = {"BURA_SQLITE_PATH": str(tmp_path / "source.db")}
    game, _ = play_games(source)
    export = tmp_path / "game.jsonl"
    assert bura_said(monkeypatch, capsys, source, "export", game, "--out", str(export))[0] == 0
    lines = [json.loads(line) for line in export.read_text().splitlines()]
    renamed = tmp_path / "renamed.jsonl"
    renamed.write_text(
        "".join(json.dumps({**r, "game_id": game_id, "hash": None}) + "\n" for r in lines)
    )
    code, _, said = bura_said(monkeypatch, capsys, full, "import", str(renamed), "--unverified")
    assert code == 1, said
    one_line(said, "import")
    assert "is no game id (1 to 64 letters, digits, '-' or '_'): nothing was imported" in said
    code, out, _ = bura_said(monkeypatch, capsys, full, "import", str(export))
    assert code == 0 and f"as game {game}" in out  # the store took nothing of the first


def test_verify_bundle_reads_stdin_and_replay_says_no_turn_as_a_dash(
    sqlite: Where, tmp_path: Path
) -> None:
    """`bura export G --out - | bura verify-bundle -`; a finished game has no seat to act:
    `turn -` (it printed Python's None)."""
    game, _ = play_games(sqlite)
    exported = bura_process(sqlite, "export", game, "--out", "-")
    assert exported.returncode == 0, exported.stderr
    checked = bura_process({}, "verify-bundle", "-", input=exported.stdout)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.decode().splitlines()[-1] == "verified"
    replayed = bura_process(sqlite, "replay", game)
    assert replayed.returncode == 0, replayed.stderr
    assert "phase finished  turn -  " in replayed.stdout.decode()
    assert "None" not in replayed.stdout.decode()


def test_simulate_and_play_read_no_server_setting(tmp_path: Path) -> None:
    """A bad BURA_PORT (or any server setting) is the server's business: `simulate` runs,
    and `play` says what is wrong with its own arguments, not with BURA_PORT."""
    env = {"BURA_PORT": "abc", "BURA_DATABASE_URL": "postgresql://x@127.0.0.1:99999/x"}
    done = bura_process(env, "simulate", "--games", "2")
    assert done.returncode == 0, done.stderr
    assert b"BURA_PORT" not in done.stderr
    done = bura_process(env, "play", "--game", "bad id", "--token", "t")
    said = done.stderr.decode()
    assert done.returncode == 2 and said.startswith("bura play: --game bad id is no game id")


@pytest.mark.slow
def test_a_demo_whose_port_is_taken_says_it_is_the_demo(sqlite: Where) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = bura_process({**sqlite, "BURA_PORT": str(port)}, "demo", timeout=30)
    said = done.stderr.decode()
    assert done.returncode == 1, said
    one_line(said, "demo")
    assert said.startswith(f"bura demo: cannot listen on 127.0.0.1:{port}: "), said
