"""The repository's Python client (clients/python) against a running service: a whole
game, retries that are never a second move, a followed view that resumes without a gap;
and `bura play` bots, one process per seat, playing every variant of docs/rules.md §8 to
its end over the public API only.

The `seen` field is sent only once the server accepts it: these tests pass seen=False."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

import pytest
from bura_client import Client, CreatedGame, Outcome, OutcomeUnknown, Refused
from bura_client.client import Seat

from harness.databases import free_port
from harness.processes import OPERATOR_KEY, ROOT, Proxy, Service
from services.app.bundle_check import check_bundle
from tests.api.conftest import THIRTY_ONE_DECK, THIRTY_ONE_GAME
from tests.api.test_variants_http import VARIANTS
from tests.e2e.conftest import StartService

SEEN = True  # every command says which version its player saw (README: the command contract)


def act(seat: Seat, command: dict[str, object]) -> None:
    """A player looks at the table, then acts: its `seen` is the version it looked at."""
    seat.view()
    seat.send(command)


def walk_through_table(api: Client) -> tuple[CreatedGame, list[Seat]]:
    """The README walk-through's table (its deck and dealer), and a Seat of each seat."""
    created = api.create_game(["ann", "bob"], token=OPERATOR_KEY, deck=THIRTY_ONE_DECK, dealer=1)
    return created, [api.seat(created.game_id, s.token, seen=SEEN) for s in created.seats]


async def test_the_client_plays_a_whole_game_and_retries_safely(
    start_service: StartService,
) -> None:
    service = await start_service()

    def game() -> None:
        with Client(service.url) as api:
            _, seats = walk_through_table(api)
            assert seats[0].view()["hand"] == ["AS", "10S", "KS"]
            with pytest.raises(Refused) as refused:
                seats[1].lead("6H")
            assert refused.value.code == "not_your_turn" and refused.value.status == 409
            assert refused.value.type == "/problems/not_your_turn"
            first = seats[0].send(THIRTY_ONE_GAME[0][1], key="ann-1")
            again = seats[0].send(THIRTY_ONE_GAME[0][1], key="ann-1")  # a retry
            assert again.duplicate and again.version == first.version
            for seat, command in THIRTY_ONE_GAME[1:]:
                act(seats[seat], command)
            final = seats[0].view()
            assert final["status"] == "finished" and final["result"]["winners"] == [0]
            assert seats[1].verify()["ok"] is True

    await asyncio.to_thread(game)


async def test_the_clients_models_keep_what_the_server_answers(
    start_service: StartService,
) -> None:
    """A created game and a command's answer keep the record's receipt (README: "every
    command answer carries the record's receipt"), every field the server sends is read,
    and a command's key looks it up (GET /games/{id}/commands/{key})."""
    service = await start_service()

    def game() -> None:
        with Client(service.url) as api:
            answer = api.request(
                "POST", "/games", token=OPERATOR_KEY, json={"seats": [{"name": "a"}, {"name": "b"}]}
            )
            created = CreatedGame.of(answer)
            assert set(answer) <= {f.name for f in fields(CreatedGame)}, answer
            assert created.receipt and created.chain_head and created.commitment
            again = api.create_game(
                ["ann", "bob"], token=OPERATOR_KEY, deck=THIRTY_ONE_DECK, dealer=1
            )
            assert again.receipt and again.rematch_of is None and not again.duplicate
            # a creation sent again under its key is the same game, never a second one
            key = f"models {uuid.uuid4().hex}"
            keyed = api.create_game(["cy", "di"], token=OPERATOR_KEY, key=key)
            retried = api.create_game(["cy", "di"], token=OPERATOR_KEY, key=key)
            assert retried == dataclasses.replace(keyed, duplicate=True)
            with pytest.raises(Refused) as reused:
                api.create_game(["cy", "ed"], token=OPERATOR_KEY, key=key)
            assert reused.value.code == "idempotency_key_reused"
            assert reused.value.command_id == key
            ann = api.seat(again.game_id, again.seats[0].token, seen=SEEN)
            ann.view()
            outcome = ann.send(THIRTY_ONE_GAME[0][1], key="ann 1")
            assert outcome.command_id == "ann 1" and outcome.receipt
            assert outcome.chain_head is None  # hidden cards: the raw head is the arbiter's
            raw = api.request(
                "POST",
                f"/games/{again.game_id}/commands",
                token=again.seats[0].token,
                json=ann._sent["ann 1"],
                headers={"Idempotency-Key": "ann 1"},
            )
            assert set(raw) <= {f.name for f in fields(Outcome)}, raw
            found = ann.lookup("ann 1")
            assert found.applied and (found.seat, found.version) == (0, outcome.version)
            assert found.events == outcome.events and found.recorded_at
            assert not ann.lookup("never sent").applied
            arbiter = api.seat(again.game_id, OPERATOR_KEY).lookup("ann 1")
            assert arbiter.applied and arbiter.command_id == "ann 1"

    await asyncio.to_thread(game)


