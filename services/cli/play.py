"""`bura play`: a bot that plays one seat over the public API only (bura_client), with the
domain's bots as strategies. It sees what the seat sees (its live view), rebuilds the table
as the seat sees it (domain/seen.py), and sends the bot's move with an idempotency key."""

from __future__ import annotations

import contextlib
import dataclasses
import random
import secrets
import sys
from collections.abc import Callable
from urllib.parse import quote

import httpx
import msgspec
from bura_client import ApiError, Client, Refused, Seat, StreamEnded
from bura_client.models import JSON

from domain.bots import greedy_bot, random_bot
from domain.cards import Card
from domain.commands import Concede, PlayerCommand
from domain.legal import legal_commands
from domain.seen import as_seen
from domain.state import Game
from domain.views import View
from services.app.callers import GAME_ID
from services.cli.errors import FAILED, NOT_FOUND, UNAVAILABLE, USAGE, CliError, shown
from services.pages.words import reason_named

Bot = Callable[[Game, int, random.Random], PlayerCommand]
BOTS: dict[str, Bot] = {"greedy": greedy_bot, "random": random_bot}
TRIES = 8  # moves tried on one view before waiting for the table to change
# Failures in a row the stream rides out (reconnecting with backoff, the client's default),
# and, once the server has answered, the sends in all of a read or a move: a server that
# restarts while the bot reads the table or sends its move is waited for as the stream
# waits for it, about a minute at most (a move is sent again under its Idempotency-Key).
RECONNECTS = 20


class Seen:
    """What the seat has watched: each seat's tricks, card by card, since the deal began."""

    def __init__(self) -> None:
        self.piles: dict[int, list[Card]] = {}
        self.trick: list[Card] = []

    def watch(self, event: JSON | None, view: JSON) -> None:
        kind = event.get("type") if event else None
        if kind == "deal_started":
            self.piles = {}
        elif kind == "trick_taken" and event is not None:
            self.piles.setdefault(int(event["seat"]), []).extend(self.trick)
        trick = view.get("trick")
        self.trick = (
            [*trick["led"], *(c for r in trick["responses"] for c in (r["cards"] or ()))]
            if trick
            else []
        )

    def of(self, seats: int) -> list[list[Card]]:
        return [self.piles.get(s, []) for s in range(seats)]


def play(
    url: str,
    game_id: str,
    token: str,
    *,
    bot: str = "greedy",
    seed: int = 1,
    seen: bool = True,
    out: Callable[[str], None] = print,
) -> JSON:
    """Play the token's seat until the game ends; its last view."""
    chance = random.Random(seed)
    watched = Seen()
    last: JSON = {}
    with Client(url) as client:
        seat = client.seat(game_id, token, seen=seen)
        # the address, the token and the game, each checked before following (with the
        # client's few quick tries: an address where no server is is told at once)
        if _first_view(seat, url).get("seat") is None:
            raise NoSeat(
                "the token is no seat's (the spectator's or the operator's): it may watch, "
                "not play; give a seat's token"
            )
        # the server is there: from now on an outage is ridden out as the stream does
        client.retries = dataclasses.replace(client.retries, attempts=RECONNECTS + 1)
        for message in seat.follow(reconnects=RECONNECTS):
            if message.event != "view":
                continue
            last = message.view
            watched.watch(message.last_event, last)
            if not message.latest or (message.id is not None and message.id < seat.version):
                continue  # a table the server or this seat has already moved on from
            if last["status"] != "in_progress" or last["due"] is None:
                continue
            # One command may make several versions (a response and the trick taken): act
            # only on the table as it is now, which the stream brings if it is newer.
            if seat.view()["version"] == message.id:
                _act(seat, last, watched, BOTS[bot], chance, out)
    where = f"{last.get('status')} at version {last.get('version')}"
    out(f"seat {last.get('seat')}: {where}{_told(last)}")
    return last


def _told(view: JSON) -> str:
    """How the game ended for the seat: ", won (31)", ", lost (false declaration)"."""
    result = view.get("result")
    if not isinstance(result, dict):
        return ""
    won = view.get("seat") in (result.get("winners") or [])
    return f", {'won' if won else 'lost'} ({reason_named(str(result.get('reason', '')))})"


