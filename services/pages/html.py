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


BACK = '<span class="card back" role="img" aria-label="a hidden card">🂠</span>'


def cards(cs: Sequence[Card] | None, hidden: int = 0) -> str:
    if cs is None:
        return " ".join(BACK for _ in range(hidden)) or "—"
    return " ".join(card(c) for c in cs) or "—"


def page(title: str, body: str, *, script: str, kind: str, game_id: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{text(title)}</title>"
        f'<link rel="stylesheet" href="{STATIC_PATH}/pages.css">'
        f'<script src="{STATIC_PATH}/{script}" defer></script></head>'
        f'<body data-page="{kind}" data-game="{text(game_id)}">{body}</body></html>'
    )
