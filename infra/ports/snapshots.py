"""The snapshots port: a disposable cache of folded game states, so that a long game loads
in the events since its newest snapshot rather than in all of them.

Never the source of truth: a snapshot is keyed by the game, the version it was folded to
and the schema of the code that folded it (`schema`), and whoever loads one reads the
events after it (and the row at its version, to check the chain head it names). A
snapshot of another schema is never returned, so a change of the state's shape or of the
fold's meaning makes every older snapshot ignored; losing them all only costs time."""

from __future__ import annotations

from typing import Protocol

import msgspec


class Snapshot(msgspec.Struct, frozen=True):
    """A game's state folded to `version` by code of schema `schema`, encoded (`state`),
    with the chain hash of the row at `version` (`head`)."""

    stream_id: str
    version: int
    schema: str
    state: bytes
    head: bytes


class Snapshots(Protocol):
    async def save(self, snapshot: Snapshot) -> None:
        """Keep it as the game's snapshot for its schema, unless one of a later version is
        kept already (two replicas may save at once: the newest stays)."""
        ...

    async def load(self, stream_id: str, schema: str) -> Snapshot | None:
        """The game's newest snapshot of this schema, if any."""
        ...
