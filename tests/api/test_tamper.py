"""A record edited behind the server's back, with SQL on the tables of each store: a payload
changed, a row deleted, two rows swapped, a seed changed. `GET /games/{id}/verify` finds
each and names the first version that does not hold; one who also rewrites every hash
after the change still meets the deal's commitments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services import cli
from services.app.bundle import make_bundle
from services.app.bundle_check import check_bundle
from services.http.contract import operations
from services.http.problems import PROBLEM_JSON
from tests.api.conftest import (
    FIRST_TRICK,
    OPERATOR,
    THIRTY_ONE_GAME,
    Api,
    Body,
    Table,
    app_on,
    serving,
)
from tests.tampering import Tables


async def played(api: Api, seats_shuffle: bool = False) -> Table:
    """A finished game: the classic 31 walk-through, or a seat-shuffled game of two deals."""
    if not seats_shuffle:
        table = await api.create()
        for seat, command in THIRTY_ONE_GAME:
            await api.play(table, seat, command)
        return table
    table = await api.create(
        rules={"shuffle": "seats", "match_target": 2}, deck=None, dealer=1, seed="tamper"
    )
    while (view := await api.view(table))["status"] != "finished":
        if view["phase"] == "seeding":
            deal = view["deal"]
            for seat in (1, 0) if deal % 2 == 0 else (0, 1):
                seed: Body = {"type": "seed", "value": f"seat {seat}: deal {deal}"}
                await api.play(table, seat, seed, key=f"seed-{deal}-{seat}")
        else:  # the seat due gives the deal up
            await api.play(table, view["turn"], {"type": "concede"})
    return table


async def verified(api: Api, table: Table) -> Body:
    return await api.get(f"/games/{table.game_id}/verify")


async def version_of(api: Api, table: Table, kind: str, holding: str = "") -> int:
    """The first row of this type (whose payload holds `holding`)."""
    rows = await api.store.read(table.game_id)
    return next(r.version for r in rows if r.type == kind and holding.encode() in r.data)


async def test_an_untouched_record_verifies_on_both_shuffles(api: Api) -> None:
    for table in (await played(api), await played(api, seats_shuffle=True)):
        report = await verified(api, table)
        assert (
            report["ok"] and report["chain"]["ok"] and report["chain"]["first_bad_version"] is None
        )
        assert report["chain"]["head"] == (await api.view(table))["chain_head"]
        assert report["deals"] and all(d["ok"] for d in report["deals"])


async def test_an_edited_payload_is_found_at_its_version(api: Api) -> None:
    table = await played(api)
    lead = await version_of(api, table, "cards_led")
    await Tables(api.store).edit(table.game_id, lead, '"AS"', '"KS"')

    report = await verified(api, table)

    assert not report["ok"] and report["chain"]["first_bad_version"] == lead
    assert "does not hash" in report["chain"]["problem"]


async def test_a_deleted_row_is_found_where_it_is_missing(api: Api) -> None:
    table = await played(api)
    await Tables(api.store).delete(table.game_id, 12)

    report = await verified(api, table)

    assert not report["ok"] and report["chain"]["first_bad_version"] == 12
    assert "version 12 is missing" in report["chain"]["problem"]


async def test_two_swapped_rows_are_found_at_the_first_of_them(api: Api) -> None:
    table = await played(api)
    await Tables(api.store).swap(table.game_id, 20, 23)

    report = await verified(api, table)

    assert not report["ok"] and report["chain"]["first_bad_version"] == 20


@pytest.mark.parametrize("forger", ["plain", "rechained"])
async def test_a_changed_seat_seed_is_found(api: Api, forger: str) -> None:
    table = await played(api, seats_shuffle=True)
    sent = await version_of(api, table, "seed_sent", "seat 1: deal 2")
    closed = await version_of(api, table, "seeding_closed", "seat 1: deal 2")
    tables = Tables(api.store)
    await tables.edit(table.game_id, sent, "seat 1: deal 2", "seat 1: forged")
    await tables.edit(table.game_id, closed, "seat 1: deal 2", "seat 1: forged")
    if forger == "rechained":
        await tables.rechain(table.game_id)

    report = await verified(api, table)

    assert not report["ok"]
    if forger == "plain":
        assert report["chain"]["first_bad_version"] == sent
    else:  # the chain holds, but the deal's seeds no longer give its committed deck
        assert report["chain"]["ok"]
        bad = [d for d in report["deals"] if not d["ok"]]
        assert [d["number"] for d in bad] == [2]
        assert bad[0]["version"] == closed + 1 and not bad[0]["commitment_ok"]


@pytest.mark.parametrize("forger", ["plain", "rechained"])
async def test_a_changed_game_seed_is_found(api: Api, forger: str) -> None:
    table = await played(api)
    tables = Tables(api.store)
    await tables.edit(table.game_id, 1, '"seed":"api-tests"', '"seed":"api-forged"')
    await tables.edit(
        table.game_id, await version_of(api, table, "game_finished"), "api-tests", "api-forged"
    )
    if forger == "rechained":
        await tables.rechain(table.game_id)

    report = await verified(api, table)

    assert not report["ok"]
    if forger == "plain":
        assert report["chain"]["first_bad_version"] == 1
    else:
        assert report["chain"]["ok"] and [d["ok"] for d in report["deals"]] == [False]


@pytest.mark.parametrize("kind", ["trump_turned", "card_drawn"])
async def test_a_card_changed_and_every_hash_rewritten_is_found_by_playing_the_record_back(
    api: Api, kind: str
) -> None:
    """The forger changes a card the table turned or a seat drew and rewrites every hash:
    the chain holds, and the deal's commitment (to the deck) too, but the card is not the
    one the stock held there. Verify plays the record back and names that row."""
    table = await played(api)
    rows = await api.store.read(table.game_id)
    row = next(r for r in rows if r.type == kind)
    card = json.loads(row.data)["card"]
    tables = Tables(api.store)
    await tables.rewrite(table.game_id, kind, card="AC" if card != "AC" else "AD")
    await tables.rechain(table.game_id)

    report = await verified(api, table)

    assert report["chain"]["ok"] and all(d["ok"] for d in report["deals"])
    assert not report["ok"]
    playback = report["playback"]
    assert not playback["ok"] and playback["first_bad_version"] == row.version
    assert f"event {row.version} ({kind}) cannot apply" in playback["problem"]


async def test_an_outcome_rewritten_with_every_hash_is_found_by_deciding_each_act_again(
    api: Api, tmp_path: Path
) -> None:
    """The forger gives the game to the loser: the deal's end, its settlement and the game's
    winners rewritten, every hash after them recomputed. The chain holds, every deal's
    commitment too, and each row folds: only the rules, deciding each act again on the
    table before it, show that the declaration of 31 won the deal for seat 0. Verify names
    the row, the evidence reads refuse the record, and so does a bundle written of it."""
    table = await played(api)
    tables = Tables(api.store)
    await tables.rewrite(table.game_id, "deal_won", seat=1)
    await tables.rewrite(table.game_id, "stake_settled", payments=[-1, 1])
    await tables.rewrite(table.game_id, "game_finished", winners=[1])
    await tables.rechain(table.game_id)
    won = await version_of(api, table, "deal_won")

    report = await verified(api, table)
    assert report["chain"]["ok"] and all(d["ok"] for d in report["deals"])
    assert not report["ok"] and report["playback"]["first_bad_version"] == won
    assert f"event {won} (deal_won) is not what the rules decide" in report["playback"]["problem"]
    assert "the rules decide deal_won (seat 0" in report["playback"]["problem"]
    for read in ("replay", "audit", "bundle"):
        refused = await api.client.get(f"/games/{table.game_id}/{read}", headers=OPERATOR)
        assert refused.status_code == 500, read
        assert refused.json()["code"] == "record_broken"
        assert f"event {won} (deal_won) is not what the rules decide" in refused.json()["detail"]

    forged = make_bundle(table.game_id, await api.store.read(table.game_id))
    report_of_file = check_bundle(forged)
    assert not report_of_file.ok
    assert report_of_file.problems[0].where == f"events[{won - 1}] (version {won})"
    path = tmp_path / "forged.bura.json"
    path.write_bytes(forged)
    assert cli.main(["verify-bundle", str(path)]) == 1


async def test_a_record_that_no_longer_folds_is_named_on_every_read_and_command(
    api: Api,
) -> None:
    """A row edited so that it still reads but cannot apply to the table before it (a card
    dealt to a seat the table does not have): every read of the game and every command on
    it answers `record_broken`, naming the event and where to look, instead of an
    internal error; `verify` still reports, and every other game is served as ever."""
    broken, other = await api.create(), await api.create()
    tables = Tables(api.store)
    dealt = await version_of(api, broken, "card_dealt")
    await tables.rewrite(broken.game_id, "card_dealt", seat=7)
    game = f"/games/{broken.game_id}"
    async with serving(app_on(api.adapters)) as fresh:  # nothing of the game cached
        asked = [
            ("GET", game, OPERATOR),
            ("GET", game, broken.seat(0)),
            ("GET", f"{game}/events", broken.seat(1)),
            ("GET", f"{game}/replay", OPERATOR),
            ("GET", f"{game}/audit", OPERATOR),
            ("GET", f"{game}/bundle", OPERATOR),
            ("POST", f"{game}/commands", broken.seat(0)),
        ]
        for method, path, headers in asked:
            body = b'{"type": "lead", "cards": ["AS"]}' if method == "POST" else None
            answer = await fresh.request(
                method, path, headers={**headers, "Content-Type": "application/json"}, content=body
            )
            assert answer.status_code == 500, (method, path, answer.text)
            problem = answer.json()
            assert problem["code"] == "record_broken", problem
            assert f"event {dealt} (card_dealt) cannot apply" in problem["detail"]
            assert f"GET {game}/verify" in problem["detail"]
        report = (await fresh.get(f"{game}/verify", headers=OPERATOR)).json()
        assert not report["ok"] and report["chain"]["first_bad_version"] == dealt
        served = await fresh.get(f"/games/{other.game_id}", headers=other.seat(0))
        assert served.status_code == 200 and served.json()["hand"]


async def test_every_operation_on_a_game_documents_the_broken_record_it_can_answer(
    api: Api,
) -> None:
    """Each operation of the published document under /games/{game_id}, asked by a seat and
    by the operator on a game whose record no longer folds: the ones that answer
    `record_broken` are exactly those whose 500 documents it, with its example."""
    broken = await api.create()
    await Tables(api.store).rewrite(broken.game_id, "card_dealt", seat=7)
    answering, documenting = set(), set()
    async with serving(app_on(api.adapters)) as fresh:  # nothing of the game cached
        doc = (await fresh.get("/schema/openapi.json")).json()
        for path, method, operation in operations(doc):
            examples = operation["responses"].get("500", {}).get("content", {})
            if "record_broken" in examples.get(PROBLEM_JSON, {}).get("examples", {}):
                documenting.add(operation["operationId"])
            if not path.startswith("/games/{game_id}"):
                continue
            url = path.format(game_id=broken.game_id, command_id="k1")
            body = b'{"type": "lead", "cards": ["AS"]}' if path.endswith("/commands") else b"{}"
            for token in (broken.seat(0), OPERATOR):
                headers = {**token, "Content-Type": "application/json", "Idempotency-Key": "k1"}
                sent = body if method == "post" else None
                async with fresh.stream(method.upper(), url, headers=headers, content=sent) as got:
                    if got.status_code != 500:
                        continue
                    problem = json.loads(await got.aread())
                    assert problem["code"] == "record_broken", (path, problem)
                    answering.add(operation["operationId"])
    assert answering == documenting
    assert {"getView", "sendCommand", "streamView", "getReplay", "startRematch"} <= answering


async def test_a_row_that_is_no_event_is_named_on_every_read_and_the_feed_stays_json(
    api: Api,
) -> None:
    """A payload overwritten with what is not JSON (or JSON of no event): every read of
    the game answers `record_broken` naming the row and what is wrong with it, where it was
    an internal error; `verify` names the row; the operator's feed goes on for every game,
    that row's `event` null (it had copied the bytes into the line, which then was no JSON
    and stopped every consumer's parser)."""
    for payload, says in (
        (b"{not json", "is not JSON"),
        (b'{"type": "no_such"}', "is no event this server reads"),
    ):
        broken, other = await api.create(), await api.create()
        spoilt = await version_of(api, broken, "card_dealt")
        await Tables(api.store).overwrite(broken.game_id, spoilt, payload)
        game = f"/games/{broken.game_id}"
        async with serving(app_on(api.adapters)) as fresh:  # nothing of the game cached
            for path in (game, f"{game}/audit", f"{game}/replay"):
                answer = await fresh.get(path, headers=OPERATOR)
                assert answer.status_code == 500, (path, answer.text)
                problem = answer.json()
                assert problem["code"] == "record_broken", problem
                assert f"event {spoilt} (card_dealt) {says}" in problem["detail"], problem
            report = (await fresh.get(f"{game}/verify", headers=OPERATOR)).json()
            assert not report["ok"] and report["unreadable_version"] == spoilt
            feed = await fresh.get("/events?follow=false&format=ndjson", headers=OPERATOR)
            assert feed.status_code == 200
            entries = [json.loads(line) for line in feed.text.splitlines() if line.strip()]
            mine = {(e["game_id"], e["version"]): e for e in entries}
            assert (broken.game_id, spoilt) in mine and (other.game_id, 1) in mine
            shown = mine[(broken.game_id, spoilt)]["event"]
            assert shown is None if says == "is not JSON" else shown == {"type": "no_such"}
            served = await fresh.get(f"/games/{other.game_id}", headers=other.seat(0))
            assert served.status_code == 200


