"""The game service: load -> decide -> append -> publish, with retries on races.

Each process keeps recent games' states (the cache). A cached copy is *known current*
while the shared hint bus has been followed without a gap since the copy was read or last
moved, no hint names a later version, and it was confirmed within `fresh_seconds`: then
reads answer from it without asking the store. Appends never rely on it (the store's
version check does), and a cold load starts from the game's newest snapshot."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import secrets
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence

from domain.chain import GENESIS
from domain.commands import CloseSeeding, EndPause, PlayerCommand, StartGame, TimeOut
from domain.decide import decide
from domain.errors import RuleViolation
from domain.events import (
    DealLost,
    DealVoid,
    DealWon,
    Declared,
    Event,
    GameFinished,
    GameStarted,
    PenaltyApplied,
    TimedOut,
)
from domain.evolve import fold
from domain.rules import Rules
from domain.settlement import rematch_dealer
from domain.state import NEW_GAME, Game
from domain.views import ARBITER, Viewer, redact, view
from domain.vocabulary import PauseVerdict
from infra.deadline import detached
from infra.ports.events import (
    AppendResult,
    Conflict,
    EventStore,
    Metadata,
    NewEvent,
    OutcomeUnknown,
    Record,
    RecordedEvent,
    StoreUnavailable,
)
from infra.ports.games import AlreadyRematched, GameIndex
from infra.ports.hints import Hint, HintBus
from infra.ports.snapshots import Snapshot, Snapshots
from services import logs
from services.app.arrivals import Arrivals
from services.app.callers import GAME_ID, Seating
from services.app.codec import (
    RecordChanged,
    cut_short_why,
    fingerprint,
    fingerprint_as_sent,
    from_recorded,
    to_new,
    type_of_command,
)
from services.app.errors import GameNotFound, KeyReused
from services.app.results import (
    CommandStatus,
    CreatedGame,
    EventPage,
    Outcome,
    SeatToken,
    heads,
    recorded,
)
from services.app.seeding import SeedingTimers, overdue
from services.app.snapshots import EVERY, SCHEMA, carried, crossed, restored, snapshot
from services.metrics import Metrics

log = logging.getLogger("bura.games")

# How far behind the head a read of a game's events is a poll, read from the store itself.
NEAR_HEAD = 64


class _Turn:
    """Tries under one Idempotency-Key in this process, one at a time."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.waiting = 0


def _named(game_id: str) -> None:
    if not GAME_ID.fullmatch(game_id):
        raise GameNotFound(game_id)


def wall_clock() -> int:
    """The server's time in milliseconds since 1970-01-01 UTC: what the clocks are judged by."""
    return time.time_ns() // 1_000_000


# Told of every state this process appends: the timers follow their games with it.
Observer = Callable[[str, Game], None]


# A copy that took this many appends in a row from other replicas' hints, with no use
# here in between and no stream here, is dropped: its game is played elsewhere (a router
# by game sends it there, and the replica that created it keeps it otherwise), and folding
# every move of it here is work for nobody. A later use reads it again, once.
HEARD_ONLY = 8


