"""The operator's list of games (GET /games), paged by an opaque cursor, from the games
index; and the rematch that followed a finished game, for its view."""

from __future__ import annotations

import base64
import binascii
import hmac
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import msgspec

from domain.rules import in_effect
from domain.state import Game
from domain.views import Result
from domain.vocabulary import Status
from infra.ports.events import micros
from infra.ports.games import GameIndex, IndexedGame
from services.app.callers import GAME_ID
from services.app.errors import BadCursor
from services.app.games import GameService
from services.app.results import GamePage, GameSummary

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_cursor = msgspec.json.Decoder(tuple[int, str, str])
LINKS = 4096  # rematch links remembered (a finished game's link never changes once made)
Seal = Callable[[str, str], str]  # Seating.seal: a tag only this deployment makes


def cursor_after(game: IndexedGame, seal: Seal) -> str:
    """The place after `game`, sealed: (its creation time, its id, the tag of both)."""
    place = f"{micros(game.created)}:{game.game_id}"
    raw = msgspec.json.encode((micros(game.created), game.game_id, seal("cursor", place)))
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _after(cursor: str, seal: Seal) -> tuple[datetime, str]:
    """The place a cursor holds; anything this deployment did not give (a cursor made up,
    edited, or sealed under another operator key) is refused before it reaches the index."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created, game_id, tag = _cursor.decode(base64.urlsafe_b64decode(padded.encode()))
        if not GAME_ID.fullmatch(game_id):
            raise ValueError(game_id)
        if not hmac.compare_digest(tag, seal("cursor", f"{created}:{game_id}")):
            raise ValueError("not sealed here")
        return _EPOCH + timedelta(microseconds=created), game_id
    except (binascii.Error, ValueError, OverflowError, msgspec.DecodeError):
        raise BadCursor(
            "cursor", "cursor", "query", "not a cursor this server gave; start again without one"
        ) from None


def summary(game: IndexedGame) -> GameSummary:
    result = None
    if game.winners is not None and game.reason is not None:
        result = Result(game.winners, game.reason)
    return GameSummary(
        game_id=game.game_id,
        seats=game.seats,
        rules=in_effect(game.rules, len(game.seats)),
        version=game.version,
        status=game.status,
        result=result,
        created=game.created,
        updated=game.updated,
        rematch_of=game.rematch_of,
        rematch=game.rematch,
    )


class Listing:
    def __init__(self, index: GameIndex, games: GameService) -> None:
        self.index = index
        self.games = games
        self.seal: Seal = games.seating.seal
        self._links: OrderedDict[str, str] = OrderedDict()

    async def page(
        self,
        *,
        status: Status | None = None,
        created_since: datetime | None = None,
        updated_since: datetime | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> GamePage:
        """Games in creation order; `next_cursor` is set when more follow."""
        found = await self.index.search(
            status=status,
            created_since=created_since,
            updated_since=updated_since,
            after=_after(cursor, self.seal) if cursor is not None else None,
            limit=limit + 1,
        )
        shown = found[:limit]
        more = len(found) > limit
        following = cursor_after(shown[-1], self.seal) if more else None
        return GamePage([summary(g) for g in shown], following)

    async def rematch(self, game_id: str, state: Game) -> str | None:
        """The rematch that followed the game, if it is over and has one."""
        if not state.finished:
            return None
        known = self._links.get(game_id)
        if known is not None:
            return known
        indexed = await self.index.get(game_id)
        if indexed is None or indexed.rematch is None:
            return None
        self._links[game_id] = indexed.rematch
        while len(self._links) > LINKS:
            self._links.popitem(last=False)
        return indexed.rematch
