"""`bura demo` as a newcomer runs it: a real process on the embedded default (a SQLite file
of the test's own), and the link it prints."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.databases import free_port
from harness.processes import OPERATOR_KEY, ROOT

LINK = re.compile(r"play against the bot: (http://\S+/play/(\w+)#seat=(\S+))")


@contextmanager
def demo(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """`bura demo` on the embedded default: (the link it prints, the game id, the base)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BURA_")}
    env |= {
        "BURA_PORT": str(port),
        "BURA_SQLITE_PATH": str(tmp_path / "demo.sqlite3"),
        "BURA_OPERATOR_KEY": OPERATOR_KEY,
        "BURA_LOG_LEVEL": "warning",
    }
    log = tmp_path / "demo.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "services.cli", "demo", "--seed", "pages-e2e"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while not (found := LINK.search(log.read_text())):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"no link printed: {log.read_text()}"
            time.sleep(0.1)
        yield found.group(1), found.group(2), f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
