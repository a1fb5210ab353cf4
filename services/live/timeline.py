"""The store's global order, followed live: the operator's feed (GET /events) and the webhook
dispatcher read every game's events through it.

Reading is always the store's gap-safe read_all from a checkpoint, so a follower never
misses or repeats an event whatever it is woken by. Any hint on the bus means something
was appended somewhere, so it wakes every follower; without hints they re-read every
poll interval. On PostgreSQL a commit shows in read_all only once every older transaction
has ended, so after a hint that found nothing new a follower looks again soon.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable

from infra.ports.events import Checkpoint, EventStore, RecordedEvent, StoreUnavailable
from infra.ports.hints import HintBus

log = logging.getLogger("bura.timeline")

PAGE = 500
SOON = 0.02  # the first look again after a hint that found nothing; doubles to the poll


class Timeline:
    def __init__(
        self,
        store: EventStore,
        bus: HintBus,
        *,
        poll_seconds: float = 2.0,
        keepalive_seconds: float = 15.0,
    ) -> None:
        self.store = store
        self.bus = bus
        self.poll = poll_seconds
        self.keepalive = keepalive_seconds
        self.draining = asyncio.Event()
        self.open_streams = 0  # read by /metrics
        self._pulse = asyncio.Event()
        self._taken = False  # someone took the pulse since the last wake
        self._unlisten: Callable[[], None] | None = None

    def start(self) -> None:
        # every hint wakes the followers, a None (a possible gap) as well
        self._unlisten = self.bus.listen(lambda _: self._wake())

    def drain(self) -> None:
        """End every live follower (SIGTERM): they stop at their next wait."""
        self.draining.set()
        self._taken = True  # whoever holds the pulse now wakes
        self._wake()

    async def stop(self) -> None:
        self.drain()
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None

    def _wake(self) -> None:
        if not self._taken:  # nobody took this pulse: nobody waits on it, keep it
            return
        pulse, self._pulse, self._taken = self._pulse, asyncio.Event(), False
        pulse.set()

    def pulse(self) -> asyncio.Event:
        """The event the next hint sets. Take it before reading, then wait on it: a hint
        that comes between the two is not missed."""
        self._taken = True
        return self._pulse

    async def wait(self, pulse: asyncio.Event, seconds: float) -> bool:
        """Until `pulse` is set or `seconds` have passed; True if woken."""
        if pulse.is_set():
            return True
        try:
            async with asyncio.timeout(max(seconds, 0.0)):
                await pulse.wait()
        except TimeoutError:
            return False
        return True

    async def follow(
        self, after: Checkpoint, *, live: bool = True, limit: int | None = None
    ) -> AsyncIterator[RecordedEvent | None]:
        """Every event after the checkpoint, in global order; once caught up, with `live`,
        each new one as it comes and a None each keep-alive interval of silence, until the
        server drains; without, the end. At most `limit` events. A store that cannot be
        reached ends a catch-up (StoreUnavailable) and pauses a live follower."""
        checkpoint, left = after, limit
        quiet_since = time.monotonic()
        soon: float | None = None  # set after a hint: how soon to look again
        while left is None or left > 0:
            pulse = self.pulse()
            try:
                page = await self.store.read_all(checkpoint, min(PAGE, left or PAGE))
            except StoreUnavailable:
                if not live:
                    raise
                page = []
            for row in page:
                yield row
                checkpoint = (row.tx_id, row.position)
            if page:
                quiet_since, soon = time.monotonic(), None
                if left is not None:
                    left -= len(page)
                continue
            if not live or self.draining.is_set():
                return
            keepalive = quiet_since + self.keepalive - time.monotonic()
            if keepalive <= 0:
                yield None
                quiet_since = time.monotonic()
                continue
            if await self.wait(pulse, min(self.poll, keepalive, soon or self.poll)):
                soon = SOON
            elif soon is not None:
                soon = min(soon * 2, self.poll)
