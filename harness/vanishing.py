"""A peer that vanishes: a seat's stream whose client drops off the network without a FIN
or a reset, as a phone leaving coverage or a laptop shut mid-game.

Run as `unshare -n python -m harness.vanishing PEER_TIMEOUT WATCH` (as root), in a network
namespace of its own, so that nothing outside it is touched and all it made goes with it:
it starts a service there on the embedded default with BURA_PEER_TIMEOUT_SECONDS at
PEER_TIMEOUT, opens seat 0's stream from a second namespace joined to it by a veth pair,
takes that namespace's end of the link down, and prints as JSON how many seconds the seat
still showed `connected` after (`away_after`; null if it still did after WATCH seconds).
The server's own checks go over loopback, which the cut leaves alone."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from harness.processes import OPERATOR, ROOT, Service, bearer

SERVER, CLIENT = "10.77.0.1", "10.77.0.2"  # the two ends of the link
KEEPALIVE = 0.5  # the stream's keep-alive period: the data the peer leaves unacknowledged


def _ip(*args: str, inside: int | None = None) -> None:
    where = ["nsenter", "-t", str(inside), "-n"] if inside is not None else []
    subprocess.run([*where, "ip", *args], check=True, capture_output=True)


def _client() -> None:
    """The client's side, in its own namespace: says `ready`, reads `URL TOKEN`, opens the
    stream, says `open` at its first view and reads on until it is killed."""
    print("ready", flush=True)
    url, token = sys.stdin.readline().split()
    headers = {**bearer(token), "Accept": "text/event-stream"}
    timeout = httpx.Timeout(5.0, read=None)
    with httpx.stream("GET", url, headers=headers, timeout=timeout) as response:
        said = False
        for line in response.iter_lines():
            if line.startswith("event: view") and not said:
                print("open", flush=True)
                said = True


async def _connected(client: httpx.AsyncClient, url: str) -> bool:
    answer = await client.get(url, headers=OPERATOR)
    answer.raise_for_status()
    return bool(answer.json()["seats"][0]["connected"])


async def vanish(peer_timeout: float, watch: float) -> dict[str, Any]:
    _ip("link", "set", "lo", "up")
    peer = subprocess.Popen(
        ["unshare", "-n", sys.executable, "-m", "harness.vanishing", "--client"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    service: Service | None = None
    assert peer.stdin is not None and peer.stdout is not None
    try:
        # `unshare` runs the client in place of itself: once it speaks, its namespace is
        # the process's, and the link's far end can be moved into it
        assert peer.stdout.readline().strip() == "ready"
        _ip("link", "add", "va", "type", "veth", "peer", "name", "vb")
        _ip("link", "set", "vb", "netns", str(peer.pid))
        _ip("addr", "add", f"{SERVER}/24", "dev", "va")
        _ip("link", "set", "va", "up")
        _ip("link", "set", "lo", "up", inside=peer.pid)
        _ip("addr", "add", f"{CLIENT}/24", "dev", "vb", inside=peer.pid)
        _ip("link", "set", "vb", "up", inside=peer.pid)
        home = Path(tempfile.mkdtemp(prefix="bura-vanishing-"))
        settings = {
            "BURA_DATABASE_URL": "",
            "BURA_REDIS_URL": "",
            "BURA_SQLITE_PATH": str(home / "bura.sqlite3"),
            "BURA_SSE_KEEPALIVE_SECONDS": str(KEEPALIVE),
            "BURA_PEER_TIMEOUT_SECONDS": str(peer_timeout),
        }
        service = await Service(settings, log_dir=home, host="0.0.0.0").start().ready()
        async with httpx.AsyncClient(timeout=10.0) as client:
            created = await client.post(
                f"{service.url}/games",
                json={"seats": [{"name": "ann"}, {"name": "bob"}]},
                headers=OPERATOR,
            )
            created.raise_for_status()
            game_id, token = created.json()["game_id"], created.json()["seats"][0]["token"]
            peer.stdin.write(f"http://{SERVER}:{service.port}/games/{game_id}/stream {token}\n")
            peer.stdin.flush()
            assert peer.stdout.readline().strip() == "open"
            seat = f"{service.url}/games/{game_id}"
            async with asyncio.timeout(10.0):
                while not await _connected(client, seat):
                    await asyncio.sleep(0.05)
            _ip("link", "set", "vb", "down", inside=peer.pid)
            cut = time.monotonic()
            while time.monotonic() - cut < watch:
                if not await _connected(client, seat):
                    return {"away_after": round(time.monotonic() - cut, 3)}
                await asyncio.sleep(0.1)
            return {"away_after": None}
    finally:
        peer.kill()
        peer.wait()
        if service is not None:
            service.stop()


def main() -> None:
    if sys.argv[1:] == ["--client"]:
        _client()
        return
    peer_timeout, watch = float(sys.argv[1]), float(sys.argv[2])
    print(json.dumps(asyncio.run(vanish(peer_timeout, watch))), flush=True)


if __name__ == "__main__":
    main()
