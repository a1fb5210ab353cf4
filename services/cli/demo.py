"""`bura demo`: the server, and a game ready at once against a bot. A newcomer opens the
printed link and plays; the bot plays the other seat over the public API in a thread of
this process (`bura play`'s loop: it sees only its own seat's view)."""

from __future__ import annotations

import logging
import threading
import time

import httpx

from services.cli.play import play
from services.config import Settings
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


def open_table(url: str, operator_key: str, name: str, seed: str | None) -> tuple[str, str, str]:
    """A new game of `name` against the bot: (game id, the player's token, the bot's)."""
    body: dict[str, object] = {"seats": [{"name": name}, {"name": "bot"}]}
    if seed is not None:
        body["seed"] = seed
    answer = httpx.post(
        f"{url}/games", json=body, headers={"Authorization": f"Bearer {operator_key}"}
    )
    answer.raise_for_status()
    created = answer.json()
    return created["game_id"], created["seats"][0]["token"], created["seats"][1]["token"]


def _host(settings: Settings, name: str, bot: str, seed: str | None) -> None:
    url = _local(settings)
    if not _ready(url, 60.0):
        print("bura demo: the server did not come up; no demo game", flush=True)
        return
    try:
        game_id, token, bot_token = open_table(url, settings.operator_key, name, seed)
    except httpx.HTTPError as error:
        print(f"bura demo: could not open a demo game: {error}", flush=True)
        return
    # The seat's token rides in the fragment: a browser never sends that part of a link to
    # any server (nor in a Referer); the page moves it into sessionStorage and off the bar.
    print(f"play against the bot: {url}/play/{game_id}#seat={token}", flush=True)
    print(f"  (or open {url}/play/{game_id} and enter the seat token {token})", flush=True)
    print(f"the arbiter's page: {url}/arbiter/games/{game_id} (the operator key)", flush=True)
    try:
        play(url, game_id, bot_token, bot=bot, out=lambda line: log.info(line))
    except Exception as error:  # the server stopping ends the bot's stream
        log.info("the demo bot stopped: %s", error)


def demo(
    settings: Settings, name: str = "you", bot: str = "greedy", seed: str | None = None
) -> int:
    host = threading.Thread(target=_host, args=(settings, name, bot, seed), daemon=True)
    host.start()
    return serve(settings)
