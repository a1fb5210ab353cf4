"""/games/{id}/commands: a seat's move, and what became of one."""

from __future__ import annotations

import re
import urllib.parse
from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, HeaderParameter, JSONBody

from domain.cards import parse_cards
from domain.commands import Lead, PlayerCommand, Respond
from services.app.callers import Caller
from services.app.errors import Forbidden
from services.app.results import CommandStatus, Outcome
from services.bootstrap import Runtime
from services.http.errors import responses
from services.http.middleware import request_id
from services.http.paths import sent_path
from services.http.problems import COMMAND_REFUSALS, JSON_BODY
from services.http.schemas import invalid, strictly
from services.wording import worded

# What an Idempotency-Key may be; the lookup's path segment is held to the same. No space
# at either end (HTTP strips a header's, so a retry through a proxy could arrive as
# another key), and not `.` or `..` (a client normalizes such a path segment away, so its
# lookup would ask for something else), and not slashes alone (their path segment is read as
# the end of /games/{id}/commands; any other key's slashes are read as sent, see _key_of).
KEY_MAX = 200
KEY_WORDS = (
    f"1 to {KEY_MAX} printable ASCII characters, with no space at either end, and not `.`, "
    "`..` or slashes alone"
)
KEY_PATTERN = worded(
    r"^(?!\.\.?$)(?!/+$)[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$",
    KEY_WORDS,
    field="idempotency-key",  # as a 400 keys the header (its bounds are 1 and KEY_MAX)
)
_KEY = re.compile(KEY_PATTERN)


def key_header(description: str) -> Any:
    """The optional Idempotency-Key header of a POST, as KEY_PATTERN and KEY_MAX allow it."""
    return HeaderParameter(
        name="Idempotency-Key",
        min_length=1,
        max_length=KEY_MAX,
        pattern=KEY_PATTERN,
        required=False,
        description=description,
    )


def key_fits(key: str) -> bool:
    """An Idempotency-Key, or a lookup's key, as KEY_PATTERN and KEY_MAX allow it."""
    return len(key) <= KEY_MAX and _KEY.fullmatch(key) is not None


# The one place the framework's work is skipped for a seat's command and the operator's
# creation (services/http/front.py); tests switch it off to hold the two ways to the same
# answers.
STRAIGHT = True
FAILED = "bura.command_failed"  # scope state: what the front door's call of the service raised


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
        responses=responses(
            400,
            401,
            403,
            404,
            408,
            409,
            413,
            422,
            429,
            431,
            500,
            503,
            only={400: (*JSON_BODY, "bad_card"), 409: COMMAND_REFUSALS},
        ),
        status_code=200,
        summary="Send a command (seat token)",
    )
    async def command(
        self,
        request: Request[Any, Any, Any],
        game_id: FromPath[str],
        caller: NamedDependency[Caller],
        runtime: NamedDependency[Runtime],
        data: JSONBody[PlayerCommand],
        idempotency_key: Annotated[
            str | None,
            key_header(
                "Any text you choose, one per move: a retry with the same key returns the "
                "first answer and is never a second move"
            ),
        ] = None,
    ) -> Outcome:
        """Acts as the token's seat. Put the game version the player acted on in `seen`:
        the command is then judged on exactly that table, or refused with 409
        `table_changed` (and the current `version`) if the game has moved on. Send an
        Idempotency-Key: a retry with the same key and body returns the first answer and
        is never a second move (a second draw loses the deal); the same key with another
        body, or from another seat, is 422 `idempotency_key_reused`. A 503
        `outcome_unknown` may have been applied: retry with the same key, or ask
        GET /games/{id}/commands/{key}."""
        failed = request.scope.get("state", {}).pop(FAILED, None)
        if failed is not None:  # raised on the front door's way, after the command was sent
            raise failed
        if caller.seat is None:
            raise Forbidden("only a seat token sends commands")
        # Decoded again, strictly: the framework coerces ("2" for 2, 0 for false), and a
        # coerced "count" is a double draw the player never sent.
        command: PlayerCommand = strictly(await request.body(), PlayerCommand)
        return await runtime.games.execute(
            game_id,
            caller.seat,
            canonical(command),
            command_id=idempotency_key,
            correlation_id=request_id.get(),
        )

    @get(
        "/{game_id:str}/commands/{command_id:path}",
        operation_id="getCommand",
        responses=responses(400, 401, 403, 404, 429, 500, 503),
        summary="What became of a command (the seat that sent it, or the operator)",
    )
    async def command_status(
        self,
        request: Request[Any, Any, Any],
        game_id: FromPath[str],
        command_id: FromPath[str],
        caller: NamedDependency[Caller],
        runtime: NamedDependency[Runtime],
    ) -> CommandStatus:
        """`applied`, with the version it brought the game to and its events as the caller
        may see them; or `unknown`: nothing was applied under this key by the caller
        (another seat's key is unknown to it too). Keys stay valid for the life of the
        game. After a 503 `outcome_unknown`, ask this, or simply send the command again
        with the same key."""
        if caller.role == "spectator":
            raise Forbidden("only the seat that sent a command, or the operator, may ask")
        key = _key_of(request, command_id)
        if not key_fits(key):
            message = f"1 to {KEY_MAX} printable ASCII characters, as in Idempotency-Key"
            raise invalid("command_id", message, "path")
        return await runtime.games.command(game_id, key, caller.viewer)


def _key_of(request: Request[Any, Any, Any], routed: str) -> str:
    """The lookup's key as the request's path has it: the framework's routing joins
    repeated slashes and drops them at either end of the path (`/d`, `d/` and `d` would
    all ask for `d`), so the key is read from the raw path after `/commands/` and
    percent-decoded; `routed`, the routed parameter, only where no raw path is given."""
    _, found, tail = (sent_path(request.scope) or "").partition("/commands/")
    if not found:
        return routed.removeprefix("/")
    # anything that is no ASCII decodes to what key_fits refuses
    return urllib.parse.unquote(tail, errors="replace")