class Copy:
    """A cached game: its state, the chain hash of its version, and whether (and since
    when) it is known current: `epoch` is the hint epoch it was confirmed in. `heard`:
    the appends it took from hints since it was last used here. `shared`: another process
    has appended to the game while this copy was kept (its seats play on several
    replicas), so the hints of this process's appends to it are urgent."""

    __slots__ = ("confirmed", "epoch", "head", "heard", "shared", "state")

    def __init__(self, state: Game, head: bytes, epoch: int, confirmed: float) -> None:
        self.state = state
        self.head = head
        self.epoch = epoch
        self.confirmed = confirmed
        self.heard = 0
        self.shared = False


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
        index: GameIndex | None = None,
        now: Callable[[], int] = wall_clock,
        snapshots: Snapshots | None = None,
        fresh_seconds: float = 2.0,
        snapshot_every: int = EVERY,
        record: Record | None = None,
    ) -> None:
        self.metrics = metrics or Metrics()
        self.store = store
        # the record's long reads (replay, history, audit, export): a standby, or the store
        self.record: Record = record if record is not None else store
        self.seating = seating
        self.hints = hints
        self.retries = retries
        self.index = index
        self.now = now
        self.snapshots = snapshots
        self.snapshot_every = snapshot_every
        # each game's state and the chain hash of its version (the chain head)
        self._cache: OrderedDict[str, Copy] = OrderedDict()
        self._cache_size = cache
        # Trust in the cache: bumped at every possible gap in the hints; a copy confirmed
        # in an older epoch is read again. Zero while nobody follows a shared bus.
        self._epoch = 0
        self._following = False
        self.fresh_seconds = fresh_seconds
        self._hinted: OrderedDict[str, int] = OrderedDict()  # the newest version hinted
        self.arrivals = Arrivals()  # commands waiting for the hint of what their seat saw
        # creations under way, by Idempotency-Key: tries at once here take turns
        self._creating: dict[str, _Turn] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._cold_loads: dict[str, asyncio.Future[tuple[Game, bytes]]] = {}
        self.reads = 0  # store reads made to bring a copy up to date (tests, metrics)
        self._observers: list[Observer] = []
        self.seeding = SeedingTimers(self.current, self.now)

    def observe(self, observer: Observer) -> None:
        self._observers.append(observer)

    async def create(
        self,
        names: Sequence[str],
        rules: Rules,
        *,
        seed: str | None = None,
        dealer: int | None = None,
        deck: Sequence[str] | None = None,
        correlation_id: str | None = None,
        rematch_of: str | None = None,
        key: str | None = None,
        said: str | None = None,
        said_as_sent: str | None = None,
    ) -> CreatedGame:
        """Deal a new game. Its row in the games index is written first, so a game never
        exists unlisted (a row whose game was never appended is repaired at start-up).

        Under the operator's Idempotency-Key `key` (with `said`, the creation's
        fingerprint), the game's id and tokens are the key's (Seating.game_for): a retry
        finds the game the first try made and answers as it did, `duplicate` set, and the
        same key with other options is KeyReused. `said_as_sent`: the fingerprint earlier
        releases recorded for the same body, which a retry of theirs still matches."""
        saids = (said, said_as_sent)
        ours = key is None
        if key is None:
            # a key of the server's own, told with an unknown outcome (`command_id`): sent
            # again as the Idempotency-Key, it finds the game this try made, if it made one.
            # No other try can have used it yet: nothing to look up or settle first.
            key = f"bura-{uuid.uuid4().hex}"
        turn = self._creating.setdefault(key, _Turn())
        turn.waiting += 1
        try:
            async with turn.lock:
                game_id = self.seating.game_for(key)
                again = None if ours else await self._created_before(game_id, key, saids)
                if again is not None:
                    return again
                return await self._create(
                    game_id,
                    names,
                    rules,
                    seed,
                    dealer,
                    deck,
                    correlation_id,
                    rematch_of,
                    key,
                    saids,
                    alone=ours,
                )
        finally:
            turn.waiting -= 1
            if not turn.waiting:
                del self._creating[key]

    async def _create(
        self,
        game_id: str,
        names: Sequence[str],
        rules: Rules,
        seed: str | None,
        dealer: int | None,
        deck: Sequence[str] | None,
        correlation_id: str | None,
        rematch_of: str | None,
        key: str,
        saids: tuple[str | None, str | None],
        *,
        alone: bool = False,
    ) -> CreatedGame:
        """`alone`: no other try is under the key (the server's own), so the row the games
        index was given is the game's, and needs no settling."""
        start = StartGame(
            seats=tuple(names),
            rules=rules,
            seed=seed or secrets.token_hex(16),
            dealer=dealer,
            deck=tuple(deck) if deck is not None else None,
            rematch_of=rematch_of,
        )
        events = decide(NEW_GAME, start, None, self.now())
        started = events[0]
        assert isinstance(started, GameStarted)
        if self.index is not None:
            try:
                await self.index.add(
                    game_id, names, started.rules, rematch_of=rematch_of, keyed=True
                )
            except StoreUnavailable:
                raise
            except Exception:
                # another replica's try under the key, between its row and its append
                again = await self._created_before(game_id, key, saids)
                if again is None:
                    raise
                return again
        try:
            # The tokens are the key's game's, written once the append has made it: a try
            # that loses the append to another one (on another replica, perhaps with other
            # options) must not write the seats of a game it did not make.
            said = saids[0]
            created = Metadata(command_id=key, correlation_id=correlation_id, fingerprint=said)
            result = await self.store.append(game_id, 0, [to_new(e) for e in events], created)
        except StoreUnavailable:
            # certainly nothing was written (an unknown outcome is OutcomeUnknown): the row
            # (and a rematch link to it) would name no game; kept if another try under the
            # key has made the game meanwhile
            if self.index is not None:
                with contextlib.suppress(Exception):
                    await self.index.remove(game_id)
            raise
        if result.duplicate:
            # a try under the same key got there first; or this one's answer was lost and
            # the store found the key (this very append, if the request id is ours)
            again = await self._created_before(
                game_id, key, saids, correlation_id if result.recovered else None
            )
            if again is not None:
                if result.recovered:  # what follows an append, as for any other
                    await self._told(game_id, await self.load(game_id), [], again.version)
                return again
        state = fold(NEW_GAME, events)
        try:
            tokens, spectator = await self._settled(game_id, state, index=not alone)
        except StoreUnavailable as error:
            # the game is made: a retry under the key finds it, and settles it then
            raise OutcomeUnknown(
                f"game {game_id} was dealt but its seats could not be written ({error}):"
                " send the creation again with the same Idempotency-Key",
                key,
            ) from error
        self.metrics.games_created.inc()
        await self._appended(game_id, state, events, result)
        seats = [SeatToken(i, n, t) for i, (n, t) in enumerate(zip(names, tokens, strict=True))]
        return self._creation(
            game_id, state, result.last_version, result.last_hash, seats, spectator
        )

    def _creation(
        self,
        game_id: str,
        state: Game,
        version: int,
        head: bytes,
        seats: list[SeatToken],
        spectator: str | None = None,
        duplicate: bool = False,
    ) -> CreatedGame:
        shown = view(state, ARBITER)
        _, sealed = heads(state, ARBITER, head)
        return CreatedGame(
            game_id,
            version,
            seats,
            spectator if spectator is not None else self.seating.keyed_token(game_id, len(seats)),
            chain_head=head.hex(),
            receipt=sealed,
            commitment=shown.commitment,
            shuffle=shown.shuffle,
            rematch_of=state.rematch_of,
            duplicate=duplicate,
        )

    async def _settled(
        self, game_id: str, state: Game, *, index: bool = True
    ) -> tuple[list[str], str]:
        """A game made under an Idempotency-Key, indexed and seated as it was dealt: its
        games-index row written over whatever another try under the key wrote (other
        options, on another replica; not when `index` is false: no other try was), and its
        seats' token hashes saved. Its tokens, and the spectator's."""
        if self.index is not None and index:
            await self.index.settle(game_id, state.seats, state.rules, rematch_of=state.rematch_of)
        return await self.seating.issue(game_id, len(state.seats), keyed=True)

    async def _created_before(
        self,
        game_id: str,
        key: str,
        saids: tuple[str | None, str | None],
        mine: str | None = None,
    ) -> CreatedGame | None:
        """The answer a creation under `key` was given, if the store holds it: the game
        as it was dealt (whatever was played since), with its tokens derived again; a
        duplicate unless it came in the request `mine`."""
        found = await self.store.find_command(game_id, key)
        if found is None:
            return None
        if found.fingerprint != saids[0] and (saids[1] is None or found.fingerprint != saids[1]):
            raise KeyReused(
                "this Idempotency-Key created another game (other options): create a new "
                "game under a new key (a retry repeats the first body)"
            )
        rows = await self.store.read(game_id, until=found.last_version)
        state = fold(NEW_GAME, [from_recorded(r) for r in rows])
        # as the try that made it left them, or would have had it not died first
        keys, _ = await self._settled(game_id, state)
        tokens = [
            SeatToken(i, n, t) for i, (n, t) in enumerate(zip(state.seats, keys, strict=True))
        ]
        ours = mine is not None and rows[0].metadata.correlation_id == mine
        return self._creation(
            game_id, state, found.last_version, rows[-1].hash, tokens, duplicate=not ours
        )

    async def rematch(
        self,
        game_id: str,
        *,
        seed: str | None = None,
        correlation_id: str | None = None,
        key: str | None = None,
    ) -> CreatedGame:
        """A new game with the finished game's seats and rules, dealt by its winner
        (docs/rules.md §14), linked both ways; a game has one rematch at most. Under the
        operator's Idempotency-Key `key`, a retry answers with the rematch it made."""
        old = await self.load(game_id)
        if not old.finished:
            raise RuleViolation("game_not_finished", "a rematch follows a finished game")
        asked = f"rematch\0{game_id}\0{seed if seed is not None else ''}"
        try:
            return await self.create(
                old.seats,
                old.rules,
                seed=seed,
                dealer=rematch_dealer(old),
                correlation_id=correlation_id,
                rematch_of=game_id,
                key=key,
                said=hashlib.sha256(asked.encode()).hexdigest(),
            )
        except AlreadyRematched as already:
            raise RuleViolation(
                "rematch_exists", f"game {game_id} already has its rematch: {already.existing}"
            ) from None

    async def load(self, game_id: str) -> Game:
        """The current state: the cached one brought up to date with what it lacks."""
        return (await self.current(game_id))[0]

    async def current(self, game_id: str, seen: int = 0) -> tuple[Game, bytes]:
        """The current state and its chain head. A seeding whose deadline has passed is
        closed first (services/app/seeding.py): the table is no longer waiting for seeds.
        A caller that has `seen` a version this copy lacks (answered by another replica,
        whose hint is still on its way) gets the store's, never an older table."""
        if seen:
            self._behind(game_id, seen - 1)
        state, head = await self._caught_up(game_id)
        if overdue(state, self.now()):
            state, head = await self._close_seeding(game_id, state)
        return state, head

    async def _caught_up(self, game_id: str) -> tuple[Game, bytes]:
        _named(game_id)
        copy = self._cache.get(game_id)
        if copy is not None and self._current(game_id, copy):
            copy.heard = 0  # used here
            return copy.state, copy.head
        epoch = self._epoch  # a gap while reading leaves what was read unconfirmed
        if copy is None:
            state, head = await self._cold_once(game_id)
        else:
            self.reads += 1
            state, head = copy.state, copy.head
            rows = await self.store.read(game_id, after=state.version)
            if rows:
                state, head = fold(state, (from_recorded(r) for r in rows)), rows[-1].hash
        if not state.started:
            raise GameNotFound(game_id)
        self._remember(game_id, state, head, epoch)
        return state, head

    async def _cold_once(self, game_id: str) -> tuple[Game, bytes]:
        """A cold load, shared by whoever asks for the game while one is under way (a
        stream, a GET and a timer often ask at once): one snapshot and one read. Only cold
        loads are shared: a copy brought up to date is read after its caller asked."""
        while True:
            loading = self._cold_loads.get(game_id)
            if loading is None:
                break
            try:
                return await asyncio.shield(loading)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise
                # the caller that was loading it went away: load it here
        loading = asyncio.get_running_loop().create_future()
        self._cold_loads[game_id] = loading
        try:
            self.reads += 1
            found = await self._cold(game_id)
        except BaseException as error:
            if isinstance(error, asyncio.CancelledError):
                loading.cancel()
            else:
                loading.set_exception(error)
                loading.exception()  # retrieved, whether anyone else waits or not
            raise
        finally:
            del self._cold_loads[game_id]
        loading.set_result(found)
        return found

    async def _cold(self, game_id: str) -> tuple[Game, bytes]:
        """A game not in the cache: from its newest snapshot and the events after it (the
        row at the snapshot's version included, to check the head it names), else from
        every event. A cold load that folded many events leaves a snapshot behind."""
        state, head = NEW_GAME, GENESIS
        newest = await self._newest_snapshot(game_id)
        if newest is not None:
            kept, base = newest
            rows = await self.store.read(game_id, after=kept.version - 1)
            if _names_its_row(kept, rows):
                rows = rows[1:]
                state, head = base, kept.head
            else:  # not this game's record as stored: ignore it, read what came before
                rows = await self.store.read(game_id, until=kept.version - 1) + rows
        else:
            rows = await self.store.read(game_id)
        read = len(rows)
        state, head = _folded(state, head, rows)
        # the index, written apart from the rows, holds the game finished: the rows from
        # its end on were removed, and it must take no command over the cut. The index is
        # written after the end's rows commit, so rows read before it was may have missed
        # that commit (a game ending as it was loaded): they are read on first.
        if state.started and not state.finished and await self.indexed_finished(game_id):
            later = await self.store.read(game_id, after=state.version)
            read += len(later)
            state, head = _folded(state, head, later)
            if not state.finished:
                raise RecordChanged(state.version, cut_short_why(state.version), "game_finished")
        if state.started and crossed(state.version - read, state.version, self.snapshot_every):
            self._keep(game_id, state, head)
        return state, head

    async def resumed_from(self, game_id: str, at_most: int) -> Game:
        """Where to fold from to render the versions after `at_most` (a stream resuming):
        the game's newest snapshot when it is no later than that and its head is the
        record's, else the empty game. A cache: failing it only costs the fold."""
        newest = await self._newest_snapshot(game_id) if at_most > 0 else None
        if newest is None or newest[0].version > at_most:
            return Game()
        kept, base = newest
        with contextlib.suppress(Exception):
            rows = await self.store.read(game_id, after=kept.version - 1, until=kept.version)
            if _names_its_row(kept, rows):
                return base
        return Game()

    async def _newest_snapshot(self, game_id: str) -> tuple[Snapshot, Game] | None:
        """The game's newest snapshot this code can restore, with its state; None when there
        is none. A cache: failing to read it only costs a longer fold."""
        if self.snapshots is None:
            return None
        with contextlib.suppress(Exception):
            kept = await self.snapshots.load(game_id, SCHEMA)
            base = restored(kept) if kept is not None else None
            if kept is not None and base is not None:
                return kept, base
        return None

    def _keep(self, game_id: str, state: Game, head: bytes) -> None:
        """Save a snapshot in the background, outside the request's deadline."""
        if self.snapshots is None:
            return
        saving = self.snapshots.save(snapshot(game_id, state, head))

        async def save() -> None:
            with contextlib.suppress(Exception):
                await saving

        task = detached(save())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def settled(self) -> None:
        """Wait for the snapshots being saved (shutdown, tests)."""
        while self._background:
            await asyncio.gather(*self._background)

    # --- following the hints --------------------------------------------------------------

    def follow(self, following: bool) -> None:
        """A listener of a shared bus starts (or stops) following the hints for us: only
        then can a copy be known current. Either way whatever was trusted is no more."""
        self._following = following and self.hints.shared
        self.gap()

    def gap(self) -> None:
        """Hints may have been missed: no copy is known current until read again."""
        self._epoch += 1
        self.arrivals.gap()

    def _current(self, game_id: str, copy: Copy) -> bool:
        return (
            self._following
            and self.hints.subscribed  # Redis lost: what others append goes unheard
            and copy.epoch == self._epoch
            and time.monotonic() - copy.confirmed < self.fresh_seconds
            and self._hinted.get(game_id, 0) <= copy.state.version
        )

    def _behind(self, game_id: str, version: int) -> None:
        """The store is past (or may be past) `version`: a copy at it is not known current,
        whatever the hints said, until it is read again. A copy known current is trusted
        for reads; a refusal or a conflict is told only after the store has been asked."""
        copy = self._cache.get(game_id)
        if copy is not None and copy.state.version <= version:
            copy.epoch = -1

    def known(self, game_id: str) -> int | None:
        """The version of the game's cached copy, if it is known current; else None."""
        copy = self._cache.get(game_id)
        if copy is None or not self._current(game_id, copy):
            return None
        copy.heard = 0  # used here
        return copy.state.version

    def heard(self, hint: Hint, wanted: bool = True) -> list[Event] | None:
        """A hint from the bus: the cached copy takes the append it carries when it is at
        exactly the version the append followed (no store read). Returns the events it
        carried, decoded once for whoever else follows the game here (the feeds) when they
        are `wanted`; a game nobody holds or watches here costs no decoding."""
        events = self._take(hint, wanted)
        self.arrivals.hinted(hint.game_id, hint.version)
        return events

    def _take(self, hint: Hint, wanted: bool) -> list[Event] | None:
        game_id = hint.game_id
        if self._hinted.get(game_id, 0) < hint.version:
            self._hinted[game_id] = hint.version
            self._hinted.move_to_end(game_id)
            while len(self._hinted) > self._cache_size:
                forgotten, _ = self._hinted.popitem(last=False)
                evicted = self._cache.get(forgotten)
                if evicted is not None:  # what was hinted about it is no longer known
                    evicted.epoch = -1
        copy = self._cache.get(game_id)
        if copy is not None and hint.version > copy.state.version:
            copy.shared = True  # another process appends to it: its hints from here are urgent
        takes = copy is not None and copy.state.version == hint.after
        if hint.after is None or not (takes or wanted):
            return None
        if copy is not None and takes and not wanted and copy.heard + 1 >= HEARD_ONLY:
            del self._cache[game_id]  # played elsewhere, watched nowhere here: let it go
            return None  # unfolded, undecoded: nobody here wants its events
        events = carried(hint.events, hint.schema)
        if events is None or copy is None or not takes:
            return events
        try:
            state = fold(copy.state, events)
        except Exception:  # an append this code cannot fold: leave it to the store
            return None
        if state.version != hint.version:
            return None  # not the append it says it is: leave it to the store
        trusted = copy.epoch == self._epoch
        self._remember(game_id, state, hint.head, copy.epoch)
        self.store.heard(game_id, hint.version, hint.head)  # the next append may chain on
        taken = self._cache[game_id]
        if not trusted:  # it moved, but whether it missed something is still unknown
            taken.confirmed = copy.confirmed
        taken.heard = copy.heard + 1
        return events

    async def indexed_finished(self, game_id: str) -> bool:
        """The games index holds the game as finished. The index is written apart from
        the rows, so a record without its end beside it was cut short."""
        _named(game_id)
        indexed = None if self.index is None else await self.index.get(game_id)
        return indexed is not None and indexed.status == "finished"

    async def rows(self, game_id: str) -> list[RecordedEvent]:
        """The game's whole record as stored, row metadata and hashes included."""
        _named(game_id)
        rows = await self.record.read(game_id)
        if not rows:
            raise GameNotFound(game_id)
        return rows

    async def page(self, game_id: str, viewer: Viewer, after: int = 0) -> EventPage:
        """The events after a version, as `viewer` may see them. A poll near the head (at
        most NEAR_HEAD versions behind the copy held here) reads the store in one query: a
        standby would seldom hold that tail yet, and asking it first would only add a
        query. A longer read is the record's (a standby's, when one is set)."""
        state = await self.load(game_id)
        source = self.store if state.version - after <= NEAR_HEAD else self.record
        rows = await source.read(game_id, after=after)
        shown = [recorded(r.version, redact(from_recorded(r), viewer, state.rules)) for r in rows]
        # the rows may run past the copy held here (another replica appended since): the
        # page's version is never older than the last event it lists
        return EventPage(max(state.version, rows[-1].version if rows else 0), shown)

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
        command id returns the first outcome and changes nothing; one used for another
        command (another seat's, or another body) is refused (KeyReused). The events come
        back as the seat may see them.

        A command sent without an id is given one, so that an append whose answer is lost
        can still be looked up by the store and the server never has to guess."""
        kind = type_of_command(command)
        keyed = command_id is not None
        command_id = command_id if command_id is not None else f"bura-{uuid.uuid4().hex}"
        started = time.perf_counter()
        now = self.now()  # the moment the act reached the table, whatever the retries
        outcome_label = "error"
        try:
            version, events, duplicate, head = await self._execute(
                game_id, seat, command, command_id, keyed, correlation_id, now
            )
            outcome_label = "duplicate" if duplicate else "ok"
        except RuleViolation as violation:
            outcome_label = counted_as(violation.code)
            logs.info(
                log,
                f"command refused: {violation.detail}",
                {
                    "game_id": game_id,
                    "seat": seat,
                    "command_id": command_id,
                    "code": violation.code,
                },
            )
            raise
        except KeyReused:
            outcome_label = "idempotency_key_reused"
            raise
        except StoreUnavailable:  # bura_store_errors_total: the 503's handler counts it
            outcome_label = "unavailable"
            raise
        except OutcomeUnknown as unknown:
            outcome_label = "outcome_unknown"
            log.warning(
                "command outcome unknown: %s",
                unknown,
                extra={"game_id": game_id, "seat": seat, "command_id": command_id},
            )
            unknown.command_id = command_id
            raise
        finally:
            self.metrics.command(kind, outcome_label).inc()
            self.metrics.command_time(kind).observe(time.perf_counter() - started)
        if not duplicate:
            self._count(events)
        logs.info(
            log,
            f"{kind} repeated" if duplicate else f"{kind} accepted",
            {"game_id": game_id, "version": version, "seat": seat, "command_id": command_id},
        )
        cached = self._cache.get(game_id)
        game = cached.state if cached is not None else await self.load(game_id)
        shown = [recorded(v, redact(e, seat, game.rules)) for v, e in events]
        return Outcome(version, duplicate, shown, *heads(game, seat, head), command_id)

    def _count(self, events: list[tuple[int, Event]]) -> None:
        for _, event in events:
            match event:
                case PenaltyApplied(rule=rule):
                    self.metrics.penalties.labels(rule).inc()
                case Declared(true=False):
                    self.metrics.penalties.labels("false_declaration").inc()
                case DealWon(reason=reason) | DealLost(reason=reason) | DealVoid(reason=reason):
                    self.metrics.deals_ended.labels(reason).inc()
                case TimedOut(clock=clock, verdict=verdict):
                    self.metrics.timeouts.labels(clock, verdict).inc()

    async def _execute(
        self,
        game_id: str,
        seat: int,
        command: PlayerCommand,
        command_id: str,
        keyed: bool,
        correlation_id: str | None,
        now: int,
    ) -> tuple[int, list[tuple[int, Event]], bool, bytes]:
        said = fingerprint(command)
        metadata = Metadata(command_id, seat, correlation_id, said)
        cached = self._cache.get(game_id)
        if (
            cached is not None
            and command.seen is not None
            and command.seen > max(cached.state.version, self._hinted.get(game_id, 0))
            and self._current(game_id, cached)
        ):
            # The seat saw a version no hint has told of yet: it is on its way (arrivals.py).
            heard = await self.arrivals.wait(game_id, command.seen)
            self.metrics.hint_wait("heard" if heard else "missed").inc()
            cached = self._cache.get(game_id)
        if cached is not None and max(command.seen or 0, self._hinted.get(game_id, 0)) > (
            cached.state.version
        ):
            # The player, or a hint, has seen a version this copy lacks: judged on it, the
            # command would be refused or its append would lose the race. Read it first.
            self._behind(game_id, cached.state.version)
            cached = None
        state = cached.state if cached is not None else await self.load(game_id)
        for attempt in range(self.retries + 1):
            if attempt:
                self.metrics.retries.inc()
            try:
                events = decide(state, command, seat, now)
            except RuleViolation as violation:
                # a refusal is told only when the store says the table is as it was judged
                self._behind(game_id, state.version)
                fresh = await self.load(game_id)
                if keyed:  # the retry of a command that was applied: its first answer
                    found = await self.store.find_command(game_id, command_id)
                    if found is not None:
                        version, stored, _, head = await self._previous(
                            game_id, seat, command, said, found
                        )
                        return version, stored, True, head
                if fresh.version == state.version:
                    violation.version = fresh.version  # so the client can resynchronise
                    if violation.code == "out_of_time":
                        # The seat due's time ran out before this act: judge it now, as the
                        # timers would a moment later, so a game never waits on them; the
                        # refusal names the table after the timeout, the one to go on from.
                        await self.time_out(game_id, fresh, now)
                        violation.version = (await self.load(game_id)).version
                    raise
                state = fresh
                continue
            new = [to_new(e) for e in events]
            try:
                result = await self.store.append(game_id, state.version, new, metadata)
            except Conflict:
                self.metrics.conflicts.inc()
                self._behind(game_id, state.version)
                state = await self.load(game_id)
                continue
            if result.duplicate:
                version, stored, by, head = await self._previous(
                    game_id, seat, command, said, result
                )
                if not result.recovered:
                    return version, stored, True, head
                # The answer was lost and the store found the command: this very append
                # (the request id is ours), or a retry of it that got there first. What
                # follows an append is done as for any other (the cache catches up).
                await self._told(game_id, await self.load(game_id), [e for _, e in stored], version)
                return version, stored, correlation_id is None or by != correlation_id, head
            state = fold(state, events)
            await self._appended(game_id, state, events, result, new)
            first = result.first_version
            shown = [(first + i, e) for i, e in enumerate(events)]
            return result.last_version, shown, False, result.last_hash
        raise RuleViolation(
            "busy", f"the game changed {self.retries + 1} times while deciding; send it again"
        )

    async def _close_seeding(self, game_id: str, state: Game) -> tuple[Game, bytes]:
        """Append CloseSeeding, at most once for a deal: under the version check, so a
        process that lost the race finds the first append instead of a second one. It
        carries no command id: every id a client may send is its own, so one of the
        server's own would be a client's to take first (and the seeding would never
        close)."""
        for _ in range(self.retries + 1):
            seeding = state.seeding
            if seeding is None or not overdue(state, self.now()):
                return await self._caught_up(game_id)
            at = self.now()
            events = decide(state, CloseSeeding(at=at), None, at)
            closing = Metadata(correlation_id="seeding")
            try:
                result = await self.store.append(
                    game_id, state.version, [to_new(e) for e in events], closing
                )
            except Conflict:
                self.metrics.conflicts.inc()
                self._behind(game_id, state.version)
                state, _ = await self._caught_up(game_id)
                continue
            state = fold(state, events)
            await self._appended(game_id, state, events, result)
            log.info(
                "seeding closed at its deadline",
                extra={"game_id": game_id, "version": result.last_version},
            )
            return state, result.last_hash
        return await self._caught_up(game_id)

    async def time_out(
        self,
        game_id: str,
        state: Game,
        at: int,
        away_since: int | None = None,
        deserted: bool = False,
    ) -> bool:
        """Time out the seat due on `state`, judged `at`: appended after `state.version` or
        not at all, so of any number of timers (on any number of replicas) racing for the
        same turn exactly one appends it, and none once the seat has acted. True when this
        call appended it."""
        clock = state.clock
        if clock is None:
            return False
        command = TimeOut(
            seat=clock.seat,
            version=state.version,
            at=at,
            away_since=away_since,
            deserted=deserted,
        )
        try:
            events = decide(state, command, None, now=at)
        except RuleViolation:
            return False
        try:
            result = await self.store.append(
                game_id,
                state.version,
                [to_new(e) for e in events],
                Metadata(correlation_id="timer"),
            )
        except Conflict:
            self._behind(game_id, state.version)
            return False  # the table changed first: the seat acted, or another timer won
        after = fold(state, events)
        await self._appended(game_id, after, events, result)
        self._count([(0, e) for e in events])
        timed = events[0]
        assert isinstance(timed, TimedOut)
        log.info(
            "seat %s timed out (%s): %s",
            timed.seat,
            timed.clock,
            timed.verdict,
            extra={"game_id": game_id, "version": result.first_version, "seat": timed.seat},
        )
        return True

    async def end_pause(
        self, game_id: str, verdict: PauseVerdict, correlation_id: str | None = None
    ) -> Outcome:
        """The operator's ruling on a clock paused by a timeout."""
        now = self.now()
        for _ in range(self.retries + 1):
            state = await self.load(game_id)
            try:
                events = decide(state, EndPause(verdict), None, now=now)
            except RuleViolation as violation:
                # told with the version it was judged on, once the store says the table is
                # as it was judged (as a seat's refusal is); else judged again on the new one
                self._behind(game_id, state.version)
                if (await self.load(game_id)).version != state.version:
                    continue
                violation.version = state.version
                raise
            try:
                result = await self.store.append(
                    game_id,
                    state.version,
                    [to_new(e) for e in events],
                    Metadata(correlation_id=correlation_id),
                )
            except Conflict:
                self.metrics.conflicts.inc()
                self._behind(game_id, state.version)
                continue
            after = fold(state, events)
            await self._appended(game_id, after, events, result)
            self._count([(0, e) for e in events])
            first = result.first_version
            shown = [recorded(first + i, e) for i, e in enumerate(events)]
            return Outcome(
                result.last_version, False, shown, *heads(after, ARBITER, result.last_hash)
            )
        raise RuleViolation(
            "busy", f"the game changed {self.retries + 1} times while deciding; send it again"
        )

    async def _appended(
        self,
        game_id: str,
        state: Game,
        events: Sequence[Event],
        result: AppendResult,
        new: Sequence[NewEvent] | None = None,
    ) -> None:
        """After an append: the cache (with the chain head), then what _told does, with a
        hint that carries the append (and every version's chain hash, when the store gave
        them). The store has just said that the game was at the version appended after,
        so the new copy is confirmed current."""
        version, head = result.last_version, result.last_hash
        self._remember(game_id, state, head)
        stored = new if new is not None else [to_new(e) for e in events]
        payloads = b"[" + b",".join(e.data for e in stored) + b"]"
        heads = b"".join(result.hashes) if len(result.hashes) == len(events) else b""
        hint = Hint(game_id, version, version - len(events), payloads, head, SCHEMA, heads)
        await self._told(game_id, state, events, version, hint)
        if crossed(version - len(events), version, self.snapshot_every):
            self._keep(game_id, state, head)

    async def _told(
        self,
        game_id: str,
        state: Game,
        events: Sequence[Event],
        version: int,
        hint: Hint | None = None,
    ) -> None:
        """Who must hear of an append: the hint, the index once the game is over, and
        whoever observes this process's games (the timers)."""
        await self._publish(game_id, version, hint)
        finished = next((e for e in events if isinstance(e, GameFinished)), None)
        if finished is not None and self.index is not None:
            try:
                await self.index.finish(game_id, finished.winners, finished.reason)
            except StoreUnavailable:
                log.warning(
                    "the games index missed a finished game; repaired at the next start",
                    extra={"game_id": game_id},
                )
        for observer in self._observers:
            observer(game_id, state)

    async def _previous(
        self,
        game_id: str,
        seat: int,
        command: PlayerCommand,
        said: str,
        found: AppendResult,
    ) -> tuple[int, list[tuple[int, Event]], str | None, bytes]:
        """The first answer to a command id, if it names this seat's same command (`said`,
        its fingerprint), the request it came in, and the record's hash at its last
        version."""
        rows = await self.store.read(
            game_id, after=found.first_version - 1, until=found.last_version
        )
        # commands recorded before the store kept seats have theirs on the event rows
        actor = found.actor if found.actor is not None else rows[0].metadata.actor if rows else None
        if actor != seat:
            raise KeyReused("this Idempotency-Key was used by another seat of this game")
        if (
            found.fingerprint is not None
            and found.fingerprint != said
            # recorded by a release before cards were sorted
            and found.fingerprint != fingerprint_as_sent(command)
        ):
            raise KeyReused(
                "this Idempotency-Key was used for another command: send a new command "
                "under a new key (a retry repeats the first body exactly)"
            )
        by = rows[0].metadata.correlation_id if rows else None
        shown = [(r.version, from_recorded(r)) for r in rows]
        return found.last_version, shown, by, rows[-1].hash if rows else b""

    async def command(self, game_id: str, command_id: str, viewer: Viewer) -> CommandStatus:
        """What became of a command id, for the seat that sent it (or the arbiter): to any
        other seat a key it did not use is unknown, as if never sent."""
        state = await self.load(game_id)
        found = await self.store.find_command(game_id, command_id)
        if found is None:
            return CommandStatus(command_id=command_id, status="unknown")
        rows = await self.store.read(
            game_id, after=found.first_version - 1, until=found.last_version
        )
        actor = found.actor if found.actor is not None else rows[0].metadata.actor if rows else None
        if viewer != ARBITER and viewer != actor:
            return CommandStatus(command_id=command_id, status="unknown")
        return CommandStatus(
            command_id=command_id,
            status="applied",
            seat=actor,
            version=found.last_version,
            events=[
                recorded(r.version, redact(from_recorded(r), viewer, state.rules)) for r in rows
            ],
            recorded_at=rows[0].recorded_at if rows else None,
        )

    def _remember(self, game_id: str, state: Game, head: bytes, epoch: int | None = None) -> None:
        """Cache a copy, confirmed now in `epoch` (the current one unless told)."""
        copy = Copy(state, head, self._epoch if epoch is None else epoch, time.monotonic())
        kept = self._cache.get(game_id)
        copy.shared = kept is not None and kept.shared
        self._cache[game_id] = copy
        self._cache.move_to_end(game_id)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        self.seeding.watch(game_id, state)

    async def _publish(self, game_id: str, version: int, hint: Hint | None = None) -> None:
        """The hint that the game reached `version` (the given one, carrying the append):
        urgent unless the game is known to be played here alone (its copy kept since and
        no other process appending to it), as where a router sends each game to one
        replica: then it goes with the turn's other hints, in one message burst."""
        copy = self._cache.get(game_id)
        urgent = copy is None or copy.shared
        with contextlib.suppress(Exception):
            await self.hints.publish(hint or Hint(game_id, version), urgent)


# Refusals whose code tells of cards the refused seat cannot see (docs/rules.md §8.8: a
# combination outranked by one another seat holds): the public metrics count them apart
# from the code, which only the refused seat's answer gives.
SAYS_OF_HIDDEN_CARDS = frozenset({"combination_outranked"})


def counted_as(code: str) -> str:
    """A refusal's `outcome` in bura_commands_total: its code, unless the code tells of
    hidden cards (then `refused`)."""
    return "refused" if code in SAYS_OF_HIDDEN_CARDS else code


def _folded(state: Game, head: bytes, rows: list[RecordedEvent]) -> tuple[Game, bytes]:
    """The game after the rows read from its record, which must follow its version."""
    if not rows:
        return state, head
    first = state.version + 1
    state, head = fold(state, (from_recorded(r) for r in rows)), rows[-1].hash
    if rows[-1].version != state.version:  # a row removed: each after it renumbered
        missing = next((first + i for i, r in enumerate(rows) if r.version != first + i), first)
        raise RecordChanged(missing, f"version {missing} is missing from the record")
    return state, head


def _names_its_row(kept: Snapshot, rows: Sequence[RecordedEvent]) -> bool:
    """Whether rows read from a snapshot's version on begin with the row it names (its
    version and chain hash): else it is no snapshot of this record as stored."""
    return bool(rows) and rows[0].version == kept.version and rows[0].hash == kept.head
