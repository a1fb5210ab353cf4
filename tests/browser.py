"""Headless Chromium for browser tests: Debian's `chromium` (apt-get install chromium)
driven by Playwright for Python; no browser is downloaded. Use the `browser` fixture
(tests/conftest.py) and open pages with `await browser.new_page()`; `serve_page` serves
one HTML page from an origin of its own (a free port on 127.0.0.1)."""

from __future__ import annotations

import contextlib
import http.server
import shutil
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from playwright.async_api import Browser, async_playwright

from harness.databases import free_port

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str:
    found = CHROMIUM if shutil.which(CHROMIUM) else shutil.which("chromium")
    if found is None:
        raise RuntimeError(
            "no Chromium at /usr/bin/chromium: `apt-get install -y chromium` (.ci/run does)"
        )
    return found


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium_path(), args=ARGS, headless=True
        )
        try:
            yield browser
        finally:
            await browser.close()


@contextmanager
def serve_page(html: str) -> Iterator[str]:
    """Serve `html` at / on a port of its own; yields the page's origin."""
    body = html.encode()

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(Exception):
            server.shutdown()
            server.server_close()
