"""Commands that beat their hint: a seat acted on a version (`seen`) that no hint has told
this replica of yet, because the replica that appended it answered the other seat a moment
before its hint got here. The hint, carrying the append, is almost always on its way;
waiting a few milliseconds for it costs less than reading the store (a round trip, and
the database's work), and the copy it brings is the same. The wait is bounded: a hint
that does not come in time (or a gap in the hints) leaves the command to the store read
it would have made anyway, so nothing is judged on less than before."""

from __future__ import annotations

import asyncio
import contextlib

# How long a command waits for the hint of a version its seat has seen. At a human pace
# the hint is here within a millisecond or two; with the replicas' cores saturated it
# can take tens (bench/replicas.py: at 10 ms two waits in three ran out, at 50 ms
# almost none did). Only a hint lost on the way costs the whole wait.
WAIT_SECONDS = 0.05


class Arrivals:
    def __init__(self, seconds: float = WAIT_SECONDS) -> None:
        self.seconds = seconds
        self._waiting: dict[str, list[tuple[int, asyncio.Future[bool]]]] = {}

    async def wait(self, game_id: str, version: int) -> bool:
        """Until a hint of `version` (or later) for the game (True), a gap or `seconds`."""
        arrived: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        waiting = self._waiting.setdefault(game_id, [])
        waiting.append((version, arrived))
        try:
            async with asyncio.timeout(self.seconds):
                return await arrived
        except TimeoutError:
            return False
        finally:
            with contextlib.suppress(ValueError):
                waiting.remove((version, arrived))
            if not waiting and self._waiting.get(game_id) is waiting:
                del self._waiting[game_id]

    def hinted(self, game_id: str, version: int) -> None:
        """A hint of `version` was heard (and its append taken, if it could be)."""
        waiting = self._waiting.get(game_id)
        if not waiting:
            return
        for wanted, arrived in waiting:
            if wanted <= version and not arrived.done():
                arrived.set_result(True)

    def gap(self) -> None:
        """Hints may have been missed: nobody waits for one any longer."""
        for waiting in self._waiting.values():
            for _, arrived in waiting:
                if not arrived.done():
                    arrived.set_result(False)
