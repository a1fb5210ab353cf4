"""The games index port: one row per game, for the operator's list and the clocks' start-up.

The game service writes a row when it creates a game (before the first append) and when
the game finishes; nothing else, so no command pays a round trip for it. A game's version,
the time it last changed and whether it has finished are read from the events table by the
list query itself, so they are never stale. A crash between an append and its row write
leaves a row behind the events; `stale` finds those rows for the start-up repair.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

import msgspec

from domain.rules import Rules
from domain.vocabulary import Reason, Status


class IndexedGame(msgspec.Struct, frozen=True, kw_only=True):
    """A game as the operator's list shows it."""

    game_id: str
    seats: tuple[str, ...]
    rules: Rules
    status: Status
    winners: tuple[int, ...] | None = None
    reason: Reason | None = None
    created: datetime
    version: int  # the last event's version, from the events table
    updated: datetime  # when the last event was recorded, or its rematch made if later
    rematch_of: str | None = None  # the game this one is the rematch of
    rematch: str | None = None  # the rematch that followed this one


class _Finished(msgspec.Struct):
    winners: tuple[int, ...]
    reason: Reason


def finished_by(game: IndexedGame, last_type: str, last_data: bytes | None) -> IndexedGame:
    """The row as its last event tells it. The row is marked finished after the append
    that recorded `game_finished` (or at the next start, if that write failed), so a
    list read in between finds the game over in the events: it is listed finished, with
    the result that event gives, in the same read as the version it is listed at."""
    if game.status == "finished" or last_type != "game_finished" or last_data is None:
        return game
    result = msgspec.json.decode(last_data, type=_Finished)
    return msgspec.structs.replace(
        game, status="finished", winners=result.winners, reason=result.reason
    )


# Where a page of the list ends: (created, game_id) of its last game; the next page starts
# after it. Games are listed in creation order, which never changes.
After = tuple[datetime, str]


class AlreadyRematched(Exception):
    """The finished game already has its rematch: `existing` names it."""

    def __init__(self, game_id: str, existing: str) -> None:
        super().__init__(f"game {game_id} already has its rematch: {existing}")
        self.game_id = game_id
        self.existing = existing


class Stale(msgspec.Struct, frozen=True):
    """What a crash may leave in the index: rows still in progress whose game has finished,
    and rows of games whose first append never happened."""

    finished: list[str]
    orphans: list[str]


class GameIndex(Protocol):
    async def add(
        self,
        game_id: str,
        seats: Sequence[str],
        rules: Rules,
        *,
        rematch_of: str | None = None,
        keyed: bool = False,
    ) -> None:
        """Index a new game, in progress, before its first events are appended. With
        `rematch_of`, link the finished game to this one in the same write, and raise
        AlreadyRematched if that game has its rematch already.

        `keyed`: a creation under an Idempotency-Key, whose game id is the key's. A row
        the id has already is left as it is: another try under the key wrote it (under
        way on another replica, perhaps with other options), or a try whose append never
        happened. The try whose append makes the game then `settle`s the row."""
        ...

    async def settle(
        self,
        game_id: str,
        seats: Sequence[str],
        rules: Rules,
        *,
        rematch_of: str | None = None,
    ) -> None:
        """The row of a game created under an Idempotency-Key, as the game was dealt:
        written over what another try under the key left (seats, rules, the rematch link),
        or written anew; its status is left alone. Raises AlreadyRematched as `add` does."""
        ...

    async def finish(self, game_id: str, winners: Sequence[int], reason: Reason) -> None: ...

    async def remove(self, game_id: str) -> None:
        """Forget a game whose first append failed, and any rematch link to it; a game
        with events is kept (another try under its key made it meanwhile)."""
        ...

    async def get(self, game_id: str) -> IndexedGame | None:
        """The game, if it is indexed and has events."""
        ...

    async def search(
        self,
        *,
        status: Status | None = None,
        created_since: datetime | None = None,
        updated_since: datetime | None = None,
        after: After | None = None,
        limit: int = 50,
    ) -> list[IndexedGame]:
        """Games with events, in creation order (game id breaking ties), after `after`."""
        ...

    async def clocked_in_progress(self) -> list[str]:
        """Every game in progress at a table with a clock: what the timers start from."""
        ...

    async def stale(self, orphaned_before: datetime) -> Stale:
        """Rows a crash left behind: in progress though the game finished; and rows with no
        events that were written before `orphaned_before` (a creation still under way has
        its row a moment before its events, so the caller leaves a margin)."""
        ...
