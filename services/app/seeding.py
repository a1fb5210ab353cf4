"""When a seat-shuffled deal's seeding deadline passes, the server closes it (docs/fairness.md).

The deadline is in the record (`seeding_opened.deadline`), and closing is a command,
CloseSeeding, appended under the version check like any other: whichever process fires
first wins, and every other attempt finds nothing left to close. It is fired three ways:
a timer, set by the process that appended the seeding; the next load of the game after
the deadline, by any process (one that restarted has no timer); and the live feeds' poll,
for games watched over a stream. Whenever it fires, the verdict is the same: a seed
arriving after the deadline is refused (`seed_too_late`), so the missing seeds are those
missing at the deadline."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from domain.state import Game
from infra.deadline import cancelled, detached

log = logging.getLogger("bura.seeding")


def overdue(state: Game, now: int) -> bool:
    """The deal waits for seeds and its deadline (ms since the epoch) has passed."""
    seeding = state.seeding
    return seeding is not None and seeding.deadline is not None and now >= seeding.deadline


class SeedingTimers:
    """One timer per game whose seeding this process opened, each firing at its deadline."""

    def __init__(self, fire: Callable[[str], Awaitable[object]], now: Callable[[], int]) -> None:
        self._fire = fire
        self._now = now
        self._timers: dict[str, tuple[int, asyncio.TimerHandle]] = {}  # game -> deadline, timer
        self._running: set[asyncio.Task[None]] = set()
        self._stopped = False

    def watch(self, game_id: str, state: Game) -> None:
        """Fire at the seeding's deadline, if the game waits for seeds (and cancel a timer
        it no longer needs)."""
        if self._stopped:
            return
        seeding = state.seeding
        timer = self._timers.get(game_id)
        deadline = seeding.deadline if seeding is not None else None
        if timer is not None and timer[0] == deadline:
            return
        if timer is not None:
            timer[1].cancel()
            del self._timers[game_id]
        if deadline is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous caller): the next load closes it
            return
        # the event loop's clock is not the wall clock: a timer that fires a little early
        # finds the deadline not yet passed, and the load it made sets the timer again
        delay = max(0.0, (deadline - self._now()) / 1000)
        self._timers[game_id] = (deadline, loop.call_later(delay, self._start, game_id))

    def watching(self, game_id: str) -> bool:
        """A timer is set here for the game's seeding."""
        return game_id in self._timers

    def _start(self, game_id: str) -> None:
        self._timers.pop(game_id, None)
        # the timer was set within the request that created the game (call_later runs it
        # in that request's context): its deadline passed long ago
        task = detached(self._close(game_id))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _close(self, game_id: str) -> None:
        try:
            await self._fire(game_id)
        except Exception:  # the store is down, say: the next load of the game closes it
            log.warning("closing the seeding of game %s failed", game_id, exc_info=True)

    async def stop(self) -> None:
        """No timer from now on (the process is stopping): loads still close overdue ones."""
        self._stopped = True
        for _, timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        await cancelled([*self._running])
