"""The WebhookStore contract: every adapter (SQLite, PostgreSQL) passes this same module.

The session's PostgreSQL database is shared by the tests, so each test works with
endpoints, games and lease names of its own, and reads only its own back."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from infra.ports.events import START
from infra.ports.webhooks import Delivery, Endpoint, NewDelivery, Tried, WebhookStore
from services.bootstrap import Adapters

WIDE = 10_000  # a `due` limit past everything the other tests may have left pending


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def endpoint(events: tuple[str, ...] = ("deal_ended",), **fields: object) -> Endpoint:
    spec: dict[str, object] = {
        "id": unique("whk"),
        "url": "http://127.0.0.1:9/hook",
        "secret": "s" * 20,
        "events": events,
        "source": "api",
        **fields,
    }
    return Endpoint(**spec)  # type: ignore[arg-type]


def delivery(endpoint_id: str, game: str, version: int, position: int) -> NewDelivery:
    return NewDelivery(
        id=f"dlv-{endpoint_id}-{game}-{version}",
        endpoint_id=endpoint_id,
        url="http://127.0.0.1:9/hook",
        type="deal_ended",
        game_id=game,
        version=version,
        tx_id=0,
        position=position,
        recorded_at=datetime.now(UTC) - timedelta(seconds=position),
        body=b'{"n": %d}' % version,
    )


async def queue(adapters: Adapters, *items: NewDelivery, after: tuple[int, int] = START) -> str:
    """Queue under a lease of the test's own; the lease's name."""
    lease = unique("lease")
    assert await adapters.leases.hold(lease, "me", 30)
    assert await adapters.webhooks.enqueue(lease, "me", after, items)
    return lease


async def due_of(store: WebhookStore, endpoint_id: str) -> list[Delivery]:
    return [d for d in (await store.due(WIDE)).deliveries if d.endpoint_id == endpoint_id]


def settled(d: Delivery | None) -> tuple[str, int, int | None, str | None] | None:
    """A delivery's state, attempts and last answer."""
    return None if d is None else (d.state, d.attempts, d.last_status, d.last_error)


def tried(verdict: str, status: int | None = 500, retry_in: float = 0.0) -> Tried:
    return Tried(
        at=datetime.now(UTC),
        status=status,
        error=None if verdict == "delivered" else f"HTTP {status}",
        seconds=0.01,
        verdict=verdict,  # type: ignore[arg-type]
        retry_in=retry_in,
    )


# --- endpoints ------------------------------------------------------------------------------


async def test_an_endpoint_is_saved_listed_changed_and_keeps_when_it_was_created(
    adapters: Adapters,
) -> None:
    store = adapters.webhooks
    one = await store.save_endpoint(endpoint(description="payouts"))
    assert one.created_at is not None
    assert abs(one.created_at - datetime.now(UTC)) < timedelta(minutes=1)
    assert await store.endpoint(one.id) == one
    assert one in await store.endpoints()

    changed = await store.save_endpoint(
        endpoint(("game_finished", "timeout"), id=one.id, url="https://example.test/h")
    )

    assert (changed.url, changed.events, changed.description) == (
        "https://example.test/h",
        ("game_finished", "timeout"),
        None,
    )
    assert changed.created_at == one.created_at
    assert await store.endpoint(unique("whk")) is None


async def test_removing_an_endpoint_cancels_its_pending_deliveries_only(
    adapters: Adapters,
) -> None:
    store = adapters.webhooks
    gone, kept = await store.save_endpoint(endpoint()), await store.save_endpoint(endpoint())
    game = unique("game")
    lease = await queue(adapters, delivery(gone.id, game, 1, 1), delivery(kept.id, game, 1, 1))
    first = (await due_of(store, gone.id))[0]
    await store.record(lease, "me", first.id, tried("delivered", 200))
    lease = await queue(adapters, delivery(gone.id, game, 2, 2))

    assert await store.remove_endpoint(gone.id)
    assert not await store.remove_endpoint(gone.id)

    assert await store.endpoint(gone.id) is None
    states = {d.version: d.state for d in await store.deliveries(endpoint_id=gone.id)}
    assert states == {1: "delivered", 2: "cancelled"}
    assert await due_of(store, gone.id) == []
    assert [d.version for d in await due_of(store, kept.id)] == [1]


# --- the checkpoint and the lease --------------------------------------------------------


