"""The game service: load -> decide -> append -> publish, with retries on races."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import re
import secrets
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence

import msgspec

from domain.commands import PlayerCommand, StartGame
from domain.decide import decide
from domain.errors import RuleViolation
from domain.events import DealLost, DealVoid, DealWon, Declared, Event, PenaltyApplied
from domain.evolve import fold
from domain.rules import Rules
from domain.state import NEW_GAME, Game
from infra.records import Conflict, Hint, Metadata, StoreUnavailable
from services.codec import from_recorded, to_new, type_of_command
from services.metrics import Metrics
from services.ports import Bus, EventStore

SPECTATOR_SEAT = -1
log = logging.getLogger("bura.games")

# What a game id may look like (create() makes hex ids). Anything else names no game, and
# some text (a NUL) cannot even be looked up in PostgreSQL: refuse it before the store.
GAME_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")


class GameNotFound(Exception):
    pass


def _named(game_id: str) -> None:
    if not GAME_ID.fullmatch(game_id):
        raise GameNotFound(game_id)


class Recorded(msgspec.Struct, frozen=True):
    version: int
    event: Event


class Outcome(msgspec.Struct, frozen=True):
    version: int
    events: list[Recorded]
    duplicate: bool = False


class NewGame(msgspec.Struct, frozen=True):
    game_id: str
    version: int
    tokens: list[str]  # one per seat, in seat order
    spectator_token: str


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class GameService:
    def __init__(self, store: EventStore, bus: Bus, *, retries: int = 8, cache: int = 4096,
                 metrics: Metrics | None = None):
        self.metrics = metrics or Metrics()
        self.store = store
        self.bus = bus
        self.retries = retries
        self._cache: OrderedDict[str, Game] = OrderedDict()
        self._cache_size = cache
        # Seat token hashes by game; they never change, the oldest game is dropped first.
        self._tokens: OrderedDict[str, list[bytes]] = OrderedDict()

    async def create(
        self, names: Sequence[str], rules: Rules, *, seed: str | None = None,
        dealer: int | None = None, deck: Sequence[str] | None = None,
        correlation_id: str | None = None,
    ) -> NewGame:
        start = StartGame(
            seats=tuple(names), rules=rules, seed=seed or secrets.token_hex(16), dealer=dealer,
            deck=tuple(deck) if deck is not None else None,
        )
        events = decide(NEW_GAME, start, None)
        game_id = uuid.uuid4().hex
        # The game id prefix lets a token used on the wrong game be told from a bad one.
        tokens = [f"{game_id}.{secrets.token_urlsafe(24)}" for _ in names]
        spectator = f"{game_id}.{secrets.token_urlsafe(24)}"
        await self.store.save_seat_tokens(
            game_id, [token_hash(t) for t in [*tokens, spectator]]
        )
        result = await self.store.append(
            game_id, 0, [to_new(e) for e in events], Metadata(correlation_id=correlation_id)
        )
        self._remember(game_id, fold(NEW_GAME, events))
        await self._publish(game_id, result.last_version)
        return NewGame(game_id, result.last_version, tokens, spectator)

    async def seat_of(self, game_id: str, token: str) -> int | None:
        """The seat a token plays (SPECTATOR_SEAT for the spectator token), or None."""
        if not GAME_ID.fullmatch(game_id):
            return None
        hashes = self._tokens.get(game_id)
        if hashes is None:
            hashes = await self.store.seat_tokens(game_id)
            if hashes:
                self._tokens[game_id] = hashes
                while len(self._tokens) > self._cache_size:
                    self._tokens.popitem(last=False)
        digest = token_hash(token)
        found = None
        for index, stored in enumerate(hashes):
            if hmac.compare_digest(stored, digest):
                found = index
        if found is None:
            return None
        return SPECTATOR_SEAT if found == len(hashes) - 1 else found

    async def load(self, game_id: str) -> Game:
        """The current state: the cached one brought up to date with what it lacks."""
        _named(game_id)
        state = self._cache.get(game_id, NEW_GAME)
        rows = await self.store.read(game_id, after=state.version)
        if rows:
            state = fold(state, (from_recorded(r) for r in rows))
        if not state.started:
            raise GameNotFound(game_id)
        self._remember(game_id, state)
        return state

    async def rules_of(self, game_id: str) -> Rules:
        """A game's table options, which never change: from the cache when it holds the game."""
        cached = self._cache.get(game_id)
        return cached.rules if cached is not None else (await self.load(game_id)).rules

    async def state_at(self, game_id: str, version: int) -> Game:
        _named(game_id)
        rows = await self.store.read(game_id, after=0, until=version)
        state = fold(NEW_GAME, (from_recorded(r) for r in rows))
        if not state.started:
            raise GameNotFound(game_id)
        return state

    async def events(self, game_id: str, after: int = 0) -> list[Recorded]:
        _named(game_id)
        rows = await self.store.read(game_id, after=after)
        return [Recorded(r.version, from_recorded(r)) for r in rows]

    async def execute(
        self, game_id: str, seat: int, command: PlayerCommand, *, command_id: str | None = None,
        correlation_id: str | None = None,
    ) -> Outcome:
        """Decide and append; on a race, reload and decide again (bounded). A repeated
        command id returns the first outcome and changes nothing."""
        kind = type_of_command(command)
        started = time.perf_counter()
        outcome_label = "error"
        try:
            outcome = await self._execute(game_id, seat, command, command_id, correlation_id)
        except RuleViolation as violation:
            outcome_label = violation.code
            log.info("command refused: %s", violation.detail, extra={
                "game_id": game_id, "seat": seat, "command_id": command_id, "code": violation.code,
            })
            raise
        except StoreUnavailable:
            outcome_label = "unavailable"
            self.metrics.store_errors.inc()
            raise
        else:
            outcome_label = "duplicate" if outcome.duplicate else "ok"
            if not outcome.duplicate:
                self._count(outcome)
            log.info("%s %s", kind, "repeated" if outcome.duplicate else "accepted", extra={
                "game_id": game_id, "version": outcome.version, "seat": seat,
                "command_id": command_id,
            })
            return outcome
        finally:
            self.metrics.commands.labels(kind, outcome_label).inc()
            self.metrics.command_seconds.labels(kind).observe(time.perf_counter() - started)

    def _count(self, outcome: Outcome) -> None:
        for recorded in outcome.events:
            match recorded.event:
                case PenaltyApplied(rule=rule):
                    self.metrics.penalties.labels(rule).inc()
                case Declared(true=False):
                    self.metrics.penalties.labels("false_declaration").inc()
                case DealWon(reason=reason) | DealLost(reason=reason) | DealVoid(reason=reason):
                    self.metrics.deals_ended.labels(reason).inc()

    async def _execute(
        self, game_id: str, seat: int, command: PlayerCommand, command_id: str | None,
        correlation_id: str | None,
    ) -> Outcome:
        metadata = Metadata(command_id=command_id, actor=seat, correlation_id=correlation_id)
        state = self._cache.get(game_id) or await self.load(game_id)
        for attempt in range(self.retries + 1):
            if attempt:
                self.metrics.retries.inc()
            try:
                events = decide(state, command, seat)
            except RuleViolation:
                fresh = await self.load(game_id)
                previous = await self._previous(game_id, seat, command_id)
                if previous is not None:
                    return previous
                if fresh.version == state.version:
                    raise
                state = fresh
                continue
            try:
                result = await self.store.append(
                    game_id, state.version, [to_new(e) for e in events], metadata
                )
            except Conflict:
                self.metrics.conflicts.inc()
                state = await self.load(game_id)
                continue
            if result.duplicate:
                previous = await self._previous(game_id, seat, command_id)
                assert previous is not None
                return previous
            state = fold(state, events)
            self._remember(game_id, state)
            await self._publish(game_id, result.last_version)
            first = result.first_version
            return Outcome(
                result.last_version, [Recorded(first + i, e) for i, e in enumerate(events)]
            )
        raise RuleViolation(
            "busy", f"the game changed {self.retries + 1} times while deciding; send it again"
        )

    async def _previous(self, game_id: str, seat: int, command_id: str | None) -> Outcome | None:
        if command_id is None:
            return None
        found = await self.store.find_command(game_id, command_id)
        if found is None:
            return None
        rows = await self.store.read(game_id, after=found.first_version - 1,
                                     until=found.last_version)
        if rows and rows[0].metadata.actor != seat:
            raise RuleViolation(
                "idempotency_key_reused", "this Idempotency-Key was used by another seat"
            )
        return Outcome(
            found.last_version, [Recorded(r.version, from_recorded(r)) for r in rows],
            duplicate=True,
        )

    def _remember(self, game_id: str, state: Game) -> None:
        self._cache[game_id] = state
        self._cache.move_to_end(game_id)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    async def _publish(self, game_id: str, version: int) -> None:
        with contextlib.suppress(Exception):
            await self.bus.publish(Hint(game_id, version))
