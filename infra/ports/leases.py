"""The lease port: a job that exactly one replica may do at a time (the webhook dispatcher).

A holder keeps its lease by renewing it before it expires; a holder that dies or stalls
lets it expire, and then any other replica may take it. Expiry is judged by the store's
clock, so the replicas' clocks never have to agree.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

import msgspec


class Lease(msgspec.Struct, frozen=True):
    name: str
    holder: str
    expires_at: datetime


class Leases(Protocol):
    async def hold(self, name: str, holder: str, seconds: float) -> bool:
        """Take the lease for `seconds` if nobody holds it or its holder let it expire, or
        renew it if `holder` has it; True while `holder` has it."""
        ...

    async def release(self, name: str, holder: str) -> None:
        """Let the lease go at once (a clean shutdown), if `holder` has it."""
        ...

    async def lease(self, name: str) -> Lease | None:
        """Who holds the lease and until when, if anyone does (expired or not)."""
        ...
