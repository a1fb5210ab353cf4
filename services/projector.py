"""Live views: one feed per watched game in this process, woken by bus hints and by a
poll, always catching up from the event store, so a lost hint only delays, never loses."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterator

import msgspec

from domain.events import Event
from domain.evolve import evolve
from domain.state import Game
from domain.views import ARBITER, SPECTATOR, Viewer, redact, view
from infra.records import StoreUnavailable
from services.codec import from_recorded
from services.games import GameService
from services.ports import Bus

log = logging.getLogger("bura.projector")
_encode = msgspec.json.Encoder().encode

HISTORY = 512  # versions a feed keeps for resuming streams without reading the store


class Feed:
    def __init__(self, game_id: str, state: Game) -> None:
        self.game_id = game_id
        self.state = state
        self.history: deque[tuple[int, Event, Game]] = deque(maxlen=HISTORY)
        self.changed = asyncio.Condition()
        self.lock = asyncio.Lock()
        self.watchers = 0
        self.refreshed = 0.0


def viewer_key(viewer: Viewer) -> str:
    return f"seat{viewer}" if isinstance(viewer, int) else viewer


def message(version: int, event: Event | None, state: Game, viewer: Viewer) -> bytes:
    """One SSE message: the version as its id, the redacted event and the viewer's view."""
    shown = redact(event, viewer, state.rules) if event is not None else None
    data = _encode({"version": version, "event": shown, "view": view(state, viewer)})
    return b"id: %d\nevent: view\ndata: %s\n\n" % (version, data)


class Projector:
    def __init__(self, service: GameService, bus: Bus, *, poll_seconds: float = 2.0,
                 keepalive_seconds: float = 15.0) -> None:
        self.service = service
        self.bus = bus
        self.poll = poll_seconds
        self.keepalive = keepalive_seconds
        self.feeds: dict[str, Feed] = {}
        self.draining = asyncio.Event()
        self.open_streams = 0
        self.lag = 0  # versions the newest hint was ahead of its feed: read by /metrics
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._listen())

    async def stop(self) -> None:
        self.draining.set()
        for feed in self.feeds.values():
            async with feed.changed:
                feed.changed.notify_all()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _listen(self) -> None:
        while not self.draining.is_set():
            try:
                async for hint in self.bus.hints():
                    if hint is None:
                        for feed in list(self.feeds.values()):
                            await self._refresh(feed)
                        continue
                    feed = self.feeds.get(hint.game_id)
                    if feed is not None and hint.version > feed.state.version:
                        self.lag = hint.version - feed.state.version
                        await self._refresh(feed)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("hint listener failed; restarting")
                await asyncio.sleep(0.5)

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
                feed.history.append((row.version, event, state))
            feed.state = state
        await self._cache_views(feed.game_id, state)
        async with feed.changed:
            feed.changed.notify_all()

    async def _cache_views(self, game_id: str, state: Game) -> None:
        viewers: list[Viewer] = [*range(len(state.seats)), SPECTATOR, ARBITER]
        for viewer in viewers:
            await self.bus.put_view(game_id, viewer_key(viewer), state.version,
                                    _encode(view(state, viewer)))

    async def feed(self, game_id: str) -> Feed:
        feed = self.feeds.get(game_id)
        if feed is None:
            state = await self.service.load(game_id)
            feed = self.feeds.setdefault(game_id, Feed(game_id, state))
            await self._cache_views(game_id, state)
        return feed

    async def stream(self, game_id: str, viewer: Viewer, last_id: int | None) -> (
        AsyncIterator[bytes]
    ):
        feed = await self.feed(game_id)
        if last_id is not None and last_id > feed.state.version:
            await self._refresh(feed)
        feed.watchers += 1
        self.open_streams += 1
        try:
            sent = -1
            if last_id is None or last_id > feed.state.version:
                yield message(feed.state.version, None, feed.state, viewer)
                sent = feed.state.version
            else:
                sent = last_id
            waited = 0.0
            while not self.draining.is_set():
                async for chunk in self._since(feed, sent, viewer):
                    sent = int(chunk[4 : chunk.index(b"\n")])
                    yield chunk
                if feed.state.finished and sent >= feed.state.version:
                    yield b"event: end\ndata: {\"reason\":\"game_over\"}\n\n"
                    return
                if await self._wait(feed, sent, self.poll):
                    waited = 0.0
                    continue
                waited += self.poll
                if time.monotonic() - feed.refreshed >= self.poll / 2:
                    await self._refresh(feed)
                if waited >= self.keepalive:
                    waited = 0.0
                    yield b": keep-alive\n\n"
            yield b"event: shutdown\ndata: {\"reason\":\"server_shutdown\",\"reconnect\":true}\n\n"
        finally:
            feed.watchers -= 1
            self.open_streams -= 1
            if feed.watchers == 0:
                self.feeds.pop(game_id, None)

    async def _wait(self, feed: Feed, sent: int, timeout: float) -> bool:
        async with feed.changed:
            try:
                await asyncio.wait_for(
                    feed.changed.wait_for(
                        lambda: feed.state.version > sent or self.draining.is_set()
                    ),
                    timeout,
                )
            except TimeoutError:
                return False
        return not self.draining.is_set()

    async def _since(self, feed: Feed, sent: int, viewer: Viewer) -> AsyncIterator[bytes]:
        """Messages for every version after `sent`, from the feed's history or the store."""
        if sent >= feed.state.version:
            return
        oldest = feed.history[0][0] if feed.history else feed.state.version + 1
        if sent + 1 >= oldest:
            for version, event, state in list(feed.history):
                if version > sent:
                    yield message(version, event, state, viewer)
            return
        state = await self.service.state_at(feed.game_id, sent) if sent > 0 else Game()
        rows = await self.service.store.read(feed.game_id, after=sent)
        for row in rows:
            event = from_recorded(row)
            state = evolve(state, event)
            yield message(row.version, event, state, viewer)
