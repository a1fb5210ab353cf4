"""A seat-shuffled table through HTTP, on each store: the commitment in the creation
answer, seeds sent by each seat's own token, hidden from the others until all are in, the
deadline closed by the server's timer or by the next request, and every answer and view
carrying the record's chain head."""

from __future__ import annotations

import asyncio

import pytest

from domain.chain import receipt, receipt_key
from domain.shuffle import deal_seed, seed_commitment
from tests.api.conftest import OPERATOR, Api, Table

# Real receivers, timers, documents or whole games per case: left out of make test-fast.
pytestmark = pytest.mark.slow

SEATS = {"shuffle": "seats"}


async def settle(api: Api, table: Table, done: object, timeout: float = 30.0) -> None:
    """Wait (generously: the machine may be busy) until the store holds `done`'s event type."""
    async with asyncio.timeout(timeout):
        while True:
            rows = await api.store.read(table.game_id)
            if any(r.type == done for r in rows):
                return
            await asyncio.sleep(0.05)


async def test_a_seat_shuffled_game_commits_first_then_deals_from_every_seats_seed(
    api: Api,
) -> None:
    created = await api.client.post(
        "/games",
        headers=OPERATOR,
        json={"seats": [{"name": "ann"}, {"name": "bob"}], "rules": SEATS, "seed": "s1"},
    )
    assert created.status_code == 201, created.text
    answer = created.json()
    assert answer["commitment"] is None
    assert answer["shuffle"]["server_commitment"] == seed_commitment(deal_seed("s1", 1))
    assert answer["shuffle"]["deadline"] > 0 and answer["shuffle"]["seeds"] is None
    table = Table(
        answer["game_id"], [s["token"] for s in answer["seats"]], answer["spectator_token"], 0
    )
    waiting = await api.view(table, table.seat(0))
    assert (waiting["phase"], waiting["due"], waiting["turn"]) == ("seeding", "seed", None)
    assert waiting["receipt"] == answer["receipt"] and waiting["chain_head"] is None

    sent = await api.play(table, 1, {"type": "seed", "value": "bob's own"}, key="bob-seed")
    rows = await api.store.read(table.game_id)
    assert sent["receipt"] == receipt(receipt_key("s1"), rows[-1].hash)
    assert sent["events"][0]["event"] == {"type": "seed_sent", "seat": 1, "value": "bob's own"}
    seen = await api.events(table, table.seat(0))
    assert seen[-1]["event"] == {"type": "seed_sent", "seat": 1, "value": None}
    assert (await api.view(table, table.seat(0)))["shuffle"]["seed"] is None
    assert (await api.view(table, table.seat(1)))["shuffle"]["seed"] == "bob's own"
    again = await api.send(table, 1, {"type": "seed", "value": "another"})
    assert again.status_code == 409 and again.json()["code"] == "seed_already_sent"
    retried = await api.play(table, 1, {"type": "seed", "value": "bob's own"}, key="bob-seed")
    assert retried["duplicate"] and retried["receipt"] == sent["receipt"]
    early = await api.send(table, 0, {"type": "draw"})
    assert early.status_code == 409 and early.json()["code"] == "seeds_pending"
    watching = await api.client.post(
        f"/games/{table.game_id}/commands",
        json={"type": "seed", "value": "me too"},
        headers=table.watcher,
    )
    assert watching.status_code == 403
    for bad in ("", "x" * 129, "naïve", 7):
        refused = await api.send(table, 0, {"type": "seed", "value": bad})
        assert refused.status_code == 400, bad

    dealt = await api.play(table, 0, {"type": "seed", "value": "ann's own"})
    kinds = [e["event"]["type"] for e in dealt["events"]]
    assert kinds[:3] == ["seed_sent", "seeding_closed", "deal_started"]
    view = await api.view(table, table.seat(0))
    assert view["phase"] == "lead" and len(view["hand"]) == 3
    assert (
        view["shuffle"]["seeds"] == ["ann's own", "bob's own"] and view["shuffle"]["missing"] == []
    )

    concede = await api.play(table, view["turn"], {"type": "concede"})
    assert "seed_revealed" in [e["event"]["type"] for e in concede["events"]]
    verified = await api.get(f"/games/{table.game_id}/verify", table.seat(1))
    assert verified["ok"] and verified["chain"]["ok"]
    [deal] = verified["deals"]
    assert deal["shuffle"] == "seats" and deal["seeds_ok"] and deal["server_commitment_ok"]
    assert deal["seeds"] == ["ann's own", "bob's own"]


