"""Which reads of a game go to the record (a standby, when one is set) and which to the
store: a poll of the events near the head reads the store alone, in one query; a longer
read of the events, and the replays, histories and audits, read the record."""

from __future__ import annotations

import pytest

from domain.views import ARBITER
from services.app import games
from services.app.games import GameService
from services.bootstrap import Adapters
from tests.records import Asked
from tests.services.test_snapshots import played, service_on


async def test_a_poll_near_the_head_reads_the_store_and_a_long_read_the_record(
    adapters: Adapters, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(games, "NEAR_HEAD", 4)
    record = Asked(adapters.store)
    service: GameService = service_on(adapters, record=record)
    state = await played(service, 12)
    [game_id] = service._cache
    assert state.version > 8

    near = await service.page(game_id, ARBITER, after=state.version - 4)
    assert [e.version for e in near.events] == list(range(state.version - 3, state.version + 1))
    up_to_date = await service.page(game_id, ARBITER, after=state.version)
    assert up_to_date.events == [] and up_to_date.version == state.version
    assert record.reads == []  # both were the store's

    far = await service.page(game_id, ARBITER, after=state.version - 5)
    assert [e.version for e in far.events] == list(range(state.version - 4, state.version + 1))
    whole = await service.page(game_id, ARBITER)
    assert [e.version for e in whole.events] == list(range(1, state.version + 1))
    assert record.reads == [(game_id, state.version - 5, None), (game_id, 0, None)]

    # the same answers as the record gives, the arbiter's view of every event
    assert whole.events[-5:] == far.events and whole.events[-4:] == near.events
