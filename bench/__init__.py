"""Benchmarks: `python -m bench` (or `make bench`); see bench/__main__.py."""

import os

DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/test"


def database_url() -> str:
    """The PostgreSQL server the benchmarks create their scratch databases on."""
    return (
        os.environ.get("BURA_BENCH_DATABASE_URL")
        or os.environ.get("BURA_TEST_DATABASE_URL")
        or DEFAULT_DATABASE_URL
    )
