"""The one registry of error codes. Every error the API answers is an RFC 9457 problem
details document (`application/problem+json`) built from a row of PROBLEMS: its status, its
title, the sentence that documents it, and an example detail. The same rows give the
OpenAPI error responses (with their examples), the pages at /problems/{code} that each
`type` URI resolves to, and the README's error table (tests/api/test_problems.py checks it).

To add a code: add a row here. A code the domain or the services raise without a row fails
tests/api/test_problems.py.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from litestar import Response
from litestar.openapi import ResponseSpec
from litestar.openapi.spec import Example

from services.http.paths import sent_path

PROBLEM_JSON = "application/problem+json"
# `type` is a path on the server that answered, so it resolves wherever the API runs
# (offline too) to the page that documents the code.
TYPE_PREFIX = "/problems/"


@dataclass(frozen=True)
class Problem:
    status: int
    title: str
    about: str  # what it means and what to do: the documentation of the type
    example: str  # a detail as the server writes it


def _rule(about: str, example: str, title: str = "A rule of play forbids this") -> Problem:
    return Problem(409, title, about, example)


PROBLEMS: dict[str, Problem] = {
    # 400: the request itself is wrong
    "bad_request": Problem(
        400,
        "Malformed request",
        "A field of the body is missing, unknown or of the wrong type, a parameter or "
        "header is missing or of the wrong type (a query parameter or header the operation "
        "does not name is ignored), or something is given twice (a name in one object of "
        "the body, a header that names one thing, or a query parameter, with two values); "
        "`errors` lists each one.",
        "count: Expected `int`, got `str`",
    ),
    "bad_checkpoint": Problem(
        400,
        "Unknown feed checkpoint",
        "`after` or `Last-Event-ID` must be `0:0` or the checkpoint of an entry this store's "
        "feed gave (GET /events).",
        "Last-Event-ID: 7:9 is no checkpoint this store gave: resume from the checkpoint of "
        "an entry you received, or from 0:0",
    ),
    "bad_cursor": Problem(
        400,
        "Bad list cursor",
        "`cursor` must be a `next_cursor` this server gave (GET /games).",
        "no such cursor: start again without one",
    ),
    "malformed_json": Problem(
        400,
        "Body is not JSON",
        "The body could not be parsed as JSON.",
        "the body is not valid JSON",
    ),
    "bad_card": Problem(
        400,
        "No such card",
        "Cards are written rank then suit (`AS`, `10H`, `QD`, `6C`); this text is none.",
        "'1X' is not a card: write rank then suit, e.g. AS, 10H, QD, 6C",
    ),
    "bad_option": Problem(
        400,
        "Bad table option",
        "A table option is out of range or contradicts another one; `option` names it "
        "(docs/rules.md §8.2).",
        "pay_pot belongs to the closed_discard variant",
    ),
    "bad_deck": Problem(
        400,
        "Bad deck",
        "`deck` must be the table's full pack, each card once, in dealing order.",
        "the deck must be the full 36-card pack",
    ),
    "bad_dealer": Problem(
        400,
        "Bad dealer",
        "`dealer` must be one of the table's seats.",
        "dealer must be a seat 0 to 1",
    ),
    "bad_setup": Problem(
        400, "The game cannot be set up", "The table cannot be set up as asked.", "bad setup"
    ),
    # 401, 403, 404, 405: who may ask, and what exists
    "unauthorized": Problem(
        401,
        "No valid token",
        "Send `Authorization: Bearer <token>`: the operator key, a seat token or the "
        "spectator token. No token, or one nobody issued.",
        "unknown token",
    ),
    "stream_ticket_invalid": Problem(
        401,
        "Stream ticket not valid",
        "The `ticket` is unknown, was already used, has expired, or is for another game. "
        "Ask POST /games/{id}/stream-tickets for a new one; each ticket opens one stream once.",
        "this stream ticket is unknown, used or expired: ask for a new one",
    ),
    "forbidden": Problem(
        403,
        "Not allowed for this token",
        "The token is real but belongs to another game, or its role may not do this "
        "(only seats send commands; only the operator creates games).",
        "only a seat token sends commands",
    ),
    "game_not_found": Problem(404, "No such game", "No game has this id.", "no game 0f3a..."),
    "not_found": Problem(404, "No such resource", "Nothing is served at this path.", "Not Found"),
    "version_not_found": Problem(
        404,
        "No such version",
        "The game has not reached this version; `version` is its last.",
        "game 4f1c... has versions 1 to 35, not 40",
    ),
    "webhook_not_found": Problem(
        404,
        "No such webhook endpoint",
        "No webhook endpoint has this id (GET /webhooks lists them).",
        "no webhook endpoint 4b1c...",
    ),
    "delivery_not_found": Problem(
        404,
        "No such webhook delivery",
        "No webhook delivery has this id (GET /webhooks/deliveries lists them).",
        "no webhook delivery 9e0d...",
    ),
    "method_not_allowed": Problem(
        405,
        "Method not allowed",
        "The path exists but not with this method; the `Allow` header lists the methods.",
        "Method Not Allowed",
    ),
    # 409: a broken rule of play (docs/rules.md §11), or a race
    "not_your_turn": _rule(
        "The table is waiting for another seat, or for something else (docs/rules.md §3, §5).",
        "seat 1 is due to respond",
    ),
    "dave_pending": _rule(
        "A dave awaits its answer (docs/rules.md §6).", "a dave is pending: seat 1 must answer"
    ),
    "card_not_in_hand": _rule(
        "A named card is not in the seat's hand (docs/rules.md §3).", "not in seat 0's hand: QD"
    ),
    "duplicate_cards": _rule(
        "A card is named twice (docs/rules.md §3).", "a card is named twice: AS AS"
    ),
    "wrong_card_count": _rule(
        "A lead of too many cards (or, in Kozel, two); a response of another count than the "
        "lead; a draw of no card (docs/rules.md §3, §4, §8.11).",
        "answer 2 card(s), as many as were led",
    ),
    "mixed_suits": _rule(
        "A lead of more than one suit (docs/rules.md §3).", "a lead is cards of one suit: AS KH"
    ),
    "no_cards": _rule(
        "A lead when some hand is empty: declare or pass (docs/rules.md §5).",
        "the hands are played out: declare 31 or pass",
    ),
    "cannot_pass": _rule(
        "A pass while a lead is possible (docs/rules.md §5).",
        "pass only with the hands played out; lead a card",
    ),
    "seeds_pending": _rule(
        'The deal waits for the seats\' seeds (`shuffle: "seats"`, docs/rules.md §8.13): '
        "send a `seed`, or wait for the others' or the seeding deadline.",
        "deal 1 is not dealt yet: it waits for the seeds of seats [1]",
    ),
    "seed_already_sent": _rule(
        "The seat has already sent its seed for this deal (docs/rules.md §8.13).",
        "seat 0 has sent its seed for deal 1",
    ),
    "seed_too_late": _rule(
        "The seeding deadline has passed: the deal is dealt without this seed, recorded as "
        "missing (docs/rules.md §8.13).",
        "the seeds for deal 1 were due by 1764583200000 (ms since the epoch)",
    ),
    "not_seeding": _rule(
        "No deal is waiting for seeds: the server shuffles this table, or seeding closed "
        "with this seat's seed in (one missing at the deadline is `seed_too_late`; "
        "docs/rules.md §8.13).",
        "no deal is waiting for seeds",
    ),
    "bad_seed": _rule(
        "A seed is 1 to 128 printable ASCII characters (docs/rules.md §8.13). The command's "
        "schema says so too, so over HTTP such a seed is refused first as `400 bad_request` "
        "naming `value`; the rule answers commands that reach the table by other ways.",
        "a seed is 1 to 128 printable ASCII characters",
    ),
    "deadline_not_passed": _rule(
        "The server closed a seeding before its deadline (the server's own command; the API "
        "never lets a player send it).",
        "the seeding of deal 1 is due at 1764583200000, not at 1764583190000",
    ),
    "out_of_time": _rule(
        "The seat due's time ran out before this act (docs/rules.md §13.2): the timeout is "
        "judged first, and the act is not taken.",
        "seat 1's time ran out 0.4 s ago: the timeout is judged first",
    ),
    "not_paused": _rule(
        "No timeout awaits the operator's ruling: the clock is not paused (docs/rules.md §13.3).",
        "the clock is not paused: no timeout awaits a ruling",
    ),
    "game_not_finished": _rule(
        "A rematch follows a finished game (docs/rules.md §14).",
        "a rematch follows a finished game",
    ),
    "rematch_exists": _rule(
        "The game already has its rematch: a game has one at most (docs/rules.md §14).",
        "game 4f1c... already has its rematch: 9b07...",
    ),
    "table_changed": _rule(
        "The command was judged on a version of the table that has passed: nothing was "
        "judged; look at the table again (`version` says where it is now).",
        "the timeout was judged on version 41; the table is at 42",
    ),
    "still_in_time": _rule(
        "A timeout before the deadline (the server's own command; the API never lets a "
        "player send it).",
        "seat 0 still has 3.2 s to act",
    ),
    "not_due": _rule(
        "A timeout of a seat the clock does not run for (the server's own command).",
        "the clock runs for seat 1, not 0",
    ),
    "clock_paused": _rule(
        "A timeout while the clock is paused for the operator's ruling (the server's own command).",
        "the clock is paused after a timeout: the operator decides",
    ),
    "no_clock": _rule(
        "A timeout at a table without a clock (the server's own command).",
        "this table has no clock (rules.turn_seconds)",
    ),
    "no_abandonment": _rule(
        "An abandonment at a table that does not judge it (`abandon_seconds` unset; the "
        "server's own command).",
        "this table does not judge abandonment",
    ),
    "stock_empty": _rule(
        "A draw from an empty stock (docs/rules.md §4).",
        "the stock is empty: there is nothing to draw",
    ),
    "double_draw": _rule(
        'Two or more cards drawn at once, at a table with `penalties: "reject"` '
        "(docs/rules.md §4).",
        "seat 0 took 2 cards at once (refused: penalties are not enforced at this table)",
    ),
    "extra_card": _rule(
        'A draw with a full hand, at a table with `penalties: "reject"` (docs/rules.md §4).',
        "seat 0 drew with a full hand (refused: penalties are not enforced at this table)",
    ),
    "out_of_turn_draw": _rule(
        "A draw when another seat, or no seat, was due, at a table with "
        '`penalties: "reject"` (docs/rules.md §4).',
        "seat 1 drew, but seat 0 was due to draw (refused: penalties are not enforced at "
        "this table)",
    ),
    "already_declared": _rule(
        "A second 31 after a false one, before another trick (docs/rules.md §8.4).",
        "your 31 was found false: take another trick before declaring",
    ),
    "no_trumps": _rule(
        "Bura in a deal without trumps (docs/rules.md §5, §8.7).",
        "this deal has no trumps, so there is no bura",
    ),
    "lead_the_bura": _rule(
        "Bura declared in the Czech game, where it is shown by leading it (docs/rules.md §8.8).",
        "with Czech combinations bura is shown by leading it",
    ),
    "combination_outranked": _rule(
        "Another seat's combination takes precedence (docs/rules.md §8.8).",
        "another seat holds a stronger combination, or as strong a one and leads earlier",
    ),
    "no_thirty_one": _rule(
        "A declaration of 31 in Kozel (docs/rules.md §8.11).",
        "Kozel has no declaration of 31: the deal is played out and counted",
    ),
    "not_kozel": _rule(
        "Four aces outside Kozel (docs/rules.md §8.11).", "four aces win a deal of Kozel only"
    ),
    "dave_off": _rule(
        "Dave is not played at this table (docs/rules.md §6).", "dave is not played at this table"
    ),
    "dave_not_yours": _rule(
        "Only the seat that accepted the last dave may offer the next (docs/rules.md §6).",
        "only seat 1, who accepted the last dave, may offer the next",
    ),
    "dave_limit": _rule(
        "The multiplier would exceed `dave_max_multiplier` (docs/rules.md §6).",
        "the stake is already x8, the table's limit is x8",
    ),
    "no_dave_pending": _rule(
        "An answer when no dave is offered (docs/rules.md §6).", "there is no dave to answer"
    ),
    "game_over": _rule(
        "The game has ended (docs/rules.md §7).",
        "the game is over: thirty_one",
        title="The game is over",
    ),
    "not_started": _rule(
        "The game has not been started (the API never lets such a command through).",
        "the game has not been started",
    ),
    "already_started": _rule(
        "The game has already been started (the API never lets such a command through).",
        "the game has already been started",
    ),
    "not_a_seat": _rule(
        "The seat does not play at this table (the API never lets such a command through).",
        "seat 4 does not play at this table",
    ),
    "webhook_configured": Problem(
        409,
        "Webhook endpoint set by the settings",
        "The endpoint with id `config` comes from BURA_WEBHOOK_URL: change or unset that "
        "setting instead.",
        "the endpoint config comes from BURA_WEBHOOK_URL: unset it to remove it",
    ),
    "delivery_not_failed": Problem(
        409,
        "Webhook delivery not failed",
        "Only a delivery that was given up (`state: failed`) can be sent again; a pending one "
        "is still being tried.",
        "delivery 9e0d... is pending, not failed",
    ),
    "idempotency_key_reused": Problem(
        422,
        "Idempotency-Key names another command",
        "The Idempotency-Key was used by another seat of this game, or for another command "
        "(another body), or, on `POST /games`, to create a game with other options: nothing "
        "was done. A retry repeats the first body exactly; a new command (or game) takes a "
        "new key.",
        "this Idempotency-Key was used for another command",
    ),
    "dave_not_allowed": _rule(
        "A dave at the declare-or-pass point, where nothing can be led (docs/rules.md §5).",
        "the hands are played out: declare 31 or pass, no dave",
    ),
    "busy": _rule(
        "The game changed too many times while the command was being decided: send it again "
        "with the same Idempotency-Key.",
        "the game changed 9 times while deciding; send it again",
        title="The game is busy",
    ),
    # 413, 429: sizes and rates
    "request_timeout": Problem(
        408,
        "Request too slow",
        "The request's head did not arrive within BURA_READ_TIMEOUT_SECONDS; the connection is "
        "closed. A body that stalls after its head ends with the connection closed, no answer.",
        "the request did not arrive in 10 s",
    ),
    "body_too_large": Problem(
        413,
        "Body too large",
        "The body is larger than BURA_MAX_BODY_BYTES.",
        "Request Entity Too Large",
    ),
    "rate_limited": Problem(
        429,
        "Too many requests",
        "This token or client address sent more requests of this class (commands, reads, "
        "game creation) than its policy allows; wait `Retry-After` seconds. `RateLimit` and "
        "`RateLimit-Policy` say which policy and how much is left.",
        'policy "commands-token": more than 50 commands in 10 s from this token: retry after 3 s',
    ),
    # 5xx: the server
    "record_broken": Problem(
        500,
        "The game's record is broken",
        "The game's stored events do not fold into a game: a row was changed outside the "
        "server (edited or deleted by hand). Nothing can be shown or judged on it until it "
        "is restored; GET /games/{id}/verify names the first row that does not hold.",
        "the record of game 4f1c... is broken: event 6 (card_dealt) cannot apply to the "
        "table before it, so the record was changed outside the server; GET "
        "/games/4f1c.../verify names the first row that does not hold",
    ),
    "internal_error": Problem(
        500,
        "Internal error",
        "The server failed unexpectedly; the `X-Request-ID` header finds it in the logs. A "
        "command may have been applied: send it again with the same Idempotency-Key.",
        "the server failed; quote request id 5d0c... to the operator",
    ),
    "headers_too_large": Problem(
        431,
        "Request headers too large",
        "The request line and headers are larger than BURA_MAX_HEADER_BYTES, or more than "
        "BURA_MAX_HEADERS.",
        "the request headers pass 16384 bytes",
    ),
    "outcome_unknown": Problem(
        503,
        "Outcome unknown",
        "The command reached the event store and its answer was lost: it may have been "
        "applied. Send it again with the same Idempotency-Key (or the `command_id` given), or "
        "ask GET /games/{id}/commands/{key}; either gives the outcome. A creation or a "
        "rematch is sent again, the same body under that key: it answers with the game the "
        "first try made, if it made one.",
        "the command reached the event store but its answer was lost: it may have been applied",
    ),
    "store_unavailable": Problem(
        503,
        "Event store unavailable",
        "The event store cannot be reached and nothing was written: send the command again "
        "(with the same Idempotency-Key, if it had one); a read, ask again.",
        "the event store cannot be reached (connection refused); nothing was written, send "
        "it again",
    ),
    "stream_tickets_unavailable": Problem(
        503,
        "Stream tickets unavailable",
        "The store of stream tickets (Redis) cannot be reached: no ticket was issued, or the "
        "`ticket` given could not be checked (it may be spent). Ask for a new one after "
        "`Retry-After` seconds, or open the stream with an `Authorization` header, which "
        "needs no ticket.",
        "stream tickets cannot be reached (redis: connection refused): ask for a ticket "
        "again in a moment, or open the stream with an Authorization header",
    ),
    "shutting_down": Problem(
        503,
        "Server shutting down",
        "This replica is draining: reconnect (another replica will answer).",
        "the server is shutting down; reconnect",
    ),
}

# What an HTTP status says when nothing more specific is known (routing, framework errors).
FALLBACK: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    429: "rate_limited",
    500: "internal_error",
    503: "shutting_down",
}


class FieldError(msgspec.Struct, frozen=True, kw_only=True):
    """One thing at fault in a `bad_request`."""

    # the body's field (`rules.stake`, `seats[0]`; "" for the whole body), the query
    # parameter or header
    key: str
    message: str  # what is wrong with it
    source: str  # where it is: `body`, `query`, `header` or `path`


def instance_of(scope: Mapping[str, Any]) -> str:
    """A problem's `instance`: the request's path as the client sent it (percent-encoding
    kept, so it stays a URI reference; `/games/a%20b`, not `/games/a b`), without the
    query."""
    path = sent_path(scope)
    if path is None:
        path = str(scope.get("path", ""))
    return urllib.parse.quote(path, safe="/%:@!$&'()*+,;=~")


class ProblemDetails(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """RFC 9457 problem details. `type` resolves to the page that documents `code`; `code`
    (and `option`, `errors`, `version`) are extension members, so clients that read
    `{code, detail}` read the same."""

    type: str  # /problems/<code>
    title: str
    status: int
    detail: str
    code: str
    instance: str | None = None  # the request path
    option: str | None = None  # bad_option: the table option at fault
    errors: list[FieldError] | None = None  # bad_request: each thing at fault
    version: int | None = None  # the game's version when it helps to resynchronise
    retry_after: int | None = None  # rate_limited: seconds to wait
    command_id: str | None = None  # outcome_unknown: the id to retry under, or to look up


def problem_type(code: str) -> str:
    return TYPE_PREFIX + code


def problem_of(code: str) -> Problem:
    """The registry row; an unregistered code still answers (as a 500-free 409 or its
    status), but tests/api/test_problems.py fails on it."""
    return PROBLEMS.get(code) or Problem(409, "Refused", "", "")


def details(code: str, detail: str, *, status: int | None = None, **extra: Any) -> ProblemDetails:
    row = problem_of(code)
    given = {k: v for k, v in extra.items() if v is not None}
    return ProblemDetails(
        type=problem_type(code),
        title=row.title,
        status=status or row.status,
        detail=detail,
        code=code,
        **given,
    )


def problem(
    code: str,
    detail: str,
    *,
    status: int | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Response[ProblemDetails]:
    body = details(code, detail, status=status, **extra)
    return Response(body, status_code=body.status, media_type=PROBLEM_JSON, headers=headers)


def codes_of(status: int) -> list[str]:
    return [code for code, row in PROBLEMS.items() if row.status == status]


def example(code: str) -> dict[str, Any]:
    row = PROBLEMS[code]
    body = details(code, row.example)
    if code == "bad_option":
        body = msgspec.structs.replace(body, option="false_declaration")
    if code == "bad_request":  # as the server writes it: each field at fault in `errors`
        at_fault = FieldError(key="count", message="Expected `int`, got `str`", source="body")
        body = msgspec.structs.replace(body, errors=[at_fault])
    return msgspec.to_builtins(body)  # type: ignore[no-any-return]


_DESCRIPTIONS = {
    400: "Malformed input: the detail names the field, option or card",
    401: "No token, a token nobody issued, or a stream ticket that is not valid "
    "(`WWW-Authenticate: Bearer`)",
    403: "A token of another game, or the wrong role",
    404: "No such game (or version, webhook endpoint, delivery)",
    405: "Not this method (`Allow` lists those that are)",
    408: "The request's head did not arrive in time (a body that stalls once the head is "
    "in ends with the connection closed, no answer)",
    409: "Refused: a rule of play forbids it (the code names the rule; its `type` is the "
    "page that documents it), the table changed since the version the command names "
    "(`table_changed`), the seat's time ran out (`out_of_time`), or the game was busy "
    "(`busy`)",
    413: "Body larger than BURA_MAX_BODY_BYTES",
    422: "The Idempotency-Key names another command (or game): nothing was done",
    429: "Rate limited: wait `Retry-After` seconds",
    431: "Request headers too large or too many",
    500: "The server failed unexpectedly (`internal_error`), or, on an operation on one "
    "game, the game's stored record no longer folds into a game (`record_broken`: changed "
    "outside the server; verify names it)",
    503: "The event store cannot be reached (`store_unavailable`: nothing was written), the "
    "answer was lost (`outcome_unknown`: it may have been applied), stream tickets cannot be "
    "reached (`stream_tickets_unavailable`), or the server is stopping",
}


# A response answering more codes than this is described as its status is (_DESCRIPTIONS),
# not code by code: each code's example still names it.
TOLD_ONE_BY_ONE = 12

# Statuses any request may be answered with, whatever it asks: the connection's bounds.
EVERYWHERE = (408, 431)

# The codes of a status most operations can answer: a 400 for a value the schema refuses,
# a 401 for the token. An operation that reads a JSON body, a cursor, a checkpoint, cards
# or a stream ticket names its codes (`only`): its examples are the ones it can answer.
USUAL: dict[int, tuple[str, ...]] = {400: ("bad_request",), 401: ("unauthorized",)}
JSON_BODY = ("bad_request", "malformed_json")  # the 400s of an operation reading a body
# The 409s a seat's command can be refused with (POST /games/{id}/commands, and the table
# page's form): every rule of play, the table changed since `seen`, a time that ran out, a
# game busy; not the server's own commands' codes (a timeout, a pause's end, a rematch).
# tests/api/test_problems.py derives it from the domain.
COMMAND_REFUSALS = (
    "not_your_turn",
    "dave_pending",
    "card_not_in_hand",
    "duplicate_cards",
    "wrong_card_count",
    "mixed_suits",
    "no_cards",
    "cannot_pass",
    "stock_empty",
    "double_draw",
    "extra_card",
    "out_of_turn_draw",
    "already_declared",
    "no_trumps",
    "lead_the_bura",
    "combination_outranked",
    "no_thirty_one",
    "not_kozel",
    "dave_off",
    "dave_not_yours",
    "dave_limit",
    "dave_not_allowed",
    "no_dave_pending",
    "seeds_pending",
    "seed_already_sent",
    "seed_too_late",
    "not_seeding",
    "bad_seed",
    "out_of_time",
    "table_changed",
    "game_over",
    "not_started",
    "not_a_seat",
    "busy",
)


def responses(
    *statuses: int, only: Mapping[int, Sequence[str]] | None = None
) -> dict[int, ResponseSpec]:
    """OpenAPI error responses for the statuses an operation may answer: problem+json with
    one example per code of that status, named by the code. Every operation may also be
    refused before it is routed (408, 431: the connection's bounds) or fail unexpectedly
    (500 `internal_error`); an operation that names 500 itself answers every code of it
    (`record_broken` too: it reads a game). `only`: the codes of a status the operation can
    answer, where it answers few of them (a webhook's 404 is never `game_not_found`); a 400
    or a 401 left out of it has the USUAL codes."""
    narrowed = {s: USUAL[s] for s in statuses if s in USUAL} | dict(only or {})
    specs = {
        s: _spec(s, narrowed.get(s, codes_of(s)))
        for s in dict.fromkeys((*statuses, *narrowed, *EVERYWHERE))
    }
    if 500 not in specs:
        specs[500] = _spec(
            500,
            ["internal_error"],
            "The server failed unexpectedly (`internal_error`): `X-Request-ID` finds it in "
            "the logs",
        )
    return specs


def _spec(status: int, codes: Sequence[str], description: str | None = None) -> ResponseSpec:
    if description is None and (
        set(codes) == set(codes_of(status)) or len(codes) > TOLD_ONE_BY_ONE
    ):
        description = _DESCRIPTIONS.get(status, "Error")
    elif description is None:  # the codes it can answer, each with its meaning
        description = " ".join(f"`{code}`: {PROBLEMS[code].about}" for code in codes)
    return ResponseSpec(
        data_container=ProblemDetails,
        description=description,
        media_type=PROBLEM_JSON,
        generate_examples=False,
        examples=[
            Example(summary=code, description=PROBLEMS[code].title, value=example(code))
            for code in codes
        ],
    )


def table() -> str:
    """The README's error table, written from the registry."""
    lines = ["| `code` | Status | Title | Meaning |", "|---|---|---|---|"]
    for code, row in sorted(PROBLEMS.items(), key=lambda item: (item[1].status, item[0])):
        lines.append(f"| `{code}` | {row.status} | {row.title} | {row.about} |")
    return "\n".join(lines)
