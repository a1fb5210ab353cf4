"""Whole games through HTTP: a win by 31, each penalty, replays and audits of them."""

from __future__ import annotations

import pytest

from tests.api.conftest import FIRST_TRICK, THIRTY_ONE_GAME, Api, Body, Table, table_only


async def play_all(api: Api, table: Table, steps: list[tuple[int, Body]]) -> list[Body]:
    return [await api.play(table, seat, command) for seat, command in steps]


async def test_a_game_played_through_http_to_a_win_by_31(api: Api) -> None:
    table = await api.create()
    start = await api.view(table, table.seat(0))
    assert (start["phase"], start["turn"], start["due"]) == ("lead", 0, "lead")
    assert start["hand"] == ["AS", "10S", "KS"] and start["trump"] == "6C"
    assert start["seed"] is None and len(start["commitment"]) == 64

    answers = await play_all(api, table, THIRTY_ONE_GAME)

    assert [a["version"] for a in answers] == sorted({a["version"] for a in answers})
    final = await api.view(table)
    assert final["version"] == answers[-1]["version"]
    assert (final["status"], final["phase"], final["turn"]) == ("finished", "finished", None)
    assert final["result"] == {"winners": [0], "reason": "thirty_one"}
    assert final["deals"] == [
        {"number": 1, "winners": [0], "losers": [1], "reason": "thirty_one", "stake": 2, "by": 0}
    ]
    assert final["score"] == [2, -2]
    assert final["seed"] == "api-tests"
    last = [e["event"] for e in answers[-1]["events"]]
    assert [e["type"] for e in last] == ["declared", "deal_won", "stake_settled", "game_finished"]
    assert last[0] == {
        "type": "declared",
        "seat": 0,
        "claim": "thirty_one",
        "value": 35,
        "needed": 31,
        "true": True,
        "seen": None,
    }
    assert last[-1] == {
        "type": "game_finished",
        "winners": [0],
        "reason": "thirty_one",
        "seed": "api-tests",
    }
    # Every seat sees the end and the revealed seed; further commands are refused.
    for seat in (0, 1):
        seen = await api.view(table, table.seat(seat))
        assert seen["result"] == final["result"] and seen["seed"] == "api-tests"
    refused = await api.send(table, 1, {"type": "lead", "cards": ["8S"]})
    assert refused.status_code == 409 and refused.json()["code"] == "game_over"
    assert await api.version(table) == final["version"]


# Each faulty draw, made at the opening of the deal or right after the first trick.
PENALTIES = [
    # seat 0 is due to draw and takes two cards at once
    ("double_draw", [*FIRST_TRICK], 0, {"type": "draw", "count": 2}, 0),
    # nobody is due to draw: seat 1 draws with a full hand
    ("extra_card", [], 1, {"type": "draw"}, None),
    # seat 0 is due to draw, seat 1 draws first
    ("out_of_turn_draw", [*FIRST_TRICK], 1, {"type": "draw"}, 0),
]


@pytest.mark.parametrize(
    ("rule", "before", "offender", "draw", "due"), PENALTIES, ids=[p[0] for p in PENALTIES]
)
async def test_a_faulty_draw_loses_the_deal_and_the_audit_names_rule_and_due_seat(
    api: Api,
    rule: str,
    before: list[tuple[int, Body]],
    offender: int,
    draw: Body,
    due: int | None,
) -> None:
    table = await api.create()
    await play_all(api, table, before)
    faulty = await api.send(table, offender, draw)
    assert faulty.status_code == 200, faulty.text
    events = [e["event"] for e in faulty.json()["events"]]
    penalty = events[0]
    assert penalty["type"] == "penalty_applied"
    assert (penalty["rule"], penalty["seat"], penalty["due"]) == (rule, offender, due)
    assert events[1] == {"type": "deal_lost", "seat": offender, "reason": rule}
    final = await api.view(table)
    winner = 1 - offender
    assert final["result"] == {"winners": [winner], "reason": rule}
    assert final["deals"][0]["losers"] == [offender]
    assert final["score"][offender] == -1 and final["score"][winner] == 1

    audit = await api.get(f"/games/{table.game_id}/audit")
    assert audit["version"] == final["version"]
    [finding] = audit["findings"]
    assert (finding["rule"], finding["seat"], finding["due"]) == (rule, offender, due)
    assert finding["text"].startswith("docs/rules.md §4")
    # The evidence: the act and the verdict, judged on the table as it stood before.
    act, verdict = finding["versions"]
    assert act == faulty.json()["events"][0]["version"]
    assert verdict == faulty.json()["events"][1]["version"]
    assert finding["before_version"] == act - 1
    # Seats may read the audit now that the game is over.
    seen = await api.get(f"/games/{table.game_id}/audit", table.seat(winner))
    # all of it but the command's key, which only the operator reads
    assert finding["command_id"] == faulty.json()["command_id"]
    assert seen["findings"] == [{**f, "command_id": None} for f in audit["findings"]]


