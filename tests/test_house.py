"""The house rules a newcomer can rely on: imports point one way, and the repository stands
on its own (nothing in it cites a file outside it)."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Who may import whom: each layer only inward (domain <- infra <- services); the harness
# and the benchmarks use the product, and nothing imports the tests.
ALLOWED = {
    "domain": {"domain"},
    "infra": {"domain", "infra"},
    # `bura play` (services/cli/play.py) plays over the public API through the client.
    "services": {"domain", "infra", "services", "bura_client"},
    "harness": {"domain", "infra", "services", "harness"},
    "bench": {"domain", "infra", "services", "harness", "bench"},
    # The client stands alone: it speaks HTTP and knows nothing of the server's code.
    "clients": {"bura_client"},
}
PROJECT = {"domain", "infra", "services", "harness", "bench", "tests", "clients", "bura_client"}


# What a citation of the team's documents outside the repository looks like. Built from
# parts, so that this file, checked like every other, cites none of them itself.
OUTSIDE_MARKS = tuple(
    "".join(parts)
    for parts in (
        ("..", "/shared"),
        ("seed", " 00"),
        ("Seed", " 00"),
        ("RULES", ".md"),
        ("DESIGN", ".md"),
        ("STYLE", ".md"),
    )
)


def imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names & PROJECT


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_point_inward_and_nothing_imports_the_tests(package: str) -> None:
    wrong = {
        str(path.relative_to(ROOT)): sorted(imported(path) - ALLOWED[package])
        for path in sorted((ROOT / package).rglob("*.py"))
    }
    assert {p: w for p, w in wrong.items() if w} == {}


def test_nothing_in_the_repository_cites_a_file_outside_it() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    outside = [
        name
        for name in tracked
        if (ROOT / name).is_file()
        and any(
            mark in (ROOT / name).read_text(encoding="utf-8", errors="replace")
            for mark in OUTSIDE_MARKS
        )
    ]
    assert outside == []
