"""The service's pages: /arbiter/games/{id} (the operator's record of a game, version by
version) and /play/{id} (a seat's table), with their script and style under /pages/static.
They stay out of the OpenAPI document: they are for people, not integrators.

The operator key reaches the arbiter's page in a header (arbiter.js, from sessionStorage) or
a form's body (a browser without JavaScript), never in a URL. The table page holds no game
at all: its script reads the seat's own view from the API."""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, Response, Router, get, post
from litestar.connection import ASGIConnection
from litestar.datastructures import CacheControlHeader
from litestar.di import NamedDependency
from litestar.enums import MediaType
from litestar.exceptions import NotFoundException
from litestar.handlers import BaseRouteHandler
from litestar.params import FromPath, QueryParameter
from litestar.static_files import create_static_files_router

from domain.evolve import replay
from domain.rules import Rules
from domain.views import ARBITER, Viewer, redact, sees_hand, view
from services.app.callers import Seating
from services.app.codec import from_recorded
from services.app.errors import Forbidden, GameNotFound, NotFound, Unauthorized, VersionNotFound
from services.app.games import GameService
from services.app.results import AuditFinding
from services.app.reviews import Reviews, audited, check_record
from services.bootstrap import Runtime
from services.http.deps import bearer
from services.http.errors import NO_FILE
from services.http.schemas import field_twice, invalid
from services.pages import STATIC
from services.pages.arbiter import Record, Shown, Step, printable, shell, whole
from services.pages.html import CSP
from services.pages.table import IN_A_LINK, NEEDS_SCRIPT, no_such_game, table_page
from services.pages.words import describe

