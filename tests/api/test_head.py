"""HEAD (services/http/head.py): wherever a GET reads, a HEAD answers with the GET's status
and headers and no body; the live streams, which HEAD would open for nothing, stay a 405;
every `Allow` that lists GET lists HEAD, but the streams'."""

from __future__ import annotations

import pytest

from tests.api.conftest import OPERATOR, Api, Table

# Headers that differ between two answers to the same request, whatever it is.
_PER_ANSWER = {"date", "x-request-id", "ratelimit", "ratelimit-policy"}


def _paths(table: Table) -> list[tuple[str, dict[str, str]]]:
    game = f"/games/{table.game_id}"
    return [
        ("/health/live", {}),
        ("/health/ready", {}),
        ("/metrics", {}),
        ("/schema/openapi.json", {}),
        ("/problems/bad_card", {}),
        ("/games", OPERATOR),
        (game, table.seat(0)),
        (game, table.watcher),
        (f"{game}/events?after=2", table.seat(1)),
        (f"{game}/replay?version=3", OPERATOR),
        (f"{game}/audit", OPERATOR),
        (f"{game}/verify", OPERATOR),
        (f"{game}/bundle", OPERATOR),
        (f"/play/{table.game_id}", {}),
        # errors too: what the GET would answer
        (game, {}),  # 401
        ("/games/" + "f" * 32, OPERATOR),  # 404
        (f"{game}/replay?version=999", OPERATOR),  # 404 version_not_found
        (f"{game}/events?after=x", OPERATOR),  # 400
        ("/games", table.seat(0)),  # 403
    ]


async def test_a_head_answers_what_the_get_would_without_its_body(api: Api) -> None:
    table = await api.create()
    for path, headers in _paths(table):
        got = await api.client.get(path, headers=headers)
        head = await api.client.head(path, headers=headers)
        assert head.status_code == got.status_code, (path, head.status_code, got.status_code)
        assert head.content == b"", path
        ignored = _PER_ANSWER | ({"content-length"} if path == "/metrics" else set())
        assert {k: v for k, v in head.headers.items() if k not in ignored} == {
            k: v for k, v in got.headers.items() if k not in ignored
        }, path
        if path != "/metrics":  # the metrics grow with every request, this one's included
            assert int(head.headers["content-length"]) == len(got.content), path


async def test_a_head_changes_nothing(api: Api) -> None:
    table = await api.create()
    before = await api.events(table)
    for _ in range(3):
        assert (await api.client.head(f"/games/{table.game_id}", headers=table.seat(0))).is_success
    assert await api.events(table) == before


@pytest.mark.parametrize("path", ["/games/{game}/stream", "/events"])
async def test_the_live_streams_do_not_open_for_a_head(api: Api, path: str) -> None:
    table = await api.create()
    url = path.format(game=table.game_id)
    answer = await api.client.head(url, headers=OPERATOR)
    assert answer.status_code == 405
    assert answer.headers["allow"] == "GET, OPTIONS"
    assert answer.content == b""


async def test_a_head_does_not_spend_a_stream_ticket(api: Api) -> None:
    table = await api.create()
    sold = await api.client.post(f"/games/{table.game_id}/stream-tickets", headers=table.seat(0))
    ticket = sold.json()["ticket"]
    head = await api.client.head(f"/games/{table.game_id}/stream?ticket={ticket}")
    assert head.status_code == 405
    caller = await api.runtime.tickets.redeem(table.game_id, ticket)  # still good, once
    assert caller.seat == 0


async def test_allow_names_head_wherever_it_names_get(api: Api) -> None:
    table = await api.create()
    game = f"/games/{table.game_id}"
    options = await api.client.options(game)
    assert options.headers["allow"] == "GET, HEAD, OPTIONS"
    refused = await api.client.delete("/games", headers=OPERATOR)
    assert refused.status_code == 405
    assert refused.headers["allow"] == "GET, HEAD, OPTIONS, POST"
    posted = await api.client.post(game, headers=OPERATOR)
    assert posted.status_code == 405 and posted.headers["allow"] == "GET, HEAD, OPTIONS"
    # where there is no GET there is no HEAD, and the streams have GET without it
    commands = await api.client.head(f"{game}/commands", headers=table.seat(0))
    assert commands.status_code == 405 and commands.headers["allow"] == "OPTIONS, POST"
    stream = await api.client.options(f"{game}/stream")
    assert stream.headers["allow"] == "GET, OPTIONS"


async def test_options_names_every_method_of_the_path_and_every_refusal_has_its_id(
    api: Api,
) -> None:
    """A path served by two handlers (`GET /games` lists, `POST /games` creates) answers
    OPTIONS with both, as its 405 does; and an answer given before any route took the
    request (404 no such path, 405 no such method) carries X-Request-ID like every other."""
    for path, allow in (
        ("/games", "GET, HEAD, OPTIONS, POST"),
        ("/webhooks", "GET, HEAD, OPTIONS, POST"),
        ("/games/g1/commands", "OPTIONS, POST"),
        # a fixed path the router takes before /webhooks/{endpoint_id}: not its DELETE
        ("/webhooks/deliveries", "GET, HEAD, OPTIONS"),
        ("/webhooks/config", "DELETE, GET, HEAD, OPTIONS"),
        ("/webhooks/whk1", "DELETE, GET, HEAD, OPTIONS"),
    ):
        options = await api.client.options(path)
        assert options.headers["allow"] == allow, path
        refused = await api.client.put(path, headers=OPERATOR)
        assert refused.status_code == 405 and refused.headers["allow"] == allow, path
        assert len(refused.headers.get_list("x-request-id")) == 1
    for path in ("/nope", "/games/g1/nope"):
        missing = await api.client.get(path, headers={"X-Request-ID": "trace-404"})
        assert missing.status_code == 404
        assert missing.headers.get_list("x-request-id") == ["trace-404"]
