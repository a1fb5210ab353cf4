"""Presence in one process (the embedded default): the same entries as the Redis board,
in a dict, for the games seen most recently."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from infra.ports.presence import LAPSE_MS, OpenStream, Seen, live, seen, since_key, stream_key

GAMES = 65_536  # games whose presence is kept; the one touched longest ago goes first


class InProcessPresence:
    def __init__(self, lapse: int = LAPSE_MS) -> None:
        self.lapse = lapse
        self._games: OrderedDict[str, dict[str, int]] = OrderedDict()

    def _entries(self, game_id: str) -> dict[str, int]:
        entries = self._games.setdefault(game_id, {})
        self._games.move_to_end(game_id)
        while len(self._games) > GAMES:
            self._games.popitem(last=False)
        return entries

    async def arrive(self, game_id: str, seat: int, stream: str, now: int) -> None:
        entries = self._entries(game_id)
        if not live(entries, seat, now, self.lapse):
            entries[since_key(seat)] = now
            for key in [k for k in entries if k.startswith(f"s:{seat}:")]:
                del entries[key]  # lapsed: its replica died; the seat is back now
        entries[stream_key(seat, stream)] = now

    async def leave(self, game_id: str, seat: int, stream: str, now: int) -> None:
        entries = self._entries(game_id)
        if entries.pop(stream_key(seat, stream), None) is None:
            return
        if not live(entries, seat, now, self.lapse):
            entries[since_key(seat)] = now

    async def renew(self, streams: Sequence[OpenStream], now: int) -> None:
        for open_ in streams:
            entries = self._games.get(open_.game_id)
            key = stream_key(open_.seat, open_.stream)
            if entries is None or key not in entries:
                continue
            if not live(entries, open_.seat, now, self.lapse):
                entries[since_key(open_.seat)] = now  # it had lapsed: connected again now
            entries[key] = now

    async def seats(self, game_id: str, count: int, now: int) -> list[Seen]:
        return seen(self._games.get(game_id, {}), count, now, self.lapse)

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._games.clear()
