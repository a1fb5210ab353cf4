"""The HTTP API (DESIGN.md "API"): Litestar handlers, msgspec bodies, errors as {code, detail}."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.exceptions import (
    PermissionDeniedException,
    ServiceUnavailableException,
    ValidationException,
)
from litestar.params import Parameter
from litestar.response import Stream

from domain.audit import Finding, audit
from domain.cards import parse_cards
from domain.commands import Lead, PlayerCommand, Respond
from domain.events import AnyEvent
from domain.rules import Rules
from domain.views import ARBITER, View, redact, view
from services.auth import Caller, bearer, caller_for, is_operator
from services.fairness import DealCheck, verify_deals
from services.games import GameService, Recorded
from services.projector import Projector


class SeatSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class CreateGame(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    seats: Annotated[list[SeatSpec], msgspec.Meta(min_length=2, max_length=6)]
    rules: Rules = Rules()
    seed: Annotated[str, msgspec.Meta(min_length=1, max_length=256)] | None = None
    dealer: Annotated[int, msgspec.Meta(ge=0, le=5)] | None = None
    deck: Annotated[list[str], msgspec.Meta(max_length=52)] | None = None


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
    return request.headers.get("x-request-id")


class GamesController(Controller):
    path = "/games"
    tags: ClassVar[list[str]] = ["games"]

    @post("/", status_code=201, summary="Create a game (operator key)")
    async def create_game(self, request: Request[Any, Any, Any], data: CreateGame) -> CreatedGame:
        """Deals the first deal. Returns one secret token per seat and a spectator token:
        hand each to its player; only their hashes are stored."""
        if not is_operator(bearer(request), request.app.state.operator_key):
            raise PermissionDeniedException("only the operator key creates games")
        deck = list(parse_cards(data.deck)) if data.deck is not None else None
        names = [s.name for s in data.seats]
        created = await _service(request).create(
            names, data.rules, seed=data.seed, dealer=data.dealer, deck=deck,
            correlation_id=_request_id(request),
        )
        return CreatedGame(
            game_id=created.game_id,
            version=created.version,
            seats=[
                SeatToken(i, n, t)
                for i, (n, t) in enumerate(zip(names, created.tokens, strict=True))
            ],
            spectator_token=created.spectator_token,
        )

    @post("/{game_id:str}/commands", status_code=200, summary="Send a command (seat token)")
    async def command(
        self,
        request: Request[Any, Any, Any],
        game_id: str,
        data: PlayerCommand,
        idempotency_key: Annotated[
            str | None, Parameter(header="Idempotency-Key", max_length=200, required=False)
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
        state = await service.load(game_id)
        return CommandResult(
            outcome.version, outcome.duplicate, _envelopes(outcome.events, caller, state.rules)
        )

    @get("/{game_id:str}", summary="The caller's view of the table")
    async def get_game(self, request: Request[Any, Any, Any], game_id: str) -> View:
        caller = await _caller(request, game_id)
        return view(await _service(request).load(game_id), caller.viewer)

    @get("/{game_id:str}/events", summary="Events after a version, redacted for the caller")
    async def get_events(
        self, request: Request[Any, Any, Any], game_id: str,
        after: Annotated[int, Parameter(ge=0)] = 0,
    ) -> EventPage:
        caller = await _caller(request, game_id)
        service = _service(request)
        state = await service.load(game_id)
        records = await service.events(game_id, after)
        return EventPage(state.version, _envelopes(records, caller, state.rules))

    @get("/{game_id:str}/replay", summary="The full table at a version (arbiter; seats once over)")
    async def get_replay(
        self, request: Request[Any, Any, Any], game_id: str,
        version: Annotated[int | None, Parameter(ge=1)] = None,
    ) -> Replay:
        caller = await _caller(request, game_id)
        service = _service(request)
        current = await service.load(game_id)
        if caller.role != "operator" and not current.finished:
            raise PermissionDeniedException("the replay opens to players when the game is over")
        state = await service.state_at(game_id, version or current.version)
        return Replay(state.version, view(state, ARBITER))

    @get("/{game_id:str}/audit", summary="Every penalty and false declaration, with evidence")
    async def get_audit(self, request: Request[Any, Any, Any], game_id: str) -> Audit:
        caller = await _caller(request, game_id)
        service = _service(request)
        current = await service.load(game_id)
        if caller.role != "operator" and not current.finished:
            raise PermissionDeniedException("the audit opens to players when the game is over")
        records = await service.events(game_id)
        return Audit(game_id, current.version, audit(r.event for r in records))

    @get("/{game_id:str}/verify", summary="Check every deal against its shuffle commitment")
    async def get_verify(self, request: Request[Any, Any, Any], game_id: str) -> Verification:
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
        summary="Server-Sent Events of the caller's view",
        response_description="text/event-stream: `event: view` messages whose `id` is the game "
        "version and whose data is {version, event, view}; `: keep-alive` comments; "
        "`event: end` when the game is over; `event: shutdown` when the server stops "
        "(reconnect with Last-Event-ID).",
    )
    async def stream(
        self,
        request: Request[Any, Any, Any],
        game_id: str,
        last_event_id: Annotated[
            str | None, Parameter(header="Last-Event-ID", required=False, max_length=20)
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

    @get("/ready", summary="Readiness: the store and the bus answer")
    async def ready(self, request: Request[Any, Any, Any]) -> Response[dict[str, str]]:
        service = _service(request)
        checks: dict[str, str] = {}
        for name, part in (("store", service.store), ("bus", service.bus)):
            try:
                await part.ping()
                checks[name] = "ok"
            except Exception as error:
                checks[name] = f"unavailable: {type(error).__name__}"
        if request.app.state.projector.draining.is_set():
            checks["server"] = "shutting down"
        ok = all(v == "ok" for v in checks.values())
        return Response({"status": "ok" if ok else "unavailable", **checks},
                        status_code=200 if ok else 503)
