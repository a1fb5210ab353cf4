"""Every setting, read from the environment in one place. A bad value stops start-up with
a message that names the variable."""

from __future__ import annotations

import math
import os
import re
import secrets
from collections.abc import Mapping

import msgspec


class ConfigError(ValueError):
    pass


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    host: str = "127.0.0.1"
    port: int = 8000
    database_url: str | None = None  # PostgreSQL; None: the embedded SQLite file
    # A hot standby of database_url for the record's long reads (replays, audits, exports)
    read_database_url: str | None = None
    sqlite_path: str = "var/bura.sqlite3"
    redis_url: str | None = None  # None: the in-process bus
    operator_key: str = ""
    operator_key_generated: bool = False
    log_level: str = "info"
    log_format: str = "json"  # json | text
    max_body_bytes: int = 65_536
    command_retries: int = 8
    # Appends under way at once per replica; those that arrive meanwhile wait and go to
    # PostgreSQL together, one INSERT and one commit (infra/postgres/commits.py).
    append_lanes: int = 1
    cache_games: int = 4096
    shutdown_grace_seconds: float = 20.0
    sse_keepalive_seconds: float = 15.0
    feed_poll_seconds: float = 2.0
    ready_requires_bus: bool = True
    # `bura serve` applies the pending SQL migrations itself (false: it refuses to start
    # with a schema behind, for deployments whose migration Job runs ahead of the rollout)
    migrate_on_start: bool = True
    request_deadline_seconds: float = 5.0
    max_header_bytes: int = 16_384
    max_headers: int = 100
    read_timeout_seconds: float = 10.0
    # Above what clients' pools and load balancers keep an idle connection for (httpx 5 s,
    # aiohttp 15 s, cloud balancers 60 s), so the client or balancer lets go first: a
    # request sent onto a connection the server is closing is reset, and lost to its sender.
    idle_timeout_seconds: float = 75.0
    # Data sent on a connection and left unacknowledged this long drops it (Linux's
    # TCP_USER_TIMEOUT): a peer that vanished without closing (a phone off the network, a
    # laptop shut) is found within a stream's keep-alive plus this, not after the kernel's
    # 15 minutes of retransmissions, so its seat shows away and abandonment is judged.
    peer_timeout_seconds: float = 30.0
    webhook_url: str | None = None  # an endpoint named by the settings (id "config")
    webhook_secret: str | None = None
    webhook_events: str = ""  # comma-separated webhook types; empty: all of them
    webhook_delivery: bool = True  # this replica may hold the dispatcher's lease
    webhook_timeout_seconds: float = 10.0
    webhook_retry_seconds: float = 1.0
    webhook_retry_max_seconds: float = 3600.0
    webhook_max_attempts: int = 30
    webhook_lease_seconds: float = 15.0
    redis_prefix: str = "bura:"  # every Redis name: the hints' channel, presence, tickets, rates
    cors_origins: str = ""  # comma-separated origins allowed to call from a browser
    stream_ticket_seconds: int = 30
    rate_limits: bool = True
    rate_window_seconds: float = 10.0
    rate_commands_per_token: int = 100
    rate_commands_per_address: int = 1000
    rate_reads_per_token: int = 600
    rate_reads_per_address: int = 6000
    rate_create_per_token: int = 100
    rate_create_per_address: int = 100

    @property
    def allowed_origins(self) -> list[str]:
        """As a browser writes its Origin: scheme and host in lower case, no final slash, and
        no port where it is the scheme's own (`https://cards.example:443` is sent as
        `https://cards.example`, and was never matched) or with leading zeros."""
        return [_as_sent(o) for o in self.cors_origins.split(",") if o.strip()]


