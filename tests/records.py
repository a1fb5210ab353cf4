"""A record (infra/ports/events.py's `Record`) that writes down the reads it is asked for:
the tests of where a read goes (a standby, the primary, the store) count them with it."""

from __future__ import annotations

from infra.ports.events import EventStore, RecordedEvent


class Asked:
    """The store, with the reads it was asked for written down."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.reads: list[tuple[str, int, int | None]] = []

    async def read(
        self, stream_id: str, after: int = 0, until: int | None = None
    ) -> list[RecordedEvent]:
        self.reads.append((stream_id, after, until))
        return await self.store.read(stream_id, after, until)

    async def close(self) -> None:
        await self.store.close()
