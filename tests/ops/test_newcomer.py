"""A newcomer clones the repository and types `make run`: the service answers, having
installed the runtime dependencies only (the dev toolchain waits for `make test`). How long
that takes is measured by `make bench` (bench/newcomer.py), not asserted here."""

from __future__ import annotations

from harness.newcomer import cold_start

DEV_ONLY = {"pytest", "hypothesis", "ruff", "mypy", "schemathesis", "testcontainers"}


def test_a_fresh_clone_serves_with_make_run_and_runtime_dependencies_only() -> None:
    with cold_start() as started:
        assert {"litestar", "msgspec", "asyncpg", "redis", "uvicorn"} <= started.packages
        assert started.packages & DEV_ONLY == set()
        assert (started.clone / "var" / "bura.sqlite3").exists()  # the embedded default
        print(f"cold start: {started.seconds:.1f} s")
