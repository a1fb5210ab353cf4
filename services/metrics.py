"""Prometheus metrics: what the SRE on call looks at first. One registry per app, so two
apps in one process (tests, benchmarks) never mix their counts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

# prometheus_client leaves this one untyped.
_disable_created_metrics: Callable[[], None] = prometheus_client.disable_created_metrics
_disable_created_metrics()

__all__ = ["CONTENT_TYPE_LATEST", "EXPOSITION", "Children", "Metrics"]

# The media type /metrics gives to its Response. Litestar adds `; charset=utf-8` to every
# text/ type itself: given prometheus_client's whole header, which has its charset, the
# answer named the charset twice, a header Go's mime parser (Prometheus 3's scraper among
# its users) refuses. Without it, the header on the wire is CONTENT_TYPE_LATEST exactly.
EXPOSITION = CONTENT_TYPE_LATEST.replace("; charset=utf-8", "")


class Children:
    """A labelled metric's children, each looked up in prometheus_client once: its
    `labels()` checks and locks on every call, which the hot path need not pay."""

    def __init__(self, metric: Any) -> None:
        self.metric = metric
        self._kids: dict[tuple[str, ...], Any] = {}

    def __call__(self, *values: str) -> Any:
        kid = self._kids.get(values)
        if kid is None:
            kid = self._kids[values] = self.metric.labels(*values)
        return kid


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.commands = Counter(
            "bura_commands",
            "Player commands by type and outcome (ok, duplicate, the 409 "
            "rule code, unavailable, error)",
            ["type", "outcome"],
            registry=r,
        )
        self.command_seconds = Histogram(
            "bura_command_seconds",
            "Time to decide and append one command",
            ["type"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
            registry=r,
        )
        self.conflicts = Counter(
            "bura_append_conflicts", "Appends that lost a version race", registry=r
        )
        self.retries = Counter(
            "bura_command_retries",
            "Commands decided again after a conflict or stale cache",
            registry=r,
        )
        self.penalties = Counter(
            "bura_penalties", "Penalties and false declarations by rule", ["rule"], registry=r
        )
        self.games_created = Counter("bura_games_created", "Games created", registry=r)
        self.deals_ended = Counter(
            "bura_deals_ended", "Deals ended by result reason", ["reason"], registry=r
        )
        self.timeouts = Counter(
            "bura_timeouts",
            "Timeouts appended by this replica's timers, by clock (turn, abandon) and verdict",
            ["clock", "verdict"],
            registry=r,
        )
        self.timers = Gauge("bura_timers", "Games this replica keeps a clock timer for", registry=r)
        self.open_streams = Gauge("bura_sse_streams", "Open SSE streams", registry=r)
        self.projector_lag = Gauge(
            "bura_projector_lag_versions",
            "How many versions the newest hint was ahead of this replica's live view",
            registry=r,
        )
        self.store_errors = Counter(
            "bura_store_errors",
            "Event store calls that failed to reach the database or lost their answer: each "
            "one that became a 503, whatever the request (a command, a token's lookup, a read)",
            registry=r,
        )
        self.redis_errors = Gauge(
            "bura_redis_errors",
            "Redis calls that failed since start (publish, pub/sub, presence)",
            registry=r,
        )
        self.record_rows = Gauge(
            "bura_record_rows",
            "Event rows of replays, audits and exports read since start, by where they came"
            " from, when BURA_READ_DATABASE_URL names a standby (standby: its rows; primary:"
            " the top-up of what the standby lacked, or the whole read when it failed)",
            ["source"],
            registry=r,
        )
        self.standby_errors = Gauge(
            "bura_standby_errors",
            "Reads of the record the standby could not serve since start (the primary did)",
            registry=r,
        )
        self.append_batches = Gauge(
            "bura_append_batches",
            "Batches of appends sent together since start (group commit, BURA_APPEND_LANES)",
            registry=r,
        )
        self.appends_batched = Gauge(
            "bura_appends_batched",
            "Appends sent in those batches since start (over bura_append_batches: the mean batch)",
            registry=r,
        )
        self.webhook_queued = Counter(
            "bura_webhook_queued",
            "Webhook deliveries queued (one per event and endpoint)",
            registry=r,
        )
        self.webhook_deliveries = Counter(
            "bura_webhook_deliveries",
            "Webhook attempts by endpoint and outcome (delivered, retry: failed and to be "
            "tried again, failed: given up)",
            ["endpoint", "outcome"],
            registry=r,
        )
        self.webhook_pending = Gauge(
            "bura_webhook_pending", "Webhook deliveries not yet delivered (the backlog)", registry=r
        )
        self.webhook_oldest = Gauge(
            "bura_webhook_oldest_pending_seconds",
            "Age of the event behind the oldest undelivered webhook (0 with no backlog)",
            registry=r,
        )
        self.webhook_lease = Gauge(
            "bura_webhook_lease_held",
            "1 while this replica holds the lease and delivers the webhooks",
            registry=r,
        )
        self.webhook_errors = Counter(
            "bura_webhook_dispatcher_errors",
            "Rounds of the webhook dispatcher that failed (the store unreachable, a bug): "
            "while they go on, nothing new is queued",
            registry=r,
        )
        self.feed_streams = Gauge(
            "bura_feed_streams", "Open operator feeds (GET /events)", registry=r
        )
        self.rate_limited = Counter(
            "bura_rate_limited",
            "Requests refused with 429, by class (commands, create, reads) and key",
            ["class", "key"],
            registry=r,
        )
        self.rate_errors = Counter(
            "bura_rate_counter_errors",
            "Requests let through because the rate counters could not be reached",
            registry=r,
        )
        self.hint_waits = Counter(
            "bura_hint_waits",
            "Commands that beat the hint of the version their seat saw and waited for it: "
            "heard (judged on the copy it brought) or missed (read from the store instead; "
            "many mean the hints are slow)",
            ["outcome"],
            registry=r,
        )
        self.http = Histogram(
            "bura_http_request_seconds",
            "HTTP requests by route and status",
            ["method", "route", "status"],
            registry=r,
        )

        self.command = Children(self.commands)  # (type, outcome)
        self.command_time = Children(self.command_seconds)  # (type,)
        self.hint_wait = Children(self.hint_waits)  # (outcome,)

    def render(self) -> bytes:
        return generate_latest(self.registry)