async def test_a_payload_kept_as_text_by_a_hand_edit_is_still_read(api: Api) -> None:
    """SQLite keeps whatever type a value is written with: a payload cast to TEXT by hand,
    its bytes unchanged, is read as those bytes (it stopped every read, the feed and the
    CLI with a TypeError); the chain shows nothing changed, and the game plays on."""
    table = await api.create()
    dealt = await version_of(api, table, "card_dealt")
    await Tables(api.store).as_text(table.game_id, dealt)
    game = f"/games/{table.game_id}"
    async with serving(app_on(api.adapters)) as fresh:
        report = (await fresh.get(f"{game}/verify", headers=OPERATOR)).json()
        assert report["ok"], report
        assert (await fresh.get(game, headers=table.seat(0))).status_code == 200
        feed = await fresh.get("/events?follow=false&format=ndjson", headers=OPERATOR)
        assert any(json.loads(line)["game_id"] == table.game_id for line in feed.text.splitlines())


async def test_rows_removed_from_the_end_of_a_finished_game_are_found_by_the_index(
    api: Api,
) -> None:
    """Rows cut from the end of a record leave a valid chain; but the games index, written
    apart from the rows, holds the game as finished: `verify` says the record ends before
    the game's end (it said ok, and the game showed as in progress)."""
    table = await api.create()
    await api.play(table, 0, {"type": "concede"})
    rows = await api.store.read(table.game_id)
    end = next(r.version for r in rows if r.type == "game_finished")
    for version in range(rows[-1].version, end - 1, -1):
        await Tables(api.store).delete(table.game_id, version)
    async with serving(app_on(api.adapters)) as fresh:
        report = (await fresh.get(f"/games/{table.game_id}/verify", headers=OPERATOR)).json()
    assert not report["ok"]
    chain = report["chain"]
    assert not chain["ok"] and chain["first_bad_version"] == end
    assert "removed from its end" in chain["problem"]
    # A replica that loads it takes no command over the cut (it took one, and wrote new
    # history after it), and shows no evidence of what is left as if it were whole.
    game = f"/games/{table.game_id}"
    async with serving(app_on(api.adapters)) as fresh:
        for method, path, headers in (
            ("GET", game, table.seat(0)),
            ("POST", f"{game}/commands", table.seat(1)),
            ("GET", f"{game}/replay", OPERATOR),
            ("GET", f"{game}/audit", OPERATOR),
        ):
            body = b'{"type": "concede"}' if method == "POST" else None
            answer = await fresh.request(
                method, path, headers={**headers, "Content-Type": "application/json"}, content=body
            )
            assert answer.status_code == 500, (method, path, answer.text)
            assert answer.json()["code"] == "record_broken"
            assert "rows were removed from its end" in answer.json()["detail"]
    assert [r.version for r in await api.store.read(table.game_id)][-1] == end - 1
    # an untouched finished game still verifies
    other = await api.create()
    await api.play(other, 0, {"type": "concede"})
    assert (await api.get(f"/games/{other.game_id}/verify"))["ok"]


