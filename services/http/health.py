"""Operations: liveness, readiness, Prometheus metrics."""

from __future__ import annotations

import asyncio
from typing import Protocol

from litestar import Controller, Response, get
from litestar.di import NamedDependency
from litestar.openapi import ResponseSpec
from litestar.openapi.spec import Example

from services.bootstrap import Runtime
from services.http.errors import responses
from services.metrics import EXPOSITION

# Each readiness check (the store, Redis) must answer within this, and they run at once:
# /health/ready answers in about this long at worst, well inside the readinessProbe's
# timeoutSeconds (2 in k8s/base/deployment.yaml), so a Redis that hangs is reported
# (`degraded` with BURA_READY_REQUIRES_BUS=false) rather than failing the probe itself.
CHECK_SECONDS = 1.0


class _Pinged(Protocol):
    async def ping(self) -> None: ...


async def _check(part: _Pinged) -> str:
    """ "ok", or why not: an error, or no answer within CHECK_SECONDS (TimeoutError)."""
    try:
        async with asyncio.timeout(CHECK_SECONDS):
            await part.ping()
    except Exception as error:
        return f"unavailable: {type(error).__name__}"
    return "ok"


class HealthController(Controller):
    path = "/health"
    tags = ("health",)

    # never rate limited, but refused like any request past the connection's bounds
    # (408, 431), and failing unexpectedly like any (500)
    @get(
        "/live",
        operation_id="getLiveness",
        summary="Liveness: the process answers",
        responses=responses(),
    )
    async def live(self) -> dict[str, str]:
        """200 while the process answers requests. It asks neither the store nor Redis: a
        liveness probe that failed with the database would restart every replica at once
        for an outage a restart cannot mend (readiness takes the replica out instead)."""
        return {"status": "ok"}

    @get(
        "/ready",
        operation_id="getReadiness",
        summary="Readiness: the store and Redis answer, the server is not stopping",
        responses={
            **responses(),
            503: ResponseSpec(
                dict[str, str],
                description="Not ready: each check says why, in the shape of the 200 (a probe's "
                "answer, not problem details)",
                generate_examples=False,
                examples=[
                    Example(
                        summary="store down",
                        value={"status": "unavailable", "store": "unavailable: OSError"},
                    )
                ],
            ),
        },
    )
    async def ready(self, runtime: NamedDependency[Runtime]) -> Response[dict[str, str]]:
        """503 without the event store, without Redis, or while shutting down.

        With BURA_READY_REQUIRES_BUS=false an unreachable Redis is reported as "degraded"
        and the replica stays ready: commands work without Redis and live views catch up
        by polling, so an operator may prefer that to every replica leaving the Service
        while Redis restarts."""
        store, bus = await asyncio.gather(
            _check(runtime.adapters.store), _check(runtime.adapters.hints)
        )
        checks = {"store": store, "bus": bus}
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