@pytest.mark.parametrize(
    ("rule", "before", "offender", "draw", "due"), PENALTIES, ids=[p[0] for p in PENALTIES]
)
async def test_with_penalties_rejected_a_faulty_draw_is_refused_and_changes_nothing(
    api: Api,
    rule: str,
    before: list[tuple[int, Body]],
    offender: int,
    draw: Body,
    due: int | None,
) -> None:
    table = await api.create(rules={"penalties": "reject"})
    await play_all(api, table, before)
    ahead = await api.view(table)
    refused = await api.send(table, offender, draw)
    assert refused.status_code == 409
    assert refused.json()["code"] == rule
    assert "refused" in refused.json()["detail"]
    assert await api.view(table) == ahead
    assert (await api.get(f"/games/{table.game_id}/audit"))["findings"] == []


async def test_a_false_declaration_is_audited_with_the_points_the_seat_had(api: Api) -> None:
    table = await api.create()
    await play_all(api, table, [*FIRST_TRICK, *THIRTY_ONE_GAME[2:8]])
    answer = await api.play(table, 0, {"type": "declare", "claim": "thirty_one"})
    assert answer["events"][0]["event"]["true"] is False
    [finding] = (await api.get(f"/games/{table.game_id}/audit"))["findings"]
    assert finding["rule"] == "false_declaration"
    assert (finding["seat"], finding["due"], finding["turn"]) == (0, 0, 0)
    assert (finding["value"], finding["needed"]) == (25, 31)
    assert sorted(finding["pile"]) == sorted(["AS", "10S", "KS", "6H", "7H", "8H"])


async def test_replay_at_every_version_equals_the_live_table(api: Api) -> None:
    table = await api.create()
    live = {table.version: table_only(await api.view(table))}
    for seat, command in THIRTY_ONE_GAME:
        await api.play(table, seat, command)
        current = table_only(await api.view(table))
        live[current["version"]] = current
    final = max(live)
    for version in range(1, final + 1):
        replay = await api.get(f"/games/{table.game_id}/replay", version=version)
        assert replay["version"] == version
        assert replay["view"]["version"] == version
        if version in live:
            assert table_only(replay["view"]) == live[version], version
    latest = await api.get(f"/games/{table.game_id}/replay")
    assert table_only(latest["view"]) == live[final]


async def test_verify_is_ok_after_the_game_and_refused_before(api: Api) -> None:
    shuffled = await api.create(deck=None, dealer=None, seed=None)
    early = await api.client.get(f"/games/{shuffled.game_id}/verify", headers=shuffled.seat(0))
    assert early.status_code == 403
    start = await api.view(shuffled, shuffled.seat(0))
    await api.play(shuffled, start["turn"], {"type": "concede"})
    for headers in (shuffled.seat(0), shuffled.seat(1), shuffled.watcher):
        verified = await api.get(f"/games/{shuffled.game_id}/verify", headers)
        assert verified["ok"] is True
        [deal] = verified["deals"]
        assert deal["commitment"] == start["commitment"]
        assert deal["commitment_ok"] and deal["shuffle_ok"] and not deal["explicit"]

    fixed = await api.create()
    await play_all(api, fixed, THIRTY_ONE_GAME)
    verified = await api.get(f"/games/{fixed.game_id}/verify", fixed.seat(1))
    assert verified["ok"] is True and verified["deals"][0]["explicit"] is True
