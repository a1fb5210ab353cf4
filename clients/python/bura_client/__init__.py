"""The Bura server's public API from Python: games, commands, views, live streams."""

from bura_client.client import Client, Seat
from bura_client.errors import (
    ApiError,
    OutcomeUnknown,
    RateLimited,
    Refused,
    StreamEnded,
    Unavailable,
)
from bura_client.models import (
    CommandStatus,
    CreatedGame,
    Outcome,
    Recorded,
    SeatToken,
    StreamMessage,
    StreamTicket,
)
from bura_client.retries import Retries

__all__ = [
    "ApiError",
    "Client",
    "CommandStatus",
    "CreatedGame",
    "Outcome",
    "OutcomeUnknown",
    "RateLimited",
    "Recorded",
    "Refused",
    "Retries",
    "Seat",
    "SeatToken",
    "StreamEnded",
    "StreamMessage",
    "StreamTicket",
    "Unavailable",
]