async def test_deliveries_are_queued_and_the_checkpoint_moved_together_under_the_lease(
    adapters: Adapters,
) -> None:
    store, leases = adapters.webhooks, adapters.leases
    lease, hook, game = unique("lease"), await store.save_endpoint(endpoint()), unique("game")
    assert await store.checkpoint(lease) == START
    assert await leases.hold(lease, "me", 30)

    assert not await store.enqueue(lease, "someone-else", (0, 5), [delivery(hook.id, game, 1, 5)])
    assert await store.checkpoint(lease) == START
    assert await store.deliveries(endpoint_id=hook.id) == []

    assert await store.enqueue(lease, "me", (0, 5), [delivery(hook.id, game, 1, 5)])
    assert await store.checkpoint(lease) == (0, 5)
    (queued,) = await store.deliveries(endpoint_id=hook.id)
    assert (queued.id, queued.state, queued.attempts, queued.body) == (
        f"dlv-{hook.id}-{game}-1",
        "pending",
        0,
        b'{"n": 1}',
    )

    # The same delivery again (a holder that queued it, then died before it knew): kept once.
    assert await store.enqueue(lease, "me", (0, 6), [delivery(hook.id, game, 1, 5)])
    assert len(await store.deliveries(endpoint_id=hook.id)) == 1
    assert await store.checkpoint(lease) == (0, 6)


async def test_a_holder_whose_lease_passed_to_another_queues_nothing(adapters: Adapters) -> None:
    store, leases = adapters.webhooks, adapters.leases
    lease, hook, game = unique("lease"), await store.save_endpoint(endpoint()), unique("game")
    assert await leases.hold(lease, "old", 0.2)
    await asyncio.sleep(0.5)
    assert not await store.enqueue(lease, "old", (0, 1), [delivery(hook.id, game, 1, 1)])
    assert await leases.hold(lease, "new", 30)

    assert not await store.enqueue(lease, "old", (0, 1), [delivery(hook.id, game, 1, 1)])
    assert await store.enqueue(lease, "new", (0, 2), [])
    assert await store.checkpoint(lease) == (0, 2)
    assert await store.deliveries(endpoint_id=hook.id) == []


# --- what is due ------------------------------------------------------------------------------


async def test_only_the_oldest_pending_delivery_of_each_game_and_endpoint_is_due(
    adapters: Adapters,
) -> None:
    store = adapters.webhooks
    one, two = await store.save_endpoint(endpoint()), await store.save_endpoint(endpoint())
    a, b = unique("game"), unique("game")
    # queued out of order: the global order (tx_id, position) rules, not the queueing
    lease = await queue(adapters, delivery(one.id, a, 3, 30), delivery(one.id, b, 1, 10))
    lease = await queue(adapters, delivery(one.id, a, 2, 20), delivery(two.id, a, 3, 30))

    assert {(d.game_id, d.version) for d in await due_of(store, one.id)} == {(a, 2), (b, 1)}
    assert [(d.game_id, d.version) for d in await due_of(store, two.id)] == [(a, 3)]

    head = next(d for d in await due_of(store, one.id) if d.game_id == a)
    number = await store.record(lease, "me", head.id, tried("retry", 503, retry_in=60))
    assert number == 1
    # a retry an hour off holds the game back: its later event waits behind it
    assert [d.game_id for d in await due_of(store, one.id)] == [b]
    assert (await store.due(WIDE)).wait is not None


async def test_due_says_how_long_until_the_next_retry(adapters: Adapters) -> None:
    store = adapters.webhooks
    hook, game = await store.save_endpoint(endpoint()), unique("game")
    lease = await queue(adapters, delivery(hook.id, game, 1, 1))
    (head,) = await due_of(store, hook.id)
    await store.record(lease, "me", head.id, tried("retry", 500, retry_in=30))

    due = await store.due(WIDE)
    assert all(d.endpoint_id != hook.id for d in due.deliveries)
    assert due.wait is not None and 0 < due.wait <= 30


async def test_an_attempt_is_logged_and_settles_the_delivery(adapters: Adapters) -> None:
    store = adapters.webhooks
    hook, game = await store.save_endpoint(endpoint()), unique("game")
    lease = await queue(adapters, delivery(hook.id, game, 1, 1), delivery(hook.id, game, 2, 2))
    (head,) = await due_of(store, hook.id)

    assert await store.record(lease, "me", head.id, tried("retry", 500)) == 1
    assert await store.record(lease, "me", head.id, tried("retry", None)) == 2
    assert await store.record(lease, "me", head.id, tried("delivered", 200)) == 3

    done = await store.delivery(head.id)
    assert settled(done) == ("delivered", 3, 200, None)
    assert done is not None and done.delivered_at is not None and done.next_attempt_at is None
    assert [(a.number, a.status, a.error) for a in await store.attempts(head.id)] == [
        (1, 500, "HTTP 500"),
        (2, None, "HTTP None"),
        (3, 200, None),
    ]
    assert [d.version for d in await due_of(store, hook.id)] == [2]  # the next of the game
    # Another attempt of a delivered delivery (an old holder's, late) is logged, no more.
    assert await store.record(lease, "me", head.id, tried("retry", 500, retry_in=60)) == 4
    assert (await store.delivery(head.id)).state == "delivered"  # type: ignore[union-attr]


