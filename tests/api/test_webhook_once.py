"""A delivery recorded as delivered is never sent again by the replica that delivered it,
on both stores: the dispatcher's look at the due deliveries may be taken while an attempt
is being recorded, and answered only after that attempt has ended (an outside review saw
it with several deliveries due at once after a lease changed hands: two POSTs of one
delivery 44 ms apart, both answered 200)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness.receiver import Receiver
from infra.ports.webhooks import Due, Tried
from services.bootstrap import Adapters
from services.live.dispatcher import Dispatcher
from tests.api.conftest import THIRTY_ONE_GAME
from tests.api.test_webhooks import app, of_game, play, register, until

pytestmark = pytest.mark.slow


class _Window:
    """The dispatcher's webhook store, with the window held open: the first attempt that
    comes to "delivered" waits to be recorded until the dispatcher has read the due
    deliveries, and that read is answered only once the record is done and the attempt
    has ended. Everything else goes to the real store as it is."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.recording: str | None = None  # the delivery whose record is held back
        self.looked = asyncio.Event()  # `due` read the store while it was held back
        self.recorded = asyncio.Event()
        self.seen: list[str] = []  # what that read found due

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def record(self, name: str, holder: str, delivery_id: str, tried: Tried) -> int:
        if tried.verdict != "delivered" or self.recording is not None:
            number: int = await self.store.record(name, holder, delivery_id, tried)
            return number
        self.recording = delivery_id
        async with asyncio.timeout(10):  # the dispatcher looks at least every poll
            await self.looked.wait()
        try:
            number = await self.store.record(name, holder, delivery_id, tried)
            return number
        finally:
            self.recorded.set()

    async def due(self, limit: int = 100) -> Due:
        due: Due = await self.store.due(limit)
        if self.recording is None or self.looked.is_set():
            return due
        self.seen = [d.id for d in due.deliveries]
        self.looked.set()
        await self.recorded.wait()
        for _ in range(3):  # the attempt leaves the dispatcher's hands just after its record
            await asyncio.sleep(0)
        return due


async def test_a_delivery_recorded_while_the_due_ones_are_read_is_not_sent_again(
    adapters: Adapters,
) -> None:
    with Receiver() as receiver:
        async with app(adapters) as api:
            dispatcher: Dispatcher = api.runtime.dispatcher
            window = _Window(dispatcher.webhooks)
            dispatcher.webhooks = window
            await register(api, receiver)
            game_id = await play(api, THIRTY_ONE_GAME)
            await receiver.wait_for(lambda r: len(r.delivered()) == 2)

            async def logged() -> list[dict[str, Any]]:
                page = await api.get("/webhooks/deliveries", game_id=game_id, state="delivered")
                listed: list[dict[str, Any]] = page["deliveries"]
                return listed if len(listed) == 2 else []

            log = await until(logged)
            await asyncio.sleep(0.5)  # time for a second attempt, were one started

        assert window.looked.is_set(), "the due deliveries were not read during the record"
        assert window.recording is not None
        sent = [r.delivery_id for r in of_game(receiver, game_id)]
        assert sorted(sent) == sorted(set(sent)), f"a delivery sent twice: {sent}"
        assert [r.json["type"] for r in of_game(receiver, game_id)] == [
            "deal_ended",
            "game_finished",
        ]
        assert {d["id"]: d["attempts"] for d in log} == {d: 1 for d in sent}
