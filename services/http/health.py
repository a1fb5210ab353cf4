"""Operations: liveness, readiness, Prometheus metrics."""

from __future__ import annotations

import asyncio

from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.openapi import ResponseSpec
from litestar.openapi.spec import Example

from services.bootstrap import Runtime
from services.metrics import EXPOSITION


class HealthController(Controller):
    path = "/health"
    tags = ("health",)

    @get("/live", operation_id="getLiveness", summary="Liveness: the process answers")
    async def live(self) -> dict[str, str]:
        return {"status": "ok"}

    @get(
        "/ready",
        operation_id="getReadiness",
        summary="Readiness: the store and Redis answer, the server is not stopping",
        responses={
            503: ResponseSpec(
                dict[str, str],
                description="Not ready: each check says why",
                generate_examples=False,
                examples=[
                    Example(
                        summary="store down",
                        value={"status": "unavailable", "store": "unavailable: OSError"},
                    )
                ],
            )
        },
    )
    async def ready(self, runtime: NamedDependency[Runtime]) -> Response[dict[str, str]]:
        """503 without the event store, without Redis, or while shutting down.

        With BURA_READY_REQUIRES_BUS=false an unreachable Redis is reported as "degraded"
        and the replica stays ready: commands work without Redis and live views catch up
        by polling, so an operator may prefer that to every replica leaving the Service
        while Redis restarts."""
        checks: dict[str, str] = {}
        for name, part in (("store", runtime.adapters.store), ("bus", runtime.adapters.hints)):
            try:
                async with asyncio.timeout(2.0):
                    await part.ping()
                checks[name] = "ok"
            except Exception as error:
                checks[name] = f"unavailable: {type(error).__name__}"
        if runtime.projector.draining.is_set():
            checks["server"] = "shutting down"
        ok = checks["store"] == "ok" and "server" not in checks
        if runtime.settings.ready_requires_bus:
            ok = ok and checks["bus"] == "ok"
        status = "unavailable" if not ok else "ok" if checks["bus"] == "ok" else "degraded"
        return Response({"status": status, **checks}, status_code=200 if ok else 503)


@get("/metrics", include_in_schema=False, media_type=EXPOSITION)
async def prometheus(runtime: NamedDependency[Runtime]) -> Response[bytes]:
    return Response(runtime.metrics.render(), media_type=EXPOSITION)
