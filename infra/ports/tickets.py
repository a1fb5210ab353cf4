"""The stream-ticket port: short-lived grants that open one live stream once.

A browser's EventSource cannot send an Authorization header, so a holder of a token trades
it for a ticket and puts the ticket in the stream's URL. Single use must hold across every
replica: redeem() hands a grant out at most once, whichever replica asks. A store that
cannot be reached raises TicketsUnavailable, never its own errors."""

from __future__ import annotations

from typing import Protocol


class TicketsUnavailable(Exception):
    """The store of tickets cannot be reached: no ticket was issued, or the one asked for
    was not checked (it may be spent)."""


class StreamTickets(Protocol):
    async def issue(self, ticket_id: str, grant: bytes, ttl_seconds: float) -> None:
        """Keep `grant` under `ticket_id` for `ttl_seconds`."""
        ...

    async def redeem(self, ticket_id: str) -> bytes | None:
        """The grant, removed as it is read; None if unknown, already redeemed or expired.
        Of two concurrent redeems of one ticket, at most one gets the grant."""
        ...

    async def close(self) -> None: ...
