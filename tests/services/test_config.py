"""Settings come from the environment only, and a bad one names itself."""

import os
import re
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx
import pytest

from harness.databases import fresh_database, run_async
from harness.processes import OPERATOR, ROOT, Service
from infra.postgres.migrate import migration_files
from services.config import VARIABLES, ConfigError, load


def test_defaults_run_the_embedded_service_with_a_generated_key():
    settings = load({})
    assert settings.database_url is None and settings.redis_url is None
    assert (settings.host, settings.port) == ("127.0.0.1", 8000)
    assert settings.operator_key_generated and len(settings.operator_key) >= 24


def test_every_variable_is_read():
    env = {
        "BURA_HOST": "0.0.0.0",
        "BURA_PORT": "9000",
        "BURA_DATABASE_URL": "postgresql://u@db/bura",
        "BURA_READ_DATABASE_URL": "postgresql://u@db-ro/bura",
        "BURA_SQLITE_PATH": "/tmp/x.sqlite3",
        "BURA_REDIS_URL": "redis://cache:6379/0",
        "BURA_OPERATOR_KEY": "k" * 32,
        "BURA_LOG_LEVEL": "debug",
        "BURA_LOG_FORMAT": "text",
        "BURA_MAX_BODY_BYTES": "1000",
        "BURA_COMMAND_RETRIES": "3",
        "BURA_CACHE_GAMES": "10",
        "BURA_APPEND_LANES": "3",
        "BURA_SHUTDOWN_GRACE_SECONDS": "5",
        "BURA_SSE_KEEPALIVE_SECONDS": "1.5",
        "BURA_FEED_POLL_SECONDS": "0.5",
        "BURA_READY_REQUIRES_BUS": "false",
        "BURA_MIGRATE_ON_START": "false",
        "BURA_REQUEST_DEADLINE_SECONDS": "2.5",
        "BURA_MAX_HEADER_BYTES": "4096",
        "BURA_MAX_HEADERS": "20",
        "BURA_READ_TIMEOUT_SECONDS": "3",
        "BURA_IDLE_TIMEOUT_SECONDS": "2",
        "BURA_PEER_TIMEOUT_SECONDS": "2.5",
        "BURA_WEBHOOK_URL": "https://platform.test/bura",
        "BURA_WEBHOOK_SECRET": "s" * 16,
        "BURA_WEBHOOK_EVENTS": "deal_ended, timeout",
        "BURA_WEBHOOK_DELIVERY": "false",
        "BURA_WEBHOOK_TIMEOUT_SECONDS": "3",
        "BURA_WEBHOOK_RETRY_SECONDS": "0.5",
        "BURA_WEBHOOK_RETRY_MAX_SECONDS": "60",
        "BURA_WEBHOOK_MAX_ATTEMPTS": "5",
        "BURA_WEBHOOK_LEASE_SECONDS": "4",
        "BURA_REDIS_PREFIX": "bura-blue:",
        "BURA_CORS_ORIGINS": "https://cards.example, http://localhost:5173/",
        "BURA_STREAM_TICKET_SECONDS": "5",
        "BURA_RATE_LIMITS": "true",
        "BURA_RATE_WINDOW_SECONDS": "60",
        "BURA_RATE_COMMANDS_PER_TOKEN": "30",
        "BURA_RATE_COMMANDS_PER_ADDRESS": "300",
        "BURA_RATE_READS_PER_TOKEN": "0",
        "BURA_RATE_READS_PER_ADDRESS": "900",
        "BURA_RATE_CREATE_PER_TOKEN": "7",
        "BURA_RATE_CREATE_PER_ADDRESS": "8",
    }
    assert set(env) == set(VARIABLES)
    settings = load(env)
    assert settings.port == 9000 and settings.redis_url == "redis://cache:6379/0"
    assert settings.operator_key == "k" * 32 and not settings.operator_key_generated
    assert settings.sse_keepalive_seconds == 1.5 and settings.feed_poll_seconds == 0.5
    assert settings.ready_requires_bus is False and settings.migrate_on_start is False
    assert (settings.request_deadline_seconds, settings.read_timeout_seconds) == (2.5, 3.0)
    assert (settings.max_header_bytes, settings.max_headers) == (4096, 20)
    assert settings.idle_timeout_seconds == 2.0 and settings.peer_timeout_seconds == 2.5
    assert settings.append_lanes == 3
    assert settings.webhook_url == "https://platform.test/bura"
    assert settings.webhook_events == "deal_ended, timeout" and not settings.webhook_delivery
    assert (settings.webhook_retry_seconds, settings.webhook_max_attempts) == (0.5, 5)
    assert settings.allowed_origins == ["https://cards.example", "http://localhost:5173"]
    assert settings.stream_ticket_seconds == 5 and settings.rate_window_seconds == 60.0
    assert (settings.rate_commands_per_token, settings.rate_reads_per_token) == (30, 0)
    assert settings.redis_prefix == "bura-blue:"
    assert settings.read_database_url == "postgresql://u@db-ro/bura"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("BURA_PORT", "eighty"),
        ("BURA_PORT", "70000"),
        ("BURA_DATABASE_URL", "mysql://x"),
        ("BURA_REDIS_URL", "http://x"),
        ("BURA_REDIS_URL", "redis://127.0.0.1:99999/0"),
        ("BURA_REDIS_URL", "redis://127.0.0.1:6379/abc"),
        ("BURA_REDIS_URL", "redis://127.0.0.1:port/0"),
        ("BURA_WEBHOOK_EVENTS", "timeout"),  # and no URL: a misspelt or unset variable
        ("BURA_READ_DATABASE_URL", "postgresql://u@db-ro/bura"),  # and no primary
        ("BURA_LOG_LEVEL", "loud"),
        ("BURA_LOG_FORMAT", "xml"),
        ("BURA_MAX_BODY_BYTES", "0"),
        ("BURA_COMMAND_RETRIES", "-1"),
        ("BURA_READY_REQUIRES_BUS", "maybe"),
        ("BURA_REQUEST_DEADLINE_SECONDS", "0"),
        ("BURA_REQUEST_DEADLINE_SECONDS", "soon"),
        ("BURA_MAX_HEADER_BYTES", "0"),
        ("BURA_MAX_HEADERS", "-3"),
        ("BURA_APPEND_LANES", "-1"),
        ("BURA_READ_TIMEOUT_SECONDS", "-1"),
        ("BURA_IDLE_TIMEOUT_SECONDS", "0"),
        ("BURA_WEBHOOK_URL", "ftp://platform.test"),
        ("BURA_WEBHOOK_URL", "https://platform.test"),  # and no secret
        ("BURA_WEBHOOK_EVENTS", "deal_ended,deal_won"),
        ("BURA_WEBHOOK_DELIVERY", "sometimes"),
        ("BURA_WEBHOOK_RETRY_SECONDS", "0"),
        ("BURA_WEBHOOK_LEASE_SECONDS", "-2"),
        ("BURA_WEBHOOK_MAX_ATTEMPTS", "0"),
        ("BURA_CORS_ORIGINS", "cards.example"),
        ("BURA_STREAM_TICKET_SECONDS", "0"),
        ("BURA_RATE_WINDOW_SECONDS", "0"),
        ("BURA_RATE_COMMANDS_PER_TOKEN", "-1"),
        ("BURA_RATE_READS_PER_ADDRESS", "many"),
        # every seconds setting: finite, above 0, not past its bound
        ("BURA_FEED_POLL_SECONDS", "0"),
        ("BURA_FEED_POLL_SECONDS", "-2"),
        ("BURA_FEED_POLL_SECONDS", "nan"),
        ("BURA_FEED_POLL_SECONDS", "3601"),
        ("BURA_SSE_KEEPALIVE_SECONDS", "0"),
        ("BURA_SSE_KEEPALIVE_SECONDS", "-1"),
        ("BURA_RATE_WINDOW_SECONDS", "inf"),
        ("BURA_RATE_WINDOW_SECONDS", "nan"),
        ("BURA_RATE_WINDOW_SECONDS", "1e309"),
        ("BURA_WEBHOOK_LEASE_SECONDS", "inf"),
        ("BURA_WEBHOOK_LEASE_SECONDS", "3601"),  # a dead holder would keep it for hours
        ("BURA_WEBHOOK_RETRY_SECONDS", "inf"),
        ("BURA_WEBHOOK_RETRY_MAX_SECONDS", "inf"),
        ("BURA_WEBHOOK_TIMEOUT_SECONDS", "-inf"),
        ("BURA_SHUTDOWN_GRACE_SECONDS", "NaN"),
        ("BURA_REQUEST_DEADLINE_SECONDS", "Infinity"),
        ("BURA_READ_TIMEOUT_SECONDS", "86401"),
        ("BURA_STREAM_TICKET_SECONDS", "86401"),
        ("BURA_IDLE_TIMEOUT_SECONDS", "1.5"),  # whole seconds
        ("BURA_PEER_TIMEOUT_SECONDS", "0"),
        ("BURA_PEER_TIMEOUT_SECONDS", "3601"),
        ("BURA_SHUTDOWN_GRACE_SECONDS", "0.9"),  # whole seconds: int() made it 0
        ("BURA_SHUTDOWN_GRACE_SECONDS", "20.5"),
        ("BURA_STREAM_TICKET_SECONDS", "1.5"),
        ("BURA_MIGRATE_ON_START", "sometimes"),
        # set but empty: no silent default (a key per process, port 8000, a store or a bus
        # of each replica's own)
        ("BURA_OPERATOR_KEY", ""),
        ("BURA_PORT", ""),
        ("BURA_DATABASE_URL", ""),
        ("BURA_READ_DATABASE_URL", ""),
        ("BURA_REDIS_URL", ""),
        ("BURA_SQLITE_PATH", ""),  # var/bura.sqlite3 of whatever directory it runs in
        # the settings' webhook, held to what POST /webhooks takes
        ("BURA_WEBHOOK_URL", "http://"),
        ("BURA_WEBHOOK_URL", "https://platform.test/bura\n"),
        ("BURA_WEBHOOK_EVENTS", "timeout,timeout"),
        ("BURA_WEBHOOK_EVENTS", "timeout, deal_ended ,timeout"),
        ("BURA_WEBHOOK_SECRET", "a secret with spaces in it"),
        ("BURA_WEBHOOK_SECRET", "секрет-секрет-секрет"),
        ("BURA_WEBHOOK_SECRET", "s" * 257),
        # an origin: scheme://host[:port], nothing after it
        ("BURA_CORS_ORIGINS", "https://a.example/path"),
        ("BURA_CORS_ORIGINS", "https://a.example?x=1"),
        ("BURA_CORS_ORIGINS", "https://a.example#top"),
        ("BURA_CORS_ORIGINS", "https://cards.example, https://"),
        ("BURA_CORS_ORIGINS", "https://a.example:99999"),
        ("BURA_CORS_ORIGINS", "https://user@a.example"),
        # a key no Bearer header could carry back whole
        ("BURA_OPERATOR_KEY", " "),
        ("BURA_OPERATOR_KEY", "\t"),
        ("BURA_OPERATOR_KEY", " opkey"),
        ("BURA_OPERATOR_KEY", "opkey\n"),
        ("BURA_OPERATOR_KEY", "ключ"),
        ("BURA_OPERATOR_KEY", "op\x00key"),
    ],
)
def test_a_bad_setting_stops_start_up_naming_it(name, value):
    with pytest.raises(ConfigError, match=name):
        load({name: value})


