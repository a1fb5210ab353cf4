"""The HTTP API (DESIGN.md "API"): Litestar handlers, msgspec bodies, errors as {code, detail}."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, ClassVar

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.exceptions import (
    PermissionDeniedException,
    ServiceUnavailableException,
    ValidationException,
)
from litestar.openapi import ResponseSpec
from litestar.params import FromPath, HeaderParameter, JSONBody, Parameter
from litestar.response import Stream

from domain.audit import Finding, audit
from domain.cards import parse_cards
from domain.commands import Lead, PlayerCommand, Respond
from domain.errors import RuleViolation
from domain.events import AnyEvent
from domain.rules import Rules
from domain.views import View, redact, review, view
from services.auth import Caller, caller_for, require_operator
from services.fairness import DealCheck, verify_deals
from services.games import GameService, Recorded
from services.projector import Projector
from services.requests import request_id


class ErrorBody(msgspec.Struct, frozen=True):
    """Every error answer: a stable machine code and a sentence saying what was wrong."""

    code: str
    detail: str
    option: str | None = None  # bad_option: the table option at fault
    errors: list[dict[str, Any]] | None = None  # bad_request: each field at fault


def _error_spec(text: str) -> ResponseSpec:
    return ResponseSpec(data_container=ErrorBody, description=text, generate_examples=False)


ERRORS: dict[int, ResponseSpec] = {
    400: _error_spec("Malformed input: bad JSON (`malformed_json`), an unknown field or "
                     "`type`, a bad card (`bad_card`), option (`bad_option`) or deck "
                     "(`bad_deck`); the detail names it"),
    401: _error_spec("No token, or a token nobody issued (`unauthorized`)"),
    403: _error_spec("A token of another game, or the wrong role (`forbidden`)"),
    404: _error_spec("No such game (`game_not_found`)"),
    409: _error_spec("A broken rule: the code names it (`not_your_turn`, `card_not_in_hand`, "
                     "`wrong_card_count`, `mixed_suits`, `duplicate_cards`, `dave_pending`, "
                     "`game_over`, `idempotency_key_reused`, ...)"),
    413: _error_spec("Body larger than BURA_MAX_BODY_BYTES (`body_too_large`)"),
    503: _error_spec("The event store cannot be reached (`store_unavailable`): nothing was "
                     "written; send it again with the same Idempotency-Key"),
}


class SeatSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class CreateGame(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    seats: Annotated[list[SeatSpec], msgspec.Meta(min_length=2, max_length=6)]
    rules: Rules = Rules()
    seed: Annotated[str, msgspec.Meta(min_length=1, max_length=256)] | None = None
    dealer: Annotated[int, msgspec.Meta(ge=0, le=5)] | None = None
    deck: Annotated[list[str], msgspec.Meta(max_length=52)] | None = None


class BadGame(Exception):
    """A new game's deck or dealer cannot be used: malformed input (400), not a broken rule."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


# Versions are bigint in the stores: a larger number is no version, refuse it at the edge.
LAST_VERSION = 2**62


class SeatToken(msgspec.Struct, frozen=True):
    seat: int
    name: str
    token: str


class CreatedGame(msgspec.Struct, frozen=True):
    game_id: str
    version: int
    seats: list[SeatToken]
    spectator_token: str


class EventEnvelope(msgspec.Struct, frozen=True):
    version: int
    event: AnyEvent


class CommandResult(msgspec.Struct, frozen=True):
    version: int
    duplicate: bool
    events: list[EventEnvelope]


class EventPage(msgspec.Struct, frozen=True):
    version: int
    events: list[EventEnvelope]


class Replay(msgspec.Struct, frozen=True):
    version: int
    view: View


class Audit(msgspec.Struct, frozen=True):
    game_id: str
    version: int
    findings: list[Finding]


class Verification(msgspec.Struct, frozen=True):
    game_id: str
    ok: bool
    deals: list[DealCheck]


def _service(request: Request[Any, Any, Any]) -> GameService:
    service: GameService = request.app.state.service
    return service


async def _caller(request: Request[Any, Any, Any], game_id: str) -> Caller:
    return await caller_for(request, game_id, _service(request), request.app.state.operator_key)


