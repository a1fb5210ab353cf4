"""The documents at /schema: the refined OpenAPI (services/http/contract.py), the AsyncAPI
document of the streams, and the API reference UI (Swagger UI) served from the assets of
the swagger-ui-py package, so it works with no network; and /problems, the pages every
problem `type` resolves to."""

from __future__ import annotations

import html
import importlib.util
import re
from pathlib import Path
from typing import Any

from litestar import Controller, MediaType, Request, Response, Router, get
from litestar.exceptions import NotFoundException
from litestar.openapi.plugins import JsonRenderPlugin, SwaggerRenderPlugin
from litestar.params import FromPath
from litestar.static_files import create_static_files_router

from services.http.contract import asyncapi, refine
from services.http.errors import NO_FILE
from services.http.pages import HEADERS, named_file
from services.http.problems import PROBLEMS, TYPE_PREFIX, Problem, responses
from services.pages.html import STATIC_PATH

ASSETS = "/schema/assets"


def _assets_directory() -> Path:
    # Found without importing the package: its __init__ pulls in web frameworks' glue.
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("swagger-ui-py is not installed: the API reference needs its assets")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


class _Refined:
    """Render the refined document, computed once per built schema."""

    def __init__(self) -> None:
        self._source: int | None = None
        self._refined: dict[str, Any] = {}

    def refined(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self._source != id(schema):
            self._refined, self._source = refine(schema), id(schema)
        return self._refined


class OpenApiJson(JsonRenderPlugin):
    def __init__(self) -> None:
        super().__init__()
        self.cache = _Refined()

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return self.render_json(request, self.cache.refined(openapi_schema))


class AsyncApiJson(JsonRenderPlugin):
    def __init__(self) -> None:
        super().__init__(path="/asyncapi.json", media_type=MediaType.JSON)
        self._source: int | None = None
        self._doc: dict[str, Any] = {}

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        """The document (services/http/contract.py), with the server it was asked of."""
        if self._source != id(openapi_schema):
            self._doc, self._source = asyncapi(openapi_schema), id(openapi_schema)
        return self.render_json(request, {**self._doc, "servers": _served_at(request)})


def _served_at(request: Request[Any, Any, Any]) -> dict[str, Any]:
    """The AsyncAPI server (its `host` is required) is the one the document was asked of, as
    the OpenAPI's relative paths are: a generator pointed at a deployment gets its address."""
    given = request.headers.get("host", "")
    host = given if _HOST.fullmatch(given) else "localhost"  # `a:99999` is no address
    scheme = str(request.scope.get("scheme", "http"))  # X-Forwarded-Proto, where trusted
    protocol = "https" if scheme in ("https", "wss") else "http"
    return {"api": {"host": host, "protocol": protocol, "pathname": "/"}}


# A Host header as a URL may carry it: a name or an address, and a port of 1 to 65535.
_PORT = r"(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
_HOST = re.compile(
    rf"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::{_PORT})?"
)


class OfflineSwagger(SwaggerRenderPlugin):
    """Swagger UI from /schema/assets, never a CDN; the refined document embedded."""

    def __init__(self) -> None:
        super().__init__(
            js_url=f"{ASSETS}/swagger-ui-bundle.js",
            css_url=f"{ASSETS}/swagger-ui.css",
            standalone_preset_js_url=f"{ASSETS}/swagger-ui-standalone-preset.js",
            path="/swagger",
            # Litestar's default icon is on a CDN: the package's own, so nothing is fetched
            favicon=f'<link rel="icon" type="image/png" href="{ASSETS}/favicon-32x32.png">',
        )
        self.cache = _Refined()

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        page = super().render(request, self.cache.refined(openapi_schema))
        # the page's language, for a screen reader (Litestar's template names none)
        return page.replace(b"<html>", b'<html lang="en">', 1)


def render_plugins() -> list[Any]:
    return [OfflineSwagger(), OpenApiJson(), AsyncApiJson()]


def assets() -> Router:
    return create_static_files_router(
        path=ASSETS,
        directories=[_assets_directory()],
        guards=[named_file],
        exception_handlers=NO_FILE,
        include_in_schema=False,
        # The bundle is versioned with the package; a day's caching is safe.
        cache_control=None,
        name="reference-assets",
    )


# The pages' own style sheet and headers (services/http/pages.py): no inline style, so the
# same Content-Security-Policy holds.
_PAGE = (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    f'<title>{{title}}</title><link rel="stylesheet" href="{STATIC_PATH}/pages.css"></head>'
    "<body><main>{body}</main></body></html>"
)


def _page(title: str, body: str) -> Response[str]:
    return Response(
        _PAGE.format(title=html.escape(title), body=body),
        media_type=MediaType.HTML,
        headers=HEADERS,
    )


def _row(code: str, row: Problem) -> str:
    return (
        f'<tr id="{code}"><td><a href="{TYPE_PREFIX}{code}"><code>{code}</code></a></td>'
        f"<td>{row.status}</td><td>{html.escape(row.title)}</td>"
        f"<td>{html.escape(row.about)}</td></tr>"
    )


class ProblemsController(Controller):
    """The documentation each problem `type` URI resolves to (RFC 9457 §3.1.1)."""

    path = "/problems"
    tags = ("problems",)

    @get(
        "/",
        operation_id="listProblems",
        media_type=MediaType.HTML,
        responses=responses(429),  # documents are reads, counted as every read is
        summary="Every error code: its status, title and meaning",
    )
    async def list_problems(self) -> Response[str]:
        """An HTML page: every `code` an error answer may carry, with its HTTP status,
        title and what a client does about it."""
        rows = "".join(_row(c, r) for c, r in sorted(PROBLEMS.items(), key=lambda i: i[1].status))
        body = (
            "<h1>Bura server: problem types</h1><p>Every error is "
            "<code>application/problem+json</code> (RFC 9457) whose <code>type</code> is one "
            "of these pages and whose <code>code</code> names the row.</p>"
            '<div class="wide"><table><tr><th>code</th><th>status</th><th>title</th>'
            f"<th>meaning</th></tr>{rows}</table></div>"
        )
        return _page("Problem types", body)

    @get(
        "/{code:str}",
        operation_id="getProblem",
        media_type=MediaType.HTML,
        summary="One error code's documentation",
        responses=responses(400, 404, 429),
    )
    async def get_problem(self, code: FromPath[str]) -> Response[str]:
        """The HTML page an error's `type` names: the code's status, title, meaning and an
        example."""
        row = PROBLEMS.get(code)
        if row is None:
            raise NotFoundException(f"no problem type {code!r}")
        body = (
            f"<h1><code>{code}</code>: {html.escape(row.title)}</h1>"
            f"<p>HTTP status <b>{row.status}</b>.</p><p>{html.escape(row.about)}</p>"
            f"<p>For example: <code>{html.escape(row.example)}</code></p>"
            f'<p><a href="{TYPE_PREFIX.rstrip("/")}">Every problem type</a></p>'
        )
        return _page(f"{code}: {row.title}", body)
