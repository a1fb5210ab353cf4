"""`python -m bench --quick` runs a benchmark end to end and writes its figures: what CI
runs on every change. The figures' values are never asserted (speed lives in bench/, on a
shared machine); their names are the benchmark's contract with whoever reads the JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SERVICE_FIGURES = {"unit", "settings", "repeats", "target_ratio", "worst_ratio", "meets_target"}
SERVICE_ROW = {
    "games",
    "bura_cpu_ms",
    "bare_cpu_ms",
    "ratio",
    "ratio_per_repeat",
    "client_cpu_share_bura",
    "client_cpu_share_bare",
    "errors",
}


@pytest.mark.slow
def test_the_quick_service_benchmark_writes_its_figures(
    postgres_admin_url: str, redis_url: str, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "BURA_BENCH_DATABASE_URL": postgres_admin_url,
        "BURA_BENCH_REDIS_URL": redis_url,
        "BENCH_RESULTS": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "service"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    figures = json.loads((tmp_path / "service.json").read_text())
    assert figures.keys() >= SERVICE_FIGURES
    assert [row["games"] for row in figures["table"]] == [8, 32, 64]
    for row in figures["table"]:
        assert row.keys() >= SERVICE_ROW
        assert len(row["ratio_per_repeat"]) == figures["repeats"] >= 3
        assert row["errors"] == 0
    assert "CPU per command, bura over bare" in done.stdout


@pytest.mark.slow
def test_the_side_by_side_comparison_runs_a_revision_against_the_working_tree(
    postgres_admin_url: str, redis_url: str, tmp_path: Path
) -> None:
    """`python -m bench.ab`: HEAD from a worktree of its own and the working tree, loaded
    at once, here two replicas a side with each game on one; the setting given goes to
    the new side only, and the worktree is gone after."""
    env = {
        **os.environ,
        "BENCH_QUICK": "1",
        "BURA_BENCH_DATABASE_URL": postgres_admin_url,
        "BENCH_RESULTS": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-m", "bench.ab", "--windows", "2", "--games", "2",
         "--env", "BURA_LOG_LEVEL=warning", "--replicas", "2", "--by-game"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    figures = json.loads((tmp_path / "ab.json").read_text())
    assert figures["rev"] == "HEAD"
    assert figures["env"] == {"BURA_LOG_LEVEL": "warning"}
    assert figures["replicas"] == 2 and figures["by_game"] is True
    assert [row["window"] for row in figures["table"]] == [0, 1]
    for row in figures["table"]:
        assert row["old_cpu_ms"] > 0 and row["new_cpu_ms"] > 0
        assert row["errors"] == 0
        assert 0 < row["client_cpu_share"] < 1
    assert figures["low"] <= figures["median"] <= figures["high"]
    assert "new over old, CPU per request" in done.stdout
    trees = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True, check=True
    )
    assert "bura-ab-" not in trees.stdout


@pytest.mark.parametrize(
    ("argument", "said"),
    [
        (["--env", "BURA_RATE_LIMITS"], "--env takes NAME=VALUE, not 'BURA_RATE_LIMITS'"),
        (["--replicas", "0"], "--replicas takes 1 or more"),
    ],
)
def test_the_side_by_side_comparison_refuses_what_it_cannot_run(
    argument: list[str], said: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.ab", *argument],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert said in done.stderr
