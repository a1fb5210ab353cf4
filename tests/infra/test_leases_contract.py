"""The Leases contract: every adapter (SQLite, PostgreSQL) passes this same module."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

from infra.ports.leases import Leases
from services.bootstrap import Adapters


def name() -> str:
    return f"job-{uuid.uuid4().hex[:12]}"


async def test_a_free_lease_is_taken_and_renewed_by_its_holder_only(adapters: Adapters) -> None:
    leases: Leases = adapters.leases
    job = name()
    assert await leases.lease(job) is None

    assert await leases.hold(job, "a", 30)
    assert await leases.hold(job, "a", 30)  # renewed
    assert not await leases.hold(job, "b", 30)

    lease = await leases.lease(job)
    assert lease is not None and (lease.name, lease.holder) == (job, "a")
    now = datetime.now(UTC)
    assert now + timedelta(seconds=20) < lease.expires_at < now + timedelta(seconds=40)


async def test_an_expired_lease_passes_to_the_next_and_the_old_holder_cannot_renew_it(
    adapters: Adapters,
) -> None:
    leases, job = adapters.leases, name()
    assert await leases.hold(job, "a", 0.2)
    await asyncio.sleep(0.5)

    assert await leases.hold(job, "b", 30)
    assert not await leases.hold(job, "a", 30)
    lease = await leases.lease(job)
    assert lease is not None and lease.holder == "b"


async def test_a_released_lease_is_free_at_once_and_only_its_holder_releases_it(
    adapters: Adapters,
) -> None:
    leases, job = adapters.leases, name()
    assert await leases.hold(job, "a", 30)
    await leases.release(job, "b")  # not b's to release
    assert not await leases.hold(job, "b", 30)

    await leases.release(job, "a")
    assert await leases.lease(job) is None
    assert await leases.hold(job, "b", 30)


async def test_of_many_replicas_trying_at_once_exactly_one_holds_the_lease(
    adapters: Adapters,
) -> None:
    leases, job = adapters.leases, name()
    holders = [f"replica-{i}" for i in range(12)]

    won = await asyncio.gather(*(leases.hold(job, h, 30) for h in holders))

    assert sum(won) == 1
    lease = await leases.lease(job)
    assert lease is not None and lease.holder == holders[won.index(True)]


async def test_leases_of_other_names_are_their_own(adapters: Adapters) -> None:
    leases, one, two = adapters.leases, name(), name()
    assert await leases.hold(one, "a", 30)
    assert await leases.hold(two, "b", 30)
    assert not await leases.hold(one, "b", 30)