async def test_an_attempt_claims_its_delivery_only_as_due_read_it_and_under_the_lease(
    adapters: Adapters,
) -> None:
    """`due` is a snapshot: an attempt recorded after it was read (delivered, or to be
    retried) or another sender's claim makes the snapshot's row unclaimable."""
    store, leases = adapters.webhooks, adapters.leases
    hook, game = await store.save_endpoint(endpoint()), unique("game")
    lease = await queue(adapters, delivery(hook.id, game, 1, 1), delivery(hook.id, game, 2, 2))
    (head,) = await due_of(store, hook.id)
    assert head.attempts == 0

    assert not await store.claim(lease, "someone-else", head.id, 0, 60)  # not the holder
    assert not await store.claim(lease, "me", head.id, 1, 60)  # not as `due` read it
    assert not await store.claim(lease, "me", unique("dlv"), 0, 60)
    assert await store.claim(lease, "me", head.id, 0, 60)
    assert not await store.claim(lease, "me", head.id, 0, 60)  # taken: in flight
    held = await store.delivery(head.id)
    assert held is not None and held.state == "pending" and held.attempts == 0
    assert held.next_attempt_at is not None
    assert held.next_attempt_at > datetime.now(UTC) + timedelta(seconds=50)
    assert await due_of(store, hook.id) == []  # and the game's next waits behind it

    # the attempt's answer comes: a retry due at once, then claimed again at its count
    await store.record(lease, "me", head.id, tried("retry", 500, retry_in=0))
    (again,) = await due_of(store, hook.id)
    assert (again.id, again.attempts) == (head.id, 1)
    assert not await store.claim(lease, "me", head.id, 0, 0)  # the snapshot before it
    assert await store.claim(lease, "me", head.id, 1, 0)

    # delivered: a snapshot read before the record can never be sent on
    await store.record(lease, "me", head.id, tried("delivered", 200))
    for attempts in (0, 1, 2):
        assert not await store.claim(lease, "me", head.id, attempts, 0)
    assert (await store.delivery(head.id)).state == "delivered"  # type: ignore[union-attr]

    # the lease gone to another holder: the old one takes nothing
    (later,) = await due_of(store, hook.id)
    await leases.release(lease, "me")
    assert await leases.hold(lease, "new", 30)
    assert not await store.claim(lease, "me", later.id, 0, 0)
    assert await store.claim(lease, "new", later.id, 0, 0)


@pytest.mark.parametrize("late", ["before", "after"])
async def test_a_sender_that_lost_the_lease_logs_its_late_attempt_and_settles_nothing(
    adapters: Adapters, late: str
) -> None:
    """The holder stalls mid-attempt past its lease; another takes the lease, claims the
    delivery again and delivers it. The old holder's late answer (a timeout, its last
    allowed attempt: "failed"), recorded before or after the new holder's, is logged and
    counted, and leaves the delivery delivered, with the new holder's answer as its last."""
    store, leases = adapters.webhooks, adapters.leases
    hook, game = await store.save_endpoint(endpoint()), unique("game")
    lease = await queue(adapters, delivery(hook.id, game, 1, 1))
    (head,) = await due_of(store, hook.id)
    assert await store.claim(lease, "me", head.id, 0, 0)  # in flight, then stalled
    await leases.release(lease, "me")  # its lease lapses
    assert await leases.hold(lease, "new", 30)
    (again,) = await due_of(store, hook.id)
    assert await store.claim(lease, "new", again.id, 0, 60)
    stale = tried("failed", None)
    if late == "before":
        assert await store.record(lease, "me", head.id, stale) == 1
        pending = await store.delivery(head.id)
        assert pending is not None and (pending.state, pending.last_error) == ("pending", None)
        assert await due_of(store, hook.id) == []  # still the new holder's, in flight
    assert await store.record(lease, "new", head.id, tried("delivered", 200)) in (1, 2)
    if late == "after":
        assert await store.record(lease, "me", head.id, stale) == 2
    done = await store.delivery(head.id)
    assert settled(done) == ("delivered", 2, 200, None)
    assert done is not None and done.delivered_at is not None
    assert sorted(a.status or 0 for a in await store.attempts(head.id)) == [0, 200]