# name -> (field, help): every variable, each of which the README's settings table names
# (tests/services/test_config.py checks that it does).
VARIABLES: dict[str, tuple[str, str]] = {
    "BURA_HOST": ("host", "address to listen on"),
    "BURA_PORT": ("port", "port to listen on"),
    "BURA_DATABASE_URL": ("database_url", "PostgreSQL DSN; unset: embedded SQLite"),
    "BURA_READ_DATABASE_URL": (
        "read_database_url",
        "a hot standby of BURA_DATABASE_URL: replays, histories, audits, verifications, "
        "bundles and exports read the record there, topped up from the primary (never "
        "stale); unset: the primary serves them",
    ),
    "BURA_SQLITE_PATH": ("sqlite_path", "SQLite file of the embedded default"),
    "BURA_REDIS_URL": ("redis_url", "Redis URL; unset: in-process bus"),
    "BURA_OPERATOR_KEY": ("operator_key", "operator/arbiter key; generated when unset"),
    "BURA_LOG_LEVEL": ("log_level", "debug | info | warning | error"),
    "BURA_LOG_FORMAT": ("log_format", "json | text"),
    "BURA_MAX_BODY_BYTES": ("max_body_bytes", "largest request body accepted (413 above)"),
    "BURA_COMMAND_RETRIES": ("command_retries", "re-decides after a version conflict"),
    "BURA_APPEND_LANES": (
        "append_lanes",
        "appends under way at once (PostgreSQL); more wait and go together, one INSERT "
        "and one commit (group commit); 0: each alone, at once",
    ),
    "BURA_CACHE_GAMES": ("cache_games", "games kept in the in-process state cache"),
    "BURA_SHUTDOWN_GRACE_SECONDS": ("shutdown_grace_seconds", "time to finish on SIGTERM"),
    "BURA_SSE_KEEPALIVE_SECONDS": ("sse_keepalive_seconds", "keep-alive comment interval"),
    "BURA_FEED_POLL_SECONDS": (
        "feed_poll_seconds",
        "live views, the feed and the webhooks re-read the store this often without a hint",
    ),
    "BURA_READY_REQUIRES_BUS": (
        "ready_requires_bus",
        "readiness fails while Redis is unreachable (false: report it, stay ready)",
    ),
    "BURA_MIGRATE_ON_START": (
        "migrate_on_start",
        "`bura serve` applies pending PostgreSQL migrations (false: refuses to start behind)",
    ),
    "BURA_REQUEST_DEADLINE_SECONDS": (
        "request_deadline_seconds",
        "every request's store work, waiting for a connection included, ends within this",
    ),
    "BURA_MAX_HEADER_BYTES": (
        "max_header_bytes",
        "largest request line and headers accepted (431 above)",
    ),
    "BURA_MAX_HEADERS": ("max_headers", "most request headers accepted (431 above)"),
    "BURA_READ_TIMEOUT_SECONDS": (
        "read_timeout_seconds",
        "a request must arrive whole within this, else 408 and the connection is closed",
    ),
    "BURA_IDLE_TIMEOUT_SECONDS": (
        "idle_timeout_seconds",
        "an idle keep-alive connection is closed after this",
    ),
    "BURA_PEER_TIMEOUT_SECONDS": (
        "peer_timeout_seconds",
        "a connection whose peer leaves data unacknowledged this long is dropped (Linux)",
    ),
    "BURA_WEBHOOK_URL": ("webhook_url", "a webhook endpoint of the settings' own (id config)"),
    "BURA_WEBHOOK_SECRET": (
        "webhook_secret",
        "its signing secret: 16 to 256 printable ASCII characters, no spaces",
    ),
    "BURA_WEBHOOK_EVENTS": ("webhook_events", "its webhook types, comma-separated; empty: all"),
    "BURA_WEBHOOK_DELIVERY": (
        "webhook_delivery",
        "this replica may deliver webhooks (false: it never takes the lease)",
    ),
    "BURA_WEBHOOK_TIMEOUT_SECONDS": ("webhook_timeout_seconds", "time a receiver has to answer"),
    "BURA_WEBHOOK_RETRY_SECONDS": ("webhook_retry_seconds", "the first retry's delay; doubles"),
    "BURA_WEBHOOK_RETRY_MAX_SECONDS": ("webhook_retry_max_seconds", "the longest retry delay"),
    "BURA_WEBHOOK_MAX_ATTEMPTS": ("webhook_max_attempts", "attempts before a delivery fails"),
    "BURA_WEBHOOK_LEASE_SECONDS": (
        "webhook_lease_seconds",
        "the dispatcher's lease: a dead holder is replaced this long after",
    ),
    "BURA_REDIS_PREFIX": (
        "redis_prefix",
        "prefix of every Redis name: the hints' channel, presence, tickets and rate counters",
    ),
    "BURA_CORS_ORIGINS": (
        "cors_origins",
        "comma-separated origins a browser may call from (`*`: any); unset: no CORS",
    ),
    "BURA_STREAM_TICKET_SECONDS": ("stream_ticket_seconds", "how long a stream ticket is valid"),
    "BURA_RATE_LIMITS": ("rate_limits", "rate limits on (false: none at all)"),
    "BURA_RATE_WINDOW_SECONDS": ("rate_window_seconds", "the window every rate limit counts in"),
    "BURA_RATE_COMMANDS_PER_TOKEN": ("rate_commands_per_token", "commands per token a window"),
    "BURA_RATE_COMMANDS_PER_ADDRESS": (
        "rate_commands_per_address",
        "commands per client address a window",
    ),
    "BURA_RATE_READS_PER_TOKEN": ("rate_reads_per_token", "reads per token a window"),
    "BURA_RATE_READS_PER_ADDRESS": ("rate_reads_per_address", "reads per client address a window"),
    "BURA_RATE_CREATE_PER_TOKEN": ("rate_create_per_token", "games created per token a window"),
    "BURA_RATE_CREATE_PER_ADDRESS": (
        "rate_create_per_address",
        "games created per client address a window",
    ),
}

