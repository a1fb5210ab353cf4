"""A real nginx in front of replicas, routing by game with k8s/routing/by-game.conf, as
docs/scaling.md ("Routing by game") configures it."""

from __future__ import annotations

import http.client
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from harness.databases import free_port

ROOT = Path(__file__).resolve().parents[1]
BY_GAME = ROOT / "k8s" / "routing" / "by-game.conf"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"  # Debian's; .ci/run installs it


@contextmanager
def by_game(upstreams: Sequence[str]) -> Iterator[str]:
    """nginx on a port of its own before the upstreams (`host:port` each), hashing on the
    map's `$bura_game`; its base URL. Stopped on the way out."""
    prefix = Path(tempfile.mkdtemp(prefix="bura-nginx-"))
    port = free_port()
    servers = "".join(f"server {upstream};\n" for upstream in upstreams)
    (prefix / "nginx.conf").write_text(
        f"""
        daemon off;
        pid {prefix}/nginx.pid;
        error_log {prefix}/error.log;
        events {{ worker_connections 256; }}
        http {{
            access_log off;
            client_body_temp_path {prefix}/body;
            proxy_temp_path {prefix}/proxy;
            include {BY_GAME};
            upstream bura {{
                hash $bura_game consistent;
                {servers}
                keepalive 16;
            }}
            server {{
                listen 127.0.0.1:{port};
                location / {{
                    proxy_pass http://bura;
                    proxy_http_version 1.1;
                    proxy_set_header Connection "";
                    proxy_read_timeout 120s;
                }}
            }}
        }}
        """
    )
    nginx = subprocess.Popen([NGINX, "-p", str(prefix), "-c", "nginx.conf", "-e", "stderr"])
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=1).connect()
                break
            except OSError:
                if nginx.poll() is not None:
                    raise RuntimeError(f"nginx exited ({nginx.returncode}): see stderr") from None
                if time.monotonic() > deadline:
                    raise RuntimeError("nginx did not listen within 10 s") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        nginx.terminate()
        nginx.wait(10)
        shutil.rmtree(prefix, ignore_errors=True)
