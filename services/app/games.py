"""The game service: load -> decide -> append -> publish, with retries on races."""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence

from domain.chain import GENESIS
from domain.commands import CloseSeeding, PlayerCommand, StartGame
from domain.decide import decide
from domain.errors import RuleViolation
from domain.events import DealLost, DealVoid, DealWon, Declared, Event, PenaltyApplied
from domain.evolve import fold
from domain.rules import Rules
from domain.state import NEW_GAME, Game
from domain.views import ARBITER, Viewer, redact, view
from infra.ports.events import Conflict, EventStore, Metadata, RecordedEvent, StoreUnavailable
from infra.ports.hints import Hint, HintBus
from services.app.callers import GAME_ID, Seating
from services.app.codec import from_recorded, to_new, type_of_command
from services.app.errors import GameNotFound
from services.app.results import CreatedGame, EventPage, Outcome, SeatToken, heads, recorded
from services.app.seeding import SeedingTimers, overdue
from services.metrics import Metrics

log = logging.getLogger("bura.games")


def _named(game_id: str) -> None:
    if not GAME_ID.fullmatch(game_id):
        raise GameNotFound(game_id)


class GameService:
    def __init__(
        self,
        store: EventStore,
        seating: Seating,
        hints: HintBus,
        *,
        retries: int = 8,
        cache: int = 4096,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.metrics = metrics or Metrics()
        self.store = store
        self.seating = seating
        self.hints = hints
        self.retries = retries
        self.clock = clock
        # each game's state and the chain hash of its version (the chain head)
        self._cache: OrderedDict[str, tuple[Game, bytes]] = OrderedDict()
        self._cache_size = cache
        self.seeding = SeedingTimers(self.current, self.now)

    def now(self) -> int:
        """The time the rules are given: milliseconds since 1970-01-01 UTC."""
        return int(self.clock() * 1000)

    async def create(
        self,
        names: Sequence[str],
        rules: Rules,
        *,
        seed: str | None = None,
        dealer: int | None = None,
        deck: Sequence[str] | None = None,
        correlation_id: str | None = None,
    ) -> CreatedGame:
        start = StartGame(
            seats=tuple(names),
            rules=rules,
            seed=seed or secrets.token_hex(16),
            dealer=dealer,
            deck=tuple(deck) if deck is not None else None,
        )
        events = decide(NEW_GAME, start, None, self.now())
        game_id = uuid.uuid4().hex
        tokens, spectator = await self.seating.issue(game_id, len(names))
        result = await self.store.append(
            game_id, 0, [to_new(e) for e in events], Metadata(correlation_id=correlation_id)
        )
        state = fold(NEW_GAME, events)
        self._remember(game_id, state, result.last_hash)
        self.metrics.games_created.inc()
        await self._publish(game_id, result.last_version)
        seats = [SeatToken(i, n, t) for i, (n, t) in enumerate(zip(names, tokens, strict=True))]
        shown = view(state, ARBITER)
        _, sealed = heads(state, ARBITER, result.last_hash)
        return CreatedGame(
            game_id,
            result.last_version,
            seats,
            spectator,
            chain_head=result.last_hash.hex(),
            receipt=sealed,
            commitment=shown.commitment,
            shuffle=shown.shuffle,
        )

    async def load(self, game_id: str) -> Game:
        """The current state: the cached one brought up to date with what it lacks."""
        return (await self.current(game_id))[0]

    async def current(self, game_id: str) -> tuple[Game, bytes]:
        """The current state and its chain head. A seeding whose deadline has passed is
        closed first (services/app/seeding.py): the table is no longer waiting for seeds."""
        state, head = await self._caught_up(game_id)
        if overdue(state, self.now()):
            state, head = await self._close_seeding(game_id, state)
        return state, head

    async def _caught_up(self, game_id: str) -> tuple[Game, bytes]:
        _named(game_id)
        state, head = self._cache.get(game_id, (NEW_GAME, GENESIS))
        rows = await self.store.read(game_id, after=state.version)
        if rows:
            state, head = fold(state, (from_recorded(r) for r in rows)), rows[-1].hash
        if not state.started:
            raise GameNotFound(game_id)
        self._remember(game_id, state, head)
        return state, head

    async def state_at(self, game_id: str, version: int) -> tuple[Game, bytes]:
        """The game as it was at `version`, and the chain hash of that version."""
        _named(game_id)
        rows = await self.store.read(game_id, after=0, until=version)
        state = fold(NEW_GAME, (from_recorded(r) for r in rows))
        if not state.started:
            raise GameNotFound(game_id)
        return state, rows[-1].hash

    async def rows(self, game_id: str) -> list[RecordedEvent]:
        """The game's whole record as stored, row metadata and hashes included."""
        _named(game_id)
        rows = await self.store.read(game_id)
        if not rows:
            raise GameNotFound(game_id)
        return rows

    async def events(self, game_id: str, after: int = 0) -> list[tuple[int, Event]]:
        _named(game_id)
        rows = await self.store.read(game_id, after=after)
        return [(r.version, from_recorded(r)) for r in rows]

    async def page(self, game_id: str, viewer: Viewer, after: int = 0) -> EventPage:
        """The events after a version, as `viewer` may see them."""
        state = await self.load(game_id)
        shown = [
            recorded(v, redact(e, viewer, state.rules))
            for v, e in await self.events(game_id, after)
        ]
        return EventPage(state.version, shown)

    async def execute(
        self,
        game_id: str,
        seat: int,
        command: PlayerCommand,
        *,
        command_id: str | None = None,
        correlation_id: str | None = None,
    ) -> Outcome:
        """Decide and append; on a race, reload and decide again (bounded). A repeated
        command id returns the first outcome and changes nothing. The events come back as
        the seat may see them."""
        kind = type_of_command(command)
        started = time.perf_counter()
        outcome_label = "error"
        try:
            version, events, duplicate, head = await self._execute(
                game_id, seat, command, command_id, correlation_id
            )
            outcome_label = "duplicate" if duplicate else "ok"
        except RuleViolation as violation:
            outcome_label = violation.code
            log.info(
                "command refused: %s",
                violation.detail,
                extra={
                    "game_id": game_id,
                    "seat": seat,
                    "command_id": command_id,
                    "code": violation.code,
                },
            )
            raise
        except StoreUnavailable:
            outcome_label = "unavailable"
            self.metrics.store_errors.inc()
            raise
        finally:
            self.metrics.commands.labels(kind, outcome_label).inc()
            self.metrics.command_seconds.labels(kind).observe(time.perf_counter() - started)
        if not duplicate:
            self._count(events)
        log.info(
            "%s %s",
            kind,
            "repeated" if duplicate else "accepted",
            extra={
                "game_id": game_id,
                "version": version,
                "seat": seat,
                "command_id": command_id,
            },
        )
        cached = self._cache.get(game_id)
        game = cached[0] if cached is not None else await self.load(game_id)
        shown = [recorded(v, redact(e, seat, game.rules)) for v, e in events]
        return Outcome(version, duplicate, shown, *heads(game, seat, head))

    def _count(self, events: list[tuple[int, Event]]) -> None:
        for _, event in events:
            match event:
                case PenaltyApplied(rule=rule):
                    self.metrics.penalties.labels(rule).inc()
                case Declared(true=False):
                    self.metrics.penalties.labels("false_declaration").inc()
                case DealWon(reason=reason) | DealLost(reason=reason) | DealVoid(reason=reason):
                    self.metrics.deals_ended.labels(reason).inc()

    async def _execute(
        self,
        game_id: str,
        seat: int,
        command: PlayerCommand,
        command_id: str | None,
        correlation_id: str | None,
    ) -> tuple[int, list[tuple[int, Event]], bool, bytes]:
        metadata = Metadata(command_id=command_id, actor=seat, correlation_id=correlation_id)
        cached = self._cache.get(game_id)
        state = cached[0] if cached is not None else await self.load(game_id)
        for attempt in range(self.retries + 1):
            if attempt:
                self.metrics.retries.inc()
            try:
                events = decide(state, command, seat, self.now())
            except RuleViolation as violation:
                fresh = await self.load(game_id)
                previous = await self._previous(game_id, seat, command_id)
                if previous is not None:
                    return previous
                if fresh.version == state.version:
                    violation.version = fresh.version  # so the client can resynchronise
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
            self._remember(game_id, state, result.last_hash)
            await self._publish(game_id, result.last_version)
            first = result.first_version
            shown = [(first + i, e) for i, e in enumerate(events)]
            return result.last_version, shown, False, result.last_hash
        raise RuleViolation(
            "busy", f"the game changed {self.retries + 1} times while deciding; send it again"
        )

    async def _close_seeding(self, game_id: str, state: Game) -> tuple[Game, bytes]:
        """Append CloseSeeding, at most once for a deal: its command id names the deal, so
        a process that lost the race finds the first append instead of a second one."""
        for _ in range(self.retries + 1):
            seeding = state.seeding
            if seeding is None or not overdue(state, self.now()):
                return await self._caught_up(game_id)
            events = decide(state, CloseSeeding(at=self.now()), None, self.now())
            closing = Metadata(command_id=f"seeding-closed/{seeding.number}")
            try:
                result = await self.store.append(
                    game_id, state.version, [to_new(e) for e in events], closing
                )
            except Conflict:
                self.metrics.conflicts.inc()
                state, _ = await self._caught_up(game_id)
                continue
            if result.duplicate:
                return await self._caught_up(game_id)
            state = fold(state, events)
            self._remember(game_id, state, result.last_hash)
            await self._publish(game_id, result.last_version)
            log.info(
                "seeding closed at its deadline",
                extra={"game_id": game_id, "version": result.last_version},
            )
            return state, result.last_hash
        return await self._caught_up(game_id)

    async def _previous(
        self, game_id: str, seat: int, command_id: str | None
    ) -> tuple[int, list[tuple[int, Event]], bool, bytes] | None:
        if command_id is None:
            return None
        found = await self.store.find_command(game_id, command_id)
        if found is None:
            return None
        rows = await self.store.read(
            game_id, after=found.first_version - 1, until=found.last_version
        )
        if rows and rows[0].metadata.actor != seat:
            raise RuleViolation(
                "idempotency_key_reused", "this Idempotency-Key was used by another seat"
            )
        shown = [(r.version, from_recorded(r)) for r in rows]
        return found.last_version, shown, True, rows[-1].hash if rows else b""

    def _remember(self, game_id: str, state: Game, head: bytes) -> None:
        self._cache[game_id] = (state, head)
        self._cache.move_to_end(game_id)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        self.seeding.watch(game_id, state)

    async def _publish(self, game_id: str, version: int) -> None:
        with contextlib.suppress(Exception):
            await self.hints.publish(Hint(game_id, version))