def test_a_redis_url_that_cannot_be_read_is_told_without_its_password():
    with pytest.raises(ConfigError) as refused:
        load({"BURA_REDIS_URL": "redis://user:hunter2@cache:99999/0"})
    assert "hunter2" not in str(refused.value) and "cache:99999/0" in str(refused.value)


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        (
            "BURA_DATABASE_URL",
            "postgresql+asyncpg://bura:hunter2@db/x",
            "postgresql+asyncpg://...@db/x",
        ),
        ("BURA_READ_DATABASE_URL", "pg://bura:hunter2@standby/x", "pg://...@standby/x"),
        ("BURA_REDIS_URL", "http://:hunter2@cache:6379/0", "http://...@cache:6379/0"),
        ("BURA_WEBHOOK_URL", "ftp://user:hunter2@hooks.test/in", "ftp://...@hooks.test/in"),
        # a password given as a parameter: libpq's keyword/value form, a URL's query
        (
            "BURA_DATABASE_URL",
            "host=127.0.0.1 user=postgres password=hunter2 dbname=x",
            "host=127.0.0.1 user=postgres password=... dbname=x",
        ),
        (
            "BURA_DATABASE_URL",
            "host=db password='hunter2 x' dbname=x",
            "host=db password=... dbname=x",
        ),
        (
            "BURA_READ_DATABASE_URL",
            "postgresq://db/x?user=bura&password=hunter2&sslmode=require",
            "postgresq://db/x?user=bura&password=...&sslmode=require",
        ),
        (
            "BURA_REDIS_URL",
            "redis://cache:abc/0?password=hunter2",
            "redis://cache:abc/0?password=...",
        ),
    ],
)
def test_a_url_refused_for_its_scheme_is_told_without_its_password(
    name: str, value: str, shown: str
) -> None:
    """What start-up says goes to the log store: the refusal names the URL's host, never
    the user and password it carries."""
    given = {name: value, "BURA_WEBHOOK_SECRET": "s" * 16}
    if name == "BURA_READ_DATABASE_URL":
        given["BURA_DATABASE_URL"] = "postgresql://bura@db/x"
    with pytest.raises(ConfigError) as refused:
        load(given)
    said = str(refused.value)
    assert "hunter2" not in said and "bura:" not in said and shown in said, said


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("BURA_OPERATOR_KEY", "opkey"),  # short keys are the test suites' own
        ("BURA_OPERATOR_KEY", "op key"),  # a space inside travels whole
        ("BURA_CORS_ORIGINS", "*"),
        ("BURA_CORS_ORIGINS", "http://[::1]:8080/, http://127.0.0.1:5173"),
        ("BURA_IDLE_TIMEOUT_SECONDS", "75.0"),
        ("BURA_FEED_POLL_SECONDS", "0.01"),
        ("BURA_SHUTDOWN_GRACE_SECONDS", "1"),
        ("BURA_SHUTDOWN_GRACE_SECONDS", "30.0"),
        ("BURA_STREAM_TICKET_SECONDS", "30.0"),
        ("BURA_WEBHOOK_LEASE_SECONDS", "3600"),
        ("BURA_RATE_WINDOW_SECONDS", "86400"),
        ("BURA_WEBHOOK_EVENTS", "timeout, deal_ended,"),
    ],
)
def test_a_good_setting_at_its_bounds_is_taken(name, value):
    # the events choose among what an endpoint receives: with one, or they are refused
    endpoint = {"BURA_WEBHOOK_URL": "https://platform.test/bura", "BURA_WEBHOOK_SECRET": "s" * 16}
    load({**(endpoint if name == "BURA_WEBHOOK_EVENTS" else {}), name: value})


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("BURA_SHUTDOWN_GRACE_SECONDS", "0.9", "BURA_SHUTDOWN_GRACE_SECONDS='0.9' must be whole"),
        ("BURA_STREAM_TICKET_SECONDS", "1.5", "BURA_STREAM_TICKET_SECONDS='1.5' must be whole"),
        ("BURA_STREAM_TICKET_SECONDS", "soon", "is not a number of whole seconds"),
        ("BURA_IDLE_TIMEOUT_SECONDS", "1.5", "BURA_IDLE_TIMEOUT_SECONDS='1.5' must be whole"),
        ("BURA_OPERATOR_KEY", "", "BURA_OPERATOR_KEY is set but empty"),
        ("BURA_PORT", "", "BURA_PORT is set but empty"),
        ("BURA_HOST", "", "BURA_HOST is set but empty"),
        ("BURA_REDIS_PREFIX", "", "BURA_REDIS_PREFIX is set but empty"),
        ("BURA_RATE_READS_PER_ADDRESS", "1.5", "='1.5' is not a whole number"),
    ],
)
def test_whole_seconds_and_empty_values_are_refused_as_what_they_are(name, value, said):
    with pytest.raises(ConfigError) as refused:
        load({name: value})
    assert said in str(refused.value)


