"""Webhook endpoints, the dispatcher's checkpoint and the deliveries on PostgreSQL, on the
event store's pool."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from infra.ports.events import START, Checkpoint
from infra.ports.webhooks import (
    Attempt,
    Backlog,
    Delivery,
    DeliveryState,
    Due,
    Endpoint,
    NewDelivery,
    Tried,
)
from infra.postgres.connections import Bounded

_ENDPOINT = "id, url, secret, events, source, description, created_at"
_SAVE_ENDPOINT = f"""
INSERT INTO webhook_endpoints (id, url, secret, events, source, description)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (id) DO UPDATE
   SET url = excluded.url, secret = excluded.secret, events = excluded.events,
       source = excluded.source, description = excluded.description
RETURNING {_ENDPOINT}
"""
_DELIVERY = (
    "seq, id, endpoint_id, url, type, game_id, version, tx_id, position, recorded_at, body,"
    " state, attempts, created_at, next_attempt_at, last_attempt_at, last_status,"
    " last_error, delivered_at"
)
_ENQUEUE = """
INSERT INTO webhook_deliveries (id, endpoint_id, url, type, game_id, version, tx_id,
                                position, recorded_at, body)
SELECT d.id, d.endpoint_id, d.url, d.type, d.game_id, d.version, d.tx_id, d.position,
       d.recorded_at, d.body
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[],
              $7::bigint[], $8::bigint[], $9::timestamptz[], $10::bytea[])
       WITH ORDINALITY AS d(id, endpoint_id, url, type, game_id, version, tx_id, position,
                            recorded_at, body, ord)
 ORDER BY d.ord
ON CONFLICT (id) DO NOTHING
"""
_MOVE = """
INSERT INTO feed_checkpoints (name, tx_id, position) VALUES ($1, $2, $3)
ON CONFLICT (name) DO UPDATE
   SET tx_id = excluded.tx_id, position = excluded.position, updated_at = now()
"""
_LIVE = "EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = webhook_deliveries.endpoint_id)"
# The head of each endpoint's queue for each game: a later event of a game waits for the
# earlier one however soon its own attempt would fall due. A pending delivery whose
# endpoint is gone (queued as it was being removed, or sent again just before) is
# cancelled, as removing it does, and is never a head: it would hold a place in the
# `limit` for ever and, enough of them, starve every endpoint.
_DUE = f"""
WITH orphans AS (
    UPDATE webhook_deliveries SET state = 'cancelled'
     WHERE state = 'pending' AND NOT {_LIVE}
), heads AS (
    SELECT DISTINCT ON (endpoint_id, game_id) {_DELIVERY}
      FROM webhook_deliveries
     WHERE state = 'pending' AND {_LIVE}
     ORDER BY endpoint_id, game_id, tx_id, position
)
SELECT {_DELIVERY}, greatest(extract(epoch FROM next_attempt_at - now()), 0)::float8
  FROM heads
 ORDER BY next_attempt_at, tx_id, position
 LIMIT $1
"""
# One attempt's hold on a delivery, only as `due` read it, only under the lease and only
# while its endpoint is there; a concurrent claim waits for the row and then finds
# next_attempt_at moved on. FOR SHARE: the endpoint cannot be removed until this commits,
# and its removal, once committed, is seen here.
_CLAIM = """
UPDATE webhook_deliveries
   SET next_attempt_at = now() + make_interval(secs => $5)
 WHERE id = $3 AND state = 'pending' AND attempts = $4 AND next_attempt_at <= now()
   AND EXISTS (SELECT 1 FROM leases WHERE name = $1 AND holder = $2 AND expires_at > now())
   AND EXISTS (SELECT 1 FROM webhook_endpoints e
                WHERE e.id = webhook_deliveries.endpoint_id FOR SHARE)
RETURNING id
"""
# A failed delivery queued again, only while its endpoint is there (FOR SHARE, as above).
_REDELIVER = """
UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = now()
 WHERE id = $1 AND state = 'failed'
   AND EXISTS (SELECT 1 FROM webhook_endpoints e
                WHERE e.id = webhook_deliveries.endpoint_id FOR SHARE)
