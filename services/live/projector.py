"""Live views: one feed per game watched here, woken by bus hints and by a poll, catching
up from the event store whenever a hint cannot be applied as it is, so a lost hint only
delays, never loses.

Only games with a stream open here are followed: a hint about any other game only moves
the game service's cached copy (services/app/games.py), and renders nothing. A hint that
carries its append, one event after exactly the feed's version, is applied without
reading the store; anything else (a gap, several events, whose intermediate chain heads
only the store has) is read. Each version's message is rendered once per viewer watching
(a seat, the spectators, the arbiter), however many streams share it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import Any

from domain.events import Event
from domain.evolve import evolve
from domain.state import Game
from domain.views import Presence, Viewer
from infra.deadline import cancelled, detached
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
RENDERED = 4 * HISTORY  # messages a feed keeps rendered, by (version, viewer)
FRESH_MS = 250  # how long the latest message's `now` and `time_left` may be shared
PAGE = 256  # rows a catch-up from the store reads at a time
TURN = 16  # events a catch-up folds (and renders) before it hands the loop back


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
        self.refresher: asyncio.Task[None] | None = None
        self.presence: tuple[Presence, ...] | None = None  # the seats', as last read
        # (version, viewer, latest) -> (the presence it was rendered with, when, the message)
        self.rendered: dict[tuple[int, Viewer, bool], tuple[object, int, bytes]] = {}

    def advance(self, version: int, event: Event, state: Game, head: bytes) -> None:
        self.history.append((version, event, state, head))
        self.state, self.head = state, head

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
        self.renders = 0  # view messages rendered (each shared by the streams of a viewer)
        self.applied = 0  # versions a feed took from a hint, without reading the store
        self._tasks: set[asyncio.Task[None]] = set()
        self._unlisten: Callable[[], None] | None = None

    def start(self) -> None:
        self._listen()
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
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None
            self.service.follow(False)
        tasks = [*self._tasks]
        tasks += [f.refresher for f in self.feeds.values() if f.refresher is not None]
        await cancelled(tasks)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = detached(work)  # it may outlive the request it started in
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- following games ---------------------------------------------------------------

    def _listen(self) -> None:
        """Follow the hints, told within the bus (no task between): the service trusts
        its copies only while this listens."""
        self.service.follow(True)
        self._unlisten = self.bus.listen(self._heard)

    def _heard(self, hint: Hint | None) -> None:
        if hint is not None:
            self._hinted(hint)
            return
        # (Re)subscribed, a publisher's hints were missed, or a listener failed.
        self.service.gap()
        for feed in self.feeds.values():
            if feed.watchers:
                self._catch_up(feed)

    def _hinted(self, hint: Hint) -> None:
        feed = self.feeds.get(hint.game_id)
        watched = feed is not None and feed.watchers > 0 and hint.version > feed.state.version
        events = self.service.heard(hint, wanted=watched)
        if feed is None or not watched:
            return  # not watched here: a stream that opens reads the store first
        feed.used = time.monotonic()
        self.lag = hint.version - feed.state.version
        if (
            events
            and hint.after == feed.state.version
            and not feed.lock.locked()  # a refresh reading now would fold it again
        ):
            # every version's chain hash: from the hint, or (one event) its head
            heads = [hint.head] if len(events) == 1 else hint.version_heads()
            steps = _stepped(feed.state, events, heads) if heads is not None else None
            if steps is not None and steps[-1][2].version == hint.version:
                for version, event, state, head in steps:
                    feed.advance(version, event, state, head)
                feed.refreshed = time.monotonic()
                self.applied += 1
                self.lag = 0
                feed.announce()
                return
        self._catch_up(feed)

    async def _poll(self) -> None:
        """Catch every feed up now and then, hint or not; drop feeds nobody needs."""
        while True:
            await asyncio.sleep(self.poll)
            now = time.monotonic()
            for game_id, feed in list(self.feeds.items()):
                if feed.watchers == 0:
                    # kept a while for a stream that resumes, but never caught up
                    if feed.state.finished or now - feed.used > self.idle:
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

    def _catch_up(self, feed: Feed) -> None:
        """Refresh the feed now; requests made while one runs fold into one more."""
        feed.wanted = True
        refresher = feed.refresher
        if refresher is not None and not refresher.done():
            return
        feed.refresher = detached(self._refresh_while_wanted(feed))

    async def _refresh_while_wanted(self, feed: Feed) -> None:
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
                if row.version <= state.version:
                    continue  # taken from a hint while this read
                event = from_recorded(row)
                state = evolve(state, event)
                feed.advance(row.version, event, state, row.hash)
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
        presence = await self.attendance.presence(feed.game_id, feed.state)
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
            # Start from what the store has now, not from a feed a hint has yet to wake
            # (unless this replica knows the game current at the feed's version).
            if self.service.known(game_id) != feed.state.version:
                await self._refresh(feed)
            shown = feed.presence
            if last_id is None or last_id > feed.state.version:
                sent = feed.state.version
                self.renders += 1
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

    def _rendered(
        self,
        feed: Feed,
        version: int,
        event: Event,
        state: Game,
        viewer: Viewer,
        head: bytes,
        now: int,
        presence: tuple[Presence, ...] | None,
    ) -> bytes:
        """The viewer's message for a version of the feed, rendered once for every stream
        of that viewer here (again if the seats' presence changed since). It is the latest
        unless the feed already holds a newer version; the latest is rendered again once
        it is older than FRESH_MS, so that a stream resuming later counts down from the
        time it is given (`now`, `time_left`), not from the time the version came."""
        latest = version >= feed.state.version
        key = (version, viewer, latest)
        kept = feed.rendered.get(key)
        if kept is not None and kept[0] is presence and (not latest or now - kept[1] < FRESH_MS):
            return kept[2]
        if len(feed.rendered) >= RENDERED:
            feed.rendered.clear()
        self.renders += 1
        chunk = message(version, event, state, viewer, head, now, presence, latest=latest)
        feed.rendered[key] = (presence, now, chunk)
        return chunk

    async def _since(
        self, feed: Feed, sent: int, viewer: Viewer
    ) -> AsyncIterator[tuple[int, bytes]]:
        """Messages for every version after `sent`, from the feed's history or the store."""
        history = list(feed.history)
        now, presence = self.service.now(), feed.presence
        if history and history[0][0] <= sent + 1:
            for version, event, state, head in history:
                if version > sent:
                    yield (
                        version,
                        self._rendered(feed, version, event, state, viewer, head, now, presence),
                    )
            return
        # From the newest snapshot at or before `sent` (else the start), a page of rows at
        # a time, handing the loop back every few messages: a long catch-up (a resume from
        # version 1 of a game of thousands) neither holds the whole record in memory nor
        # keeps every other request waiting, and a client that leaves stops it there.
        until = feed.state.version
        state = await self.service.resumed_from(feed.game_id, sent)
        while state.version < until:
            rows = await self.service.store.read(
                feed.game_id, after=state.version, until=min(state.version + PAGE, until)
            )
            if not rows:
                return
            for n, row in enumerate(rows):
                event = from_recorded(row)
                state = evolve(state, event)
                if row.version > sent:
                    latest = row.version >= feed.state.version
                    chunk = message(
                        row.version, event, state, viewer, row.hash, now, presence, latest=latest
                    )
                    yield row.version, chunk
                if n % TURN == TURN - 1:
                    await asyncio.sleep(0)
            await asyncio.sleep(0)


def _stepped(
    state: Game, events: Sequence[Event], heads: Sequence[bytes]
) -> list[tuple[int, Event, Game, bytes]] | None:
    """The feed's history entries for an append taken one event at a time, or None when
    this code cannot evolve one of its events (then the store is read instead)."""
    if len(heads) != len(events):
        return None
    steps = []
    for event, head in zip(events, heads, strict=True):
        try:
            state = evolve(state, event)
        except Exception:
            return None
        steps.append((state.version, event, state, head))
    return steps