def test_whole_seconds_keep_their_value():
    settings = load({"BURA_SHUTDOWN_GRACE_SECONDS": "1", "BURA_STREAM_TICKET_SECONDS": "30.0"})
    assert (settings.shutdown_grace_seconds, settings.stream_ticket_seconds) == (1, 30)
    assert load({}).migrate_on_start is True  # migrating at start stays the default


def test_an_origin_is_kept_as_a_browser_sends_it():
    settings = load({"BURA_CORS_ORIGINS": "HTTPS://Cards.Example/, *"})
    assert settings.allowed_origins == ["https://cards.example", "*"]


def test_a_bad_webhook_secret_is_not_shown_in_the_message():
    secret = "a secret with spaces in it"
    with pytest.raises(ConfigError, match="BURA_WEBHOOK_SECRET") as refused:
        load({"BURA_WEBHOOK_URL": "https://platform.test", "BURA_WEBHOOK_SECRET": secret})
    assert secret not in str(refused.value)


def test_a_grace_no_longer_than_the_deadline_is_warned_of_at_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A request in flight at SIGTERM may run to its deadline: a grace that ends first cuts
    it off (a 503, a command's outcome unknown), which `bura serve` says when it starts."""
    from services.http.server import warn_of_short_grace

    with caplog.at_level("WARNING", logger="bura"):
        assert not warn_of_short_grace(load({}))
        assert warn_of_short_grace(
            load({"BURA_SHUTDOWN_GRACE_SECONDS": "2", "BURA_REQUEST_DEADLINE_SECONDS": "5"})
        )
    (said,) = [r.getMessage() for r in caplog.records]
    assert "BURA_SHUTDOWN_GRACE_SECONDS=2 is not longer than" in said, said


def test_the_default_grace_outlasts_the_default_deadline():
    settings = load({})
    assert settings.shutdown_grace_seconds > settings.request_deadline_seconds


def test_a_standby_must_be_a_postgresql_url():
    with pytest.raises(ConfigError, match="BURA_READ_DATABASE_URL must be a postgresql"):
        load({"BURA_DATABASE_URL": "postgresql://u@db/bura", "BURA_READ_DATABASE_URL": "db-ro"})


def test_a_short_webhook_secret_stops_start_up():
    with pytest.raises(ConfigError, match="BURA_WEBHOOK_SECRET"):
        load({"BURA_WEBHOOK_URL": "https://platform.test", "BURA_WEBHOOK_SECRET": "short"})


def test_the_readme_documents_every_setting():
    readme = Path(__file__).parents[2].joinpath("README.md").read_text()
    documented = set(re.findall(r"`(BURA_[A-Z_]+)`", readme))
    assert set(VARIABLES) <= documented


def test_cli_refuses_to_start_with_a_bad_setting(monkeypatch, capsys):
    """A command on the store reads the settings, and a bad one stops it (2); `simulate`
    reads none (its bots need no server), and a bad BURA_PORT does not stop it."""
    from services.cli import main

    monkeypatch.setenv("BURA_PORT", "nope")
    assert main(["replay", "some-game"]) == 2
    assert "BURA_PORT" in capsys.readouterr().err
    assert main(["simulate", "--games", "1"]) == 0
    assert "BURA_PORT" not in capsys.readouterr().err


@pytest.mark.parametrize("name", ["BURA_OPERATOR_KEY", "BURA_PORT"])
def test_serve_refuses_a_setting_set_but_empty(monkeypatch, capsys, tmp_path, name):
    """In Kubernetes an empty Secret value gives each replica a key of its own: refused."""
    from services.cli import main

    monkeypatch.setenv("BURA_SQLITE_PATH", str(tmp_path / "x.db"))
    monkeypatch.setenv(name, "")
    assert main(["serve"]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and f"{name} is set but empty" in said, said


# --- `bura serve` and the schema: BURA_MIGRATE_ON_START ------------------------------------


async def _sql(url, *statements):
    conn = await asyncpg.connect(url)
    try:
        return [await conn.fetch(statement) for statement in statements]
    finally:
        await conn.close()


def _as_role(url, role):
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{role}@{parts.netloc.rpartition('@')[2]}"))


def _service(tmp_path, **env):
    service = Service(
        {"BURA_LOG_FORMAT": "text", "BURA_LOG_LEVEL": "info", **env}, log_dir=tmp_path
    )
    service.env.pop("BURA_REDIS_URL", None)  # the in-process bus: the store is the point
    return service.start()


async def test_serve_on_an_up_to_date_database_needs_no_create_right(postgres_admin_url, tmp_path):
    """A least-privilege role (rows and functions only, no CREATE) serves a migrated
    database: the applied migrations are read, and nothing is written when none is
    pending."""
    role = f"bura_least_{uuid.uuid4().hex[:8]}"
    with fresh_database(postgres_admin_url) as url:
        run_async(
            lambda: _sql(
                url,
                f"CREATE ROLE {role} LOGIN",
                f"GRANT USAGE ON SCHEMA public TO {role}",
                f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
                f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}",
                f"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO {role}",
            )
        )
        service = None
        try:
            (applied,) = run_async(lambda: _sql(url, "SELECT count(*) FROM schema_migrations"))
            (may_create,) = run_async(
                lambda: _sql(url, f"SELECT has_schema_privilege('{role}', 'public', 'CREATE')")
            )
            assert may_create[0][0] is False
            service = _service(tmp_path, BURA_DATABASE_URL=_as_role(url, role))
            await service.ready()
            async with httpx.AsyncClient(timeout=5) as client:
                created = await client.post(
                    f"{service.url}/games",
                    json={"seats": [{"name": "a"}, {"name": "b"}]},
                    headers=OPERATOR,
                )
                assert created.status_code == 201, created.text
            assert "pending migration" not in service.log()
            (still,) = run_async(lambda: _sql(url, "SELECT count(*) FROM schema_migrations"))
            assert still == applied
        finally:
            if service is not None:
                service.stop()
            run_async(lambda: _sql(url, f"DROP OWNED BY {role}", f"DROP ROLE {role}"))


async def test_serve_with_migrate_on_start_false_refuses_a_schema_behind(
    postgres_admin_url, tmp_path
):
    with fresh_database(postgres_admin_url, migrated=False) as bare:
        service = _service(tmp_path, BURA_DATABASE_URL=bare, BURA_MIGRATE_ON_START="false")
        assert await service.wait(timeout=30) == 3
        said = [line for line in service.log().splitlines() if "run `bura migrate`" in line]
        assert len(said) == 1, service.log()
        assert "BURA_MIGRATE_ON_START" in said[0] and "Traceback" not in service.log()
        (tables,) = run_async(
            lambda: _sql(bare, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        )
        assert tables == []  # nothing was created


async def test_serve_applies_pending_migrations_by_default_and_names_them(
    postgres_admin_url, tmp_path
):
    with fresh_database(postgres_admin_url, migrated=False) as bare:
        service = _service(tmp_path, BURA_DATABASE_URL=bare)
        try:
            await service.ready()
        finally:
            service.stop()
        said = [line for line in service.log().splitlines() if "pending migration" in line]
        names = [name for name, _ in migration_files()]
        assert len(said) == 1 and all(name in said[0] for name in names), service.log()
        assert f"applied {len(names)} migration(s)" in service.log(), service.log()


async def test_two_replicas_starting_at_once_say_how_many_each_applied(
    postgres_admin_url, tmp_path
):
    """Both may find the same migrations pending and name them; one waits for the other's
    lock. Each says how many it applied, so the lines add up to what the database got
    (17 named for 10 applied read as 17 applied)."""
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
    with fresh_database(postgres_admin_url, migrated=False) as bare:
        one = _service(tmp_path / "one", BURA_DATABASE_URL=bare)
        two = _service(tmp_path / "two", BURA_DATABASE_URL=bare)
        try:
            await one.ready()
            await two.ready()
        finally:
            one.stop()
            two.stop()
        applied = [
            int(re.search(r"applied (\d+) migration", line).group(1))  # type: ignore[union-attr]
            for service in (one, two)
            for line in service.log().splitlines()
            if "applied" in line and "migration(s)" in line
        ]
        assert sum(applied) == len(migration_files()), (one.log(), two.log())


@pytest.fixture
def silent_postgres():
    """A port that takes connections and never answers (a stalled host, a proxy to
    nowhere): the kernel completes the handshake on its backlog, nobody speaks."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"postgresql://bura@127.0.0.1:{listener.getsockname()[1]}/bura"


async def test_serve_gives_up_on_a_postgresql_that_never_answers_in_seconds(
    silent_postgres, tmp_path
):
    """It waited out asyncpg's minute on the migrations' connection before exit 3."""
    began = time.monotonic()
    service = _service(tmp_path, BURA_DATABASE_URL=silent_postgres)
    assert await service.wait(timeout=45) == 3
    assert time.monotonic() - began < 30, service.log()
    said = [line for line in service.log().splitlines() if "cannot start" in line]
    assert len(said) == 1 and "TimeoutError: no answer in time" in said[0], service.log()


def test_migrate_gives_up_on_a_postgresql_that_never_answers_in_seconds(silent_postgres):
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", "migrate"],
        cwd=ROOT,
        env={**os.environ, "BURA_DATABASE_URL": silent_postgres},
        capture_output=True,
        text=True,
        timeout=45,
    )
    assert done.returncode == 3 and time.monotonic() - began < 30, done.stderr
    assert "event store is unavailable: TimeoutError: no answer in time" in done.stderr
