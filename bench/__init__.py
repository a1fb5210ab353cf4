"""Benchmarks: `python -m bench` (or `make bench`); see bench/__main__.py."""

import os

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def database_url() -> str:
    """The PostgreSQL server the benchmarks create their scratch databases on."""
    return (
        os.environ.get("BURA_BENCH_DATABASE_URL")
        or os.environ.get("BURA_TEST_DATABASE_URL")
        or DEFAULT_DATABASE_URL
    )


def redis_url() -> str:
    """The Redis the benchmarked replicas share, as in production."""
    return (
        os.environ.get("BURA_BENCH_REDIS_URL")
        or os.environ.get("BURA_TEST_REDIS_URL")
        or DEFAULT_REDIS_URL
    )


def quick() -> bool:
    """Small counts everywhere (`python -m bench --quick` or BENCH_QUICK=1): every benchmark
    runs end to end in a few minutes, so CI can run them on every change. Its figures show
    that the benchmarks work, not how fast the server is."""
    return os.environ.get("BENCH_QUICK", "").lower() in {"1", "true", "yes"}


def sized(full: float, small: float) -> float:
    """`full`, or `small` in quick mode."""
    return small if quick() else full


# The settings production runs with (k8s/base): Redis for hints, presence and tickets,
# info logging as JSON, rate limits on (each command counts in Redis). The limits are raised
# so far that none is reached: every bot of a benchmark sends from 127.0.0.1. Metrics are
# always on.
_NEVER = str(10**9)
PRODUCTION = {
    "BURA_LOG_LEVEL": "info",
    "BURA_LOG_FORMAT": "json",
    "BURA_RATE_LIMITS": "true",
    "BURA_RATE_COMMANDS_PER_TOKEN": _NEVER,
    "BURA_RATE_COMMANDS_PER_ADDRESS": _NEVER,
    "BURA_RATE_READS_PER_TOKEN": _NEVER,
    "BURA_RATE_READS_PER_ADDRESS": _NEVER,
    "BURA_RATE_CREATE_PER_TOKEN": _NEVER,
    "BURA_RATE_CREATE_PER_ADDRESS": _NEVER,
}