async def test_following_a_seat_resumes_after_the_last_message(
    start_service: StartService,
) -> None:
    service = await start_service(BURA_SSE_KEEPALIVE_SECONDS="0.5")

    def follow() -> None:
        with Client(service.url) as api:
            created = api.create_game(
                ["ann", "bob"], token=OPERATOR_KEY, deck=THIRTY_ONE_DECK, dealer=1
            )
            seats = [api.seat(created.game_id, s.token, seen=SEEN) for s in created.seats]
            for seat, command in THIRTY_ONE_GAME[:5]:
                act(seats[seat], command)
            watcher = api.seat(created.game_id, created.seats[1].token)
            ids: list[int] = []
            for message in watcher.follow():
                ids.append(message.id or 0)
                if len(ids) == 1:
                    break  # hang up after the current view
            moving = threading.Thread(
                target=lambda: [act(seats[s], c) for s, c in THIRTY_ONE_GAME[5:]]
            )
            moving.start()
            ended = False
            for message in watcher.follow(last_event_id=ids[-1]):
                if message.event == "end":
                    ended = True
                else:
                    ids.append(message.id or 0)
                    assert message.view["seat"] == 1
            moving.join()
            assert ended and ids == list(range(ids[0], ids[-1] + 1)), ids  # no gap, no repeat
            assert ids[-1] == watcher.view()["version"]

    await asyncio.to_thread(follow)


