"""The ports the game service depends on; adapters live in infra/."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Protocol

from infra.records import AppendResult, Checkpoint, Hint, Metadata, NewEvent, RecordedEvent


class EventStore(Protocol):
    async def append(
        self,
        stream_id: str,
        expected_version: int,
        events: Sequence[NewEvent],
        metadata: Metadata = ...,
    ) -> AppendResult:
        """Append after expected_version in one transaction, or raise Conflict.

        metadata.command_id makes the append idempotent within the stream: a repeated id
        appends nothing and returns the first append's result with duplicate=True.
        """
        ...

    async def read(
        self, stream_id: str, after: int = 0, until: int | None = None
    ) -> list[RecordedEvent]: ...

    async def version(self, stream_id: str) -> int: ...

    async def find_command(self, stream_id: str, command_id: str) -> AppendResult | None: ...

    async def read_all(self, after: Checkpoint, limit: int = 1000) -> list[RecordedEvent]:
        """Events of every stream after the checkpoint, in global order, never skipping one
        that a concurrent writer commits late."""
        ...

    async def save_seat_tokens(self, stream_id: str, token_hashes: Sequence[bytes]) -> None: ...

    async def seat_tokens(self, stream_id: str) -> list[bytes]: ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...


class Bus(Protocol):
    """Wake-up hints after commits. At most once: a hint may be lost, never relied on."""

    async def publish(self, hint: Hint) -> None: ...

    def hints(self) -> AsyncIterator[Hint | None]:
        """Hints as they arrive; None when some may have been missed (a reconnect)."""
        ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...

    async def put_view(
        self, game_id: str, viewer: str, version: int, view: bytes, ttl_seconds: int = ...
    ) -> bool:
        """Cache a viewer's view unless a newer one is cached; False if it could not."""
        ...

    async def put_views(
        self, game_id: str, version: int, views: Mapping[str, bytes], ttl_seconds: int = ...
    ) -> bool:
        """Cache several viewers' views (by viewer key) of one version, each unless a newer
        one is cached; False if the cache could not be reached."""
        ...

    async def get_view(self, game_id: str, viewer: str) -> tuple[int, bytes] | None: ...