@pytest.mark.parametrize("edit", ["deleted", "swapped", "edited"])
async def test_the_evidence_is_refused_of_a_record_whose_chain_breaks(api: Api, edit: str) -> None:
    """The replay, the audit, the bundle and the arbiter's page show a record as the server
    wrote it, or not at all: a row deleted (which renumbered every version after it and
    put a finding on the wrong event), moved or edited is `500 record_broken`, naming where
    the chain breaks, even while the game plays on from the copy a replica holds; `verify`
    still gives its report."""
    table = await played(api)
    tables = Tables(api.store)
    if edit == "deleted":
        await tables.delete(table.game_id, 12)
        at, problem = 12, "version 12 is missing"
    elif edit == "swapped":
        await tables.swap(table.game_id, 20, 23)
        at, problem = 20, "does not hash"
    else:
        at = await version_of(api, table, "cards_led")
        await tables.edit(table.game_id, at, '"AS"', '"KS"')
        problem = "does not hash"
    game = f"/games/{table.game_id}"
    for path in (
        f"{game}/replay",
        f"{game}/replay?version=3",
        f"{game}/audit",
        f"{game}/bundle",
        f"/arbiter/games/{table.game_id}",
    ):
        answer = await api.client.get(path, headers=OPERATOR)
        assert answer.status_code == 500, (path, answer.text)
        refused = answer.json()
        assert refused["code"] == "record_broken", refused
        assert f"its hash chain breaks at version {at}" in refused["detail"], refused
        assert problem in refused["detail"] and f"GET {game}/verify" in refused["detail"]
    report = await verified(api, table)
    assert not report["ok"] and report["chain"]["first_bad_version"] == at


async def test_a_replica_loading_a_record_with_a_row_missing_refuses_it(api: Api) -> None:
    """A row removed from the middle of a game that still folds (here: the last row moved
    one version up) left every later version renumbered by one on a replica that loaded
    it, and its next command met a conflict; it is `record_broken` naming the gap."""
    table = await api.create()
    for seat, command in FIRST_TRICK:
        await api.play(table, seat, command)
    last = (await api.store.read(table.game_id))[-1].version
    await Tables(api.store).move(table.game_id, last, last + 1)
    game = f"/games/{table.game_id}"
    async with serving(app_on(api.adapters)) as fresh:  # nothing of the game cached
        for method, path, headers in (
            ("GET", game, OPERATOR),
            ("POST", f"{game}/commands", table.seat(0)),
        ):
            body = b'{"type": "draw"}' if method == "POST" else None
            answer = await fresh.request(
                method, path, headers={**headers, "Content-Type": "application/json"}, content=body
            )
            assert answer.status_code == 500, (method, path, answer.text)
            assert answer.json()["code"] == "record_broken"
            assert f"version {last} is missing from the record" in answer.json()["detail"]
