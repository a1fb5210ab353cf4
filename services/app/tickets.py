"""Stream tickets: a holder of a token (a seat's, the spectator's or the operator's) trades
it for a ticket that opens one live stream of one game, as the same viewer, once, within a
few seconds. Only the ticket's SHA-256 is stored, with the game and the viewer it grants.
A store that cannot be reached raises TicketsUnavailable (infra/ports/tickets.py), issuing
or redeeming: the HTTP layer answers it 503 `stream_tickets_unavailable`, never a 500."""

from __future__ import annotations

import hashlib
import secrets
import time

import msgspec

from infra.ports.tickets import StreamTickets
from services.app.callers import Caller
from services.app.errors import TicketInvalid


class StreamTicket(msgspec.Struct, frozen=True):
    """Put `ticket` in the stream's URL as `?ticket=` within `expires_in` seconds; it opens
    one stream, once."""

    ticket: str
    expires_in: int
    expires_at: int  # ms since 1970-01-01 UTC, as every time in the API
    stream: str  # the path to open, ticket included


class _Grant(msgspec.Struct, frozen=True):
    game_id: str
    caller: Caller


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(_Grant).decode


def _ticket_id(ticket: str) -> str:
    return hashlib.sha256(ticket.encode()).hexdigest()


class Tickets:
    def __init__(self, store: StreamTickets, ttl_seconds: int) -> None:
        self.store = store
        self.ttl = ttl_seconds

    async def issue(self, game_id: str, caller: Caller) -> StreamTicket:
        ticket = "st_" + secrets.token_urlsafe(24)
        await self.store.issue(_ticket_id(ticket), _encode(_Grant(game_id, caller)), self.ttl)
        return StreamTicket(
            ticket,
            self.ttl,
            round((time.time() + self.ttl) * 1000),
            f"/games/{game_id}/stream?ticket={ticket}",
        )

    async def redeem(self, game_id: str, ticket: str) -> Caller:
        """Who the ticket lets watch this game; it cannot be used again, even when the game
        is the wrong one (a ticket that was shown to the wrong URL is spent)."""
        grant = await self.store.redeem(_ticket_id(ticket)) if ticket else None
        if grant is None:
            raise TicketInvalid("this stream ticket is unknown, used or expired: ask for a new one")
        granted = _decode(grant)
        if granted.game_id != game_id:
            raise TicketInvalid("this stream ticket was issued for another game")
        return granted.caller
