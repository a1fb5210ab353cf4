"""The hint bus port: wake-ups sent after a commit. At most once: a hint may be lost, so
whoever is woken reads what it lacks from the event store.

A hint may also carry the append itself (the version it followed, its events as the
store holds them, the chain head it reached), so that a process whose copy of the game
is at exactly `after` applies it without reading the store. That is only ever a
shortcut: a process that is not at `after`, or cannot read the events, reads the store."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Protocol

import msgspec

log = logging.getLogger("bura.hints")


class Hint(msgspec.Struct, frozen=True):
    """A wake-up sent after a commit: game `game_id` has reached `version`; when `events`
    is given, the append that took it there from version `after` (a JSON array of the
    events' payloads, written by code of schema `schema`) and the chain hash of `version`;
    `heads`, when the store gave them, the chain hash of every version after `after`, 32
    bytes each, in order (so a follower can take the append one version at a time)."""

    game_id: str
    version: int
    after: int | None = None
    events: bytes = b""
    head: bytes = b""
    schema: str = ""
    heads: bytes = b""

    def version_heads(self) -> list[bytes] | None:
        """The chain hash of each version the append wrote, or None if not all are known."""
        if self.after is None or len(self.heads) != 32 * (self.version - self.after):
            return None
        return [self.heads[i : i + 32] for i in range(0, len(self.heads), 32)]


# Told every hint as it arrives, and None when some may have been missed.
Listener = Callable[["Hint | None"], None]


class HintBus(Protocol):
    # True when the bus reaches every process that writes the store (Redis); an
    # in-process bus hears only this process, so it can never say that a copy is current.
    shared: bool

    @property
    def subscribed(self) -> bool:
        """Whether a hint published now reaches this process's listeners: its subscription
        is up. While it is not (Redis out of reach), whatever others append goes unheard,
        so no copy can be known current however recently it was read."""
        ...

    async def publish(self, hint: Hint, urgent: bool = True) -> None:
        """Send the hint to every listener of every process; never waits on the network.
        `urgent`: the next command of the game may reach another process before this
        one's answer is out (its seats are spread over processes), so the hint leaves at
        once, ahead of the answer; else it may leave with whatever else this process sends
        in this turn of its loop (one write, and one wake-up of each listener, for all of
        a turn's hints)."""
        ...

    def hints(self) -> AsyncIterator[Hint | None]:
        """Hints as they arrive, in the order each process published them; None when some
        may have been missed (a (re)subscribe, or a gap in a publisher's sequence)."""
        ...

    def listen(self, listener: Listener) -> Callable[[], None]:
        """What `hints()` gives, told to `listener` as it arrives, with no queue and no
        task between: this process's own hints from within `publish`, the others' as the
        network brings them; a None as soon as it joins a bus that is subscribed already.
        The listener must not wait (work that awaits goes to a task of its own); an
        exception it raises is logged and taken as a None, since what it missed is
        unknown. Returns the call that stops the listening."""
        ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...


def tell(listeners: Sequence[Listener], hint: Hint | None) -> None:
    """Every listener, in turn: one that raises is logged, then told None (it may have
    missed what it was told), and the others are told all the same."""
    for listener in listeners:
        try:
            listener(hint)
        except Exception:
            log.exception("a hint listener failed on %s", hint.game_id if hint else "a gap")
            if hint is not None:
                try:
                    listener(None)
                except Exception:
                    log.exception("a hint listener failed on a gap")
