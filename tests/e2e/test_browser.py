"""A real browser (headless Chromium): a page served from another origin, allowed by
BURA_CORS_ORIGINS, buys a stream ticket with a seat's token and follows the seat's live
view with EventSource; a ticket used twice, or too late, is refused."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from harness.processes import OPERATOR, bearer
from tests.api.conftest import THIRTY_ONE_DECK, THIRTY_ONE_GAME
from tests.browser import serve_page
from tests.e2e.conftest import StartService

PAGE = """<!DOCTYPE html><html><body><script>
window.seen = []; window.events = [];
window.ticket = async (api, game, token) => {
  const answer = await fetch(`${api}/games/${game}/stream-tickets`,
    {method: "POST", headers: {Authorization: `Bearer ${token}`}});
  return {status: answer.status, body: await answer.json()};
};
window.follow = (api, stream) => new Promise((resolve) => {
  const source = new EventSource(api + stream);
  window.source = source;
  source.addEventListener("view", (message) => {
    const data = JSON.parse(message.data);
    window.seen.push({id: Number(message.lastEventId), version: data.version,
                      viewer: data.view.viewer, seat: data.view.seat, hand: data.view.hand});
    resolve(true);
  });
  source.onerror = () => { window.events.push("error"); resolve(false); };
});
window.answerOf = async (url) => {
  const answer = await fetch(url);
  return {status: answer.status, body: await answer.json(),
          type: answer.headers.get("content-type")};
};
</script></body></html>"""


async def game(client: httpx.AsyncClient, base: str) -> dict[str, Any]:
    body = {"seats": [{"name": "ann"}, {"name": "bob"}], "deck": THIRTY_ONE_DECK, "dealer": 1}
    answer = await client.post(f"{base}/games", json=body, headers=OPERATOR)
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


async def test_a_page_from_an_allowed_origin_follows_a_seat_with_a_ticket(
    start_service: StartService, client: httpx.AsyncClient, browser: Any
) -> None:
    with serve_page(PAGE) as origin, serve_page(PAGE) as stranger:
        service = await start_service(BURA_CORS_ORIGINS=origin, BURA_STREAM_TICKET_SECONDS="2")
        created = await game(client, service.url)
        gid, token = created["game_id"], created["seats"][0]["token"]
        page = await browser.new_page()
        await page.goto(origin)
        bought = await page.evaluate("([a, g, t]) => ticket(a, g, t)", [service.url, gid, token])
        assert bought["status"] == 201, bought
        stream = bought["body"]["stream"]
        assert await page.evaluate("([a, s]) => follow(a, s)", [service.url, stream])
        first = (await page.evaluate("seen"))[0]
        assert first["viewer"] == "seat" and first["seat"] == 0 and len(first["hand"]) == 3

        # The next move shows up in the page.
        seat, command = THIRTY_ONE_GAME[0]
        sent = await client.post(
            f"{service.url}/games/{gid}/commands",
            json=command,
            headers=bearer(created["seats"][seat]["token"]),
        )
        assert sent.status_code == 200, sent.text
        version = sent.json()["version"]
        await page.wait_for_function(f"seen.some(m => m.id === {version})", timeout=20_000)

        # The ticket is spent: using it again is a 401 the page can read (CORS on errors).
        again = await page.evaluate("(u) => answerOf(u)", service.url + stream)
        assert again["status"] == 401 and again["body"]["code"] == "stream_ticket_invalid"
        assert again["type"] == "application/problem+json"
        await page.evaluate("source.close()")

        # A ticket not used in time is refused.
        late = await page.evaluate("([a, g, t]) => ticket(a, g, t)", [service.url, gid, token])
        await asyncio.sleep(3.0)  # past BURA_STREAM_TICKET_SECONDS=2
        expired = await page.evaluate("(u) => answerOf(u)", service.url + late["body"]["stream"])
        assert expired["status"] == 401 and expired["body"]["code"] == "stream_ticket_invalid"

        # A page of an origin not allowed cannot read the API.
        other = await browser.new_page()
        await other.goto(stranger)
        refused = await other.evaluate(
            "([a, g, t]) => ticket(a, g, t).then(() => 'read', () => 'blocked')",
            [service.url, gid, token],
        )
        assert refused == "blocked"
