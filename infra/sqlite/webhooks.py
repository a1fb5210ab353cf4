"""Webhook endpoints, the dispatcher's checkpoint and the deliveries in the embedded SQLite
file (times are seconds since 1970, UTC, on this machine's clock)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

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
from infra.sqlite.database import SqliteDatabase
from infra.sqlite.leases import moment

_ENDPOINT = "id, url, secret, events, source, description, created_at"
_DELIVERY = (
    "seq, id, endpoint_id, url, type, game_id, version, tx_id, position, recorded_at, body,"
    " state, attempts, created_at, next_attempt_at, last_attempt_at, last_status,"
    " last_error, delivered_at"
)
_LIVE = "EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = webhook_deliveries.endpoint_id)"
# A pending delivery whose endpoint is gone (queued as it was being removed): cancelled by
# `due`, as removing the endpoint does, so that it never holds a place in the `limit`.
_ORPHANED = f"SELECT 1 FROM webhook_deliveries WHERE state = 'pending' AND NOT {_LIVE} LIMIT 1"
_CANCEL_ORPHANED = (
    f"UPDATE webhook_deliveries SET state = 'cancelled' WHERE state = 'pending' AND NOT {_LIVE}"
)
# The head of each endpoint's queue for each game, as on PostgreSQL (DISTINCT ON there).
_DUE = f"""
SELECT {_DELIVERY}, max(next_attempt_at - ?, 0) FROM (
    SELECT *, row_number() OVER (
        PARTITION BY endpoint_id, game_id ORDER BY tx_id, position
    ) AS place
      FROM webhook_deliveries
     WHERE state = 'pending' AND {_LIVE}
)
 WHERE place = 1
 ORDER BY next_attempt_at, tx_id, position
 LIMIT ?
"""
# One attempt's hold on a delivery, only as `due` read it, only under the lease and only
# while its endpoint is there.
_CLAIM = f"""
UPDATE webhook_deliveries
   SET next_attempt_at = :now + :hold
 WHERE id = :id AND state = 'pending' AND attempts = :attempts AND next_attempt_at <= :now
   AND EXISTS (SELECT 1 FROM leases WHERE name = :name AND holder = :holder
                                      AND expires_at > :now)
   AND {_LIVE}
RETURNING id
"""
_RECORD = """
UPDATE webhook_deliveries
   SET attempts = attempts + 1,
       last_attempt_at = CASE WHEN :held THEN :at ELSE last_attempt_at END,
       last_status = CASE WHEN :held THEN :status ELSE last_status END,
       last_error = CASE WHEN :held THEN :error ELSE last_error END,
       state = CASE WHEN state <> 'pending' OR NOT :held THEN state
                    WHEN :verdict = 'delivered' THEN 'delivered'
                    WHEN :verdict = 'failed' THEN 'failed'
                    ELSE 'pending' END,
       delivered_at = CASE WHEN state = 'pending' AND :held AND :verdict = 'delivered' THEN :now
                           ELSE delivered_at END,
       next_attempt_at = CASE WHEN state = 'pending' AND :held AND :verdict = 'retry'
                              THEN :now + :retry_in ELSE next_attempt_at END
 WHERE id = :id