def _envelopes(records: list[Recorded], caller: Caller, rules: Rules) -> list[EventEnvelope]:
    viewer = caller.viewer
    return [EventEnvelope(r.version, redact(r.event, viewer, rules)) for r in records]  # type: ignore[arg-type]


def _request_id(request: Request[Any, Any, Any]) -> str | None:
    """The request's id (services/requests.py), stored with the events as correlation id."""
    return request_id.get()


class GamesController(Controller):
    path = "/games"
    tags: ClassVar[list[str]] = ["games"]

    @post("/", responses=ERRORS, status_code=201, summary="Create a game (operator key)")
    async def create_game(
        self, request: Request[Any, Any, Any], data: JSONBody[CreateGame]
    ) -> CreatedGame:
        """Deals the first deal. Returns one secret token per seat and a spectator token:
        hand each to its player; only their hashes are stored."""
        await require_operator(request, _service(request), request.app.state.operator_key)
        deck = list(parse_cards(data.deck)) if data.deck is not None else None
        names = [s.name for s in data.seats]
        try:
            created = await _service(request).create(
                names, data.rules, seed=data.seed, dealer=data.dealer, deck=deck,
                correlation_id=_request_id(request),
            )
        except RuleViolation as e:  # bad_deck, bad_dealer: nothing was played yet
            raise BadGame(e.code, e.detail) from e
        return CreatedGame(
            game_id=created.game_id,
            version=created.version,
            seats=[
                SeatToken(i, n, t)
                for i, (n, t) in enumerate(zip(names, created.tokens, strict=True))
            ],
            spectator_token=created.spectator_token,
        )

    @post(
        "/{game_id:str}/commands",
        responses=ERRORS,
        status_code=200,
        summary="Send a command (seat token)",
    )
    async def command(
        self,
        request: Request[Any, Any, Any],
        game_id: FromPath[str],
        data: JSONBody[PlayerCommand],
        idempotency_key: Annotated[
            str | None,
            HeaderParameter(name="Idempotency-Key", min_length=1, max_length=200,
                            pattern=r"^[\x20-\x7e]+$", required=False),
        ] = None,
    ) -> CommandResult:
        """Acts as the token's seat. Send an Idempotency-Key: a retry with the same key
        returns the first answer and is never a second move (a second draw loses the deal)."""
        caller = await _caller(request, game_id)
        if caller.role != "seat" or caller.seat is None:
            raise PermissionDeniedException("only a seat token sends commands")
        if isinstance(data, Lead | Respond):
            data = msgspec.structs.replace(data, cards=parse_cards(data.cards))
        service = _service(request)
        outcome = await service.execute(
            game_id, caller.seat, data, command_id=idempotency_key,
            correlation_id=_request_id(request),
        )
        rules = await service.rules_of(game_id)
        return CommandResult(
            outcome.version, outcome.duplicate, _envelopes(outcome.events, caller, rules)
        )

    @get("/{game_id:str}", responses=ERRORS, summary="The caller's view of the table")
    async def get_game(self, request: Request[Any, Any, Any], game_id: FromPath[str]) -> View:
        caller = await _caller(request, game_id)
        return view(await _service(request).load(game_id), caller.viewer)

    @get(
        "/{game_id:str}/events",
        responses=ERRORS,
        summary="Events after a version, redacted for the caller",
    )
    async def get_events(
        self, request: Request[Any, Any, Any], game_id: FromPath[str],
        after: Annotated[int, Parameter(ge=0, le=LAST_VERSION)] = 0,
    ) -> EventPage:
        caller = await _caller(request, game_id)
        service = _service(request)
        state = await service.load(game_id)
        records = await service.events(game_id, after)
        return EventPage(state.version, _envelopes(records, caller, state.rules))

    @get(
        "/{game_id:str}/replay",
        responses=ERRORS,
        summary="The full table at a version (arbiter; seats once over)",
    )
    async def get_replay(
        self, request: Request[Any, Any, Any], game_id: FromPath[str],
        version: Annotated[int | None, Parameter(ge=1, le=LAST_VERSION)] = None,
    ) -> Replay:
        caller = await _caller(request, game_id)
        service = _service(request)
        current = await service.load(game_id)
        if caller.role != "operator" and not current.finished:
            raise PermissionDeniedException("the replay opens to players when the game is over")
        state = await service.state_at(game_id, version or current.version)
        return Replay(state.version, review(state, caller.viewer))

    @get(
        "/{game_id:str}/audit",
        responses=ERRORS,
        summary="Every penalty and false declaration, with evidence",
    )
    async def get_audit(self, request: Request[Any, Any, Any], game_id: FromPath[str]) -> Audit:
        caller = await _caller(request, game_id)
        service = _service(request)
        current = await service.load(game_id)
        if caller.role != "operator" and not current.finished:
            raise PermissionDeniedException("the audit opens to players when the game is over")
        records = await service.events(game_id)
        return Audit(game_id, current.version, audit((r.event for r in records), caller.viewer))

    @get(
        "/{game_id:str}/verify",
        responses=ERRORS,
        summary="Check every deal against its shuffle commitment",
    )
    async def get_verify(
        self, request: Request[Any, Any, Any], game_id: FromPath[str]
    ) -> Verification:
        """Open to everyone at the table once the game is over and its seed revealed."""
        caller = await _caller(request, game_id)
        service = _service(request)
        current = await service.load(game_id)
        if caller.role != "operator" and not current.finished:
            raise PermissionDeniedException("the seed is revealed when the game is over")
        records = await service.events(game_id)
        checks = verify_deals([r.event for r in records], current.seed)
        return Verification(game_id, all(c.ok for c in checks), checks)


