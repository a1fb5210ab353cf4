"""k8s/routing/by-game.conf, run in a real nginx: every request about a game goes to the
replica its id hashes to, whatever its path; requests about no game spread."""

from __future__ import annotations

import http.client
import re
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.router import by_game
from services.config import Settings
from services.http.app import create_app


class _Replica(BaseHTTPRequestHandler):
    """Stands for a replica: answers any request with its own name."""

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        name = self.server.name.encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(name)))
        self.end_headers()
        self.wfile.write(name)

    do_GET = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def router() -> Iterator[int]:
    """nginx with the shipped map and the documented upstream in front of three stand-in
    replicas; its port."""
    replicas = []
    for name in ("r0", "r1", "r2"):
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Replica)
        server.name = name  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        replicas.append(server)
    try:
        with by_game([f"127.0.0.1:{s.server_address[1]}" for s in replicas]) as base:
            yield int(base.rsplit(":", 1)[1])
    finally:
        for server in replicas:
            server.shutdown()


def _served_by(port: int, method: str, path: str) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, body=b"{}" if method != "GET" else None)
        answer = connection.getresponse()
        assert answer.status == 200, (path, answer.status)
        return answer.read().decode()
    finally:
        connection.close()


def _game_paths() -> list[tuple[str, str]]:
    """Every route of the service that names a game, with a method it takes: from the app
    itself, so that a new one is held to the map as well."""
    found = []
    for route in create_app(Settings()).routes:
        if "{game_id" in route.path:
            method = sorted(getattr(route, "http_methods", None) or {"GET"})[0]
            found.append((method, re.sub(r"\{(\w+)(?::\w+)?\}", r"<\1>", route.path)))
    return found


def test_every_request_about_a_game_goes_to_one_replica_and_games_spread(router: int) -> None:
    paths = _game_paths()
    # the routes this map was written for are among them (a renamed one would not be held)
    assert {"/games/<game_id>/commands", "/arbiter/games/<game_id>", "/play/<game_id>"} <= {
        path for _, path in paths
    }, paths
    where = {}
    for _ in range(30):
        game = uuid.uuid4().hex
        served = {
            _served_by(router, method, path.replace("<game_id>", game).replace("<", "k-"))
            for method, path in paths
        }
        assert len(served) == 1, (game, served)  # every path of the game on one replica
        where[game] = served.pop()
    assert set(where.values()) == {"r0", "r1", "r2"}, where  # games spread over them all
    # a game's id, wherever it comes from, goes where it went before (no state in nginx)
    for game, replica in list(where.items())[:5]:
        assert _served_by(router, "POST", f"/games/{game}/commands") == replica


def test_requests_about_no_game_go_round_robin(router: int) -> None:
    """A game's creation, the list, health and documents name no game: the key is empty
    and nginx spreads them."""
    for method, path in (("POST", "/games"), ("GET", "/games"), ("GET", "/health/ready")):
        served = [_served_by(router, method, path) for _ in range(6)]
        assert set(served) == {"r0", "r1", "r2"}, (path, served)