def _first_view(seat: Seat, url: str) -> JSON:
    """The seat's view, which must be one: an answer of another kind of server (an HTML
    page, JSON of another shape) is NotBura, not a KeyError deep in the bot."""
    asked = f"the server at {url} answered GET /games/{seat.game_id}"
    try:
        answer = seat.view()
    except ApiError as e:
        if e.status >= 400:
            raise  # an error answer: main() says what it means
        # a success that is no JSON object (the client's ApiError): an array, a page
        kind = e.headers.get("content-type", "").split(";")[0].strip() or "no type"
        what = (
            "JSON that is no Bura view (no JSON object)"
            if "json" in kind
            else f"{kind}, not a Bura view"
        )
        status = "" if e.status == 200 else f"{e.status} and "  # a redirect not followed
        raise NotBura(f"{asked} with {status}{what}: is --url a Bura server?") from None
    except (KeyError, ValueError, TypeError) as e:
        # a JSON object without a version, or with one that is no number (`"1.0"`): the
        # client reads it as one
        what = "no version" if isinstance(e, KeyError) else "a version that is no number"
        raise NotBura(
            f"{asked} with JSON that is no Bura view ({what}): is --url a Bura server?"
        ) from None
    wanted: dict[str, type] = {"version": int, "status": str}
    wrong = [
        k
        for k, kind in wanted.items()
        if not isinstance(answer.get(k), kind) or isinstance(answer.get(k), bool)
    ]
    if wrong:
        raise NotBura(
            f"{asked} with JSON that is no Bura view (no {', '.join(wrong)}): is --url a "
            "Bura server?"
        )
    return answer


def _act(
    seat: Seat,
    shown: JSON,
    watched: Seen,
    strategy: Bot,
    chance: random.Random,
    out: Callable[[str], None],
) -> None:
    """One move on this table: the bot's, else (refused) another legal one, else concede.
    Never waits on a table where this seat is due without having sent something."""
    if shown["due"] == "seed":
        # the seats' shuffle: this seat's contribution to the deal, fresh and its own
        try:
            seat.send({"type": "seed", "value": secrets.token_hex(16)})
        except Refused as refused:  # the seeding closed meanwhile: the stream says what next
            out(f"seat {shown.get('seat')}: {refused.code} ({refused.detail}); looking again")
        return
    for attempt in range(TRIES):
        view = msgspec.convert(shown, View)
        number = view.seat
        assert number is not None
        table = as_seen(view, watched.of(len(view.seats)))
        options = legal_commands(table, number)
        command: PlayerCommand
        try:
            command = strategy(table, number, chance) if attempt == 0 else chance.choice(options)
        except (ValueError, IndexError, AssertionError):
            # The bot's guess of the hidden cards left it no move it likes.
            command = chance.choice(options) if options else Concede()
        try:
            seat.send(msgspec.to_builtins(command))
            return
        except Refused as refused:
            out(f"seat {number}: {refused.code} ({refused.detail}); looking again")
            if refused.code == "game_over":
                return
        fresh = seat.view()
        if fresh["version"] != shown["version"] or fresh["due"] is None:
            return  # the table moved: the stream brings it
        shown = fresh
    with contextlib.suppress(Refused):
        seat.concede()


# What an answer that ends the bot says about why (services/cli/errors.py): the server
# refused the token or the game, could not find the game, or is busy or down.
_EXITS = {400: USAGE, 401: USAGE, 403: USAGE, 404: NOT_FOUND, 429: UNAVAILABLE, 503: UNAVAILABLE}


class NoSeat(ValueError):
    """A token that may watch the game but holds no seat to play."""


class NotBura(ValueError):
    """A server whose answers are not the Bura API's (another service at --url)."""


def _is_problem(error: ApiError) -> bool:
    """An error answer of the Bura API: RFC 9457 problem details with its `code`."""
    kind = error.headers.get("content-type", "")
    return (
        error.status >= 400  # a success that is no JSON object is no Bura answer at all
        and "json" in kind
        and isinstance(error.body.get("code"), str)
    )


def _check_arguments(url: str, game_id: str, token: str) -> None:
    """--url, --game and --token, each checked before any request: an address that is
    none, a game id of no game (the API's pattern: it is put in the path as it is), a
    token no HTTP header can carry."""
    try:
        parsed = httpx.URL(url)
        bad = None
        if parsed.userinfo:
            # httpx would send them as Basic auth in place of the token's Bearer header,
            # and the server's 401 would then blame the token
            raise CliError(  # (the URL is not echoed: it holds a password)
                "--url holds a user name or password (before an @): bura play's one "
                "credential is --token, and these would be sent in its place; give --url "
                "without them, such as http://127.0.0.1:8000",
                USAGE,
            )
        if parsed.scheme not in ("http", "https"):
            bad = "it is not http:// or https://"
        elif not parsed.host:
            bad = "it names no host"
        elif parsed.port is not None and not 0 < parsed.port < 65536:
            bad = f"the port {parsed.port} is no port number (1 to 65535)"
    except UnicodeError:
        bad = "it holds bytes that are no UTF-8 text"
    except (httpx.InvalidURL, ValueError) as e:
        bad = str(e)
    if bad is not None:
        raise CliError(
            f"--url {shown(url)} is no server address ({bad}); give one such as "
            "http://127.0.0.1:8000",
            USAGE,
        )
    if not GAME_ID.fullmatch(game_id):
        given = shown(game_id) or "''"
        raise CliError(
            f"--game {given} is no game id: one is 1 to 64 letters, "
            "digits, '-' or '_', as the server issues them",
            USAGE,
        )
    if not token.strip():
        raise CliError("--token is empty: give a seat's token", USAGE)
    if token != token.strip():  # no header can carry it, and the server issues none such
        raise CliError(
            "--token has a space at either end, which no token has: give the seat's token "
            "as the server issued it",
            USAGE,
        )
    if not (token.isascii() and token.isprintable()):
        # (the value is not echoed: it is a secret)
        raise CliError(
            "--token holds a character no HTTP header may carry (a line break, a control "
            "character, or one outside ASCII): give the seat's token as the server issued it",
            USAGE,
        )