HEADERS = {
    "Content-Security-Policy": CSP,
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def _html(body: str, status: int = 200) -> Response[str]:
    """A page. A refused key is the key's form again with what was wrong, not an error
    answer: every error this service sends a client is problem details, and this one is a
    form's (the one page with an error status is the 404 a browser reads, `_missing`)."""
    return Response(body, status_code=status, media_type=MediaType.HTML, headers=HEADERS)


def _for_a_person(request: Request[Any, Any, Any]) -> bool:
    """A browser following a link: it asks for HTML before anything else (curl, an HTTP
    library and fetch() ask for `*/*` or JSON, and get problem details as every client
    does)."""
    return request.accept.best_match(["application/problem+json", "text/html"]) == "text/html"


async def _missing(
    request: Request[Any, Any, Any], games: GameService, game_id: str
) -> Response[str] | None:
    """None for a game this server holds. Else a 404: a person opening a stale link reads
    it as a page (with the pages' own headers), any other client as problem details."""
    try:
        await games.load(game_id)
    except GameNotFound:
        if not _for_a_person(request):
            raise
        return _html(no_such_game(game_id), 404)
    return None


# ASCII digits only, and few: `str.isdigit` takes "²", which `int` refuses, and `int` of
# thousands of digits costs time, then raises.
_NUMBER = re.compile(r"[0-9]{1,9}")


def _number(raw: object, key: str, source: str = "body", least: int = 0) -> int | None:
    """A whole number in digits (a form's, or the page's query), or None when absent;
    anything else is a 400: `1e0`, `1.0`, a number below `least`."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, str) and _NUMBER.fullmatch(raw) and int(raw) >= least:
        return int(raw)
    said = "must be a whole number (digits 0-9, at most 9 of them)"
    raise invalid(key, said + (f", from {least}" if least else ""), source)


def _perspective(raw: object, key: str, source: str) -> str | None:
    """`arbiter`, a seat's number, or None when absent; anything else is a 400."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, str) and (raw == ARBITER or _NUMBER.fullmatch(raw)):
        return raw
    raise invalid(key, "must be 'arbiter' or a seat's number", source)


def _viewer(raw: str | None, seats: int, named: tuple[str, str]) -> Viewer:
    """The perspective asked for; a seat the table does not have is a 400, never quietly
    the arbiter's."""
    if raw is None or raw == ARBITER:
        return ARBITER
    if int(raw) < seats:
        return int(raw)
    key, source = named
    raise invalid(key, f"no seat {raw} at this table: 0 to {seats - 1}, or 'arbiter'", source)


def _hidden_from(finding: AuditFinding, viewer: Viewer, rules: Rules) -> AuditFinding:
    """As the seat saw it at the time: another seat's cards stay out, even once the game is
    over and the audit would show them to everyone."""
    if viewer == ARBITER or sees_hand(viewer, finding.seat, rules):
        return finding
    return msgspec.structs.replace(finding, cards=None, hand=None)


async def record(
    reviews: Reviews,
    game_id: str,
    version: int | None,
    viewer_raw: str | None,
    named: tuple[str, str] = ("as", "query"),
) -> Record:
    """The page's whole content at `version`, as `viewer` may see it (domain/views.py). A
    version the game has not reached is a 404, as the API's replay answers it. A record
    whose chain does not hold, or that was cut short, is refused as the replay refuses it
    (500 record_broken): its versions and findings would be wrong."""
    rows = await reviews.record(game_id)
    events = [from_recorded(r) for r in rows]
    last = len(rows)
    if version is not None and version > last:
        raise VersionNotFound(game_id, version, last)
    at = min(max(1, version or last), last)
    state = replay(events[:at])
    names = state.seats
    viewer = _viewer(viewer_raw, len(names), named)
    rules = state.rules
    findings = audited(rows, viewer)
    proving = {
        v: i for i, f in enumerate(findings) for v in range(f.versions[0], f.versions[1] + 1)
    }
    steps = [
        Step(
            version=r.version,
            kind=r.type,
            # a seat sees an event only once it has happened, and then as redacted for it
            said=None
            if viewer != ARBITER and r.version > at
            else describe(redact(e, viewer, rules), names),
            actor=names[r.metadata.actor]
            if r.metadata.actor is not None and 0 <= r.metadata.actor < len(names)
            else None,
            recorded_at=r.recorded_at,
            request_id=r.metadata.correlation_id,
            finding=proving.get(r.version),
            command_id=r.metadata.command_id if viewer == ARBITER else None,
        )
        for r, e in zip(rows, events, strict=True)
    ]
    shown = [
        Shown(_hidden_from(f, viewer, rules), viewer == ARBITER or f.versions[0] <= at)
        for f in findings
    ]
    table = view(state, viewer)
    # A seat sees a deal's check once the deal has begun, and the seed (which orders every
    # deck) only if its view at that version has it: the arbiter's always does.
    checks = [c for c in check_record(game_id, rows).deals if viewer == ARBITER or c.version <= at]
    return Record(
        game_id=game_id,
        names=names,
        last=last,
        viewer=viewer,
        table=table,
        steps=steps,
        findings=shown,
        checks=checks,
        seed=table.seed,
    )


def _finding(game_id: str, chosen: int, findings: int) -> int:
    """The printable finding asked for, which the game must have (a 404 otherwise, as a
    version past the game's last is)."""
    if chosen >= findings:
        have = f"findings 0 to {findings - 1}" if findings else "no finding"
        raise NotFound("not_found", f"game {game_id} has {have}, not {chosen}")
    return chosen


async def _operator(seating: Seating, key: str | None) -> str | None:
    """None when the key is the operator's; else what the page says."""
    try:
        await seating.operator(key)
    except Unauthorized:
        return "That is not the operator key."
    except Forbidden:
        return "That is a player's token: the record opens with the operator key."
    return None


def _runtime(request: Request[Any, Any, Any]) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


class PagesController(Controller):
    include_in_schema = False

    @get("/play/{game_id:str}", media_type=MediaType.HTML)
    async def table(
        self,
        request: Request[Any, Any, Any],
        game_id: FromPath[str],
        games: NamedDependency[GameService],
    ) -> Response[str]:
        """A token in the query (a link made by hand, or the form submitted the old way) is
        never echoed: the page says to keep tokens out of links."""
        if (missing := await _missing(request, games, game_id)) is not None:
            return missing
        leaked = "token" in request.query_params or "seat" in request.query_params
        quiet = 2 * _runtime(request).settings.sse_keepalive_seconds
        return _html(table_page(game_id, IN_A_LINK if leaked else None, quiet))

    @post("/play/{game_id:str}", media_type=MediaType.HTML, status_code=200)
    async def table_form(
        self,
        request: Request[Any, Any, Any],
        game_id: FromPath[str],
        games: NamedDependency[GameService],
    ) -> Response[str]:
        """The token's form posted before (or without) table.js: the token came in the body,
        out of every URL, and goes nowhere; the table itself needs the script."""
        if (missing := await _missing(request, games, game_id)) is not None:
            return missing
        return _html(table_page(game_id, NEEDS_SCRIPT))

    @get("/arbiter/games/{game_id:str}", media_type=MediaType.HTML)
    async def arbiter(
        self,
        request: Request[Any, Any, Any],
        game_id: FromPath[str],
        games: NamedDependency[GameService],
        # as text, read by _number: the framework would read `1e0` or `1.0` as 1
        asked: Annotated[str | None, QueryParameter(name="version", max_length=16)] = None,
        perspective: Annotated[str | None, QueryParameter(name="as", max_length=8)] = None,
        printed: Annotated[str | None, QueryParameter(name="print", max_length=16)] = None,
    ) -> Response[str]:
        """Without a key: the key's form. With the operator key in the Authorization header
        (arbiter.js sends the one kept in sessionStorage): the whole record."""
        version = _number(asked, "version", "query", least=1)
        finding = _number(printed, "print", "query")
        perspective = _perspective(perspective, "as", "query")
        if (missing := await _missing(request, games, game_id)) is not None:
            return missing
        key = bearer(request)
        if key is None:
            return _html(shell(game_id))
        refused = await _operator(_runtime(request).seating, key)
        if refused is not None:
            return _html(shell(game_id, refused))
        shown = await record(_runtime(request).reviews, game_id, version, perspective)
        if finding is not None:
            return _html(printable(shown, _finding(game_id, finding, len(shown.findings))))
        return _html(whole(shown))

    @post("/arbiter/games/{game_id:str}", media_type=MediaType.HTML, status_code=200)
    async def arbiter_form(
        self,
        request: Request[Any, Any, Any],
        game_id: FromPath[str],
        games: NamedDependency[GameService],
    ) -> Response[str]:
        """A browser without JavaScript: the key, the version and the perspective posted by
        the page's own forms."""
        if (missing := await _missing(request, games, game_id)) is not None:
            return missing
        form = await request.form()
        if (twice := field_twice(form.multi_items())) is not None:
            # which of the two would count is the reader's guess, as in a query
            raise invalid(twice, "given twice with different values: send it once", "body")
        key = str(form.get("key") or "") or None
        refused = await _operator(_runtime(request).seating, key)
        if refused is not None:
            return _html(shell(game_id, refused))
        slider = _number(form.get("slider"), "slider", least=1)
        stepped = _number(form.get("version"), "version", least=1)
        version = slider if form.get("show") else stepped
        perspective = _perspective(form.get("perspective"), "perspective", "body")
        named = ("perspective", "body")
        if perspective is None:
            perspective, named = _perspective(form.get("as"), "as", "body"), ("as", "body")
        chosen = _number(form.get("print"), "print")
        shown = await record(_runtime(request).reviews, game_id, version, perspective, named)
        shown = Record(**{**shown.__dict__, "key": key})
        if chosen is not None:
            return _html(printable(shown, _finding(game_id, chosen, len(shown.findings))))
        return _html(whole(shown))


def _asset_headers(response: Response[Any]) -> Response[Any]:
    """The page's files are never sniffed into another type, and are checked with the server
    before each use (`no-cache`), so an upgrade's script is never mixed with an old page."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = CSP
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


def named_file(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """A file's path with a NUL in it names no file: a 404, as any path serving nothing
    (the file system refuses such a name, and the static router let that be a 500)."""
    if "\x00" in connection.scope["path"]:
        raise NotFoundException("no such file")


def static() -> Router:
    return create_static_files_router(
        path="/pages/static",
        guards=[named_file],
        directories=[STATIC],
        include_in_schema=False,
        name="page-assets",
        exception_handlers=NO_FILE,
        cache_control=CacheControlHeader(no_cache=True),
        after_request=_asset_headers,
    )
