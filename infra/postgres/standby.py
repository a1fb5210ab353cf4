"""The record read from a hot standby: replays, histories, audits, verifications, bundles
and exports (the reads that grow with a game's length) leave the primary.

A standby lags its primary, so what it gives is topped up from the primary: the standby's
rows of a stream are a prefix of the primary's (a stream's appends commit in version
order, each chained onto the one before, and a physical standby replays commits in that
order), and the primary is asked only for the versions after the standby's last. An
answer is therefore the primary's answer, whatever the lag; the standby only carries the
bulk of it. A standby that cannot be read (down, not yet connected, a wrong DSN) costs
nothing but the fallback: the whole read goes to the primary, counted in `errors` and
logged at most once a minute. Within a request's deadline the standby has half of the
time left, so that a standby that hangs still leaves the primary time to answer."""

from __future__ import annotations

import contextlib
import logging

from infra.deadline import bounded, remaining, within
from infra.ports.events import Record, RecordedEvent
from infra.throttle import Throttled

log = logging.getLogger("bura.standby")

WARN_EVERY = 60.0  # seconds between two warnings of a standby that cannot be read


class StandbyReads:
    def __init__(self, standby: Record, primary: Record) -> None:
        self.standby, self.primary = standby, primary
        self.rows = {"standby": 0, "primary": 0}  # rows read from each since start
        self.errors = 0  # reads the standby could not serve (the primary served them)
        self._unreadable = Throttled(log, WARN_EVERY)

    async def read(
        self, stream_id: str, after: int = 0, until: int | None = None
    ) -> list[RecordedEvent]:
        try:
            with within(remaining(0.0) / 2) if bounded() else contextlib.nullcontext():
                rows = await self.standby.read(stream_id, after, until)
        except Exception as error:
            self.errors += 1
            self._unreadable.warn(
                "the standby cannot be read; the primary serves the record: %s",
                error,
                extra={"game_id": stream_id, "error": repr(error)},
            )
            rows = await self.primary.read(stream_id, after, until)
            self.rows["primary"] += len(rows)
            return rows
        self.rows["standby"] += len(rows)
        last = rows[-1].version if rows else after
        if until is not None and last >= until:
            return rows
        tail = await self.primary.read(stream_id, after=last, until=until)
        self.rows["primary"] += len(tail)
        return rows + tail

    async def close(self) -> None:
        await self.standby.close()