def _token_game(token: str) -> str | None:
    """The game a seat's or spectator's token names: the server issues each as
    `GAME.secret` (services/app/callers.py). None for a token of no such form."""
    owner, dot, _ = token.partition(".")
    return owner if dot and GAME_ID.fullmatch(owner) else None


def _has_game(url: str, game_id: str) -> bool | None:
    """Whether the server holds the game, asked without a token (the seat's page,
    `/play/GAME`, is public and answers 404 `game_not_found` for a game it lacks); None
    when the answer says neither (another kind of server, busy, gone)."""
    try:
        answer = httpx.get(f"{url.rstrip('/')}/play/{quote(game_id, safe='')}", timeout=10.0)
    except httpx.HTTPError:
        return None
    if answer.status_code == 200:
        return True
    if answer.status_code == 404:
        with contextlib.suppress(ValueError):
            if answer.json().get("code") == "game_not_found":
                return False
    return None


def main(url: str, game_id: str, token: str, bot: str, seed: int, seen: bool) -> int:
    _check_arguments(url, game_id, token)
    owner = _token_game(token)
    if owner is not None and owner != game_id:  # the server would only answer 403
        raise CliError(
            f"--token is a token of game {owner}, not of --game {game_id}: give a seat's "
            f"token of game {game_id} (or --game {owner})",
            USAGE,
        )
    try:
        last = play(url, game_id, token, bot=bot, seed=seed, seen=seen)
    except NoSeat as e:
        raise CliError(str(e), USAGE) from None
    except NotBura as e:
        raise CliError(str(e), UNAVAILABLE) from None
    except StreamEnded as e:  # a stream that kept closing before the game's end
        raise CliError(f"the stream ended before the game did ({e})", FAILED) from None
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as e:
        raise CliError(
            f"--url {url} is no server address ({e}); give one such as http://127.0.0.1:8000",
            USAGE,
        ) from None
    except httpx.LocalProtocolError:  # the request cannot be written: the token's header
        # (the value is not echoed: it is a secret)
        raise CliError(
            "--token holds a character no HTTP header may carry (a line break, or a space at "
            "either end): give the seat's token as the server issued it",
            USAGE,
        ) from None
    except httpx.TransportError as e:
        raise CliError(
            f"cannot reach the server at {url} ({type(e).__name__}: {e})", UNAVAILABLE
        ) from None
    except ApiError as e:
        if not _is_problem(e):  # a page of another server, a proxy's: never dumped
            kind = e.headers.get("content-type", "").split(";")[0].strip() or "no type"
            # a success that is no JSON object is no problem answer: no Bura answer at all
            what = "a Bura answer" if e.status < 400 else "the Bura API's problem details"
            raise CliError(
                f"the server at {url} answered {e.status} with {kind}, not {what}: is --url "
                "a Bura server?",
                UNAVAILABLE,  # whatever its status: no Bura server answered it
            ) from None
        said = f"the server answered {e.status} {e.code}: {e.detail}"
        if e.status == 404 and e.code == "not_found":
            # no such path (not `game_not_found`): --url names no Bura API's root
            parts = httpx.URL(url)
            beyond = ", query or fragment" if parts.query or parts.fragment else ""
            raise CliError(
                f"the server at {url} serves no Bura API there ({said}): give --url as the "
                f"API's root, such as http://127.0.0.1:8000, without a path{beyond}",
                UNAVAILABLE,
            ) from None
        if e.status == 401:
            # A token for a game the server lacks is only unknown to it: ask which it is.
            held = _has_game(url, game_id)
            if held is False:
                raise CliError(
                    f"the server at {url} has no game {game_id} ({said}); is --url the "
                    "server that created it?",
                    NOT_FOUND,
                ) from None
            if held:
                said += f" (the server has game {game_id}: the token is none of its)"
        raise CliError(said, _EXITS.get(e.status, FAILED)) from None
    if last.get("status") != "finished":
        print("bura play: the stream ended before the game did", file=sys.stderr)
        return 1
    return 0
