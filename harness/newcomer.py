"""What a newcomer does first: clone the repository and `make run`. Used by a test (it
works, with the runtime dependencies only) and by a benchmark (how long until it answers)."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.databases import free_port

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class ColdStart:
    clone: Path
    seconds: float  # from `git clone` to the first answer of /health/live
    packages: set[str]  # what `make run` installed into the clone's venv


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as reply:
            return int(reply.status) == 200
    except OSError:
        return False


@contextmanager
def cold_start(timeout: float = 300.0) -> Iterator[ColdStart]:
    """Clone this repository's HEAD into a temporary folder and `make run` there, on a free
    port with its own SQLite file; yields once the service answers, stops it after."""
    with tempfile.TemporaryDirectory(prefix="bura-newcomer-") as home:
        clone = Path(home) / "bura"
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BURA_", "VIRTUAL_ENV"))}
        env |= {"BURA_PORT": str(port), "BURA_LOG_LEVEL": "warning"}
        started = time.perf_counter()
        subprocess.run(
            ["git", "-c", "advice.detachedHead=false", "clone", "--quiet", str(ROOT), str(clone)],
            check=True,
        )
        with open(Path(home) / "make-run.log", "wb") as log:
            server = subprocess.Popen(
                ["make", "run"],
                cwd=clone,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            deadline = started + timeout
            while not _answers(f"http://127.0.0.1:{port}/health/live"):
                if server.poll() is not None or time.perf_counter() > deadline:
                    text = (Path(home) / "make-run.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"make run did not answer (exit {server.poll()}): {text}")
                time.sleep(0.1)
            seconds = time.perf_counter() - started
            listed = subprocess.run(
                [str(clone / ".venv/bin/python"), "-m", "pip", "list", "--format=freeze"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            packages = {line.split("==")[0].lower() for line in listed.split()}
            yield ColdStart(clone, seconds, packages)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