RETURNING attempts
"""
_HELD = "SELECT 1 FROM leases WHERE name = ? AND holder = ? AND expires_at > ?"


def _when(value: float | None) -> Any:
    return None if value is None else moment(value)


def _endpoint(row: tuple[Any, ...]) -> Endpoint:
    return Endpoint(
        id=row[0],
        url=row[1],
        secret=row[2],
        events=tuple(json.loads(row[3])),
        source=row[4],
        description=row[5],
        created_at=moment(row[6]),
    )


def _delivery(row: tuple[Any, ...]) -> Delivery:
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
        recorded_at=moment(row[9]),
        body=bytes(row[10]),
        state=state,
        attempts=row[12],
        created_at=moment(row[13]),
        next_attempt_at=moment(row[14]) if state == "pending" else None,
        last_attempt_at=_when(row[15]),
        last_status=row[16],
        last_error=row[17],
        delivered_at=_when(row[18]),
    )


class SqliteWebhookStore:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    async def save_endpoint(self, endpoint: Endpoint) -> Endpoint:
        e = endpoint

        def save(db: sqlite3.Connection) -> Endpoint:
            row = db.execute(
                "INSERT INTO webhook_endpoints (id, url, secret, events, source, description,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET url = excluded.url, secret = excluded.secret,"
                " events = excluded.events, source = excluded.source,"
                f" description = excluded.description RETURNING {_ENDPOINT}",
                (e.id, e.url, e.secret, json.dumps(e.events), e.source, e.description, time.time()),
            ).fetchone()
            return _endpoint(row)

        return await self.db.write(save)

    async def endpoints(self) -> list[Endpoint]:
        rows = await self.db.run(
            lambda db: db.execute(
                f"SELECT {_ENDPOINT} FROM webhook_endpoints ORDER BY created_at, id"
            ).fetchall()
        )
        return [_endpoint(r) for r in rows]

    async def endpoint(self, endpoint_id: str) -> Endpoint | None:
        row = await self.db.run(
            lambda db: db.execute(
                f"SELECT {_ENDPOINT} FROM webhook_endpoints WHERE id = ?", (endpoint_id,)
            ).fetchone()
        )
        return None if row is None else _endpoint(row)

    async def remove_endpoint(self, endpoint_id: str) -> bool:
        def remove(db: sqlite3.Connection) -> bool:
            gone = db.execute("DELETE FROM webhook_endpoints WHERE id = ?", (endpoint_id,))
            db.execute(
                "UPDATE webhook_deliveries SET state = 'cancelled'"
                " WHERE endpoint_id = ? AND state = 'pending'",
                (endpoint_id,),
            )
            return gone.rowcount > 0

        return await self.db.write(remove)

    async def checkpoint(self, name: str) -> Checkpoint:
        row = await self.db.run(
            lambda db: db.execute(
                "SELECT tx_id, position FROM feed_checkpoints WHERE name = ?", (name,)
            ).fetchone()
        )
        return START if row is None else (row[0], row[1])

    async def enqueue(
        self, name: str, holder: str, after: Checkpoint, deliveries: Sequence[NewDelivery]
    ) -> bool:
        rows = [
            (
                d.id,
                d.endpoint_id,
                d.url,
                d.type,
                d.game_id,
                d.version,
                d.tx_id,
                d.position,
                d.recorded_at.timestamp(),
                d.body,
            )
            for d in deliveries
        ]

        def enqueue(db: sqlite3.Connection) -> bool:
            now = time.time()
            held = db.execute(
                "SELECT 1 FROM leases WHERE name = ? AND holder = ? AND expires_at > ?",
                (name, holder, now),
            ).fetchone()
            if held is None:
                return False
            db.executemany(
                "INSERT INTO webhook_deliveries (id, endpoint_id, url, type, game_id, version,"
                " tx_id, position, recorded_at, body, created_at, next_attempt_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                [(*row, now, now) for row in rows],
            )
            db.execute(
                "INSERT INTO feed_checkpoints (name, tx_id, position, updated_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET tx_id = excluded.tx_id,"
                " position = excluded.position, updated_at = excluded.updated_at",
                (name, after[0], after[1], now),
            )
            return True

        return await self.db.write(enqueue)

    async def due(self, limit: int = 100) -> Due:
        if await self.db.run(lambda db: db.execute(_ORPHANED).fetchone()) is not None:
            await self.db.write(lambda db: db.execute(_CANCEL_ORPHANED))
        rows = await self.db.run(lambda db: db.execute(_DUE, (time.time(), limit)).fetchall())
        ready = [_delivery(r) for r in rows if r[19] <= 0]
        later = [float(r[19]) for r in rows if r[19] > 0]
        wait = later[0] if later else (0.0 if len(rows) == limit else None)
        return Due(ready, wait)

    async def claim(
        self, name: str, holder: str, delivery_id: str, attempts: int, hold: float
    ) -> bool:
        def claim(db: sqlite3.Connection) -> bool:
            taken = db.execute(
                _CLAIM,
                {
                    "id": delivery_id,
                    "attempts": attempts,
                    "name": name,
                    "holder": holder,
                    "now": time.time(),
                    "hold": float(hold),
                },
            ).fetchone()
            return taken is not None

        return await self.db.write(claim)

    async def record(self, name: str, holder: str, delivery_id: str, tried: Tried) -> int:
        t = tried

        def record(db: sqlite3.Connection) -> int:
            now = time.time()
            held = db.execute(_HELD, (name, holder, now)).fetchone() is not None
            row = db.execute(
                _RECORD,
                {
                    "held": held,
                    "id": delivery_id,
                    "at": t.at.timestamp(),
                    "status": t.status,
                    "error": t.error,
                    "verdict": t.verdict,
                    "now": now,
                    "retry_in": float(t.retry_in),
                },
            ).fetchone()
            if row is None:
                raise KeyError(delivery_id)
            db.execute(
                "INSERT INTO webhook_attempts (delivery_id, number, at, status, error, seconds)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (delivery_id, row[0], t.at.timestamp(), t.status, t.error, float(t.seconds)),
            )
            return int(row[0])

        return await self.db.write(record)

    async def redeliver(self, delivery_id: str) -> bool:
        def redeliver(db: sqlite3.Connection) -> bool:
            found = db.execute(
                "UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = ?"
                f" WHERE id = ? AND state = 'failed' AND {_LIVE}",
                (time.time(), delivery_id),
            )
            return found.rowcount > 0

        return await self.db.write(redeliver)

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
            ("endpoint_id = ?", endpoint_id),
            ("state = ?", state),
            ("game_id = ?", game_id),
            ("seq < ?", before),
        ):
            if value is not None:
                where.append(column)
                args.append(value)
        sql = (
            f"SELECT {_DELIVERY} FROM webhook_deliveries"
            f"{' WHERE ' + ' AND '.join(where) if where else ''} ORDER BY seq DESC LIMIT ?"
        )
        rows = await self.db.run(lambda db: db.execute(sql, (*args, limit)).fetchall())
        return [_delivery(r) for r in rows]

    async def delivery(self, delivery_id: str) -> Delivery | None:
        row = await self.db.run(
            lambda db: db.execute(
                f"SELECT {_DELIVERY} FROM webhook_deliveries WHERE id = ?", (delivery_id,)
            ).fetchone()
        )
        return None if row is None else _delivery(row)

    async def attempts(self, delivery_id: str) -> list[Attempt]:
        rows = await self.db.run(
            lambda db: db.execute(
                "SELECT number, at, status, error, seconds FROM webhook_attempts"
                " WHERE delivery_id = ? ORDER BY number",
                (delivery_id,),
            ).fetchall()
        )
        return [
            Attempt(number=r[0], at=moment(r[1]), status=r[2], error=r[3], seconds=r[4])
            for r in rows
        ]

    async def backlog(self) -> Backlog:
        row = await self.db.run(
            lambda db: db.execute(
                "SELECT count(*), min(recorded_at) FROM webhook_deliveries WHERE state = 'pending'"
            ).fetchone()
        )
        return Backlog(int(row[0]), _when(row[1]))