_BOOLS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
_CHOICES = {
    "log_level": {"debug", "info", "warning", "error"},
    "log_format": {"json", "text"},
}
DAY, HOUR = 86_400, 3_600
# field -> (the most seconds it may be, whole seconds only). Every one is a finite number
# above 0: none of them means anything at 0 (a poll or a keep-alive at 0 spins), and `inf`
# or `nan` (`1e309` reads as inf) would only fail later, in a task or a timer.
_SECONDS: dict[str, tuple[int, bool]] = {
    "shutdown_grace_seconds": (DAY, True),  # uvicorn counts it in whole seconds
    "sse_keepalive_seconds": (HOUR, False),  # rarer is no keep-alive: proxies cut the stream
    "feed_poll_seconds": (HOUR, False),  # rarer leaves live views and cached games stale
    "request_deadline_seconds": (DAY, False),
    "read_timeout_seconds": (DAY, False),
    "idle_timeout_seconds": (DAY, True),  # uvicorn counts it in whole seconds
    "peer_timeout_seconds": (HOUR, False),  # the kernel counts it in milliseconds
    "webhook_timeout_seconds": (DAY, False),
    "webhook_retry_seconds": (DAY, False),
    "webhook_retry_max_seconds": (DAY, False),
    "webhook_lease_seconds": (HOUR, False),  # a dead holder stops the webhooks this long
    "stream_ticket_seconds": (DAY, True),
    "rate_window_seconds": (DAY, False),
}
# An origin as a browser sends it: scheme://host[:port], no path, query or fragment (a final
# slash is let pass and dropped)
_ORIGIN = re.compile(
    r"(?P<scheme>https?)://"
    r"(?P<host>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])"  # a name, IPv4 or [IPv6]
    r"(?::(?P<port>[0-9]{1,5}))?/?",
    re.IGNORECASE,
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _as_sent(origin: str) -> str:
    origin = origin.strip().lower()
    shape = _ORIGIN.fullmatch(origin)
    if shape is None:  # "*": settings refuse anything else that is no origin
        return origin
    scheme, host, port = shape["scheme"], shape["host"], shape["port"]
    if port is None or int(port) == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{int(port)}"


# What an Authorization header carries and gives back whole: printable ASCII, and spaces
# only inside (a header's value loses those at its ends)
_OPERATOR_KEY = re.compile(r"[!-~](?:[ !-~]*[!-~])?")
# Set but empty, these would silently mean their default: a key generated per process (in
# Kubernetes an empty Secret value gives each replica a different key), port 8000.
_NEVER_EMPTY = {
    "BURA_OPERATOR_KEY": "unset it to have one generated, or give the key",
    "BURA_PORT": "unset it for 8000, or give the port",
    # an image that listens on 0.0.0.0 would listen on 127.0.0.1: unreachable in its pod
    "BURA_HOST": "unset it for 127.0.0.1, or give the address (0.0.0.0 for every interface)",
    # an empty Secret value would otherwise run each replica on a store or bus of its own
    "BURA_DATABASE_URL": "unset it for the embedded SQLite store, or give the URL",
    "BURA_READ_DATABASE_URL": "unset it to read from the primary, or give the URL",
    "BURA_REDIS_URL": "unset it for the in-process bus, or give the URL",
    # an empty value would put the store in var/bura.sqlite3 of whatever the working
    # directory is, where a path was meant
    "BURA_SQLITE_PATH": "unset it for var/bura.sqlite3, or give the file",
    # an empty ConfigMap value would put the deployment on the shared default's channel
    "BURA_REDIS_PREFIX": "unset it for 'bura:', or give the prefix",
}


def load(env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    raw: dict[str, object] = {}
    defaults = Settings()
    for name, fix in _NEVER_EMPTY.items():
        if env.get(name) == "":
            raise ConfigError(f"{name} is set but empty: {fix}")
    for name, (field, _) in VARIABLES.items():
        value = env.get(name)
        if value is None or value == "":
            continue
        default = getattr(defaults, field)
        if field == "operator_key_generated":
            raise ConfigError(f"{name} cannot be set")
        if isinstance(default, bool):
            if value.lower() not in _BOOLS:
                raise ConfigError(f"{name}={value!r}: write true or false")
            raw[field] = _BOOLS[value.lower()]
            continue
        try:
            if isinstance(default, int) and field in _SECONDS:
                # read as a number: `1.5` is refused by _check_seconds as not whole seconds,
                # not here as no number
                raw[field] = float(value)
            elif isinstance(default, int):
                raw[field] = int(value)
            elif isinstance(default, float):
                raw[field] = float(value)
            else:
                raw[field] = value
        except ValueError:
            whole = isinstance(default, int) and field not in _SECONDS
            what = "a whole number" if whole else "a number"
            if field in _SECONDS:
                what += " of whole seconds" if _SECONDS[field][1] else " of seconds"
            raise ConfigError(f"{name}={value!r} is not {what}") from None
        if field in _CHOICES and value not in _CHOICES[field]:
            raise ConfigError(f"{name}={value!r}: choose one of {sorted(_CHOICES[field])}")
    _check_seconds(raw, defaults, env)
    port = raw.get("port", defaults.port)
    if not isinstance(port, int) or not 0 < port < 65536:
        raise ConfigError(f"BURA_PORT={port!r} is not a port number (1-65535)")
    for numeric in (
        "max_body_bytes",
        "command_retries",
        "cache_games",
        "max_header_bytes",
        "webhook_max_attempts",
        "stream_ticket_seconds",
    ):
        count = raw.get(numeric, getattr(defaults, numeric))
        if not isinstance(count, int) or count < 1:
            raise ConfigError(f"BURA_{numeric.upper()}={count!r} must be a positive number")
    for limit in [f for _, (f, _) in VARIABLES.items() if f.startswith("rate_") and "_per_" in f]:
        count = raw.get(limit, getattr(defaults, limit))
        if not isinstance(count, int) or count < 0:
            raise ConfigError(f"BURA_{limit.upper()}={count!r}: a count, 0 for no limit")
    for origin in str(raw.get("cors_origins", "")).split(","):
        origin = origin.strip()
        if not origin or origin == "*":
            continue
        shape = _ORIGIN.fullmatch(origin)
        if shape is None or not 0 < int(shape["port"] or 80) < 65536:
            raise ConfigError(
                f"BURA_CORS_ORIGINS: {origin!r} is no origin (scheme://host[:port], no path,"
                " query or fragment; or *)"
            )
    lanes = raw.get("append_lanes", defaults.append_lanes)
    if not isinstance(lanes, int) or lanes < 0:
        raise ConfigError(f"BURA_APPEND_LANES={lanes!r}: a count, 0 for every append alone")
    count = raw.get("max_headers", defaults.max_headers)
    if not isinstance(count, int) or count < 1:
        raise ConfigError(f"BURA_MAX_HEADERS={count!r} must be a positive number")
    for database in ("database_url", "read_database_url"):
        url = raw.get(database)
        if isinstance(url, str) and not url.startswith(("postgres://", "postgresql://")):
            raise ConfigError(
                f"BURA_{database.upper()} must be a postgresql:// URL, got {unsecret(url)!r}"
            )
    if "read_database_url" in raw and "database_url" not in raw:
        raise ConfigError("BURA_READ_DATABASE_URL is a standby of BURA_DATABASE_URL: set both")
    redis = raw.get("redis_url")
    if isinstance(redis, str) and not redis.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"BURA_REDIS_URL must be a redis:// URL, got {unsecret(redis)!r}")
    if isinstance(redis, str):
        _check_redis_url(redis)
    _check_webhooks(raw, defaults)
    key = raw.get("operator_key")
    if isinstance(key, str) and not _OPERATOR_KEY.fullmatch(key):
        raise ConfigError(
            "BURA_OPERATOR_KEY must be printable ASCII, no space at either end (what a"
            " Bearer header carries whole); unset it to have one generated"
        )
    if not raw.get("operator_key"):
        raw["operator_key"] = secrets.token_urlsafe(24)
        raw["operator_key_generated"] = True
    return msgspec.convert(raw, Settings)


def _check_seconds(raw: dict[str, object], defaults: Settings, env: Mapping[str, str]) -> None:
    for field, (most, whole) in _SECONDS.items():
        name = f"BURA_{field.upper()}"
        seconds = raw.get(field, getattr(defaults, field))
        given = env.get(name) or seconds
        if not isinstance(seconds, int | float) or not math.isfinite(seconds):
            raise ConfigError(f"{name}={given!r} must be a finite number of seconds")
        if not 0 < seconds <= most:
            raise ConfigError(f"{name}={given!r} must be more than 0 seconds, at most {most}")
        if whole and seconds != int(seconds):
            raise ConfigError(f"{name}={given!r} must be whole seconds")
        if isinstance(getattr(defaults, field), int):
            raw[field] = int(seconds)  # read as a number above


# A password given as a parameter: in a URL's query (`?password=...`) or in libpq's
# keyword/value form (`host=db password=...`, quoted or not)
_PASSWORD = re.compile(r"(?i)\b((?:ssl)?pass(?:word|wd)?)(\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&;]*)")


def unsecret(url: str) -> str:
    """A URL as a refusal may print it: never its user and password (a log store keeps
    what start-up says), `scheme://...@host...` instead, and `password=...` wherever a
    password is given as a parameter."""
    if "@" in url:
        scheme, found, _ = url.partition("://")
        url = f"{scheme if found else ''}://...@{url.rsplit('@', 1)[1]}"
    return _PASSWORD.sub(r"\1\2...", url)


def _check_redis_url(url: str) -> None:
    """The URL read as the server will read it: a port of 0 to 65535 and a database
    number in digits, or a one-line refusal now rather than a traceback at start-up."""
    from infra.redis.wire import Where

    try:
        where = Where(url)
    except ValueError as error:
        raise ConfigError(f"BURA_REDIS_URL cannot be read ({error}): {unsecret(url)}") from None
    if where.db < 0:
        raise ConfigError(f"BURA_REDIS_URL names database {where.db}: 0 or more")


def _check_webhooks(raw: dict[str, object], defaults: Settings) -> None:
    """The settings' own endpoint is held to what POST /webhooks takes (RegisterWebhook)."""
    from services.app.notices import WEBHOOK_TYPES

    url, secret = raw.get("webhook_url"), raw.get("webhook_secret")
    if isinstance(secret, str) and not _registers(secret=secret):
        raise ConfigError(
            "BURA_WEBHOOK_SECRET must be 16 to 256 printable ASCII characters, no spaces"
            " (as POST /webhooks takes a secret)"
        )
    if isinstance(url, str):
        if not _registers(url=url):
            raise ConfigError(
                "BURA_WEBHOOK_URL must be an http:// or https:// URL with a valid host (and"
                " port, if any), in printable ASCII (as POST /webhooks takes one),"
                f" got {unsecret(url)!r}"
            )
        if not isinstance(secret, str) or len(secret) < 16:
            raise ConfigError("BURA_WEBHOOK_URL needs BURA_WEBHOOK_SECRET (16 characters or more)")
    elif isinstance(secret, str):
        # a secret for no endpoint: most likely the URL's variable is misspelt or unset
        raise ConfigError(
            "BURA_WEBHOOK_SECRET is set without BURA_WEBHOOK_URL: set both, or neither"
        )
    events = raw.get("webhook_events", "")
    assert isinstance(events, str)
    named = [e.strip() for e in events.split(",") if e.strip()]
    if events.strip() and not named:
        # "," would otherwise mean every type, as unset does
        raise ConfigError(
            f"BURA_WEBHOOK_EVENTS={events!r} names no webhook type; unset it for all of"
            f" them, or choose among {', '.join(WEBHOOK_TYPES)}"
        )
    unknown = set(named) - set(WEBHOOK_TYPES)
    if unknown or not _registers(events=named or list(WEBHOOK_TYPES)):
        raise ConfigError(
            f"BURA_WEBHOOK_EVENTS: no webhook type {', '.join(sorted(unknown))};"
            f" choose among {', '.join(WEBHOOK_TYPES)}"
        )
    # as POST /webhooks refuses a repeat (services/http/webhooks.py)
    repeated = sorted({e for e in named if named.count(e) > 1})
    if repeated:
        raise ConfigError(
            f"BURA_WEBHOOK_EVENTS: {', '.join(repeated)} given twice; name each webhook type once"
        )
    if events and not isinstance(url, str):
        # types chosen for no endpoint: most likely the URL's variable is misspelt or unset
        raise ConfigError(
            "BURA_WEBHOOK_EVENTS is set without BURA_WEBHOOK_URL: set both, or neither"
        )


def _registers(**fields: object) -> bool:
    """Whether POST /webhooks would take these fields (its RegisterWebhook, the patterns
    and the event types; a URL that passes stands in for one not given)."""
    from services.app.webhooks import RegisterWebhook

    try:
        msgspec.convert({"url": "https://config.invalid", **fields}, RegisterWebhook)
    except msgspec.ValidationError:
        return False
    return True
