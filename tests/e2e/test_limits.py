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


async def test_a_quota_far_off_is_counted_in_blocks_and_still_exact_on_one_replica(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    """At 40 commands a token, the counters claim spare numbers from Redis while the quota
    is far off: one replica still counts each command, `r` going 39, 38, ... 0, and
    refuses the 41st; two replicas taking turns never serve more than 40, and refuse at
    most the spares one holds back early (40 // 16 = 2)."""
    wide = {**LIMITS, "BURA_RATE_COMMANDS_PER_TOKEN": "40", "BURA_RATE_COMMANDS_PER_ADDRESS": "0"}
    prefix = f"test-{uuid.uuid4().hex}:"
    one = await start_service(**wide, BURA_REDIS_PREFIX=prefix)
    two = await start_service(**wide, BURA_REDIS_PREFIX=prefix)

    async def send(bases: tuple[str, ...]) -> tuple[list[int], list[str]]:
        game = await create(client, bases[0])
        seats = game["seats"]
        assert isinstance(seats, list)
        bob = bearer(seats[1]["token"])
        statuses, left = [], []
        for n in range(44):
            answer = await client.post(
                f"{bases[n % len(bases)]}/games/{game['game_id']}/commands",
                json={"type": "pass"},
                headers=bob,
            )
            statuses.append(answer.status_code)
            left.append(answer.headers["ratelimit"].split(";")[1])
        return statuses, left

    statuses, left = await send((one.url,))
    assert statuses == [409] * 40 + [429] * 4
    assert left == [f"r={n}" for n in range(39, -1, -1)] + ["r=0"] * 4
    statuses, _ = await send((one.url, two.url))
    served = statuses.count(409)
    assert 38 <= served <= 40 and statuses[:38] == [409] * 38 and set(statuses) == {409, 429}


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
