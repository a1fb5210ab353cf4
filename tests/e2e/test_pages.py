"""The pages in a real browser (headless Chromium, tests/browser.py): a newcomer plays a
whole game against the demo's bot by keyboard and clicks; the table resumes after its
stream drops; the arbiter steps to a finding, reads its evidence, and switches to a seat's
perspective, whose page then holds no card hidden from that seat. Screenshots go to
tests/artifacts/."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import msgspec

from domain.commands import Seed
from domain.moves import Moves, commands
from harness.processes import OPERATOR, OPERATOR_KEY, Proxy, bearer
from services.pages.words import card_name, card_sign
from tests.api.conftest import FIRST_TRICK, THIRTY_ONE_DECK
from tests.demos import demo
from tests.e2e.conftest import StartService

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def shot(name: str) -> str:
    ARTIFACTS.mkdir(exist_ok=True)
    return str(ARTIFACTS / f"{name}.png")


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


async def walk_through(
    client: httpx.AsyncClient, base: str, rules: dict[str, Any] | None = None
) -> tuple[dict[str, Any], str, list[str]]:
    """A game of ann and bob on the walk-through's deck, bob dealing, with these rules: its
    creation answer, its id and the seats' tokens."""
    body = {"seats": [{"name": "ann"}, {"name": "bob"}], "deck": THIRTY_ONE_DECK, "dealer": 1}
    answer = await client.post(
        f"{base}/games", json={**body, "rules": rules or {}}, headers=OPERATOR
    )
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created, created["game_id"], [s["token"] for s in created["seats"]]


async def hides_the_bot(page: Any, client: httpx.AsyncClient, game_id: str) -> Any:
    """The seat's page holds no card of the bot's hand nor of the stock (but the turned
    trump) at the version it shows, read back from the operator's replay of it."""
    html, version = await dom_and_version(page, "#table")
    replay = await client.get(f"/games/{game_id}/replay", params={"version": version})
    table = replay.json()["view"]
    hidden = set(table["seats"][1]["hand"] or ()) | set(table["stock"] or ()) - {table["trump"]}
    for c in hidden:
        for spelled in spellings(c):
            assert spelled not in html, (version, c, spelled)
    return table


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
        client = httpx.AsyncClient(base_url=base, headers=OPERATOR)
        table = await hides_the_bot(page, client, game_id)
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
        # The focus stays on the moves' group, never on a move by itself (Enter would play
        # one not yet heard): Tab reaches the first of the next moves, Enter plays it.
        await page.wait_for_selector("#moves button:not([disabled]), #table[data-status=finished]")
        if await page.get_attribute("#table", "data-status") != "finished":
            assert await page.evaluate("document.activeElement.id") == "moves"
            before = int(await page.get_attribute("#table", "data-version") or 0)
            await page.keyboard.press("Tab")
            assert await page.evaluate("document.activeElement.tagName") == "BUTTON"
            await page.keyboard.press("Enter")
            await until(
                page, f"Number(document.querySelector('#table').dataset.version) > {before}"
            )

        # Then click the first move offered, every time one is, to the end of the game; at
        # every step the page holds none of the bot's cards nor the stock's.
        for _ in range(400):
            await page.wait_for_selector(
                "#moves button:not([disabled]), #table[data-status=finished]"
            )
            await hides_the_bot(page, client, game_id)
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
        # the end, told by the stream, stays said when the last command's answer comes
        # after it (it read "Sent: …" there)
        await until(page, "document.getElementById('status').textContent !== ''")
        await asyncio.sleep(0.5)
        assert not (await page.inner_text("#status")).startswith("Sent")
        await client.aclose()
        await page.screenshot(path=shot("table-finished"), full_page=True)


