"""A seat whose client vanishes from the network without closing its stream (a phone out
of coverage, a laptop shut) shows away within a keep-alive period plus
BURA_PEER_TIMEOUT_SECONDS, not after the kernel's quarter hour of retransmissions; from
then its abandonment is judged. harness/vanishing.py builds the network in namespaces of
its own and cuts the client's link."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest

from harness.processes import ROOT
from services.http.server import listening


def vanish(peer_timeout: float, watch: float) -> float | None:
    """Seconds the seat still showed `connected` after its client's link went down; None
    if it still did after `watch` seconds."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("network namespaces need root and util-linux's unshare")
    done = subprocess.run(
        ["unshare", "-n", sys.executable, "-m", "harness.vanishing", str(peer_timeout), str(watch)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    away: float | None = json.loads(done.stdout.splitlines()[-1])["away_after"]
    return away


def test_every_accepted_connection_takes_the_peer_timeout_of_the_listening_socket() -> None:
    if not hasattr(socket, "TCP_USER_TIMEOUT"):
        pytest.skip("this system has no TCP_USER_TIMEOUT")
    server = listening("127.0.0.1", 0, peer_timeout=2.5)
    with server, socket.create_connection(server.getsockname()) as client:
        accepted, _ = server.accept()
        with accepted:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 2500
        assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 0


def test_a_seat_whose_client_vanished_is_away_within_a_keep_alive_and_the_peer_timeout() -> None:
    # keep-alives every 0.5 s, dropped after 1 s unacknowledged: about 1.5 s on a quiet
    # machine; the bound leaves room for a loaded one and is still far from 15 minutes
    away = vanish(peer_timeout=1.0, watch=30.0)
    assert away is not None and away < 15.0, away


def test_a_long_peer_timeout_keeps_the_vanished_seat_connected_as_the_kernel_did() -> None:
    """The control: the same cut with the kernel's patience (an hour here) leaves the seat
    `connected`, so the figure above is the setting's doing."""
    assert vanish(peer_timeout=3600.0, watch=6.0) is None
