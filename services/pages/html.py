"""The pieces every page is built of: escaped text, cards with their spoken names, and the
page's frame, which loads its script and style from /pages/static (no inline script or
style anywhere, so the Content-Security-Policy can forbid them)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from domain.cards import Card
from services.pages.words import card_name, card_sign

STATIC_PATH = "/pages/static"

# Only the page's own files: no inline script, no inline style, no other origin.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


def text(value: object) -> str:
    return escape(str(value), quote=True)


def card(c: Card) -> str:
    suit = {"S": "spades", "H": "hearts", "D": "diamonds", "C": "clubs"}[c[-1]]
    return (
        f'<span class="card {suit}" data-card="{text(c)}" role="img" '
        f'aria-label="{text(card_name(c))}">{text(card_sign(c))}</span>'
    )


# The pages' icon, in the page itself: a browser that finds no <link rel="icon"> asks for
# /favicon.ico, and its 404 is an error in the console of every page.
ICON = (
    "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E"
    "%3Crect x='2' y='1' width='12' height='14' rx='2' fill='%23fff' stroke='%23b00020'/%3E"
    "%3Ctext x='8' y='12' font-size='10' text-anchor='middle' fill='%23b00020'%3E%E2%99%A5"
    "%3C/text%3E%3C/svg%3E"
)

BACK = '<span class="card back" role="img" aria-label="a hidden card">🂠</span>'


def cards(cs: Sequence[Card] | None, hidden: int = 0) -> str:
    if cs is None:
        return " ".join(BACK for _ in range(hidden)) or "—"
    return " ".join(card(c) for c in cs) or "—"


def page(title: str, body: str, *, script: str | None, kind: str, game_id: str) -> str:
    loads = f'<script src="{STATIC_PATH}/{script}" defer></script>' if script else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{text(title)}</title>"
        f'<link rel="icon" type="image/svg+xml" href="{ICON}">'
        f'<link rel="stylesheet" href="{STATIC_PATH}/pages.css">'
        f"{loads}</head>"
        f'<body data-page="{kind}" data-game="{text(game_id)}">{body}</body></html>'
    )