async def test_the_table_resumes_after_its_stream_drops(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    service = await start_service()
    # a clock, for the deadline; no turn runs out here
    created, game_id, tokens = await walk_through(client, service.url, {"turn_seconds": 3600})
    page = await browser.new_page()
    await page.goto(f"{service.url}/play/{game_id}")
    await page.fill("#token-form input[name=token]", tokens[0])  # the token entered in the page
    await page.keyboard.press("Enter")
    await until(
        page, f"document.querySelector('#table').dataset.version === '{created['version']}'"
    )
    assert tokens[0] not in page.url
    assert "Your turn: lead" in await page.inner_text("#turn")
    assert "s left" in await page.inner_text("#deadline")
    seat_view = await client.get(f"{service.url}/games/{game_id}", headers=bearer(tokens[0]))
    offered = commands(msgspec.convert(seat_view.json()["moves"], Moves), ("AS", "10S", "KS"))
    buttons = page.locator("#moves button")
    assert await buttons.count() == len(offered) > 7  # every lead of AS 10S KS, 31, dave...
    labels = [
        await buttons.nth(i).get_attribute("aria-label") or await buttons.nth(i).inner_text()
        for i in range(len(offered))
    ]
    assert "Lead A♠ 10♠: ace of spades and ten of spades" in labels, labels
    assert "Declare 31" in labels
    for i in range(len(offered)):  # WCAG 2.5.3: the spoken name begins with what is shown
        assert labels[i].startswith(await buttons.nth(i).inner_text())

    # The spectator's token opens the same page without a hand: no seat's card is in it.
    watcher = await browser.new_page()
    await watcher.goto(f"{service.url}/play/{game_id}")
    await watcher.fill("#token-form input[name=token]", created["spectator_token"])
    await watcher.keyboard.press("Enter")
    await until(watcher, "document.querySelector('#table').dataset.version !== '0'")
    html = await watcher.content()
    assert "Watching as the spectator" in html
    for card in ("AS", "10S", "KS", "6H", "7H", "8H"):  # both hands (tests/api/conftest.py)
        assert all(spelled not in html for spelled in spellings(card)), card
    assert await watcher.locator("#moves button").count() == 0
    await watcher.close()

    # The server goes away (the stream drops) and comes back on the same address; the page
    # buys a new ticket and resumes after the last version it had.
    port = service.port
    service.stop()
    await until(page, "document.getElementById('status').textContent.includes('reconnecting')")
    service = await start_service(port=port)
    seat, command = FIRST_TRICK[0]
    sent = await client.post(
        f"{service.url}/games/{game_id}/commands", json=command, headers=bearer(tokens[seat])
    )
    assert sent.status_code == 200, sent.text
    await until(
        page,
        f"document.querySelector('#table').dataset.version === '{sent.json()['version']}'",
    )
    assert "ann" in await page.inner_text("#trick")  # the lead is on the table
    assert "Waiting for bob to respond" in await page.inner_text("#turn")
    assert await page.locator("#moves button").count() == 0  # nothing is ann's to do
    await page.screenshot(path=shot("table-resumed"), full_page=True)


async def record_with_findings(client: httpx.AsyncClient, base: str) -> tuple[str, list[str]]:
    """A game of two deals: seat 1 draws out of turn in the first, and the leader of the
    second declares 31 with no trick taken; every command names the version it saw."""
    _, game_id, tokens = await walk_through(client, base, {"match_target": 2})

    async def play(seat: int, command: dict[str, Any], request: str) -> None:
        seen = (await client.get(f"{base}/games/{game_id}", headers=bearer(tokens[seat]))).json()
        headers = {**bearer(tokens[seat]), "X-Request-ID": request}
        sent = await client.post(
            f"{base}/games/{game_id}/commands",
            json={**command, "seen": seen["version"]},
            headers=headers,
        )
        assert sent.status_code == 200, sent.text

    for i, (seat, command) in enumerate(FIRST_TRICK):
        await play(seat, command, f"trick-{i}")
    await play(1, {"type": "draw"}, "bob-draws-out-of-turn")
    table = (await client.get(f"{base}/games/{game_id}", headers=OPERATOR)).json()
    await play(table["turn"], {"type": "declare", "claim": "thirty_one"}, "false-thirty-one")
    return game_id, tokens


async def test_the_arbiter_steps_to_a_finding_and_sees_it_as_a_seat_did(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    service = await start_service()
    game_id, _ = await record_with_findings(client, service.url)
    audit = (await client.get(f"{service.url}/games/{game_id}/audit", headers=OPERATOR)).json()
    draw, claim = audit["findings"]
    assert (draw["rule"], claim["rule"]) == ("out_of_turn_draw", "false_declaration")

    page = await browser.new_page()
    await page.goto(f"{service.url}/arbiter/games/{game_id}")
    await page.fill("#key-form input[name=key]", OPERATOR_KEY)
    await page.click("#key-form button")
    await page.wait_for_selector("#steps")
    assert OPERATOR_KEY not in page.url
    assert await page.evaluate("sessionStorage.getItem('bura-operator-key')") == OPERATOR_KEY

    # Both findings are marked on the timeline; step to the out-of-turn draw.
    assert await page.locator("#timeline li.finding").count() >= 4  # act and verdict each
    act = draw["versions"][0]
    await page.click(f"#v{act} button")
    await until(page, f"document.querySelector('#arbiter').dataset.version === '{act}'")
    assert await page.get_attribute(f"#v{act}", "aria-current") == "step"
    evidence = await page.inner_text("#finding-0")
    assert "docs/rules.md §4" in evidence
    assert "seat 0 (ann) to draw" in evidence  # what the table was waiting for
    assert f"{draw['seen']}" in evidence and "bob-draws-out-of-turn" in evidence
    taken = draw["cards"][0]
    assert await page.locator(f'#finding-0 [aria-label="{card_name(taken)}"]').count() == 1
    # the table at that version: every hand, the stock in order, the piles with points
    assert await page.locator("#stock .card").count() == draw["stock_count"] - 1
    assert "25 points" in await page.inner_text("#table")
    await page.screenshot(path=shot("arbiter-finding"), full_page=True)
    await page.click("#next")
    await until(page, f"document.querySelector('#arbiter').dataset.version === '{act + 1}'")
    await page.click("#previous")
    await until(page, f"document.querySelector('#arbiter').dataset.version === '{act}'")
    await page.locator("#slider").fill("5")  # the slider moves through versions too
    await until(page, "document.querySelector('#arbiter').dataset.version === '5'")
    await page.click(f"#v{act} button")
    await until(page, f"document.querySelector('#arbiter').dataset.version === '{act}'")

    # The false 31 at the lead waits for the leader to lead, not for a draw.
    said = await page.inner_text("#finding-1")
    leader = claim["seat"]
    assert "to lead" in said and "to draw" not in said, said
    assert "docs/rules.md §5" in said and "had 0, needed 31" in said
    assert f"seat {leader}" in said

    # As ann saw it: the card bob took, his hand and the stock are nowhere in the page.
    await page.select_option("#perspective", "0")
    await until(page, "document.querySelector('#arbiter').dataset.viewer === '0'")
    html, version = await dom_and_version(page, "#arbiter")
    assert version == act
    replay = await client.get(
        f"{service.url}/games/{game_id}/replay", params={"version": act}, headers=OPERATOR
    )
    table = replay.json()["view"]
    hidden = set(table["seats"][1]["hand"]) | set(table["stock"][:-1])
    assert taken in hidden
    for c in hidden:
        for spelled in spellings(c):
            assert spelled not in html, (c, spelled)
    await page.screenshot(path=shot("arbiter-as-seat-0"), full_page=True)

    # The print style sheet keeps the findings and drops the controls and the timeline.
    await page.emulate_media(media="print")
    assert not await page.locator("#timeline").is_visible()
    assert await page.locator("#findings").is_visible()
    await page.emulate_media(media="screen")

    # The fairness check of each deal.
    await page.select_option("#perspective", "arbiter")
    await until(page, "document.querySelector('#arbiter').dataset.viewer === 'arbiter'")
    fairness = await page.inner_text("#fairness")
    assert fairness.count("verified") >= 2 and "MISMATCH" not in fairness


async def test_the_arbiter_page_reads_without_javascript(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    service = await start_service()
    game_id, _ = await record_with_findings(client, service.url)
    context = await browser.new_context(java_script_enabled=False)
    page = await context.new_page()
    await page.goto(f"{service.url}/arbiter/games/{game_id}")
    await page.fill("#key-form input[name=key]", OPERATOR_KEY)
    await page.click("#key-form button")  # a form POST: the key in the body
    await page.wait_for_selector("#timeline li")
    assert OPERATOR_KEY not in page.url
    assert await page.locator("#table .hand .card").count() > 0
    # Stepping works with the page's own forms.
    await page.click("#previous")
    last = await page.get_attribute("#arbiter", "data-last")
    assert await page.get_attribute("#arbiter", "data-version") == str(int(last or 0) - 1)
    # The printable summary of a finding.
    await page.click("#finding-0 button.print")
    await page.wait_for_selector("#printable")
    assert "out_of_turn_draw" in await page.inner_text("#printable")
    await page.screenshot(path=shot("arbiter-print-no-js"), full_page=True)
    await context.close()


async def test_a_seat_sees_an_open_hand_and_counts_down_on_the_servers_clock(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """«На открытых»: the open seat's hand is on the table for everyone, and the page draws
    it (it showed only a count). The deadline counts down on the server's time: a browser
    whose clock runs two minutes fast still shows the turn's time left (it showed 0 s)."""
    service = await start_service()
    _, game_id, tokens = await walk_through(
        client, service.url, {"open_seats": [1], "compensation": 5, "turn_seconds": 60}
    )
    seen = (await client.get(f"{service.url}/games/{game_id}", headers=bearer(tokens[0]))).json()
    bobs = seen["seats"][1]["hand"]
    assert bobs and seen["seats"][1]["open"]

    page = await browser.new_page()
    await page.clock.set_system_time(time.time() + 120)  # this browser's clock runs fast
    await page.goto(f"{service.url}/play/{game_id}#seat={tokens[0]}")
    await until(page, "document.querySelector('#table').dataset.version !== '0'")

    seats = await page.inner_html("#seats")
    assert "plays open" in seats
    for card in bobs:
        assert f'data-card="{card}"' in seats, card
    left = await page.inner_text("#deadline")
    seconds = int(left.rsplit("(", 1)[1].split(" s left", 1)[0])
    assert 30 <= seconds <= 60, left


async def test_the_arbiter_steps_by_keyboard_and_after_a_late_script(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """Enter on a step button steps again and again: the focus stays on that control of the
    new record (it fell to the body at every step). And a page whose script came after its
    key's form had posted (the record rendered with the key carried in its form) steps on
    once the script runs (every button did nothing: the tab held no key)."""
    service = await start_service()
    game_id, _ = await record_with_findings(client, service.url)
    page = await browser.new_page()
    script = asyncio.Event()

    async def late(route: Any) -> None:
        await script.wait()
        await route.continue_()

    await page.route("**/pages/static/arbiter.js", late)
    await page.goto(f"{service.url}/arbiter/games/{game_id}", wait_until="commit")
    await page.fill("#key-form input[name=key]", OPERATOR_KEY)
    async with page.expect_navigation(wait_until="commit"):
        await page.click("#key-form button", no_wait_after=True)  # no script: the form posts
    await page.wait_for_selector("#steps")
    shown = int(await page.get_attribute("#arbiter", "data-version") or 0)
    script.set()
    await until(page, "document.querySelector('#steps input[name=key]') === null")
    assert OPERATOR_KEY not in page.url

    await page.focus("#previous")
    for step in (1, 2, 3):
        await page.keyboard.press("Enter")
        await until(
            page, f"document.querySelector('#arbiter').dataset.version === '{shown - step}'"
        )
        assert await page.evaluate("document.activeElement.id") == "previous"


async def test_the_arbiter_page_follows_a_game_that_goes_on(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """The record of a game in progress follows it: at the last version the page moves on
    to each version the game reaches; stepping through the past, it stays and says which
    version is the latest, with a button to it; the game's end closes the stream."""
    service = await start_service()
    _, game_id, tokens = await walk_through(client, service.url)

    async def play(seat: int, command: dict[str, Any]) -> int:
        sent = await client.post(
            f"{service.url}/games/{game_id}/commands", json=command, headers=bearer(tokens[seat])
        )
        assert sent.status_code == 200, sent.text
        version: int = sent.json()["version"]
        return version

    page = await browser.new_page()
    await page.goto(f"{service.url}/arbiter/games/{game_id}")
    await page.fill("#key-form input[name=key]", OPERATOR_KEY)
    await page.click("#key-form button")
    await page.wait_for_selector("#steps")
    here = "document.querySelector('#arbiter').dataset"

    (seat, command), *rest = FIRST_TRICK
    reached = await play(seat, command)
    await until(page, f"{here}.version === '{reached}' && {here}.last === '{reached}'")
    assert await page.locator("#live").count() == 0

    await page.click("#previous")
    stayed = reached - 1
    await until(page, f"{here}.version === '{stayed}'")
    for seat, command in rest:
        reached = await play(seat, command)
    await until(page, "document.querySelector('#live') !== null")
    await until(page, f"document.querySelector('#live').textContent.includes('version {reached} ')")
    assert await page.evaluate(f"{here}.version") == str(stayed)
    await page.click("#live button")
    await until(page, f"{here}.version === '{reached}' && {here}.last === '{reached}'")
    assert await page.locator("#live").count() == 0

    ended = await play(0, {"type": "concede"})
    await until(page, f"{here}.version === '{ended}' && {here}.over === 'true'")


async def test_a_token_no_header_can_carry_is_refused_in_the_page(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """A token typed in another keyboard layout is not a token: the page says so and asks
    again (it was sent, failed as a dropped connection, and retried for ever)."""
    service = await start_service()
    created, _, _ = await walk_through(client, service.url)
    page = await browser.new_page()
    await page.goto(f"{service.url}/play/{created['game_id']}#seat=токен")
    await until(page, "!document.getElementById('token-form').hidden")
    assert "not a seat's token" in await page.inner_text("#status")
    assert await page.evaluate(f"sessionStorage.getItem('bura-seat-{created['game_id']}')") is None


async def test_the_table_tells_a_dave_offered_and_how_the_last_deal_ended(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """The page said only "answer the dave", and jumped to the next deal without a word on
    the last one: it now says who offers the dave and what the deal counts, and how the
    last deal ended."""
    service = await start_service()
    _, game_id, tokens = await walk_through(client, service.url, {"match_target": 2})
    page = await browser.new_page()
    await page.goto(f"{service.url}/play/{game_id}#seat={tokens[1]}")
    await until(page, "document.querySelector('#table').dataset.version !== '0'")

    url = f"{service.url}/games/{game_id}/commands"
    offered = await client.post(url, json={"type": "dave"}, headers=bearer(tokens[0]))
    assert offered.status_code == 200, offered.text
    await until(page, "document.getElementById('dave') !== null")
    assert "ann offers to double it" in await page.inner_text("#dave")
    assert "×1" in await page.inner_text("#dave")

    declined = await client.post(
        url, json={"type": "dave_answer", "accept": False}, headers=bearer(tokens[1])
    )
    assert declined.status_code == 200, declined.text
    await until(page, "document.getElementById('last-deal') !== null")
    said = await page.inner_text("#last-deal")
    assert said.startswith("Deal 1: won by ann (you declined the dave)") and "stake 1" in said, said


def console_errors(page: Any) -> list[str]:
    """Every error the page logs from now on (a failed request for /favicon.ico is one)."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


async def test_both_pages_keep_a_clean_console_and_the_record_fits_a_phone(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """No /favicon.ico 404 in the console of either page; at 390 px wide the arbiter's
    record does not scroll sideways; its links fetch the API's audit and bundle with the key
    in a header, never in the address."""
    service = await start_service()
    game_id, tokens = await record_with_findings(client, service.url)
    context = await browser.new_context(viewport={"width": 390, "height": 844})
    page = await context.new_page()
    errors = console_errors(page)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    await page.goto(f"{service.url}/arbiter/games/{game_id}")
    await page.fill("#key-form input[name=key]", OPERATOR_KEY)
    await page.click("#key-form button")
    await page.wait_for_selector("#steps")
    # the record opens at its top, the table first: the timeline's current step is shown
    # within the timeline's own scroll, not by scrolling the window down to it
    await page.wait_for_timeout(200)
    assert await page.evaluate("window.scrollY") == 0
    await page.click("#timeline li.finding button")  # a finding's evidence, at its version
    await until(page, "document.querySelector('#finding-0 .evidence') !== null")
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, width
    await page.screenshot(path=shot("arbiter-390px"), full_page=True)

    async with page.expect_download() as fetched:
        await page.click("#downloads a[href$='/audit']")
    audit = msgspec.json.decode(Path(await (await fetched.value).path()).read_bytes())
    assert [f["rule"] for f in audit["findings"]] == ["out_of_turn_draw", "false_declaration"]
    async with page.expect_download() as fetched:
        await page.click("#downloads a[href$='/bundle']")
    assert (await fetched.value).suggested_filename == f"bura-{game_id}.json"
    assert all(OPERATOR_KEY not in url for url in asked)

    await page.emulate_media(media="print")
    assert not await page.locator("#findings button").first.is_visible()
    await page.emulate_media(media="screen")

    table = await context.new_page()
    errors_at_table = console_errors(table)
    await table.goto(f"{service.url}/play/{game_id}#seat={tokens[0]}")
    await until(table, "document.querySelector('#table').dataset.version !== '0'")
    await table.wait_for_timeout(300)
    assert errors == [] and errors_at_table == [], (errors, errors_at_table)
    await context.close()


async def played_out(client: httpx.AsyncClient, base: str, rules: dict[str, Any]) -> str:
    """A game of ann and bob played to its end through the API, each seat sending the first
    command its view offers (a whole deal: trick piles of many cards)."""
    body = {"seats": [{"name": "ann"}, {"name": "bob"}], "rules": rules}
    answer = await client.post(f"{base}/games", json=body, headers=OPERATOR)
    assert answer.status_code == 201, answer.text
    game_id, tokens = answer.json()["game_id"], [s["token"] for s in answer.json()["seats"]]
    for _ in range(400):
        views = [
            (await client.get(f"{base}/games/{game_id}", headers=bearer(t))).json() for t in tokens
        ]
        if views[0]["status"] == "finished":
            return game_id
        offers = [
            commands(msgspec.convert(v["moves"], Moves), v["hand"] or ()) if v["moves"] else []
            for v in views
        ]
        seat = next((s for s, o in enumerate(offers) if o), None)
        if seat is None:  # the server is dealing
            await asyncio.sleep(0.05)
            continue
        # a seed of the seat's own (the seats' shuffle): 64 hex digits, as the page's are
        offered = [Seed(uuid.uuid4().hex * 2) if isinstance(c, Seed) else c for c in offers[seat]]
        sent = await client.post(
            f"{base}/games/{game_id}/commands",
            content=msgspec.json.encode(offered[0]),
            headers={
                **bearer(tokens[seat]),
                "Content-Type": "application/json",
                # keys as long as a client's (a UUID and a prefix): the timeline shows them
                "Idempotency-Key": f"command-{uuid.uuid4().hex}",
            },
        )
        assert sent.status_code == 200, sent.text
    raise AssertionError("the game did not end in 400 commands")


async def test_a_played_out_deal_fits_a_phone(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """The table of a game's last version, its trick piles long, stays within 390 px: the
    record's column shrinks and the timeline's words of 64 hex digits (the seats' seeds)
    break (the whole page was about 610 px wide)."""
    service = await start_service()
    game_id = await played_out(client, service.url, {"match_target": 1, "shuffle": "seats"})
    context = await browser.new_context(viewport={"width": 390, "height": 844})
    page = await context.new_page()
    await page.goto(f"{service.url}/arbiter/games/{game_id}")
    await page.fill("#key-form input[name=key]", OPERATOR_KEY)
    await page.click("#key-form button")
    await page.wait_for_selector("#steps")
    piles = await page.locator("#table tbody td:nth-child(3) .card").count()
    assert piles >= 12, piles
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, width
    await page.screenshot(path=shot("arbiter-390px-played-out"), full_page=True)
    await context.close()


def stacked(front: list[str], size: int = 36) -> list[str]:
    """A whole pack whose first cards are `front` (dealt one at a time from seat 0 when
    seat 1 of two deals; the next card is turned for trump), the rest in a fixed order."""
    ranks = (
        ["6", "7", "8", "9", "10", "J", "Q", "K", "A"]
        if size == 36
        else ["2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A"]
    )
    return front + [r + suit for suit in "SHDC" for r in ranks if r + suit not in front]


async def test_the_table_says_a_pot_owed_the_teams_and_a_combination_led(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """What the view has of the variants is on the seat's page: the pot a false 31 owes
    in the deal on the table (pay-the-pot), who plays with whom and toward what (teams),
    and which combination was led (the Czech game): each was left out."""
    service = await start_service()
    base = service.url

    async def table(rules: dict[str, Any], names: str, deck: list[str]) -> list[str]:
        body = {"seats": [{"name": n} for n in names.split()], "rules": rules, "dealer": 1}
        answer = await client.post(f"{base}/games", json={**body, "deck": deck}, headers=OPERATOR)
        assert answer.status_code == 201, answer.text
        made = answer.json()
        return [made["game_id"], *(s["token"] for s in made["seats"])]

    async def page_of(game_id: str, token: str) -> Any:
        page = await browser.new_page()
        await page.goto(f"{base}/play/{game_id}#seat={token}")
        await until(page, "document.querySelector('#table').dataset.version !== '0'")
        return page

    async def send(game_id: str, token: str, command: dict[str, Any]) -> None:
        sent = await client.post(
            f"{base}/games/{game_id}/commands", json=command, headers=bearer(token)
        )
        assert sent.status_code == 200, sent.text

    # pay-the-pot: ann's false 31 (18 points) owes a stake of 3 to bob, and she keeps the turn
    pot_rules = {"closed_discard": True, "false_declaration": "pay_pot", "stake": 3}
    game_id, ann, _ = await table(
        pot_rules, "ann bob", stacked(["AS", "7H", "KS", "8H", "QS", "9H"])
    )
    await send(game_id, ann, {"type": "declare", "claim": "thirty_one"})
    page = await page_of(game_id, ann)
    await until(page, "document.querySelector('#pot') !== null")
    said = await page.inner_text("#pot")
    assert "ann (you) owes 3 to every other side" in said and "settled with the deal" in said

    # teams: each seat's page says its partner and the team's target
    team_rules = {"deck": 52, "teams": [[0, 2], [1, 3]], "target_points": 41}
    game_id, *tokens = await table(team_rules, "ann bob cid dan", stacked([], 52))
    page = await page_of(game_id, tokens[1])
    said = await page.inner_text("#teams")
    assert "Teams: ann and cid against bob (you) and dan." in said
    assert "You play with dan." in said and "toward 41" in said

    # the Czech game: bob leads three aces out of turn; ann's page says what was led
    czech = stacked(["6S", "AS", "7H", "AH", "8D", "AC"])
    game_id, ann, bob = await table({"combinations": "czech"}, "ann bob", czech)
    page = await page_of(game_id, bob)
    await page.wait_for_selector("#moves button[aria-label^='Lead three aces']")
    await send(game_id, bob, {"type": "lead", "cards": ["AS", "AH", "AC"]})
    page = await page_of(game_id, ann)
    await until(page, "document.querySelector('#trick').textContent.includes('three aces')")
    assert "bob led three aces:" in await page.inner_text("#trick")


async def test_a_declined_dave_is_no_offer_on_the_finished_table_and_reasons_read_as_words(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """The finished page still said "ann offers to double it." after bob declined it, and
    ended on "(dave_declined)" where the last deal's line said "dave declined"."""
    service = await start_service()
    _, game_id, tokens = await walk_through(client, service.url)
    url = f"{service.url}/games/{game_id}/commands"
    assert (await client.post(url, json={"type": "dave"}, headers=bearer(tokens[0]))).is_success
    answer = {"type": "dave_answer", "accept": False}
    assert (await client.post(url, json=answer, headers=bearer(tokens[1]))).is_success
    page = await browser.new_page()
    await page.goto(f"{service.url}/play/{game_id}#seat={tokens[0]}")
    await until(page, "document.querySelector('#table').dataset.status === 'finished'")
    told = await page.inner_text("#table")
    assert "offers to double it" not in told, told
    assert "ann (you) offered to double it; it was not accepted" in await page.inner_text("#dave")
    assert "(dave declined)" in await page.inner_text("#turn")
    assert "_" not in await page.inner_text("#turn")


async def test_open_hands_say_so_and_the_operators_key_sees_hands_that_are_not_open(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """The open seat's own line did not say it plays open nor its compensation; with the
    operator key every hidden hand was labelled "plays open"."""
    service = await start_service()
    _, game_id, tokens = await walk_through(
        client, service.url, {"open_seats": [0], "compensation": 5}
    )
    page = await browser.new_page()
    await page.goto(f"{service.url}/play/{game_id}#seat={tokens[0]}")
    await until(page, "document.querySelector('#table').dataset.version !== '0'")
    mine = await page.inner_text("#seats li.mine")
    assert "plays open" in mine and "5 points of compensation" in mine, mine

    operator = await browser.new_page()
    await operator.goto(f"{service.url}/play/{game_id}#seat={OPERATOR_KEY}")
    await until(operator, "document.querySelector('#table').dataset.version !== '0'")
    ann, bob = [await operator.locator("#seats li").nth(i).inner_text() for i in (0, 1)]
    assert "plays open" in ann and "plays open" not in bob, (ann, bob)
    assert "hand:" in bob and await operator.locator("#seats li >> nth=1 >> .card").count() == 3


async def test_the_table_explains_a_stake_the_pot_cancelled(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """pay_pot: ann's false 31 owed bob a pot of 1, then bob conceded: "won by ann, stake 1"
    and scores of 0 to 0 (the next deal on) now read together, also on a page opened after
    the deal ended (the view's settled deal carries its pot)."""
    service = await start_service()
    _, game_id, tokens = await walk_through(
        client, service.url, {"closed_discard": True, "false_declaration": "pay_pot"}
    )
    page = await browser.new_page()
    await page.goto(f"{service.url}/play/{game_id}#seat={tokens[1]}")
    await until(page, "document.querySelector('#table').dataset.version !== '0'")
    url = f"{service.url}/games/{game_id}/commands"
    for seat, command in (
        (0, {"type": "declare", "claim": "thirty_one"}),
        (0, {"type": "lead", "cards": ["AS"]}),
        (1, {"type": "concede"}),
    ):
        sent = await client.post(url, json=command, headers=bearer(tokens[seat]))
        assert sent.status_code == 200, sent.text
        await until(
            page,
            f"Number(document.querySelector('#table').dataset.version) >= {sent.json()['version']}",
        )
    said = await page.inner_text("#last-deal")
    assert said.startswith("Deal 1: won by ann (you conceded), stake 1.")
    assert "The pot for a false 31: ann owed 1 to every other side" in said, said
    later = await browser.new_page()
    await later.goto(f"{service.url}/play/{game_id}#seat={tokens[1]}")
    await until(later, "document.getElementById('last-deal') !== null")
    assert await later.inner_text("#last-deal") == said


async def test_the_table_says_what_the_others_did_in_a_region_that_stays(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """Whose turn it was, said in a live region made anew with every view, was never
    announced, and the deadline ticked inside it; what the other seat did was not said at
    all. #news stays in the page and says each change once, without the countdown."""
    service = await start_service()
    _, game_id, tokens = await walk_through(client, service.url, {"turn_seconds": 3600})
    page = await browser.new_page()
    await page.goto(f"{service.url}/play/{game_id}#seat={tokens[0]}")
    await until(page, "document.querySelector('#table').dataset.version !== '0'")
    news = await page.query_selector("#news")
    assert await news.get_attribute("aria-live") == "polite"
    assert await news.inner_text() == "Your turn: lead."
    assert await page.get_attribute("#turn", "aria-live") is None  # remade with each view
    assert "s left" in await page.inner_text("#turn")

    url = f"{service.url}/games/{game_id}/commands"
    for seat, command in FIRST_TRICK:
        sent = await client.post(url, json=command, headers=bearer(tokens[seat]))
        assert sent.status_code == 200, sent.text
    await until(page, "document.getElementById('news').textContent.includes('draw')")
    said = await news.inner_text()
    # the answer that ended the trick is told though the trick has left the table
    assert "bob answered with six of hearts and seven of hearts and eight of hearts." in said
    assert "ann (you) took the trick. Your turn: draw." in said, said
    assert "s left" not in said
    assert await news.evaluate("n => n.isConnected")  # the same node, not a new one

    # bob draws out of his turn: the deal (and the game) is lost to a penalty he made
    drawn = await client.post(url, json={"type": "draw"}, headers=bearer(tokens[1]))
    assert drawn.status_code == 200, drawn.text
    await until(page, "document.querySelector('#table').dataset.status === 'finished'")
    said = await news.inner_text()
    assert said == (
        "bob drew a card. Deal 1 is over: won by you (bob drew out of turn). "
        "The game is over: you won (out of turn draw)."
    ), said
    ended = "Deal 1: won by you (bob drew out of turn), stake 1."
    assert await page.inner_text("#last-deal") == ended


async def test_a_second_link_long_names_a_refused_token_and_a_game_nobody_holds(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """Another seat's `#seat=` link in the same tab changed the fragment only: the page
    stayed the first seat's, with the second token in the address bar. Names of 64
    characters without a space widened a phone's page (830 px of 390). A refused token left
    the focus nowhere. A stale link showed a browser raw JSON."""
    service = await start_service()
    long = ["A" * 64, "Б" * 64]
    answer = await client.post(
        f"{service.url}/games",
        json={"seats": [{"name": n} for n in long], "dealer": 1},
        headers=OPERATOR,
    )
    assert answer.status_code == 201, answer.text
    game_id = answer.json()["game_id"]
    tokens = [s["token"] for s in answer.json()["seats"]]
    phone = await browser.new_page(viewport={"width": 390, "height": 844})
    await phone.goto(f"{service.url}/play/{game_id}#seat={tokens[0]}")
    await until(phone, "document.querySelector('#table').dataset.version !== '0'")
    assert await phone.evaluate("document.documentElement.scrollWidth") <= 390
    assert "seat 0" in await phone.inner_text("#table h2")

    await phone.evaluate(f"location.hash = 'seat={tokens[1]}'")
    await until(phone, "document.querySelector('#table h2')?.textContent.includes('seat 1')")
    assert "seat=" not in phone.url and tokens[1] not in phone.url
    assert await phone.evaluate("document.documentElement.scrollWidth") <= 390

    await phone.evaluate("location.hash = 'seat=not.a-token'")
    await until(phone, "!document.getElementById('token-form').hidden")
    assert await phone.evaluate("document.activeElement.name") == "token"
    assert "does not open a seat" in await phone.inner_text("#status")

    # the arbiter's record of the same table fits the phone; the key opens it with the
    # focus on its first control
    arbiter = await browser.new_page(viewport={"width": 390, "height": 844})
    await arbiter.goto(f"{service.url}/arbiter/games/{game_id}")
    await arbiter.fill("#key-form input[name=key]", "not the key")
    await arbiter.keyboard.press("Enter")
    await until(arbiter, "document.querySelector('#key-form .problem') !== null")
    assert await arbiter.evaluate("document.activeElement.name") == "key"
    await arbiter.keyboard.type(OPERATOR_KEY)
    await arbiter.keyboard.press("Enter")
    await arbiter.wait_for_selector("#steps")
    assert await arbiter.evaluate("document.activeElement.id") == "previous"
    assert await arbiter.evaluate("document.documentElement.scrollWidth") <= 390
    assert "in progress" in await arbiter.inner_text("#table")

    gone = await phone.goto(f"{service.url}/play/no-such-game")
    assert gone is not None and gone.status == 404
    assert gone.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in gone.headers["content-security-policy"]
    assert "holds no game with that id" in await phone.inner_text("main")


async def test_the_table_finds_a_stream_gone_silent_and_catches_up(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """A connection that goes silent without closing (a network that holds it) said
    nothing to the page, which showed "Connected." and an old table for as long as it
    lasted. Quiet for two keep-alive periods, the page reads the view; the read gets no
    answer either, so it leaves the stream for a new one, and catches up once the network
    lets it through."""
    service = await start_service(BURA_SSE_KEEPALIVE_SECONDS="1")
    _, game_id, tokens = await walk_through(client, service.url)
    proxy = Proxy.before(service.url).start()
    try:
        page = await browser.new_page()
        await page.goto(f"{proxy.via(service.url)}/play/{game_id}#seat={tokens[1]}")
        await until(page, "document.querySelector('#table').dataset.version !== '0'")
        before = int(await page.get_attribute("#table", "data-version"))
        proxy.pause()  # every byte held, no connection closed
        seat, command = FIRST_TRICK[0]
        sent = await client.post(
            f"{service.url}/games/{game_id}/commands", json=command, headers=bearer(tokens[seat])
        )
        assert sent.status_code == 200, sent.text
        await until(page, "document.getElementById('status').textContent.includes('reconnecting')")
        proxy.resume()
        await until(page, f"Number(document.querySelector('#table').dataset.version) > {before}")
        assert "Your turn: respond." in await page.inner_text("#turn")
    finally:
        proxy.close()


async def test_the_news_tells_declarations_double_draws_and_no_dealing_as_drawing(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """A false 31 that leaves the deal going on (pay-the-pot) was never told; a double draw
    was told as one card drawn; the next deal's dealing was told as seats drawing."""
    service = await start_service()
    rules = {"closed_discard": True, "false_declaration": "pay_pot", "match_target": 5}
    _, game_id, tokens = await walk_through(client, service.url, rules)
    page = await browser.new_page()
    await page.goto(f"{service.url}/play/{game_id}#seat={tokens[1]}")
    await until(page, "document.querySelector('#table').dataset.version !== '0'")
    url = f"{service.url}/games/{game_id}/commands"
    steps = [(0, {"type": "declare", "claim": "thirty_one"}), *FIRST_TRICK]
    steps.append((0, {"type": "draw", "count": 2}))  # ann, due to draw, takes two at once
    for seat, command in steps:
        sent = await client.post(url, json=command, headers=bearer(tokens[seat]))
        assert sent.status_code == 200, sent.text
        if command["type"] == "declare":
            await until(page, "document.getElementById('news').textContent.includes('falsely')")
            said = await page.inner_text("#news")
            assert said.startswith("ann declared 31, falsely."), said
    await until(page, "document.querySelector('#table h2').textContent.includes('Deal 2')")
    said = await page.inner_text("#news")
    assert "ann drew 2 cards." in said, said
    assert "Deal 1 is over: won by you (ann drew two cards at once)." in said, said
    dealt = said.split("Deal 1 is over", 1)[1]
    assert "drew" not in dealt.replace("drew two cards at once", ""), said


async def test_the_table_shows_the_seeds_deadline_and_a_paused_clock(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    service = await start_service()
    seeding = {"seats": [{"name": "ann"}, {"name": "bob"}]}
    seeding["rules"] = {"shuffle": "seats", "seeding_seconds": 40}  # type: ignore[assignment]
    made = await client.post(f"{service.url}/games", json=seeding, headers=OPERATOR)
    assert made.status_code == 201, made.text
    page = await browser.new_page()
    await page.goto(
        f"{service.url}/play/{made.json()['game_id']}#seat={made.json()['seats'][0]['token']}"
    )
    await until(page, "document.querySelector('#turn') !== null")
    turn = await page.inner_text("#turn")
    assert "send your seed" in turn and "Deadline:" in turn and "s left" in turn, turn

    rules = {"turn_seconds": 1, "on_timeout": "pause"}
    _, game_id, tokens = await walk_through(client, service.url, rules)
    await page.goto(f"{service.url}/play/{game_id}#seat={tokens[1]}")
    await until(page, "(document.querySelector('#turn')?.textContent || '').includes('paused')")
    turn = await page.inner_text("#turn")
    assert "The clock is paused: the table waits for the operator's ruling" in turn, turn


async def test_a_second_link_at_once_leaves_no_stream_of_the_first_seat(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """Two `#seat=` links a moment apart: the first seat's connect, still buying its
    ticket, opened its stream anyway, and the page drew whichever seat's view came last."""
    service = await start_service()
    _, game_id, tokens = await walk_through(client, service.url)
    page = await browser.new_page()
    await page.goto(f"{service.url}/play/{game_id}")
    await page.evaluate(
        f"() => {{ location.hash = 'seat={tokens[0]}'; "
        f"setTimeout(() => {{ location.hash = 'seat={tokens[1]}'; }}, 0); }}"
    )
    await until(page, "(document.querySelector('#table h2')?.textContent || '').includes('bob')")
    url = f"{service.url}/games/{game_id}/commands"
    for seat, command in FIRST_TRICK:
        sent = await client.post(url, json=command, headers=bearer(tokens[seat]))
        assert sent.status_code == 200, sent.text
        version = sent.json()["version"]
        await until(page, f"Number(document.querySelector('#table').dataset.version) >= {version}")
        await asyncio.sleep(0.5)  # a stream of ann's would have drawn her view by now
        heading = await page.inner_text("#table h2")
        assert heading.startswith("You are bob"), heading


async def test_a_team_game_names_the_seat_that_lost_the_deal_not_its_whole_team(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """In a team game `losers` is a whole team: the page said "bob and dan drew with a full
    hand" for bob's draw. The deal's `by` names bob alone."""
    service = await start_service()
    names = ["ann", "bob", "cy", "dan"]
    created = await client.post(
        f"{service.url}/games",
        json={
            "seats": [{"name": n} for n in names],
            "rules": {"deck": 52, "teams": [[0, 2], [1, 3]], "match_target": 5},
        },
        headers=OPERATOR,
    )
    assert created.status_code == 201, created.text
    game_id, tokens = created.json()["game_id"], [s["token"] for s in created.json()["seats"]]
    page = await browser.new_page()
    await page.goto(f"{service.url}/play/{game_id}#seat={tokens[0]}")
    await until(page, "document.querySelector('#table').dataset.version !== '0'")
    url = f"{service.url}/games/{game_id}/commands"
    drawn = await client.post(url, json={"type": "draw"}, headers=bearer(tokens[1]))
    assert drawn.status_code == 200, drawn.text
    view = (await client.get(f"{service.url}/games/{game_id}", headers=bearer(tokens[0]))).json()
    ended = view["deals"][0]
    assert (ended["losers"], ended["by"]) == ([1, 3], 1), ended
    await until(page, "document.getElementById('news').textContent.includes('Deal 1 is over')")
    said = await page.inner_text("#news")
    sentence = f"Deal 1 is over: won by you and cy (bob {BY_LOSER[ended['reason']]})."
    assert sentence in said, said
    # The next deal's prompt may follow ("Waiting for dan to lead."): only the deal's own
    # sentence must not name bob's partner.
    over = said[said.index("Deal 1 is over") :]
    assert "dan" not in over[: over.index(").") + 2], said


BY_LOSER = {"extra_card": "drew with a full hand", "out_of_turn_draw": "drew out of turn"}


async def test_the_table_says_the_server_played_for_a_seat_that_ran_out_of_time(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """With `auto_play`, the server's move for a seat out of time was told as the seat's
    own ("ann (you) led ..."): the timeout before it is told first."""
    service = await start_service()
    rules = {"turn_seconds": 4, "on_timeout": "auto_play"}  # time enough to open both pages
    _, game_id, tokens = await walk_through(client, service.url, rules)
    ann, bob = await browser.new_page(), await browser.new_page()
    await ann.goto(f"{service.url}/play/{game_id}#seat={tokens[0]}")
    await bob.goto(f"{service.url}/play/{game_id}#seat={tokens[1]}")
    for page in (ann, bob):
        await until(page, "document.getElementById('news').textContent.includes(' led ')")
    said = await ann.inner_text("#news")
    assert "You ran out of time: the server plays for you. ann (you) led" in said, said
    said = await bob.inner_text("#news")
    assert "ann ran out of time: the server plays for ann. ann led" in said, said


async def test_a_refused_command_leaves_the_news_told(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    """A command the table moved past is refused (409 table_changed); the page said so and
    then wrote #news again with nothing but whose turn it is, wiping what had just been
    told there (what the other tab, or the other seat, did)."""
    service = await start_service()
    _, game_id, tokens = await walk_through(client, service.url)
    url = f"{service.url}/games/{game_id}/commands"
    for seat, command in FIRST_TRICK:
        sent = await client.post(url, json=command, headers=bearer(tokens[seat]))
        assert sent.status_code == 200, sent.text
    page = await browser.new_page()
    await page.goto(f"{service.url}/play/{game_id}#seat={tokens[0]}")
    await until(page, "document.getElementById('news').textContent.includes('Your turn: draw')")

    async def drawn_elsewhere_first(route: Any) -> None:
        # ann draws from another tab while this tab's draw is on its way
        other = await client.post(url, json={"type": "draw"}, headers=bearer(tokens[0]))
        assert other.status_code == 200, other.text
        await until(page, "document.getElementById('news').textContent.includes('You drew')")
        await route.continue_()

    await page.route("**/commands", drawn_elsewhere_first)
    await page.locator("#moves button", has_text="Draw a card").click()
    await until(page, "document.getElementById('status').textContent.startsWith('Refused')")
    assert "the game is at version" in await page.inner_text("#status")
    said = await page.inner_text("#news")
    assert said.startswith("You drew ") and said.endswith("Waiting for bob to draw."), said
