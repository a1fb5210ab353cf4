"""`bura audit` and `bura replay` in words and in JSON: seat names, the stock in order, the
piles counted, and what the table was really waiting for (a false 31 at the lead waits for
the leader to lead; it is no "due to draw")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from domain.evolve import replay
from domain.views import ARBITER, view
from services.app.codec import from_recorded
from tests import servers
from tests.api.conftest import FIRST_TRICK, Api, app_on, serving
from tests.api.test_cli import Where, bura, opened, rows


def game_with_findings(where: Where) -> str:
    """Seat 1 draws out of turn in deal 1; the leader of deal 2 declares 31 at once."""

    async def play() -> str:
        adapters = await opened(where)
        app = app_on(adapters)
        try:
            async with serving(app) as client:
                api = Api(client, app, adapters)
                table = await api.create(rules={"match_target": 2})
                for seat, command in [*FIRST_TRICK, (1, {"type": "draw"})]:
                    await api.play(table, seat, command)
                shown = await api.get(f"/games/{table.game_id}")
                await api.play(table, shown["turn"], {"type": "declare", "claim": "thirty_one"})
                return table.game_id
        finally:
            await adapters.close()

    return servers.run_async(play)


@pytest.fixture
def where(tmp_path: Path) -> Where:
    return {"BURA_SQLITE_PATH": str(tmp_path / "games.db")}


def test_audit_says_what_the_table_waited_for_with_names_and_the_counted_pile(
    where: Where, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    game = game_with_findings(where)
    code, out = bura(monkeypatch, capsys, where, "audit", game)
    assert code == 0
    draw, claim = out.split("\ndeal 2: ")
    assert "deal 1: out_of_turn_draw by seat 1 (p1)" in draw
    assert "waiting for seat 0 (p0) to draw" in draw and "due to draw: seat 0 (p0)" in draw
    assert "cards taken: " in draw
    assert claim.startswith("false_declaration by seat ")
    assert " to lead;" in claim and "draw" not in claim  # no "due to draw" at the lead
    assert "claimed thirty_one: had 0, needed 31" in claim
    assert "counted pile: no trick taken (0 points)" in claim


def test_audit_as_json_has_the_seats_and_every_finding(
    where: Where, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    game = game_with_findings(where)
    code, out = bura(monkeypatch, capsys, where, "audit", game, "--json")
    assert code == 0
    told = json.loads(out)
    assert told["game_id"] == game and told["seats"] == ["p0", "p1"]
    draw, claim = told["findings"]
    assert (draw["rule"], draw["due"], draw["phase"]) == ("out_of_turn_draw", 0, "draw")
    assert (claim["rule"], claim["phase"], claim["pile"]) == ("false_declaration", "lead", [])
    assert len(draw["cards"]) == 1 and draw["request_id"]


def test_replay_shows_names_the_stock_in_order_and_the_piles(
    where: Where, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    game = game_with_findings(where)
    events = [from_recorded(r) for r in rows(where, game)]
    at = 13  # seat 0 has taken the first trick, and is due to draw
    whole = view(replay(events[:at]), ARBITER)
    assert whole.stock is not None
    code, out = bura(monkeypatch, capsys, where, "replay", game, "--version", str(at))
    assert code == 0
    assert "dealer seat 1 (p1)" in out and "waiting for seat 0 (p0) to draw" in out
    assert "due to draw: seat 0 (p0), seat 1 (p1)" in out  # by name, as everywhere
    assert f"stock, top first: {' '.join(whole.stock)}" in out
    assert "pile: AS 10S KS 6H 7H 8H (25 card points)" in out
    code, out = bura(monkeypatch, capsys, where, "replay", game, "--version", str(at), "--json")
    assert code == 0
    told = json.loads(out)
    assert told["version"] == at and told["view"]["stock"] == list(whole.stock)
    assert [s["name"] for s in told["view"]["seats"]] == ["p0", "p1"]
    assert told["view"]["seats"][0]["pile"] == ["AS", "10S", "KS", "6H", "7H", "8H"]
