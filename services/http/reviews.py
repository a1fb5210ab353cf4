"""The arbiter's reads: replay, audit, verify (services/app/reviews.py says who may)."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.openapi import ResponseSpec
from litestar.params import FromPath, Parameter

from infra.ports.events import LAST_VERSION
from services.app.bundle import Bundle
from services.app.callers import Caller
from services.app.results import Audit, Replay, Verification
from services.app.reviews import Reviews
from services.http.errors import responses


class ReviewsController(Controller):
    path = "/games"
    tags = ("reviews",)
    security = [{"bearer": []}]  # noqa: RUF012 (Litestar reads it per controller)

    @get(
        "/{game_id:str}/replay",
        operation_id="getReplay",
        responses=responses(400, 401, 403, 404, 429, 500, 503),
        summary="The full table at a version (operator; everyone at the table once over)",
    )
    async def get_replay(
        self,
        game_id: FromPath[str],
        caller: NamedDependency[Caller],
        reviews: NamedDependency[Reviews],
        version: Annotated[
            int | None,
            Parameter(
                ge=1, le=LAST_VERSION, description="The version to show; the latest if absent"
            ),
        ] = None,
    ) -> Replay:
        """The table at `version` as the arbiter sees it (every hand, the stock in order),
        rebuilt from the events up to it: step through a dispute one version at a time. A
        seat or the spectator sees the same once the game is over; in a closed_discard game
        they see only what they saw at the time (the hands and the stock hold the cards
        later played face down)."""
        return await reviews.replay(game_id, caller, version)

    @get(
        "/{game_id:str}/audit",
        operation_id="getAudit",
        responses=responses(400, 401, 403, 404, 429, 500, 503),
        summary="Every penalty and false declaration, with evidence",
    )
    async def get_audit(
        self,
        game_id: FromPath[str],
        caller: NamedDependency[Caller],
        reviews: NamedDependency[Reviews],
    ) -> Audit:
        """Every verdict the rules gave against a seat (a faulty draw, a false declaration,
        a timeout, an abandonment), each with the rule that judged it, who was due to act,
        the cards and points in question, and the versions of the events that prove it:
        what an arbiter reads to settle a dispute."""
        return await reviews.audit(game_id, caller)

    @get(
        "/{game_id:str}/verify",
        operation_id="verifyDeals",
        responses=responses(400, 401, 403, 404, 429, 500, 503),
        summary="Check every deal against its shuffle commitment",
    )
    async def get_verify(
        self,
        game_id: FromPath[str],
        caller: NamedDependency[Caller],
        reviews: NamedDependency[Reviews],
    ) -> Verification:
        """The record's hash chain recomputed row by row (`chain`: the first version that
        does not hold, if any) and every deal checked against its commitments and seeds.
        Open to everyone at the table once the game is over and its seed revealed."""
        return await reviews.verify(game_id, caller)

    @get(
        "/{game_id:str}/bundle",
        operation_id="getBundle",
        responses={
            200: ResponseSpec(
                data_container=Bundle,
                media_type="application/json",
                generate_examples=False,
                description="The bundle (format `bura-audit-bundle/1`, docs/fairness.md)",
            ),
            **responses(400, 401, 403, 404, 429, 500, 503),
        },
        summary="The audit bundle: the whole record in one file anyone can check offline",
        response_description="One compact JSON object (format `bura-audit-bundle/1`, "
        "docs/fairness.md): every event with its row metadata and chain hash, the deals' "
        "commitments and seeds, the rules and the findings. Check it with "
        "`bura verify-bundle FILE`.",
    )
    async def get_bundle(
        self,
        game_id: FromPath[str],
        caller: NamedDependency[Caller],
        reviews: NamedDependency[Reviews],
    ) -> Response[bytes]:
        """Operator at any time; everyone at the table once the game is over, redacted as
        the replay is (a closed-discard game keeps its hidden cards and seeds)."""
        body = await reviews.bundle(game_id, caller)
        return Response(
            body,
            media_type="application/json",
            headers={"Content-Disposition": f'attachment; filename="bura-{game_id}.json"'},
        )
