"""The clocks' timers (docs/rules.md §13): one per game in progress with a clock that this
replica knows of, asleep until the seat due's deadline (or until it will have been away
abandon_seconds), then timing it out through the game service.

Every replica keeps a timer for every such game, and whichever wakes first appends the
timeout after the version it judged; the store's version check turns every other attempt
into nothing (GameService.time_out). A timer learns of new deadlines from this replica's
own appends at once; another replica's acts mostly move a deadline later, so a timer that
wakes too early reads the game and sleeps again. Timers start from the games index (games
in progress with a clock) and pick up new games, and paused ones that play on, from the
hints; finished games and games without a clock are remembered as needing none, so
nothing polls them. A hint that carries a game's start says whether its table has a
clock: a game without one is known to need no timer without reading it (every replica
hears of every new game).

A hint can be lost without a trace (its replica died between its commit and its publish;
a retry answered `duplicate` publishes nothing), so the timers also follow the store
itself: every poll interval (BURA_FEED_POLL_SECONDS), and at once after a gap in the
hints, they ask which games started a clock since the last look (EventStore.touched: the
global order from a checkpoint, stream ids and versions only) and start a timer for any
that has none, or wake one that may now be due sooner than it sleeps. They ask the same
of seedings opened (a seats' shuffle), and read each such game once, which arms its
seeding's timer here (services/app/seeding.py) or closes it if overdue. That costs two
queries per interval, whatever the number of commands, and no command anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any

from domain.clock import abandon_deadline, due_since, ms
from domain.events import ClockStarted, GameStarted, SeedingOpened
from domain.naming import snake
from domain.rules import clocked
from domain.state import Game
from infra.deadline import cancelled, detached
from infra.ports.events import Checkpoint, StoreUnavailable
from infra.ports.games import GameIndex
from infra.ports.hints import Hint, HintBus
from infra.ports.presence import Seen
from infra.throttle import Throttled
from services.app.errors import GameNotFound
from services.app.games import GameService
from services.app.snapshots import carried
from services.live.attendance import Attendance

log = logging.getLogger("bura.timers")
WARN_EVERY = 10.0  # seconds between two warnings that the store cannot be reached

SETTLED = 100_000  # games remembered as needing no timer; the oldest is forgotten first
LOADS = 8  # games read at once while timers start
RETRY_SECONDS = 2.0  # after the store could not be reached
PAUSED_LOOK_MS = 60_000  # a paused table judging abandonment is looked at again this often
SWEEP_PAGE = 1000  # events told per look at the store (stream ids and versions only)
CLOCK_STARTED = snake(ClockStarted.__name__)  # the event that starts (or restarts) a clock
SEEDING_OPENED = snake(SeedingOpened.__name__)  # a deal that waits for seeds to a deadline
SWEPT = (CLOCK_STARTED, SEEDING_OPENED)  # what a look at the store asks for, in one query
# An index row with no game this old was a creation that never happened (a creation under
# way writes its row a moment before its events).
ORPHANED_AFTER = timedelta(minutes=10)


class Timers:
    def __init__(
        self,
        games: GameService,
        hints: HintBus,
        index: GameIndex | None = None,
        attendance: Attendance | None = None,
        orphaned_after: timedelta = ORPHANED_AFTER,
        poll_seconds: float | None = None,
    ) -> None:
        self.games = games
        # how often the store is looked at for clocks no hint told of: the interval after
        # which the game service reads a cached game again, hint or not
        self.poll = poll_seconds if poll_seconds is not None else games.fresh_seconds
        self.orphaned_after = orphaned_after
        self.hints = hints
        self.index = index
        self.attendance = attendance
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self._pokes: dict[str, asyncio.Event] = {}
        self._latest: dict[str, Game] = {}
        self._settled: OrderedDict[str, None] = OrderedDict()
        # each sleeping timer's game: the version it judged, and whether a later act could
        # make the game due before the timer wakes (a bank, or abandonment)
        self._asleep: dict[str, tuple[int, bool]] = {}
        # the version at which a game's timer ended with no clock running (a pause): an
        # append the store shows up to it is nothing new
        self._rested: OrderedDict[str, int] = OrderedDict()
        self._sweeper: asyncio.Task[None] | None = None
        self._look = asyncio.Event()  # hints may have been missed: look at the store now
        self._loads = asyncio.Semaphore(LOADS)
        self._background: set[asyncio.Task[None]] = set()
        self._stopped = False
        self._trouble = Throttled(log, WARN_EVERY)  # the store out of reach, now and then
        self._unlisten: Callable[[], None] | None = None
        games.observe(self.observed)
        if attendance is not None:
            attendance.observe(self.poke)

    def start(self) -> None:
        self._spawn(self._start_up())
        self._unlisten = self.hints.listen(self._heard)

    async def stop(self) -> None:
        self._stopped = True
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None
        tasks = [*self._background, *self.tasks.values()]
        if self._sweeper is not None:
            tasks.append(self._sweeper)
        await cancelled(tasks)

    # --- which games have a timer ----------------------------------------------------

    def observed(self, game_id: str, state: Game) -> None:
        """This replica appended to the game: its new deadline is known without a read."""
        if not clocked(state.rules) or state.finished:
            self._settle(game_id)
            self.poke(game_id)  # a timer still running sees the game needs it no more
            return
        self._latest[game_id] = state
        self.watch(game_id)

    def watch(self, game_id: str) -> None:
        """Keep a timer for the game (if it turns out to need one)."""
        if self._stopped or game_id in self._settled:
            return
        running = self.tasks.get(game_id)
        if running is not None and not running.done():
            self.poke(game_id)
            return
        self._pokes[game_id] = asyncio.Event()
        # a timer outlives the request whose append started it: none of its deadline
        task = detached(self._run(game_id))
        self.tasks[game_id] = task
        self.games.metrics.timers.set(len(self.tasks))
        task.add_done_callback(lambda done: self._forget(game_id, done))

    def poke(self, game_id: str) -> None:
        """Look at the game again now: its deadline or its seats' presence changed."""
        poke = self._pokes.get(game_id)
        if poke is not None:
            poke.set()
        elif game_id not in self._settled:
            self.watch(game_id)

    def _settle(self, game_id: str) -> None:
        """Remember that the game needs no timer, ever: no clock, or over."""
        self._settled[game_id] = None
        self._settled.move_to_end(game_id)
        while len(self._settled) > SETTLED:
            self._settled.popitem(last=False)

    def _rest(self, game_id: str, version: int) -> None:
        """The game's timer ends at `version` with no clock running (a pause)."""
        self._rested[game_id] = version
        self._rested.move_to_end(game_id)
        while len(self._rested) > SETTLED:
            self._rested.popitem(last=False)

    def _forget(self, game_id: str, task: asyncio.Task[None]) -> None:
        if self.tasks.get(game_id) is task:
            del self.tasks[game_id]
            self._pokes.pop(game_id, None)
            self._asleep.pop(game_id, None)
        self.games.metrics.timers.set(len(self.tasks))

    # --- start-up and new games --------------------------------------------------------

    async def _start_up(self) -> None:
        """Repair what a crash left in the index, then a timer for every game in progress
        with a clock, then follow the store from where it stood before the index was read
        (nothing appended meanwhile is missed). Retried while the store cannot be reached."""
        while True:
            try:
                checkpoint = await self.games.store.head()
                if self.index is not None:
                    await self.repair()
                    for game_id in await self.index.clocked_in_progress():
                        self.watch(game_id)
                break
            except StoreUnavailable as error:
                log.warning("timers not started yet: %s; retrying", error)
                await asyncio.sleep(RETRY_SECONDS)
        if not self._stopped:
            self._sweeper = detached(self._follow(checkpoint))

    async def repair(self) -> None:
        """The index after a crash: a game that finished is marked so, a row whose game was
        never appended goes (with any rematch link to it)."""
        index = self.index
        if index is None:
            return
        stale = await index.stale(datetime.now(UTC) - self.orphaned_after)
        for game_id in stale.finished:
            try:
                state = await self.games.load(game_id)
            except GameNotFound:
                continue
            except StoreUnavailable:
                raise
            except Exception:
                # a record that no longer folds (edited behind the server's back: its
                # verify names the row): left as it is, and the repair goes on, so that
                # one such game never keeps every clock from starting
                log.exception("games index: game %s's record does not fold; left as it is", game_id)
                continue
            if state.winners is not None and state.reason is not None:
                await index.finish(game_id, state.winners, state.reason)
        for game_id in stale.orphans:
            await index.remove(game_id)
        if stale.finished or stale.orphans:
            log.warning(
                "repaired the games index: %d finished, %d never created",
                len(stale.finished),
                len(stale.orphans),
            )

    def _heard(self, hint: Hint | None) -> None:
        """New games from the hints; after a gap in them, the store at once."""
        if self._stopped:
            return
        if hint is None:  # hints may have been missed: what they said is in the store
            self._look.set()
        elif hint.game_id in self.tasks or hint.game_id in self._settled:
            return
        elif unclocked_start(hint):
            self._settle(hint.game_id)
        else:
            self.watch(hint.game_id)

    # --- the store, for what no hint said ----------------------------------------------

    async def _follow(self, checkpoint: Checkpoint) -> None:
        """Look at the store every poll interval (and after a gap in the hints) for clocks
        started since the last look."""
        while not self._stopped:
            self._look.clear()  # a gap from now on is looked at again
            try:
                checkpoint = await self._sweep(checkpoint)
            except StoreUnavailable as error:
                self._trouble.warn("timers could not look at the store: %s; again soon", error)
            except Exception:
                log.exception("timers: looking at the store failed; again soon")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll):
                    await self._look.wait()

    async def _sweep(self, checkpoint: Checkpoint) -> Checkpoint:
        """Every game whose clock started after the checkpoint, page by page; the
        checkpoint after them."""
        while True:
            page = await self.games.store.touched(checkpoint, SWEEP_PAGE, SWEPT)
            for stream in page.streams:
                if CLOCK_STARTED in stream.kinds:
                    self._moved(stream.stream_id, stream.version)
                if SEEDING_OPENED in stream.kinds:
                    self._seeding(stream.stream_id, stream.version)
            checkpoint = page.checkpoint
            if page.rows < SWEEP_PAGE:
                return checkpoint

    def _moved(self, game_id: str, version: int) -> None:
        """The store holds a clock started in the game, at `version` or before it. A timer
        that knows of it, or that no act can make due sooner, is left alone; any other
        game is read again and timed (the hint of it never came, or has not yet)."""
        if self._stopped or game_id in self._settled:
            return
        running = self.tasks.get(game_id)
        if running is not None and not running.done():
            asleep = self._asleep.get(game_id)
            if asleep is not None and (asleep[0] >= version or asleep[1]):
                return
        elif self._rested.get(game_id, -1) >= version:
            return  # paused at or after it: a clock already seen and stopped
        # no cached copy short of the version counts as current any longer (not even one
        # confirmed a moment ago): the read below is the store's
        self.games.heard(Hint(game_id, version))
        log.debug("game %s: a clock found in the store, not in the hints", game_id)
        self.poke(game_id)

    def _seeding(self, game_id: str, version: int) -> None:
        """The store holds a seeding opened in the game: unless its timer is set here, the
        game is read once (from the store), which sets it, or closes the seeding if its
        deadline has passed. The replica that opened it may have died before its hint."""
        if self._stopped or self.games.seeding.watching(game_id):
            return
        self.games.heard(Hint(game_id, version))
        self._spawn(self._arm_seeding(game_id))

    async def _arm_seeding(self, game_id: str) -> None:
        try:
            await self.games.current(game_id)
        except Exception:  # the store is down, or the record broken: the next load does it
            log.warning("game %s: its seeding could not be read", game_id, exc_info=True)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = detached(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # --- one game's timer ------------------------------------------------------------

    async def _run(self, game_id: str) -> None:
        fired_at = -1  # the version this timer last tried to time out
        while not self._stopped:
            try:
                state = self._latest.pop(game_id, None) or await self._load(game_id)
            except GameNotFound:
                return
            except StoreUnavailable:
                await self._sleep(game_id, RETRY_SECONDS)
                continue
            if not clocked(state.rules) or state.finished:
                self._settle(game_id)
                return
            clock = state.clock
            if clock is None or (clock.paused and not self._judges_abandonment(state)):
                # nothing runs: an act or the operator's ruling starts it again, told by
                # its hint or found in the store (_moved); a paused table that judges
                # abandonment keeps its timer for that (docs/rules.md §13.5)
                self._rest(game_id, state.version)
                return
            now = self.games.now()
            wake, away_since, deserted = await self._due(game_id, state, now)
            if wake > now:
                self._asleep[game_id] = (state.version, wake <= soonest(state))
                await self._sleep(game_id, (wake - now) / 1000)
                continue
            self._asleep.pop(game_id, None)
            if fired_at == state.version:
                # timed out this very table already and it has not moved: wait for the store
                await self._sleep(game_id, RETRY_SECONDS)
            fired_at = state.version
            try:
                await self.games.time_out(game_id, state, now, away_since, deserted)
            except StoreUnavailable:
                await self._sleep(game_id, RETRY_SECONDS)

    async def _due(self, game_id: str, state: Game, now: int) -> tuple[int, int | None, bool]:
        """When to act on the game: its deadline, or sooner if the seat due is away and
        will have been away abandon_seconds (then with the time it has been away since, and
        whether every other seat has been away that long too: the table is deserted); for a
        seat whose streams live on another replica, no later than they would lapse."""
        clock = state.clock
        assert clock is not None
        # paused, no deadline runs: only an absence is judged, and presence changes poke
        wake: int = clock.deadline if not clock.paused else now + PAUSED_LOOK_MS
        if not self._judges_abandonment(state) or self.attendance is None:
            return wake, None, False
        seen = await self.attendance.seats(game_id, state, now)
        if seen is None:
            return wake, None, False
        seat = seen[clock.seat]
        if seat.connected:
            if seat.until is not None:
                wake = min(wake, seat.until + 1)
            return wake, None, False
        away = seat.since if seat.since is not None else due_since(clock)
        gone = abandon_deadline(state.rules, clock, away)
        if gone is None:
            return wake, None, False
        if gone <= now and (clock.paused or gone <= clock.deadline):
            # away too long, before its time ran out: abandoned
            return now, away, self._deserted(state, seen, now)
        return min(wake, gone), None, False

    def _deserted(self, state: Game, seen: list[Seen], now: int) -> bool:
        """Every seat but the one due has been away abandon_seconds too (one never seen
        counts as away, from when its absence counts where the board cannot know): nobody
        is left to play, and the game ends with the deal."""
        assert state.clock is not None and state.rules.abandon_seconds is not None
        allowed = ms(state.rules.abandon_seconds)
        for number, other in enumerate(seen):
            if number == state.clock.seat:
                continue
            if other.connected or (other.since is not None and other.since + allowed > now):
                return False
        return True

    def _judges_abandonment(self, state: Game) -> bool:
        return state.rules.abandon_seconds is not None and self.attendance is not None

    async def _load(self, game_id: str) -> Game:
        async with self._loads:
            return await self.games.load(game_id)

    async def _sleep(self, game_id: str, seconds: float) -> None:
        poke = self._pokes.get(game_id)
        if poke is None:
            await asyncio.sleep(seconds)
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await poke.wait()
        poke.clear()


def soonest(state: Game) -> int:
    """The soonest any act after `state` can make the game due: an act comes no earlier
    than the running clock started, and gives the seat then due its whole turn time (and
    its abandon_seconds, when it is away)."""
    clock = state.clock
    assert clock is not None and state.rules.turn_seconds is not None
    allowed = ms(state.rules.turn_seconds)
    if state.rules.abandon_seconds is not None:
        if any(t is not None for t in clock.unanswered):
            # a seat the server played for may be due again at once, its absence counted
            # from before: any act can make the game due
            return clock.started
        allowed = min(allowed, ms(state.rules.abandon_seconds))
    return clock.started + allowed


def unclocked_start(hint: Hint) -> bool:
    """The hint carries the game's start (the append from version 0) and its table has no
    clock: the game never needs a timer. False whenever the hint does not say (another
    append, or events this code cannot read): then the game is read to know."""
    if hint.after != 0:
        return False
    events = carried(hint.events, hint.schema)
    if not events or not isinstance(events[0], GameStarted):
        return False
    return not clocked(events[0].rules)