class StreamController(Controller):
    path = "/games"
    tags: ClassVar[list[str]] = ["games"]

    @get(
        "/{game_id:str}/stream",
        responses=ERRORS,
        summary="Server-Sent Events of the caller's view",
        response_description="text/event-stream: `event: view` messages whose `id` is the game "
        "version and whose data is {version, event, view}; `: keep-alive` comments; "
        "`event: end` when the game is over; `event: shutdown` when the server stops "
        "(reconnect with Last-Event-ID).",
    )
    async def stream(
        self,
        request: Request[Any, Any, Any],
        game_id: FromPath[str],
        last_event_id: Annotated[
            str | None, HeaderParameter(name="Last-Event-ID", required=False, max_length=20)
        ] = None,
    ) -> Stream:
        """A new stream starts with the current view; a reconnect with Last-Event-ID first
        gets one message for every version it missed, none twice."""
        caller = await _caller(request, game_id)
        last: int | None = None
        if last_event_id is not None and last_event_id.strip():
            try:
                last = int(last_event_id)
            except ValueError:
                raise ValidationException("Last-Event-ID must be a game version") from None
            if last < 0:
                raise ValidationException("Last-Event-ID must be a game version")
        projector: Projector = request.app.state.projector
        if projector.draining.is_set():
            raise ServiceUnavailableException("the server is shutting down; reconnect")
        await _service(request).load(game_id)
        return Stream(
            projector.stream(game_id, caller.viewer, last),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )


class HealthController(Controller):
    path = "/health"
    tags: ClassVar[list[str]] = ["health"]

    @get("/live", summary="Liveness: the process answers")
    async def live(self) -> dict[str, str]:
        return {"status": "ok"}

    @get("/ready", summary="Readiness: the store and Redis answer, the server is not stopping")
    async def ready(self, request: Request[Any, Any, Any]) -> Response[dict[str, str]]:
        """503 without the event store, without Redis, or while shutting down.

        With BURA_READY_REQUIRES_BUS=false an unreachable Redis is reported as "degraded"
        and the replica stays ready: commands work without Redis and live views catch up
        by polling, so an operator may prefer that to every replica leaving the Service
        while Redis restarts."""
        service = _service(request)
        checks: dict[str, str] = {}
        for name, part in (("store", service.store), ("bus", service.bus)):
            try:
                async with asyncio.timeout(2.0):
                    await part.ping()
                checks[name] = "ok"
            except Exception as error:
                checks[name] = f"unavailable: {type(error).__name__}"
        if request.app.state.projector.draining.is_set():
            checks["server"] = "shutting down"
        ok = checks["store"] == "ok" and "server" not in checks
        if request.app.state.settings.ready_requires_bus:
            ok = ok and checks["bus"] == "ok"
        status = "unavailable" if not ok else "ok" if checks["bus"] == "ok" else "degraded"
        return Response({"status": status, **checks}, status_code=200 if ok else 503)
