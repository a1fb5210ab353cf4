"""Live views: one feed per game this process follows, woken by bus hints and by a poll,
always catching up from the event store, so a lost hint only delays, never loses.

A process follows a game while a stream here watches it or hints about it keep coming
(idle feeds are dropped)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from domain.events import Event
from domain.evolve import evolve
from domain.state import Game
from domain.views import Presence, Viewer
from infra.ports.events import StoreUnavailable
from infra.ports.hints import Hint, HintBus
from services.app.codec import from_recorded
from services.app.errors import GameNotFound
from services.app.games import GameService
from services.app.seeding import overdue
from services.live.attendance import Attendance
from services.live.sse import END, KEEPALIVE, SHUTDOWN, message, presence_message

log = logging.getLogger("bura.projector")

HISTORY = 64  # versions a feed keeps for resuming streams without reading the store
# A game nobody watches here is caught up at most this often: its hints, one per command,
# then cost one read per interval rather than one each.
UNWATCHED_DELAY = 0.25


class Feed:
    def __init__(self, game_id: str, state: Game, head: bytes) -> None:
        self.game_id = game_id
        self.state = state
        self.head = head  # the chain hash of the state's version
        # (version, event, state after it, chain hash of that version)
        self.history: deque[tuple[int, Event, Game, bytes]] = deque(maxlen=HISTORY)
        self.changed = asyncio.Event()  # replaced by a fresh one at every change
        self.lock = asyncio.Lock()
        self.watchers = 0
        self.refreshed = time.monotonic()
        self.used = time.monotonic()
        self.wanted = False
        self.lazy = False  # the refresher is waiting UNWATCHED_DELAY before it reads
        self.refresher: asyncio.Task[None] | None = None
        self.presence: tuple[Presence, ...] | None = None  # the seats', as last read

    def announce(self) -> None:
        changed, self.changed = self.changed, asyncio.Event()
        changed.set()


class Projector:
    def __init__(
        self,
        service: GameService,
        bus: HintBus,
        *,
        poll_seconds: float = 2.0,
        keepalive_seconds: float = 15.0,
        idle_seconds: float = 30.0,
        attendance: Attendance | None = None,
    ) -> None:
        self.service = service
        self.bus = bus
        self.attendance = attendance
        if attendance is not None:
            attendance.observe(self._presence_changed)
        self.poll = poll_seconds
        self.keepalive = keepalive_seconds
        self.idle = idle_seconds
        self.feeds: dict[str, Feed] = {}
        self.draining = asyncio.Event()
        self.open_streams = 0
        self.lag = 0  # versions the newest hint was ahead of its feed: read by /metrics
        self._tasks: set[asyncio.Task[None]] = set()
        self._loading: dict[str, int] = {}  # games being loaded: the newest version hinted

    def start(self) -> None:
        self._spawn(self._listen())
        self._spawn(self._poll())

    def drain(self) -> None:
        """Close every stream with a shutdown message. Called on SIGTERM, before the server
        waits for open connections, so streams end and the server can stop."""
        if self.draining.is_set():
            return
        self.draining.set()
        for feed in self.feeds.values():
            feed.announce()

    async def stop(self) -> None:
        self.drain()
        tasks = [*self._tasks]
        tasks += [f.refresher for f in self.feeds.values() if f.refresher is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- following games ---------------------------------------------------------------

    async def _listen(self) -> None:
        while not self.draining.is_set():
            try:
                async for hint in self.bus.hints():
                    if hint is None:
                        # (Re)subscribed: hints may have been lost.
                        for feed in self.feeds.values():
                            self._catch_up(feed)
                    else:
                        self._hinted(hint)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("hint listener failed; restarting")
            await asyncio.sleep(0.5)

    def _hinted(self, hint: Hint) -> None:
        feed = self.feeds.get(hint.game_id)
        if feed is None:
            if hint.game_id in self._loading:
                self._loading[hint.game_id] = max(self._loading[hint.game_id], hint.version)
            elif not self.draining.is_set():
                self._loading[hint.game_id] = hint.version
                self._spawn(self._follow(hint.game_id))
            return
        feed.used = time.monotonic()
        if hint.version > feed.state.version:
            self.lag = hint.version - feed.state.version
            self._catch_up(feed, lazy=feed.watchers == 0)

    async def _follow(self, game_id: str) -> None:
        try:
            with contextlib.suppress(StoreUnavailable, GameNotFound):
                feed = await self.feed(game_id)
                if self._loading.get(game_id, 0) > feed.state.version:
                    self._catch_up(feed)  # hinted again while it loaded
        finally:
            self._loading.pop(game_id, None)

    async def _poll(self) -> None:
        """Catch every feed up now and then, hint or not; drop feeds nobody needs."""
        while True:
            await asyncio.sleep(self.poll)
            now = time.monotonic()
            for game_id, feed in list(self.feeds.items()):
                if feed.watchers == 0 and (feed.state.finished or now - feed.used > self.idle):
                    del self.feeds[game_id]
                    continue
                if overdue(feed.state, self.service.now()):
                    # watched, and its seeding deadline passed: close it (a process that
                    # restarted has no timer for it), then wake the streams
                    self._spawn(self._close_seeding(feed))
                elif now - feed.refreshed >= self.poll / 2:
                    self._catch_up(feed)
                if feed.watchers:
                    # a seat may connect or go away on another replica: no hint says so
                    self._spawn(self._read_presence(feed))

    async def _close_seeding(self, feed: Feed) -> None:
        with contextlib.suppress(StoreUnavailable, GameNotFound):
            await self.service.current(feed.game_id)
        self._catch_up(feed)

    async def feed(self, game_id: str) -> Feed:
        """The game's feed, loaded from the store the first time."""
        feed = self.feeds.get(game_id)
        if feed is None:
            state, head = await self.service.current(game_id)
            feed = self.feeds.setdefault(game_id, Feed(game_id, state, head))
        return feed

    def _catch_up(self, feed: Feed, lazy: bool = False) -> None:
        """Refresh the feed now (or, lazy, after UNWATCHED_DELAY); requests made while one
        runs fold into one more."""
        feed.wanted = True
        refresher = feed.refresher
        if refresher is not None and not refresher.done():
            if not feed.lazy or lazy:
                return
            refresher.cancel()  # waiting, or reading: nothing is half done at an await
        feed.lazy = lazy
        feed.refresher = asyncio.create_task(self._refresh_while_wanted(feed, lazy))

    async def _refresh_while_wanted(self, feed: Feed, lazy: bool) -> None:
        if lazy:
            await asyncio.sleep(UNWATCHED_DELAY)
        try:
            while feed.wanted:
                feed.wanted = False
                await self._refresh(feed)
        except Exception:
            log.exception("catching up game %s failed", feed.game_id)

    async def _refresh(self, feed: Feed) -> None:
        """Read what the feed lacks from the store and wake its streams."""
        async with feed.lock:
            try:
                rows = await self.service.store.read(feed.game_id, after=feed.state.version)
            except StoreUnavailable:
                return
            feed.refreshed = time.monotonic()
            if not rows:
                return
            state = feed.state
            for row in rows:
                event = from_recorded(row)
                state = evolve(state, event)
                feed.history.append((row.version, event, state, row.hash))
            feed.state, feed.head = state, rows[-1].hash
        feed.announce()

    # --- presence ----------------------------------------------------------------------

    def _presence_changed(self, game_id: str) -> None:
        feed = self.feeds.get(game_id)
        if feed is not None and not self.draining.is_set():
            self._spawn(self._read_presence(feed))

    async def _read_presence(self, feed: Feed) -> None:
        """The seats' presence from the board; the feed's streams are woken if it changed."""
        if self.attendance is None or feed.state.finished:
            return
        presence = await self.attendance.presence(feed.game_id, len(feed.state.seats))
        if presence is not None and presence != feed.presence:
            feed.presence = presence
            feed.announce()

    # --- streams -----------------------------------------------------------------------

    async def stream(
        self, game_id: str, viewer: Viewer, last_id: int | None
    ) -> AsyncIterator[bytes]:
        """The viewer's SSE messages: the current view (or, resuming after `last_id`, one
        message per version missed), then one per version, until the game or server ends."""
        feed = await self.feed(game_id)
        feed.watchers += 1
        self.open_streams += 1
        present: str | None = None
        try:
            if self.attendance is not None and isinstance(viewer, int):
                present = await self.attendance.arrive(game_id, viewer)
                await self._read_presence(feed)
            elif feed.presence is None:
                await self._read_presence(feed)
            # Start from what the store has now, not from a feed a hint has yet to wake.
            await self._refresh(feed)
            shown = feed.presence
            if last_id is None or last_id > feed.state.version:
                sent = feed.state.version
                yield message(sent, None, feed.state, viewer, feed.head, self.service.now(), shown)
            else:
                sent = last_id
            while True:
                changed = feed.changed
                if self.draining.is_set():
                    yield SHUTDOWN
                    return
                if feed.state.version > sent:
                    try:
                        shown = feed.presence
                        async for version, chunk in self._since(feed, sent, viewer):
                            sent = version
                            yield chunk
                        continue
                    except StoreUnavailable:
                        pass  # wait for the store below, keeping the stream open
                elif feed.state.finished:
                    yield END
                    return
                elif feed.presence != shown:
                    shown = feed.presence
                    yield presence_message(feed.state, viewer, self.service.now(), shown)
                    continue
                try:
                    async with asyncio.timeout(self.keepalive):
                        await changed.wait()
                except TimeoutError:
                    yield KEEPALIVE
        finally:
            feed.watchers -= 1
            feed.used = time.monotonic()
            self.open_streams -= 1
            if present is not None and self.attendance is not None:
                # a task of its own: this generator may be closing under a cancellation
                self._spawn(self.attendance.leave(present))

    async def _since(
        self, feed: Feed, sent: int, viewer: Viewer
    ) -> AsyncIterator[tuple[int, bytes]]:
        """Messages for every version after `sent`, from the feed's history or the store."""
        history = list(feed.history)
        now, presence = self.service.now(), feed.presence
        if history and history[0][0] <= sent + 1:
            for version, event, state, head in history:
                if version > sent:
                    yield version, message(version, event, state, viewer, head, now, presence)
            return
        until = feed.state.version
        rows = await self.service.store.read(feed.game_id, after=0, until=until)
        state = Game()
        for row in rows:
            event = from_recorded(row)
            state = evolve(state, event)
            if row.version > sent:
                yield (
                    row.version,
                    message(row.version, event, state, viewer, row.hash, now, presence),
                )