@pytest.mark.slow
@pytest.mark.parametrize("variant", list(VARIANTS))
async def test_bura_play_bots_finish_a_game_of_every_variant(
    start_service: StartService, variant: str
) -> None:
    service = await start_service()
    seats, rules = VARIANTS[variant]
    with Client(service.url) as api:
        created = api.create_game(
            [f"bot{n}" for n in range(seats)], token=OPERATOR_KEY, rules=rules, seed=variant
        )
    bots = []
    for seat in created.seats:
        command = [
            sys.executable,
            "-m",
            "services.cli",
            "play",
            "--url",
            service.url,
            "--game",
            created.game_id,
            "--token",
            seat.token,
            "--bot",
            ("greedy", "random")[seat.seat % 2],
            "--seed",
            str(seat.seat),
        ]
        if not SEEN:
            command.append("--no-seen")
        bots.append(
            subprocess.Popen(
                command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
        )
    outputs = [await asyncio.to_thread(b.communicate, timeout=600) for b in bots]
    for bot, (output, _) in zip(bots, outputs, strict=True):
        assert bot.returncode == 0, output
        last = output.splitlines()[-1]  # "seat 0: finished at version 53, won (31)"
        assert "finished" in last and (", won (" in last or ", lost (" in last), output
    with Client(service.url) as api:
        final = api.seat(created.game_id, OPERATOR_KEY).view()
    assert final["status"] == "finished" and final["result"]["winners"]


async def test_bura_play_fails_in_one_line_with_the_exit_code_that_says_why(
    start_service: StartService,
) -> None:
    """A bad address, no server, a token the server refuses or that is another game's, a
    game the server does not know: one line on stderr, never a traceback, and the README's
    exit codes (4 is reached: by a token naming a game the server lacks, and by the
    operator key, to which the server says so itself)."""
    service = await start_service()
    with Client(service.url) as api:
        created = api.create_game(["a", "b"], token=OPERATOR_KEY)
        other = api.create_game(["c", "d"], token=OPERATOR_KEY)
    token = created.seats[0].token
    nobody = f"http://127.0.0.1:{free_port()}"
    unknown = "0" * 32  # a game id of the server's form, of no game it has

    def bura_play(url: str, game: str, token: str) -> tuple[int, str]:
        done = subprocess.run(
            [sys.executable, "-m", "services.cli", "play", "--url", url, "--game", game,
             "--token", token],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        return done.returncode, done.stderr

    cases = [
        ("127.0.0.1:8000", created.game_id, token, 2, "is no server address"),
        (nobody, created.game_id, token, 3, f"cannot reach the server at {nobody}"),
        (service.url, created.game_id, "not-a-token", 2, "the server answered 401"),
        # a token of the game the server does not know as one of its: 2, saying so
        (service.url, created.game_id, f"{created.game_id}.forged", 2, "none of its"),
        # another game's token: told before any request (no server is there to ask)
        (
            nobody,
            other.game_id,
            token,
            2,
            f"--token is a token of game {created.game_id}, not of --game {other.game_id}",
        ),
        # a game the server does not have, the token naming it: 4
        (service.url, unknown, f"{unknown}.forged", 4, f"has no game {unknown}"),
        (service.url, unknown, OPERATOR_KEY, 4, "the server answered 404 game_not_found"),
        (service.url, created.game_id, created.spectator_token, 2, "no seat's"),
        (service.url, created.game_id, OPERATOR_KEY, 2, "no seat's"),
        (service.url, created.game_id, "", 2, "--token is empty"),
        # a token no header can carry: a bad argument, not an unreachable server
        (service.url, created.game_id, f"{token} ", 2, "--token has a space at either end"),
        (service.url, created.game_id, f"{token[:4]}\n{token[4:]}", 2, "no HTTP header may carry"),
        # a user or password in --url: httpx would send it in place of the token
        (
            service.url.replace("//", "//u:pw@"),
            created.game_id,
            token,
            2,
            "--url holds a user name or password",
        ),
        # the API's root is wanted: the 404 says what the address has beyond it
        (f"{service.url}/api", created.game_id, token, 3, "8000, without a path\n"),
        (f"{service.url}?x=1", created.game_id, token, 3, "without a path, query or fragment\n"),
    ]
    for url, game, given, code, said in cases:
        exit_code, stderr = await asyncio.to_thread(bura_play, url, game, given)
        assert (exit_code, stderr.count("\n")) == (code, 1), (url, given, stderr)
        assert stderr.startswith("bura play: ") and said in stderr, stderr
        assert "Traceback" not in stderr


def bura_play_of(url: str, game: str, token: str, *python: str) -> subprocess.Popen[str]:
    """`bura play` of one seat, a process of its own; `python`: statements run first (a
    setting of services.cli.play)."""
    run = "; ".join(
        [
            "import sys",
            "from services import cli",
            "from services.cli import play",
            *python,
            "sys.exit(cli.main(sys.argv[1:]))",
        ]
    )
    return subprocess.Popen(
        [sys.executable, "-c", run, "play", "--url", url, "--game", game, "--token", token],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


class Restarts:
    """A Bura server on the embedded defaults (a SQLite file) that a test kills and starts
    again on its port, and the `bura play` processes playing on it: all ended after."""

    def __init__(self, home: Path) -> None:
        self.home = home
        env = {"BURA_SQLITE_PATH": str(home / "games.db"), "BURA_DATABASE_URL": ""}
        self.service = Service({**env, "BURA_REDIS_URL": ""}, log_dir=home)
        self.bots: list[subprocess.Popen[str]] = []
        self.clients: list[Client] = []

    async def start(self) -> Service:
        """The server, started (again) on its port and its file."""
        env, port = self.service.env, self.service.port
        self.service = await Service(env, port=port, log_dir=self.home).start().ready()
        return self.service

    async def bot_due_while_the_server_is_dead(
        self, *python: str
    ) -> tuple[Seat, subprocess.Popen[str]]:
        """bob's bot (`bura play`, seat 1) follows; ann leads while the bot is stopped, so
        that its stream holds the table it must act on, and the server is killed before
        the bot goes on: its next read or move finds no server."""
        service = await self.start()
        api = Client(service.url)
        self.clients.append(api)
        created, seats = walk_through_table(api)
        bot = bura_play_of(service.url, created.game_id, created.seats[1].token, *python)
        self.bots.append(bot)
        deadline = time.monotonic() + 30
        while not seats[0].view()["seats"][1]["connected"]:  # the bot's stream is open
            assert bot.poll() is None and time.monotonic() < deadline, bot.communicate()
            await asyncio.sleep(0.05)
        bot.send_signal(signal.SIGSTOP)
        try:
            seats[0].send(THIRTY_ONE_GAME[0][1])  # bob is due to respond
            await asyncio.sleep(0.5)  # the server writes it into bob's stream, unread
            service.kill()  # SIGKILL: no answer to anything from now on
        finally:
            bot.send_signal(signal.SIGCONT)
        return seats[0], bot

    def close(self) -> None:
        for bot in self.bots:
            if bot.poll() is None:
                bot.kill()
                bot.communicate()
        for client in self.clients:
            client.close()
        self.service.stop()


@pytest.fixture
def restarts(tmp_path: Path) -> Iterator[Restarts]:
    opened = Restarts(tmp_path)
    try:
        yield opened
    finally:
        opened.close()


async def test_bura_play_rides_out_a_server_restart_while_it_reads_and_moves(
    restarts: Restarts,
) -> None:
    """The server dies just as the bot reads the table and moves, and is back 2 s later on
    the same SQLite file: the bot waits for it as its stream does (it exited 3 after its
    client's 4 quick tries, under 1 s), moves, and plays on to the end."""
    ann, bot = await restarts.bot_due_while_the_server_is_dead()
    await asyncio.sleep(2)
    assert bot.poll() is None, bot.communicate()
    await restarts.start()
    deadline = time.monotonic() + 30
    while ann.view()["due"] is None:  # until bob's response came: ann acts next
        assert bot.poll() is None and time.monotonic() < deadline, bot.communicate()
        await asyncio.sleep(0.1)
    ann.concede()
    out, err = await asyncio.to_thread(bot.communicate, timeout=60)
    assert bot.returncode == 0, err
    assert out.startswith("seat 1: finished") and ", won (" in out, out


async def test_bura_play_gives_up_on_a_server_that_never_comes_back_at_its_reconnects(
    restarts: Restarts,
) -> None:
    """Exit 3, one line, once the read or move has been tried as many times as the stream
    reconnects (RECONNECTS, lowered here to 2 to be quick; 20 by default, about a minute):
    bounded, never a wait without end."""
    _, bot = await restarts.bot_due_while_the_server_is_dead("play.RECONNECTS = 2")
    _, err = await asyncio.to_thread(bot.communicate, timeout=30)
    assert bot.returncode == 3, err
    url = restarts.service.url
    assert err.startswith(f"bura play: cannot reach the server at {url} ("), err
    assert err.count("\n") == 1 and "Traceback" not in err


async def test_a_restarted_process_resends_a_lost_command_whole_from_a_new_seat(
    start_service: StartService,
) -> None:
    """The client README's recipe for OutcomeUnknown: its `body` carries the `seen` it was
    sent with, so a new Seat (which has seen another version) resends it whole under its
    key, `seat.send(e.body, key=e.command_id)`, or looks it up, `seat.lookup(...)`."""
    readme = (ROOT / "clients/python/README.md").read_text(encoding="utf-8")
    flat = " ".join(readme.split())
    assert "`seat.send(e.body, key=e.command_id)`" in flat
    assert "`seat.lookup(e.command_id)` returns a `CommandStatus`" in flat
    service = await start_service()
    proxy = Proxy.before(service.url).start()

    def lost_then_resent() -> None:
        with Client(proxy.via(service.url), retries=1) as cut, Client(service.url) as api:
            created, _ = walk_through_table(api)
            ann = cut.seat(created.game_id, created.seats[0].token, seen=SEEN)
            ann.view()
            proxy.cut()
            with pytest.raises(OutcomeUnknown) as lost:
                ann.send(THIRTY_ONE_GAME[0][1])
            e = lost.value
            assert e.body is not None and e.body["seen"] == ann.version
            # the process starts again: a new Seat, which has seen the table since
            again = api.seat(created.game_id, created.seats[0].token, seen=SEEN)
            assert not again.lookup(e.command_id).applied
            again.view()
            outcome = again.send(e.body, key=e.command_id)
            assert not outcome.duplicate and again.lookup(e.command_id).applied
            later = api.seat(created.game_id, created.seats[0].token, seen=SEEN)
            later.view()
            assert later.send(e.body, key=e.command_id).duplicate

    try:
        await asyncio.to_thread(lost_then_resent)
    finally:
        proxy.close()


async def test_the_readmes_python_example_runs_as_shown(start_service: StartService) -> None:
    """The README's example, as printed there (only its address filled in, its key in the
    environment as it reads it, and its follow loop ended after the first message): ann
    leads, and her stream begins at that lead (README: The Python client)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("```python\nimport os\n\nfrom bura_client import Client")
    example = readme[start + len("```python\n") : readme.index("```", start + 10)]
    assert 'print(message.id, message.view["due"])' in example
    service = await start_service()
    example = example.replace("http://127.0.0.1:8000", service.url).replace(
        'print(message.id, message.view["due"])',
        'print(message.id, message.view["due"]); break',
    )
    run = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        example,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "BURA_OPERATOR_KEY": OPERATOR_KEY},
    )
    out, err = await asyncio.wait_for(run.communicate(), 60)
    assert run.returncode == 0, err.decode()
    assert out.decode().split() == ["11", "None"]


async def test_the_operators_calls_against_a_running_service(
    start_service: StartService,
) -> None:
    """A rematch under a key (its retry the same game), the list with the finished game,
    and the bundle as served, which verifies from the bytes alone."""
    service = await start_service()

    def operate() -> None:
        with Client(service.url) as api:
            created, seats = walk_through_table(api)
            for seat, command in THIRTY_ONE_GAME:
                act(seats[seat], command)
            rematch = api.rematch(created.game_id, token=OPERATOR_KEY, key="again-1")
            retried = api.rematch(created.game_id, token=OPERATOR_KEY, key="again-1")
            assert rematch.rematch_of == created.game_id and not rematch.duplicate
            assert retried.duplicate and retried.game_id == rematch.game_id
            finished = [g["game_id"] for g in api.games(token=OPERATOR_KEY, status="finished")]
            assert created.game_id in finished and rematch.game_id not in finished
            raw = seats[1].bundle()  # a seat's, once the game is over
            assert check_bundle(raw).ok

    await asyncio.to_thread(operate)
