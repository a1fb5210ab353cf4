"""`bura demo`: the server, and a game ready at once against a bot. A newcomer opens the
printed link and plays; the bot plays the other seat over the public API in a thread of
this process (`bura play`'s loop: it sees only its own seat's view)."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time

import httpx
import msgspec

from services.cli.errors import FAILED, UNAVAILABLE, USAGE, CliError, shown
from services.cli.play import play
from services.config import Settings
from services.http.schemas import CreateGame
from services.http.server import serve

log = logging.getLogger("bura.demo")


def _ready(url: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health/live", timeout=1.0).status_code == 200:
                return True
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    return False


def _local(settings: Settings) -> str:
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    return f"http://{f'[{host}]' if ':' in host else host}:{settings.port}"


class NoDemoGame(Exception):
    """The demo game could not be opened: the line says why, the process stops."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def check_options(name: str, seed: str | None) -> None:
    """--name and --seed as the API takes a game's (services/http/schemas.py CreateGame),
    checked before the server starts: USAGE in one line naming the option."""
    body: dict[str, object] = {"seats": [{"name": name}, {"name": "bot"}]}
    if seed is not None:
        body["seed"] = seed
    for option, value in (("--name", name), ("--seed", seed)):
        if value is None:
            continue
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise CliError(
                f"{option} {shown(value)} holds bytes that are no UTF-8 text", USAGE
            ) from None
    try:
        msgspec.convert(body, CreateGame)
    except msgspec.ValidationError as e:
        option = "--name" if "seats" in str(e) else "--seed"
        rule = "1 to 64 characters, any but NUL" if option == "--name" else "1 to 256 characters"
        raise CliError(f"{option} must be {rule} ({e})", USAGE) from None


def open_table(url: str, operator_key: str, name: str, seed: str | None) -> tuple[str, str, str]:
    """A new game of `name` against the bot: (game id, the player's token, the bot's).
    The server's refusal is NoDemoGame with its problem's `detail`."""
    body: dict[str, object] = {"seats": [{"name": name}, {"name": "bot"}]}
    if seed is not None:
        body["seed"] = seed
    try:
        answer = httpx.post(
            f"{url}/games", json=body, headers={"Authorization": f"Bearer {operator_key}"}
        )
    except httpx.HTTPError as error:
        raise NoDemoGame(f"could not open a demo game: {error}", UNAVAILABLE) from None
    if answer.status_code >= 400:
        try:
            problem = answer.json()
            detail = f"{problem['code']}: {problem['detail']}"
        except (ValueError, KeyError, TypeError):
            detail = "an answer with no problem details"
        code = UNAVAILABLE if answer.status_code in (429, 503) else FAILED
        raise NoDemoGame(
            f"could not open a demo game: the server answered {answer.status_code} {detail}",
            code,
        )
    created = answer.json()
    return created["game_id"], created["seats"][0]["token"], created["seats"][1]["token"]


class _Host:
    """The demo's game and its bot, in a thread beside the server; a failure to open the
    game stops the server, and `failed` is then the process's exit code."""

    def __init__(self, settings: Settings, name: str, bot: str, seed: str | None) -> None:
        self.settings, self.name, self.bot, self.seed = settings, name, bot, seed
        self.failed: int | None = None

    def _stop(self, message: str, code: int) -> None:
        # one write, line and its end together: the server's log lines (another thread)
        # go to the same stream, and print() writes the end apart
        sys.stderr.write(f"bura demo: {message}\n")
        sys.stderr.flush()
        self.failed = code
        os.kill(os.getpid(), signal.SIGTERM)  # uvicorn's own way out: a graceful stop

    def __call__(self) -> None:
        settings = self.settings
        url = _local(settings)
        if not _ready(url, 60.0):
            self._stop("the server did not come up; no demo game", UNAVAILABLE)
            return
        try:
            game_id, token, bot_token = open_table(url, settings.operator_key, self.name, self.seed)
        except NoDemoGame as error:
            self._stop(str(error), error.exit_code)
            return
        # The seat's token rides in the fragment: a browser never sends that part of a link
        # to any server (nor in a Referer); the page moves it into sessionStorage and off
        # the bar.
        print(f"play against the bot: {url}/play/{game_id}#seat={token}", flush=True)
        print(f"  (or open {url}/play/{game_id} and enter the seat token {token})", flush=True)
        print(f"the arbiter's page: {url}/arbiter/games/{game_id} (the operator key)", flush=True)
        try:
            play(url, game_id, bot_token, bot=self.bot, out=lambda line: log.info(line))
        except Exception as error:  # the server stopping ends the bot's stream
            log.info("the demo bot stopped: %s", error)


def demo(
    settings: Settings, name: str = "you", bot: str = "greedy", seed: str | None = None
) -> int:
    check_options(name, seed)
    host = _Host(settings, name, bot, seed)
    threading.Thread(target=host, daemon=True).start()
    code = serve(settings, "demo")
    return host.failed if host.failed is not None and code == 0 else code
