"""A seat's table page: a frame only. table.js asks for a stream ticket with the seat's
token and draws the seat's own view (the API's, redacted by domain/views.py) as it comes;
nothing of any game is in this HTML."""

from __future__ import annotations

from services.pages.html import page, text


def table_page(game_id: str) -> str:
    body = (
        f"<header><h1>Bura · game <code>{text(game_id)}</code></h1></header>"
        '<form id="token-form"><label>Your seat token <input type="password" name="token" '
        'autocomplete="off" required></label> <button type="submit">Sit down</button>'
        '<p class="note">Kept in this tab only (sessionStorage).</p></form>'
        '<p id="status" role="status" aria-live="polite"></p>'
        '<main id="table" data-status="" data-version="0"></main>'
    )
    return page(f"Bura · {game_id}", body, script="table.js", kind="play", game_id=game_id)
