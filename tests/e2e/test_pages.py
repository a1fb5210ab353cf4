"""The pages in a real browser (headless Chromium, tests/browser.py): a newcomer plays a
whole game against the demo's bot by keyboard and clicks; the table resumes after its
stream drops; the arbiter steps to a finding, reads its evidence, and switches to a seat's
perspective, whose page then holds no card hidden from that seat. Screenshots go to
tests/artifacts/."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from harness.databases import free_port
from harness.processes import OPERATOR, OPERATOR_KEY, ROOT, bearer
from services.pages.words import card_name, card_sign
from tests.api.conftest import FIRST_TRICK, THIRTY_ONE_DECK
from tests.e2e.conftest import StartService

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
LINK = re.compile(r"play against the bot: (http://\S+/play/(\w+)#seat=(\S+))")


def shot(name: str) -> str:
    ARTIFACTS.mkdir(exist_ok=True)
    return str(ARTIFACTS / f"{name}.png")


@contextmanager
def demo(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """`bura demo` on the embedded default: (the link it prints, the game id, the base)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BURA_")}
    env |= {
        "BURA_PORT": str(port),
        "BURA_SQLITE_PATH": str(tmp_path / "demo.sqlite3"),
        "BURA_OPERATOR_KEY": OPERATOR_KEY,
        "BURA_LOG_LEVEL": "warning",
    }
    log = tmp_path / "demo.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "services.cli", "demo", "--seed", "pages-e2e"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while not (found := LINK.search(log.read_text())):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"no link printed: {log.read_text()}"
            time.sleep(0.1)
        yield found.group(1), found.group(2), f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def until(page: Any, expression: str, seconds: float = 30.0) -> None:
    """Wait for `expression` to hold in the page. The pages' CSP forbids string evaluation
    inside the page (wait_for_function), so the test asks from outside."""
    deadline = time.monotonic() + seconds
    while not await page.evaluate(expression):
        assert time.monotonic() < deadline, f"never held: {expression}"
        await asyncio.sleep(0.05)


def spellings(card: str) -> list[str]:
    """Every way a page could hold a card: its code as data, its name, its sign."""
    return [f'data-card="{card}"', card_name(card), card_sign(card)]


async def dom_and_version(page: Any, root: str) -> tuple[str, int]:
    html, version = await page.evaluate(
        f"() => [document.documentElement.outerHTML, Number(document.querySelector('{root}')"
        ".dataset.version)]"
    )
    return html, version


async def test_a_newcomer_plays_a_whole_game_against_the_demo_bot(
    browser: Any, tmp_path: Path
) -> None:
    with demo(tmp_path) as (link, game_id, base):
        page = await browser.new_page()
        await page.goto(link)
        await page.wait_for_selector("#moves button, #table[data-status=finished]")
        assert "seat=" not in page.url  # the token left the address bar at once
        await page.screenshot(path=shot("table-start"), full_page=True)

        # The seat's page holds its own cards only: the bot's hand at that version is not in
        # the DOM (read back from the operator's replay of the same version).
        html, version = await dom_and_version(page, "#table")
        async with httpx.AsyncClient(base_url=base, headers=OPERATOR) as client:
            replay = (await client.get(f"/games/{game_id}/replay", params={"version": version}))
            table = replay.json()["view"]
        hidden = set(table["seats"][1]["hand"]) | set(table["stock"][:-1])
        assert hidden
        for c in hidden:
            for spelled in spellings(c):
                assert spelled not in html, (c, spelled)
        for c in table["seats"][0]["hand"]:  # and its own hand, labelled for a screen reader
            assert await page.locator(f'#hand [aria-label="{card_name(c)}"]').count() == 1

        # Keyboard: Tab reaches a move, Enter plays it.
        await page.wait_for_selector("#moves button")
        for _ in range(40):
            await page.keyboard.press("Tab")
            if await page.evaluate("document.activeElement.closest('#moves') !== null"):
                break
        assert await page.evaluate("document.activeElement.closest('#moves') !== null")
        before = int(await page.get_attribute("#table", "data-version") or 0)
        await page.keyboard.press("Enter")
        await until(page, f"Number(document.querySelector('#table').dataset.version) > {before}")

        # Then click the first move offered, every time one is, to the end of the game.
        for _ in range(400):
            await page.wait_for_selector(
                "#moves button:not([disabled]), #table[data-status=finished]"
            )
            if await page.get_attribute("#table", "data-status") == "finished":
                break
            before = int(await page.get_attribute("#table", "data-version") or 0)
            await page.locator("#moves button").first.click()
            await until(
                page,
                f"Number(document.querySelector('#table').dataset.version) > {before}"
                " || document.getElementById('status').textContent.startsWith('Refused')",
            )
        assert await page.get_attribute("#table", "data-status") == "finished"
        assert "The game is over" in await page.inner_text("#turn")
        await page.screenshot(path=shot("table-finished"), full_page=True)
