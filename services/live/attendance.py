"""Which seats have a live stream open, across replicas (docs/rules.md §13.5).

Every seat's stream arrives on the presence board when it opens and leaves when it closes,
and this replica renews the streams it holds, so a replica that dies takes its streams'
presence with it after LAPSE_MS. Presence is never a game event: views and stream messages
show it, and the timers judge abandonment by it. When the board cannot be reached,
presence is unknown: views show none and no abandonment is judged. When the board lost its
entries (Redis restarted empty), the renewals write this replica's streams again, and until
they all can have, a seat with nothing recorded is not counted away (`Seen.unknown_until`):
the timers read it as away from then on, never from before.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable

from domain.clock import due_since
from domain.state import Game
from domain.views import Presence
from infra.deadline import cancelled
from infra.ports.presence import (
    LAPSE_MS,
    RENEW_MS,
    OpenStream,
    PresenceBoard,
    PresenceUnavailable,
    Seen,
)
from services.app.games import wall_clock

log = logging.getLogger("bura.presence")

# How long presence is left unknown after the board failed a call, before it is asked again
# (the renewals, every RENEW_MS, are always tried).
QUIET_SECONDS = 5.0

# Told of every arrival and departure on this replica, with the game's id.
Observer = Callable[[str], None]


def shown(seen: list[Seen] | None, floor: int | None = None) -> tuple[Presence, ...] | None:
    """The board's reading as views show it: since when each seat is known connected or
    away, and for one never seen, when its absence counts from (as the timers judge it)."""
    if seen is None:
        return None
    return tuple(
        Presence(
            s.connected, s.since, counted=None if s.since is not None else counted(s, floor).since
        )
        for s in seen
    )


def counted(seen: Seen, floor: int | None = None) -> Seen:
    """The seat's absence as it counts: from when it is known, if the board cannot know
    since when (it lost its state, or began with this process: `floor`), never from the
    clock's start."""
    if seen.connected:
        return seen
    known = max([t for t in (seen.unknown_until, floor) if t is not None], default=None)
    if known is None or seen.since is not None:
        return seen
    return Seen(False, known)


class Attendance:
    def __init__(self, board: PresenceBoard, now: Callable[[], int] = wall_clock) -> None:
        self.board = board
        self.now = now
        self.errors = 0
        self.open: dict[str, OpenStream] = {}
        self._observers: list[Observer] = []
        self._renewer: asyncio.Task[None] | None = None
        self._warned = 0.0
        self._quiet_until = 0.0  # after a failure, the board is not asked until then
        # When this process started. On a board that began with it (the embedded default),
        # a seat due since before then that the board has seen nothing of may have had its
        # stream open on the process before, its client now coming back as told (`event:
        # shutdown`): its absence counts from a lapse after the start (`floor`).
        self.began = now()

    @property
    def lasting(self) -> bool:
        """Whether the board's entries outlive this process (Redis), or start empty with it."""
        return self.board.lasting

    def observe(self, observer: Observer) -> None:
        self._observers.append(observer)

    def start(self) -> None:
        self._renewer = asyncio.create_task(self._renew())

    async def stop(self) -> None:
        if self._renewer is not None:
            await cancelled([self._renewer])

    async def arrive(self, game_id: str, seat: int) -> str:
        """A stream of the seat opened here; the key it leaves with."""
        stream = uuid.uuid4().hex
        now = self.now()
        self.open[stream] = OpenStream(game_id, seat, stream, since=now)
        if not self._quiet():  # else the renewals write it once the board answers again
            await self._write(self.board.arrive(game_id, seat, stream, now))
        self._tell(game_id)
        return stream

    async def leave(self, stream: str) -> None:
        gone = self.open.pop(stream, None)
        if gone is None:
            return
        if not self._quiet():  # else its entry lapses, no longer renewed
            await self._write(self.board.leave(gone.game_id, gone.seat, stream, self.now()))
        self._tell(gone.game_id)

    def floor(self, state: Game) -> int | None:
        """Where absences the board has seen nothing of count from, for the seat due, if
        the board began with this process after that seat became due."""
        if self.lasting or state.clock is None or due_since(state.clock) >= self.began:
            return None
        return self.began + LAPSE_MS

    async def seats(self, game_id: str, state: Game, now: int | None = None) -> list[Seen] | None:
        """Each seat's presence as the timers judge it, or None while the board cannot be
        reached: a seat whose absence is not known yet is away from when it will be."""
        found = await self._read(game_id, len(state.seats), now)
        if found is None:
            return None
        floor = self.floor(state)
        return [counted(s, floor) for s in found]

    async def presence(
        self, game_id: str, state: Game, now: int | None = None
    ) -> tuple[Presence, ...] | None:
        """Each seat's presence as views show it."""
        return shown(await self._read(game_id, len(state.seats), now), self.floor(state))

    async def _read(self, game_id: str, count: int, now: int | None) -> list[Seen] | None:
        if self._quiet():
            return None
        try:
            return await self.board.seats(game_id, count, self.now() if now is None else now)
        except PresenceUnavailable as error:
            self._failed(error)
            return None

    async def _write(self, pending: Awaitable[None]) -> None:
        try:
            await pending
        except PresenceUnavailable as error:
            self._failed(error)

    def _quiet(self) -> bool:
        """Whether the board failed a moment ago: a Redis that stops answering costs one
        request its call's bound (infra/redis/connection.py), not every request after it;
        presence is unknown meanwhile."""
        return time.monotonic() < self._quiet_until

    def _failed(self, error: Exception) -> None:
        self.errors += 1
        self._quiet_until = time.monotonic() + QUIET_SECONDS
        if time.monotonic() - self._warned > 5.0:  # once in a while, not once a call
            self._warned = time.monotonic()
            log.warning("presence unknown: %s", error)

    def _tell(self, game_id: str) -> None:
        for observer in self._observers:
            observer(game_id)

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(RENEW_MS / 1000)
            if self.open:
                await self._write(self.board.renew(list(self.open.values()), self.now()))
