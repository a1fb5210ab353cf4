"""`bura demo` (what `make run` starts): the server on the embedded default, a game ready
against a bot and a link to it. The bot plays its seat in the server's process: a seat that
plays its own moves over the API reaches the end of the game."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import msgspec

from domain.moves import Moves, commands
from harness.processes import OPERATOR, ROOT, bearer
from tests.demos import demo


def test_make_run_starts_the_demo() -> None:
    planned = subprocess.run(
        ["make", "--no-print-directory", "-n", "run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout  # (under `make test` this make is a sub-make, which would print its directory)
    assert planned.strip().splitlines()[-1].endswith("bura demo")


def test_the_demo_prints_a_link_to_a_game_the_bot_plays_to_the_end(tmp_path: Path) -> None:
    with demo(tmp_path) as (link, game_id, base):
        token = link.split("#seat=", 1)[1]
        with httpx.Client(base_url=base, timeout=10) as client:
            page = client.get(f"/play/{game_id}")
            assert page.status_code == 200 and "table.js" in page.text
            listed = client.get("/games", headers=OPERATOR).json()["games"]
            assert [g["seats"] for g in listed] == [["player", "bot"]]
            deadline = time.monotonic() + 120
            shown: dict[str, Any] = client.get(f"/games/{game_id}", headers=bearer(token)).json()
            assert shown["viewer"] == "seat" and shown["seat"] == 0
            while shown["status"] != "finished":
                assert time.monotonic() < deadline, shown
                if shown["due"] is not None:
                    offered = msgspec.convert(shown["moves"], Moves)
                    move = msgspec.to_builtins(commands(offered, shown["hand"])[0])
                    sent = client.post(
                        f"/games/{game_id}/commands",
                        json={**move, "seen": shown["version"]},
                        headers=bearer(token),
                    )
                    assert sent.status_code in (200, 409), sent.text
                else:
                    time.sleep(0.05)  # the bot's turn: it plays in the server's process
                shown = client.get(f"/games/{game_id}", headers=bearer(token)).json()
            bot_acted = client.get(f"/games/{game_id}/events", headers=OPERATOR).json()
            assert any(
                r["event"].get("seat") == 1
                and r["event"]["type"] in ("cards_led", "cards_responded")
                for r in bot_acted["events"]
            )
