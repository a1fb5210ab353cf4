"""Views as JSON, for every test tier: what only a live view has."""

from __future__ import annotations

from typing import Any

PRESENCE = ("connected", "connected_since", "away_since", "abandon_at")


def table_only(shown: dict[str, Any]) -> dict[str, Any]:
    """A view without the seats' presence, which only a live view has: a replay, or a view
    folded by the client, is of the table, not of who was watching it."""
    seats = [{k: v for k, v in s.items() if k not in PRESENCE} for s in shown["seats"]]
    return {**shown, "seats": seats}