async def test_the_servers_timer_closes_the_seeding_at_its_deadline(api: Api) -> None:
    table = await api.create(
        rules={**SEATS, "seeding_seconds": 1}, deck=None, dealer=None, seed="timed"
    )
    await api.play(table, 0, {"type": "seed", "value": "on time"})

    await settle(api, table, "deal_started")  # nobody asked: the timer fired

    rows = await api.store.read(table.game_id)
    assert [r.type for r in rows].count("seeding_closed") == 1
    view = await api.view(table, table.seat(1))
    assert view["phase"] != "seeding"
    assert view["shuffle"]["missing"] == [1] and view["shuffle"]["seeds"] == ["on time", ""]
    late = await api.send(table, 1, {"type": "seed", "value": "too late"})
    # the seeding closed at its deadline without this seat's seed: too late, as documented
    assert late.status_code == 409 and late.json()["code"] == "seed_too_late"
    again = await api.send(table, 0, {"type": "seed", "value": "sent already"})
    assert again.json()["code"] == "not_seeding"  # its seed is in: no seeding is open for it


async def test_without_a_timer_the_next_request_closes_an_overdue_seeding(api: Api) -> None:
    table = await api.create(
        rules={**SEATS, "seeding_seconds": 1}, deck=None, dealer=None, seed="restarted"
    )
    await api.service.seeding.stop()  # as in a process that restarted since, and no timer
    deadline = (await api.view(table))["shuffle"]["deadline"]
    async with asyncio.timeout(30):
        while api.service.now() < deadline:
            await asyncio.sleep(0.05)
    assert not any(r.type == "seeding_closed" for r in await api.store.read(table.game_id))

    late = await api.send(table, 0, {"type": "seed", "value": "after the deadline"})

    assert late.status_code == 409 and late.json()["code"] == "seed_too_late"
    view = await api.view(table, table.seat(0))
    assert view["phase"] == "lead" and view["shuffle"]["missing"] == [0, 1]
    closed = [r for r in await api.store.read(table.game_id) if r.type == "seeding_closed"]
    assert len(closed) == 1
    assert (closed[0].metadata.command_id, closed[0].metadata.correlation_id) == (None, "seeding")


@pytest.mark.parametrize("deal", [1, 2])
async def test_no_idempotency_key_a_seat_sends_keeps_a_seeding_open(api: Api, deal: int) -> None:
    """The server's close of a seeding takes no command id a seat could send first. It
    once took `seeding-closed/<n>`: a seat that had sent that key (with its seed, or with
    the concession that opened the next deal's seeding) froze the game in its seeding for
    good, every later seed too late and no clock to resume."""
    table = await api.create(
        rules={**SEATS, "seeding_seconds": 1, "match_target": 3},
        deck=None,
        dealer=None,
        seed="keys",
    )
    if deal == 2:
        await api.play(table, 0, {"type": "seed", "value": "ann"})
        await api.play(table, 1, {"type": "seed", "value": "bob"})
        turn = (await api.view(table))["turn"]
        await api.play(table, turn, {"type": "concede"}, key="seeding-closed/2")
        await api.play(table, 0, {"type": "seed", "value": "ann again"})
    else:
        await api.play(table, 0, {"type": "seed", "value": "ann"}, key="seeding-closed/1")

    async with asyncio.timeout(30):  # bob sends none: the deadline closes it
        while (view := await api.view(table))["phase"] == "seeding":
            await asyncio.sleep(0.1)

    assert view["shuffle"]["deal"] == deal and view["shuffle"]["missing"] == [1]
    closed = [r for r in await api.store.read(table.game_id) if r.type == "seeding_closed"]
    assert len(closed) == deal


async def test_a_seed_that_is_not_printable_ascii_to_its_end_is_a_400(api: Api) -> None:
    """The OpenAPI pattern (`^[\\x20-\\x7e]{1,128}$`, read as JSON Schema reads it) admits
    no line feed, at the end neither, and neither does the server (Python's `$` would)."""
    created = await api.client.post(
        "/games",
        headers=OPERATOR,
        json={"seats": [{"name": "ann"}, {"name": "bob"}], "rules": SEATS, "seed": "s2"},
    )
    answer = created.json()
    table = Table(
        answer["game_id"], [s["token"] for s in answer["seats"]], answer["spectator_token"], 0
    )
    for value in ("bob\n", "b\nob", "séed", "\n"):
        refused = await api.send(table, 1, {"type": "seed", "value": value})
        assert refused.status_code == 400, (value, refused.text)
        assert refused.json()["code"] == "bad_request"
    sent = await api.send(table, 1, {"type": "seed", "value": "bob"})
    assert sent.status_code == 200, sent.text


@pytest.mark.parametrize("timed", [{}, {"turn_seconds": 5}], ids=["no-clock", "clock"])
async def test_a_table_awaiting_seeds_shows_the_servers_time(
    api: Api, timed: dict[str, int]
) -> None:
    """`shuffle.deadline` is a time on the server's clock: the view carries `now`, the
    server's time, to count down from (it was null until the first clock_started, and
    always at a table without a clock)."""
    rules = {**SEATS, "seeding_seconds": 20, **timed}
    table = await api.create(rules=rules, deck=None)
    for viewer in (table.seat(0), table.watcher, OPERATOR):
        waiting = await api.view(table, viewer)
        assert waiting["phase"] == "seeding"
        assert isinstance(waiting["now"], int)
        assert 0 < waiting["shuffle"]["deadline"] - waiting["now"] <= 20_000
