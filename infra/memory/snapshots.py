"""Snapshots in this process's memory: for tests, and for stores that keep none."""

from __future__ import annotations

from infra.ports.snapshots import Snapshot


class InProcessSnapshots:
    def __init__(self) -> None:
        self._kept: dict[tuple[str, str], Snapshot] = {}

    async def save(self, snapshot: Snapshot) -> None:
        key = (snapshot.stream_id, snapshot.schema)
        kept = self._kept.get(key)
        if kept is None or kept.version < snapshot.version:
            self._kept[key] = snapshot

    async def load(self, stream_id: str, schema: str) -> Snapshot | None:
        return self._kept.get((stream_id, schema))
