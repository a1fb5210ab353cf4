"""The arbiter's reads of a game: the full table at a version, the audit, the deals checked
against their commitments. Open to the operator at any time, to everyone at the table once
the game is over (Caller.may_review), each seeing what it may (domain/views.py)."""

from __future__ import annotations

from domain.audit import audit
from domain.fairness import verify_deals
from domain.views import review
from services.app.callers import Caller
from services.app.games import GameService
from services.app.results import Audit, Replay, Verification


class Reviews:
    def __init__(self, games: GameService) -> None:
        self.games = games

    async def replay(self, game_id: str, caller: Caller, version: int | None) -> Replay:
        current = await self.games.load(game_id)
        caller.review(current)
        state = await self.games.state_at(game_id, version or current.version)
        return Replay(state.version, review(state, caller.viewer))

    async def audit(self, game_id: str, caller: Caller) -> Audit:
        current = await self.games.load(game_id)
        caller.review(current)
        events = [e for _, e in await self.games.events(game_id)]
        return Audit(game_id, current.version, audit(events, caller.viewer))

    async def verify(self, game_id: str, caller: Caller) -> Verification:
        current = await self.games.load(game_id)
        caller.review(current)
        events = [e for _, e in await self.games.events(game_id)]
        checks = verify_deals(events, current.seed)
        return Verification(game_id, all(c.ok for c in checks), checks)
