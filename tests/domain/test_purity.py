"""The domain is pure (docs/architecture.md): no I/O, clock, randomness or outer layer."""

import ast
from pathlib import Path

import pytest

DOMAIN = Path(__file__).resolve().parents[2] / "domain"
FORBIDDEN = {
    "asyncio",
    "asyncpg",
    "redis",
    "litestar",
    "uvicorn",
    "httpx",
    "requests",
    "aiohttp",
    "sqlite3",
    "psycopg",
    "psycopg2",
    "socket",
    "ssl",
    "select",
    "selectors",
    "subprocess",
    "threading",
    "multiprocessing",
    "concurrent",
    "os",
    "sys",
    "io",
    "pathlib",
    "shutil",
    "tempfile",
    "glob",
    "pickle",
    "shelve",
    "logging",
    "random",
    "secrets",
    "uuid",
    "time",
    "datetime",
    "zoneinfo",
    "infra",
    "services",
    "tests",
    "bench",
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__":
            names.add("__import__")
    return names


DOMAIN_FILES = sorted(DOMAIN.glob("*.py"))


def test_the_domain_has_modules_to_check():
    assert {p.stem for p in DOMAIN_FILES} >= {"cards", "decide", "evolve", "views", "audit"}


@pytest.mark.parametrize("path", DOMAIN_FILES, ids=lambda p: p.name)
def test_a_domain_module_imports_no_io_clock_randomness_or_outer_layer(path):
    bad = {
        name
        for name in imported_modules(path)
        if name == "__import__" or name.split(".")[0] in FORBIDDEN
    }
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", DOMAIN_FILES, ids=lambda p: p.name)
def test_a_domain_module_uses_no_builtin_io(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    calls = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not calls & {"open", "print", "input", "exec", "eval"}, path.name