async def test_a_delivery_given_up_lets_the_game_go_on_and_may_be_sent_again(
    adapters: Adapters,
) -> None:
    store = adapters.webhooks
    hook, game = await store.save_endpoint(endpoint()), unique("game")
    lease = await queue(adapters, delivery(hook.id, game, 1, 1), delivery(hook.id, game, 2, 2))
    (head,) = await due_of(store, hook.id)
    assert not await store.redeliver(head.id)  # pending: nothing to do

    await store.record(lease, "me", head.id, tried("failed", 500))
    assert (await store.delivery(head.id)).state == "failed"  # type: ignore[union-attr]
    assert [d.version for d in await due_of(store, hook.id)] == [2]

    assert await store.redeliver(head.id)
    again = await store.delivery(head.id)
    assert again is not None and (again.state, again.attempts) == ("pending", 1)
    assert [d.version for d in await due_of(store, hook.id)] == [1]
    assert not await store.redeliver(unique("dlv"))


async def test_a_failed_delivery_of_a_removed_endpoint_is_not_queued_again(
    adapters: Adapters,
) -> None:
    store = adapters.webhooks
    hook, game = await store.save_endpoint(endpoint()), unique("game")
    lease = await queue(adapters, delivery(hook.id, game, 1, 1))
    (head,) = await due_of(store, hook.id)
    await store.record(lease, "me", head.id, tried("failed", 500))
    assert await store.remove_endpoint(hook.id)

    assert not await store.redeliver(head.id)  # there is nowhere to send it
    kept = await store.delivery(head.id)
    assert kept is not None and (kept.state, kept.attempts) == ("failed", 1)


async def test_a_pending_delivery_whose_endpoint_is_gone_is_cancelled_and_never_due(
    adapters: Adapters,
) -> None:
    """Deliveries queued for an endpoint as it was being removed (the dispatcher read the
    endpoints just before): `due` cancels them rather than list them again and again, so
    that however many there are (more than the dispatcher's `limit`) they hold nothing up,
    and no attempt can claim one."""
    store = adapters.webhooks
    gone, kept = await store.save_endpoint(endpoint()), await store.save_endpoint(endpoint())
    assert await store.remove_endpoint(gone.id)
    orphans = [delivery(gone.id, unique("game"), 1, n) for n in range(1, 41)]
    lease = await queue(adapters, *orphans, delivery(kept.id, unique("game"), 1, 99))

    assert not await store.claim(lease, "me", orphans[0].id, 0, 10)
    due = await store.due(32)
    assert not [d for d in due.deliveries if d.endpoint_id == gone.id]
    states = {d.state for d in await store.deliveries(endpoint_id=gone.id, limit=100)}
    assert states == {"cancelled"}
    assert [d.version for d in await due_of(store, kept.id)] == [1]
    assert (await store.delivery(orphans[-1].id)).next_attempt_at is None  # type: ignore[union-attr]


# --- the log and the backlog ------------------------------------------------------------------


async def test_the_log_pages_newest_first_and_filters(adapters: Adapters) -> None:
    store = adapters.webhooks
    hook, game, other = await store.save_endpoint(endpoint()), unique("game"), unique("game")
    lease = await queue(adapters, *(delivery(hook.id, game, v, v) for v in range(1, 6)))
    lease = await queue(adapters, delivery(hook.id, other, 1, 9))

    first = await store.deliveries(endpoint_id=hook.id, limit=4)
    assert [(d.game_id, d.version) for d in first] == [(other, 1), (game, 5), (game, 4), (game, 3)]
    rest = await store.deliveries(endpoint_id=hook.id, before=first[-1].seq, limit=4)
    assert [d.version for d in rest] == [2, 1]
    assert [d.version for d in await store.deliveries(game_id=game, limit=2)] == [5, 4]
    head = (await due_of(store, hook.id))[0]
    await store.record(lease, "me", head.id, tried("delivered", 200))
    delivered = await store.deliveries(endpoint_id=hook.id, state="delivered")
    assert [d.id for d in delivered] == [head.id]
    assert await store.delivery(unique("dlv")) is None
    assert await store.attempts(unique("dlv")) == []


async def test_the_backlog_counts_the_pending_and_dates_the_oldest(adapters: Adapters) -> None:
    store = adapters.webhooks
    before = await store.backlog()
    hook, game = await store.save_endpoint(endpoint()), unique("game")
    old = delivery(hook.id, game, 1, 1)  # recorded a second before the other
    lease = await queue(adapters, old, delivery(hook.id, game, 2, 2))

    after = await store.backlog()
    assert after.pending == before.pending + 2
    assert after.oldest is not None and after.oldest <= old.recorded_at + timedelta(seconds=1)
    await store.record(lease, "me", old.id, tried("delivered", 200))
    assert (await store.backlog()).pending == before.pending + 1
