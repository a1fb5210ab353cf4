"""/games/{id}/commands: a seat's move."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Controller, post
from litestar.di import NamedDependency
from litestar.params import FromPath, HeaderParameter, JSONBody

from domain.cards import parse_cards
from domain.commands import Lead, PlayerCommand, Respond
from services.app.callers import Caller
from services.app.errors import Forbidden
from services.app.games import GameService
from services.app.results import Outcome
from services.http.errors import responses
from services.http.middleware import request_id


def canonical(command: PlayerCommand) -> PlayerCommand:
    """Cards in their one code (`10h` -> `10H`); anything that is no card is a 400 here,
    where input enters, and never reaches the rules."""
    if isinstance(command, Lead | Respond):
        return msgspec.structs.replace(command, cards=parse_cards(command.cards))
    return command


class CommandsController(Controller):
    path = "/games"
    tags = ("commands",)
    security = [{"bearer": []}]  # noqa: RUF012 (Litestar reads it per controller)

    @post(
        "/{game_id:str}/commands",
        operation_id="sendCommand",
        responses=responses(400, 401, 403, 404, 409, 413, 429, 503),
        status_code=200,
        summary="Send a command (seat token)",
    )
    async def command(
        self,
        game_id: FromPath[str],
        caller: NamedDependency[Caller],
        games: NamedDependency[GameService],
        data: JSONBody[PlayerCommand],
        idempotency_key: Annotated[
            str | None,
            HeaderParameter(
                name="Idempotency-Key",
                min_length=1,
                max_length=200,
                pattern=r"^[\x20-\x7e]+$",
                required=False,
                description="Any text you choose, one per move: a retry with the same key "
                "returns the first answer and is never a second move",
            ),
        ] = None,
    ) -> Outcome:
        """Acts as the token's seat. Send an Idempotency-Key: a retry with the same key
        returns the first answer and is never a second move (a second draw loses the deal)."""
        if caller.seat is None:
            raise Forbidden("only a seat token sends commands")
        return await games.execute(
            game_id,
            caller.seat,
            canonical(data),
            command_id=idempotency_key,
            correlation_id=request_id.get(),
        )
