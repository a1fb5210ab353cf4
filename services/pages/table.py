"""A seat's table page: a frame only. table.js asks for a stream ticket with the seat's
token and draws the seat's own view (the API's, redacted by domain/views.py) as it comes;
nothing of any game is in this HTML."""

from __future__ import annotations

from services.pages.html import page, text

# What the page says when a token reached the server (it is never echoed back).
NEEDS_SCRIPT = (
    "This table needs JavaScript: allow this page's script, reload, and enter the token again."
)
IN_A_LINK = (
    "A seat token does not belong in a link: anyone who sees the address, the history or a "
    "log has it. Share /play/{id}#seat=<token> instead, and treat this token as seen."
)


def no_such_game(game_id: str) -> str:
    """What a person who opens a link to a game this server does not hold reads (a 404)."""
    body = (
        f"<header><h1>Bura · game <code>{text(game_id)}</code></h1></header>"
        '<main><p class="problem">This server holds no game with that id.</p>'
        "<p>The link may be mistyped or cut short, or the game may be on another server. "
        "Ask whoever gave you the link for it again.</p></main>"
    )
    return page("Bura · no such game", body, script=None, kind="missing", game_id=game_id)


def table_page(game_id: str, said: str | None = None, quiet_seconds: float = 30.0) -> str:
    """`said`: a note for the status line (`{id}` in it stands for this game); never
    anything the request carried. The form posts (body, not URL) when table.js has not
    taken it over. `quiet_seconds`: how long table.js lets its stream say nothing before
    it asks after the game with a read (two of the server's keep-alive periods: the
    keep-alives are comments, which EventSource never hands on)."""
    said = (said or "").replace("{id}", game_id)
    body = (
        f"<header><h1>Bura · game <code>{text(game_id)}</code></h1></header>"
        '<main><form id="token-form" method="post"><label>Your seat token '
        '<input type="password" name="token" autocomplete="off" required></label> '
        '<button type="submit">Sit down</button>'
        '<p class="note">Kept in this tab only (sessionStorage).</p></form>'
        f'<p id="status" role="status" aria-live="polite">{text(said)}</p>'
        # what the other seats did and whose turn it is, said as it happens (table.js)
        '<p id="news" aria-live="polite" aria-atomic="true"></p>'
        '<div id="table" data-status="" data-version="0" '
        f'data-quiet="{round(quiet_seconds * 1000)}"></div></main>'
    )
    return page(f"Bura · {game_id}", body, script="table.js", kind="play", game_id=game_id)
