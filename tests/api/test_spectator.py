"""A public table's spectator once the game is over (README "The API"): the replay, the audit
and the verification open to it as to the seats; a classic game shows it the whole table,
a closed-discard game keeps the face-down cards and the seed from it, as from every seat
that did not play them."""

from __future__ import annotations

from tests.api.conftest import FIRST_TRICK, THIRTY_ONE_DECK, Api, Body, cards_in

# Seat 1 draws out of turn right after the first trick: a penalty ends the game (match to 1).
PENALISED: list[tuple[int, Body]] = [*FIRST_TRICK, (1, {"type": "draw"})]


async def finished_game(api: Api, rules: Body) -> tuple[str, dict[str, str], Body]:
    table = await api.create(rules=rules, seed="spectator-seed-kept-secret")
    for path in ("replay", "audit", "verify"):
        early = await api.client.get(f"/games/{table.game_id}/{path}", headers=table.watcher)
        assert early.status_code == 403 and early.json()["code"] == "forbidden"
    for seat, command in PENALISED:
        await api.play(table, seat, command)
    assert (await api.view(table))["status"] == "finished"
    return table.game_id, table.watcher, await api.get(f"/games/{table.game_id}/audit")


async def test_after_a_classic_game_the_spectator_sees_the_whole_table(api: Api) -> None:
    game, watcher, arbiter_audit = await finished_game(api, {})
    replay = await api.get(f"/games/{game}/replay", watcher, version=10)
    assert replay["view"]["viewer"] == "arbiter"  # every hand, the stock, the piles
    assert replay["view"]["stock"] and all(s["hand"] for s in replay["view"]["seats"])
    # the whole audit, but the commands' keys, which only the operator reads
    keyless = [{**f, "command_id": None} for f in arbiter_audit["findings"]]
    assert await api.get(f"/games/{game}/audit", watcher) == {**arbiter_audit, "findings": keyless}
    assert (await api.get(f"/games/{game}/verify", watcher))["ok"] is True
    assert (await api.get(f"/games/{game}", watcher))["seed"] == "spectator-seed-kept-secret"


async def test_after_a_closed_discard_game_the_spectator_sees_what_it_saw(api: Api) -> None:
    game, watcher, arbiter_audit = await finished_game(api, {"closed_discard": True})
    [penalty] = arbiter_audit["findings"]
    assert penalty["rule"] == "out_of_turn_draw" and penalty["cards"]
    [seen] = (await api.get(f"/games/{game}/audit", watcher))["findings"]
    assert seen["cards"] is None  # what seat 1 took stays with seat 1 (and the arbiter)
    assert {k: v for k, v in seen.items() if k not in ("cards", "command_id")} == {
        k: v for k, v in penalty.items() if k not in ("cards", "command_id")
    }
    assert penalty["command_id"] and seen["command_id"] is None
    for version in (1, 10, 14):
        replay = await api.get(f"/games/{game}/replay", watcher, version=version)
        assert replay["view"]["viewer"] == "spectator"
        assert all(s["hand"] is None for s in replay["view"]["seats"])
        assert replay["view"]["stock"] is None and replay["view"]["seed"] is None
    dealt = set(THIRTY_ONE_DECK)
    everything = await api.get(f"/games/{game}/events", watcher)
    assert "spectator-seed-kept-secret" not in str(everything)
    # the lead and the turned trump; the answer 6H 7H 8H did not beat, so it lay face down
    assert set(cards_in(everything)) & dealt == {"AS", "10S", "KS", "6C"}
    assert (await api.get(f"/games/{game}/verify", watcher))["ok"] is True