RETURNING id
"""
_RECORD = """
WITH held AS (
    SELECT EXISTS (SELECT 1 FROM leases WHERE name = $7 AND holder = $8 AND expires_at > now())
           AS still
)
UPDATE webhook_deliveries
   SET attempts = attempts + 1,
       last_attempt_at = CASE WHEN held.still THEN $2 ELSE last_attempt_at END,
       last_status = CASE WHEN held.still THEN $3 ELSE last_status END,
       last_error = CASE WHEN held.still THEN $4 ELSE last_error END,
       state = CASE WHEN state <> 'pending' OR NOT held.still THEN state
                    WHEN $5 = 'delivered' THEN 'delivered'
                    WHEN $5 = 'failed' THEN 'failed'
                    ELSE 'pending' END,
       delivered_at = CASE WHEN state = 'pending' AND held.still AND $5 = 'delivered' THEN now()
                           ELSE delivered_at END,
       next_attempt_at = CASE WHEN state = 'pending' AND held.still AND $5 = 'retry'
                              THEN now() + make_interval(secs => $6)
                              ELSE next_attempt_at END
  FROM held
 WHERE id = $1
RETURNING attempts
"""


def _endpoint(row: asyncpg.Record) -> Endpoint:
    return Endpoint(
        id=row[0],
        url=row[1],
        secret=row[2],
        events=tuple(row[3]),
        source=row[4],
        description=row[5],
        created_at=row[6],
    )


def _delivery(row: asyncpg.Record) -> Delivery:
    state = row[11]
    return Delivery(
        seq=row[0],
        id=row[1],
        endpoint_id=row[2],
        url=row[3],
        type=row[4],
        game_id=row[5],
        version=row[6],
        tx_id=row[7],
        position=row[8],
        recorded_at=row[9],
        body=row[10],
        state=state,
        attempts=row[12],
        created_at=row[13],
        next_attempt_at=row[14] if state == "pending" else None,
        last_attempt_at=row[15],
        last_status=row[16],
        last_error=row[17],
        delivered_at=row[18],
    )


class PostgresWebhookStore(Bounded):
    """Bounded like the event store: by the request's deadline (the operator's calls), else
    command_timeout (the dispatcher's); a pooled connection waited for included, and one
    that fails thrown away rather than given back to wait on."""

    async def save_endpoint(self, endpoint: Endpoint) -> Endpoint:
        e = endpoint
        async with self.connection() as conn:
            row = await conn.fetchrow(
                _SAVE_ENDPOINT,
                e.id,
                e.url,
                e.secret,
                list(e.events),
                e.source,
                e.description,
                timeout=self.left(),
            )
        assert row is not None
        return _endpoint(row)

    async def endpoints(self) -> list[Endpoint]:
        async with self.connection() as conn:
            rows = await conn.fetch(
                f"SELECT {_ENDPOINT} FROM webhook_endpoints ORDER BY created_at, id",
                timeout=self.left(),
            )
        return [_endpoint(r) for r in rows]

    async def endpoint(self, endpoint_id: str) -> Endpoint | None:
        async with self.connection() as conn:
            row = await conn.fetchrow(
                f"SELECT {_ENDPOINT} FROM webhook_endpoints WHERE id = $1",
                endpoint_id,
                timeout=self.left(),
            )
        return None if row is None else _endpoint(row)

    async def remove_endpoint(self, endpoint_id: str) -> bool:
        async with self.connection() as conn, conn.transaction():
            gone = await conn.fetchval(
                "DELETE FROM webhook_endpoints WHERE id = $1 RETURNING id",
                endpoint_id,
                timeout=self.left(),
            )
            await conn.execute(
                "UPDATE webhook_deliveries SET state = 'cancelled'"
                " WHERE endpoint_id = $1 AND state = 'pending'",
                endpoint_id,
                timeout=self.left(),
            )
        return gone is not None

    async def checkpoint(self, name: str) -> Checkpoint:
        async with self.connection() as conn:
            row = await conn.fetchrow(
                "SELECT tx_id, position FROM feed_checkpoints WHERE name = $1",
                name,
                timeout=self.left(),
            )
        return START if row is None else (row[0], row[1])

    async def enqueue(
        self, name: str, holder: str, after: Checkpoint, deliveries: Sequence[NewDelivery]
    ) -> bool:
        async with self.connection() as conn, conn.transaction():
            # FOR SHARE: the lease cannot change hands until this commits.
            held = await conn.fetchval(
                "SELECT true FROM leases"
                " WHERE name = $1 AND holder = $2 AND expires_at > now() FOR SHARE",
                name,
                holder,
                timeout=self.left(),
            )
            if not held:
                return False
            if deliveries:
                await conn.execute(_ENQUEUE, *_columns(deliveries), timeout=self.left())
            await conn.execute(_MOVE, name, after[0], after[1], timeout=self.left())
        return True

    async def due(self, limit: int = 100) -> Due:
        async with self.connection() as conn:
            rows = await conn.fetch(_DUE, limit, timeout=self.left())
        ready = [_delivery(r) for r in rows if r[19] <= 0]
        later = [r[19] for r in rows if r[19] > 0]
        wait = later[0] if later else (0.0 if len(rows) == limit else None)
        return Due(ready, wait)

    async def claim(
        self, name: str, holder: str, delivery_id: str, attempts: int, hold: float
    ) -> bool:
        async with self.connection() as conn:
            taken = await conn.fetchval(
                _CLAIM, name, holder, delivery_id, attempts, float(hold), timeout=self.left()
            )
        return taken is not None

    async def record(self, name: str, holder: str, delivery_id: str, tried: Tried) -> int:
        t = tried
        async with self.connection() as conn, conn.transaction():
            number = await conn.fetchval(
                _RECORD,
                delivery_id,
                t.at,
                t.status,
                t.error,
                t.verdict,
                float(t.retry_in),
                name,
                holder,
                timeout=self.left(),
            )
            if number is None:
                raise KeyError(delivery_id)
            await conn.execute(
                "INSERT INTO webhook_attempts (delivery_id, number, at, status, error,"
                " seconds) VALUES ($1, $2, $3, $4, $5, $6)",
                delivery_id,
                number,
                t.at,
                t.status,
                t.error,
                float(t.seconds),
                timeout=self.left(),
            )
        return int(number)

    async def redeliver(self, delivery_id: str) -> bool:
        async with self.connection() as conn:
            found = await conn.fetchval(_REDELIVER, delivery_id, timeout=self.left())
        return found is not None

    async def deliveries(
        self,
        *,
        endpoint_id: str | None = None,
        state: DeliveryState | None = None,
        game_id: str | None = None,
        before: int | None = None,
        limit: int = 100,
    ) -> list[Delivery]:
        where, args = [], []
        for column, value in (
            ("endpoint_id =", endpoint_id),
            ("state =", state),
            ("game_id =", game_id),
            ("seq <", before),
        ):
            if value is not None:
                args.append(value)
                where.append(f"{column} ${len(args)}")
        args.append(limit)
        sql = (
            f"SELECT {_DELIVERY} FROM webhook_deliveries"
            f"{' WHERE ' + ' AND '.join(where) if where else ''}"
            f" ORDER BY seq DESC LIMIT ${len(args)}"
        )
        async with self.connection() as conn:
            rows = await conn.fetch(sql, *args, timeout=self.left())
        return [_delivery(r) for r in rows]

    async def delivery(self, delivery_id: str) -> Delivery | None:
        async with self.connection() as conn:
            row = await conn.fetchrow(
                f"SELECT {_DELIVERY} FROM webhook_deliveries WHERE id = $1",
                delivery_id,
                timeout=self.left(),
            )
        return None if row is None else _delivery(row)

    async def attempts(self, delivery_id: str) -> list[Attempt]:
        async with self.connection() as conn:
            rows = await conn.fetch(
                "SELECT number, at, status, error, seconds FROM webhook_attempts"
                " WHERE delivery_id = $1 ORDER BY number",
                delivery_id,
                timeout=self.left(),
            )
        return [Attempt(number=r[0], at=r[1], status=r[2], error=r[3], seconds=r[4]) for r in rows]

    async def backlog(self) -> Backlog:
        async with self.connection() as conn:
            row = await conn.fetchrow(
                "SELECT count(*), min(recorded_at) FROM webhook_deliveries WHERE state = 'pending'",
                timeout=self.left(),
            )
        assert row is not None
        return Backlog(int(row[0]), row[1])


def _columns(deliveries: Sequence[NewDelivery]) -> list[list[Any]]:
    return [
        [d.id for d in deliveries],
        [d.endpoint_id for d in deliveries],
        [d.url for d in deliveries],
        [d.type for d in deliveries],
        [d.game_id for d in deliveries],
        [d.version for d in deliveries],
        [d.tx_id for d in deliveries],
        [d.position for d in deliveries],
        [d.recorded_at for d in deliveries],
        [d.body for d in deliveries],
    ]
