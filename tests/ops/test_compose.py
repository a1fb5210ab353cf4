"""docker-compose.yml: PostgreSQL, Redis, a one-shot migration and two API replicas."""

from pathlib import Path

import yaml

from services.bootstrap import STALLED_CLOSE
from services.config import Settings

ROOT = Path(__file__).resolve().parents[2]


def services():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def test_postgres_and_redis_are_health_checked():
    found = services()
    assert found["postgres"]["image"] == "postgres:15"
    assert found["redis"]["image"] == "redis:7"
    assert "pg_isready" in " ".join(found["postgres"]["healthcheck"]["test"])
    assert "ping" in found["redis"]["healthcheck"]["test"]


def test_migrate_runs_once_the_database_is_healthy():
    migrate = services()["migrate"]
    assert migrate["command"] == ["migrate"]
    assert migrate["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert migrate["restart"] == "no"


def test_two_api_replicas_start_after_the_migration_on_one_port_each():
    found = services()
    api = found["api"]
    assert api["deploy"]["replicas"] == 2
    assert api["ports"] == ["8001-8002:8000"]
    assert api.get("command", ["serve"]) == ["serve"]
    assert api["depends_on"] == {
        "postgres": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
        "migrate": {"condition": "service_completed_successfully"},
    }
    drain = Settings().shutdown_grace_seconds + Settings().request_deadline_seconds
    room = drain + STALLED_CLOSE
    assert int(api["stop_grace_period"].rstrip("s")) >= room, f"room for the {room:g} s drain"


def test_api_and_migrate_share_one_image_and_settings():
    found = services()
    api, migrate = found["api"], found["migrate"]
    assert api["image"] == migrate["image"]
    assert api["build"] == migrate["build"] == {"context": "."}
    assert api["environment"] == migrate["environment"]
    env = api["environment"]
    assert env["BURA_DATABASE_URL"].startswith("postgresql://")
    assert "@postgres:5432/" in env["BURA_DATABASE_URL"]
    assert env["BURA_REDIS_URL"].startswith("redis://redis:6379/")
    assert env["BURA_OPERATOR_KEY"]
