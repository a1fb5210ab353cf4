"""Two replicas on one Redis share their rate counters and their stream tickets: a token's
quota is spent whichever replica it calls, and a ticket bought on one opens a stream on the
other once, never twice."""

from __future__ import annotations

import uuid

import httpx

from harness.processes import OPERATOR, bearer
from tests.api.conftest import THIRTY_ONE_DECK, THIRTY_ONE_GAME
from tests.e2e.conftest import StartService

LIMITS = {
    "BURA_RATE_LIMITS": "true",
    "BURA_RATE_WINDOW_SECONDS": "60",
    "BURA_RATE_COMMANDS_PER_TOKEN": "4",
    "BURA_RATE_COMMANDS_PER_ADDRESS": "6",
    "BURA_RATE_READS_PER_TOKEN": "1000",
    "BURA_RATE_CREATE_PER_TOKEN": "1000",
    "BURA_RATE_CREATE_PER_ADDRESS": "1000",
}


async def replicas(start_service: StartService, limited: bool = True) -> tuple[str, str]:
    shared = {**(LIMITS if limited else {}), "BURA_REDIS_PREFIX": f"test-{uuid.uuid4().hex}:"}
    one, two = await start_service(**shared), await start_service(**shared)
    return one.url, two.url


async def create(client: httpx.AsyncClient, base: str) -> dict[str, object]:
    body = {"seats": [{"name": "ann"}, {"name": "bob"}], "deck": THIRTY_ONE_DECK, "dealer": 1}
    answer = await client.post(f"{base}/games", json=body, headers=OPERATOR)
    assert answer.status_code == 201, answer.text
    created: dict[str, object] = answer.json()
    return created


async def test_a_tokens_quota_is_shared_by_the_replicas(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    one, two = await replicas(start_service)
    game = await create(client, one)
    seats = game["seats"]
    assert isinstance(seats, list)
    bob = bearer(seats[1]["token"])
    statuses = []
    for n in range(5):
        base = (one, two)[n % 2]
        answer = await client.post(
            f"{base}/games/{game['game_id']}/commands", json={"type": "pass"}, headers=bob
        )
        statuses.append(answer.status_code)
    assert statuses == [409, 409, 409, 409, 429]
    assert int(answer.headers["retry-after"]) > 0
    assert '"commands-token";q=4;w=60' in answer.headers["ratelimit-policy"]
    assert answer.json()["code"] == "rate_limited"


async def test_client_addresses_are_counted_apart_across_the_replicas(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    one, two = await replicas(start_service)
    game = await create(client, one)
    seats = game["seats"]
    assert isinstance(seats, list)
    tokens = [bearer(s["token"]) for s in seats]
    url = f"/games/{game['game_id']}/commands"

    async def send(n: int, address: str) -> int:
        # uvicorn takes the client address from X-Forwarded-For sent by a trusted proxy
        # (127.0.0.1 by default; FORWARDED_ALLOW_IPS names others).
        headers = {**tokens[n % 2], "X-Forwarded-For": address}
        base = (one, two)[n % 2]
        return (await client.post(base + url, json={"type": "pass"}, headers=headers)).status_code

    first = [await send(n, "203.0.113.7") for n in range(7)]
    assert first == [409] * 6 + [429]  # six from this address, on both replicas and tokens
    assert await send(0, "198.51.100.9") == 429  # seat 0's own quota (4) is spent too
    fresh = await create(client, two)
    fresh_seats = fresh["seats"]
    assert isinstance(fresh_seats, list)
    answer = await client.post(
        f"{one}/games/{fresh['game_id']}/commands",
        json={"type": "pass"},
        headers={**bearer(fresh_seats[0]["token"]), "X-Forwarded-For": "198.51.100.9"},
    )
    assert answer.status_code == 409  # another address, another token: not limited


async def test_a_ticket_bought_on_one_replica_opens_a_stream_on_the_other_once(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    one, two = await replicas(start_service, limited=False)
    game = await create(client, one)
    seats = game["seats"]
    assert isinstance(seats, list)
    for seat, command in THIRTY_ONE_GAME:  # finished: its stream ends by itself
        answer = await client.post(
            f"{two}/games/{game['game_id']}/commands",
            json=command,
            headers=bearer(seats[seat]["token"]),
        )
        assert answer.status_code == 200, answer.text
    bought = await client.post(
        f"{one}/games/{game['game_id']}/stream-tickets", headers=bearer(seats[1]["token"])
    )
    assert bought.status_code == 201
    stream = bought.json()["stream"]
    opened = await client.get(two + stream)
    assert opened.status_code == 200 and '"viewer":"seat","seat":1' in opened.text
    for base in (one, two):
        again = await client.get(base + stream)
        assert again.status_code == 401 and again.json()["code"] == "stream_ticket_invalid"
