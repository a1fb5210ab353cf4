"""Presence in one process (the embedded default): the same entries as the Redis board,
in a dict, for the games seen most recently. A game's streams renew it every RENEW_MS, so
a game with a live stream is never the one forgotten; if it were, its next renewal writes
it again (infra/ports/presence.py)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from infra.ports.presence import (
    LAPSE_MS,
    RESTORED,
    OpenStream,
    Seen,
    left,
    live,
    seen,
    since_key,
    stale,
    stream_key,
)

GAMES = 65_536  # games whose presence is kept; the one touched longest ago goes first


class InProcessPresence:
    # Its entries end with the process: a server started again knows nothing of the streams
    # open on it before (services/live/timers.py gives their clients time to come back).
    lasting = False

    def __init__(self, lapse: int = LAPSE_MS) -> None:
        self.lapse = lapse
        self._games: OrderedDict[str, dict[str, int]] = OrderedDict()

    def _entries(self, game_id: str) -> dict[str, int]:
        entries = self._games.setdefault(game_id, {})
        self._games.move_to_end(game_id)
        while len(self._games) > GAMES:
            self._games.popitem(last=False)
        return entries

    def _sweep(self, entries: dict[str, int], now: int) -> None:
        """Tombstones no renewal can race any more go."""
        for key in [k for k, v in entries.items() if k.startswith("s:") and stale(v, now)]:
            del entries[key]

    async def arrive(self, game_id: str, seat: int, stream: str, now: int) -> None:
        entries = self._entries(game_id)
        if not live(entries, seat, now, self.lapse):
            entries[since_key(seat)] = now
            for key in [k for k in entries if k.startswith(f"s:{seat}:")]:
                del entries[key]  # lapsed: its replica died; the seat is back now
        self._sweep(entries, now)
        entries[stream_key(seat, stream)] = now

    async def leave(self, game_id: str, seat: int, stream: str, now: int) -> None:
        entries = self._entries(game_id)
        key = stream_key(seat, stream)
        if entries.get(key, -1) < 0:
            return  # unknown, or left already
        entries[key] = left(now)  # a renewal on its way must not bring it back
        if not live(entries, seat, now, self.lapse):
            entries[since_key(seat)] = now
        self._sweep(entries, now)

    async def renew(self, streams: Sequence[OpenStream], now: int) -> None:
        for open_ in streams:
            entries = self._entries(open_.game_id)
            key = stream_key(open_.seat, open_.stream)
            last = entries.get(key)
            if last is not None and last < 0:
                continue  # it left
            if not live(entries, open_.seat, now, self.lapse):
                since = since_key(open_.seat)
                if last is None and since not in entries:
                    # forgotten while it stayed open: connected since it opened
                    entries[since] = open_.since if open_.since is not None else now
                elif last is None or last <= now - self.lapse:
                    entries[since] = now  # it had lapsed: connected again now
            if last is None:
                entries.setdefault(RESTORED, now)
            entries[key] = now

    async def seats(self, game_id: str, count: int, now: int) -> list[Seen]:
        return seen(self._games.get(game_id, {}), count, now, self.lapse)

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._games.clear()
