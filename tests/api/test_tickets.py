"""Stream tickets: any token of a game buys a ticket that opens one stream of that game, as
the token's viewer, once, within BURA_STREAM_TICKET_SECONDS. A browser opening one from
another origin allowed by CORS: tests/e2e/test_browser.py."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator

import pytest

from services.bootstrap import Adapters
from services.config import Settings
from services.http.app import create_app
from tests.api.conftest import OPERATOR, OPERATOR_KEY, THIRTY_ONE_GAME, Api, Table, serving

# Real receivers, timers, documents or whole games per case: left out of make test-fast.
pytestmark = pytest.mark.slow


async def finished(api: Api) -> Table:
    table = await api.create()
    for seat, command in THIRTY_ONE_GAME:
        await api.play(table, seat, command)
    return table


async def ticket(api: Api, table: Table, headers: dict[str, str]) -> dict[str, object]:
    answer = await api.client.post(f"/games/{table.game_id}/stream-tickets", headers=headers)
    assert answer.status_code == 201, answer.text
    body: dict[str, object] = answer.json()
    return body


async def test_a_ticket_opens_the_stream_as_its_viewer_once(api: Api) -> None:
    table = await finished(api)  # a finished game's stream ends by itself
    given = await ticket(api, table, table.seat(1))
    assert given["expires_in"] == 30
    assert given["stream"] == f"/games/{table.game_id}/stream?ticket={given['ticket']}"
    opened = await api.client.get(str(given["stream"]))
    assert opened.status_code == 200
    assert opened.headers["content-type"].startswith("text/event-stream")
    assert '"viewer":"seat","seat":1' in opened.text and "event: end" in opened.text
    again = await api.client.get(str(given["stream"]))
    assert again.status_code == 401 and again.json()["code"] == "stream_ticket_invalid"
    assert again.headers["www-authenticate"].startswith("Bearer")


async def test_every_role_may_buy_one_and_sees_what_it_may(api: Api) -> None:
    table = await finished(api)
    for headers, viewer in ((table.watcher, "spectator"), (OPERATOR, "arbiter")):
        given = await ticket(api, table, headers)
        opened = await api.client.get(str(given["stream"]))
        assert f'"viewer":"{viewer}"' in opened.text


async def test_a_ticket_opens_no_other_game_and_is_spent_trying(api: Api) -> None:
    one, other = await finished(api), await finished(api)
    given = await ticket(api, one, one.seat(0))
    wrong = await api.client.get(
        f"/games/{other.game_id}/stream", params={"ticket": given["ticket"]}
    )
    assert wrong.status_code == 401 and "another game" in wrong.json()["detail"]
    right = await api.client.get(str(given["stream"]))
    assert right.status_code == 401  # shown to the wrong URL, it is spent


async def test_with_a_ticket_the_ticket_alone_says_who_watches(api: Api) -> None:
    """An Authorization sent beside `?ticket=` is not read: the spectator's ticket opens
    the spectator's stream, whichever token goes with it, and a good token does not save a
    spent ticket."""
    table = await finished(api)
    given = await ticket(api, table, table.watcher)
    opened = await api.client.get(str(given["stream"]), headers=table.seat(0))
    assert opened.status_code == 200 and '"viewer":"spectator"' in opened.text
    assert '"viewer":"seat"' not in opened.text
    spent = await api.client.get(str(given["stream"]), headers=OPERATOR)
    assert spent.status_code == 401 and spent.json()["code"] == "stream_ticket_invalid"


async def test_a_made_up_ticket_and_no_token_are_refused(api: Api) -> None:
    table = await finished(api)
    made_up = await api.client.get(f"/games/{table.game_id}/stream", params={"ticket": "st_x"})
    assert made_up.status_code == 401 and made_up.json()["code"] == "stream_ticket_invalid"
    unsold = await api.client.post(f"/games/{table.game_id}/stream-tickets")
    assert unsold.status_code == 401 and unsold.json()["code"] == "unauthorized"
    missing = await api.client.post(f"/games/{'f' * 32}/stream-tickets", headers=OPERATOR)
    assert missing.status_code == 404


@pytest.fixture
async def quick(adapters: Adapters) -> AsyncIterator[Api]:
    app = create_app(
        Settings(operator_key=OPERATOR_KEY, rate_limits=False, stream_ticket_seconds=1), adapters
    )
    async with serving(app) as client:
        yield Api(client, app, adapters)


async def test_an_expired_ticket_is_refused(quick: Api) -> None:
    table = await finished(quick)
    given = await ticket(quick, table, table.seat(0))
    assert given["expires_in"] == 1
    await asyncio.sleep(2.0)  # well past its second
    late = await quick.client.get(str(given["stream"]))
    assert late.status_code == 401 and late.json()["code"] == "stream_ticket_invalid"


async def test_after_resumes_a_stream_opened_without_headers(api: Api) -> None:
    table = await finished(api)
    given = await ticket(api, table, table.seat(0))
    opened = await api.client.get(
        f"/games/{table.game_id}/stream", params={"ticket": given["ticket"], "after": 3}
    )
    assert opened.status_code == 200, opened.text
    ids = [int(line[4:]) for line in opened.text.splitlines() if line.startswith("id: ")]
    assert ids == list(range(4, ids[-1] + 1))  # every version after 3, none twice


async def test_a_request_refused_for_its_own_mistake_leaves_the_ticket_unspent(api: Api) -> None:
    """A bad `after` or Last-Event-ID is refused before the ticket is looked at: the client
    mends the request and opens the stream with the same ticket."""
    table = await finished(api)
    given = await ticket(api, table, table.seat(0))
    for params, headers in (
        ({"after": "-1"}, {}),
        ({"after": "x"}, {}),
        ({"after": str(2**53)}, {}),
        ({}, {"Last-Event-ID": "x"}),
        ({}, {"Last-Event-ID": "1" * 16}),
    ):
        refused = await api.client.get(
            f"/games/{table.game_id}/stream",
            params={"ticket": given["ticket"], **params},
            headers=headers,
        )
        assert refused.status_code == 400, (params, headers, refused.text)
    opened = await api.client.get(str(given["stream"]))
    assert opened.status_code == 200, opened.text
    assert "event: end" in opened.text


async def test_a_tickets_expiry_is_in_milliseconds_as_every_time_in_the_api(api: Api) -> None:
    table = await api.create()
    before = math.floor(time.time() * 1000)
    given = await ticket(api, table, table.seat(0))
    after = math.ceil(time.time() * 1000)  # the server rounds to the nearest millisecond
    assert isinstance(given["expires_at"], int)
    assert before + 30_000 <= given["expires_at"] <= after + 30_000
