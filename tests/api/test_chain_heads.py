"""The record's chain head in every answer and view, and who may see it raw (fairness.md §4).

A raw row hash is a test for guesses: a row hiding a card has little else its viewer does
not know, so a seat holding the hashes around it could try each card. So seats and the
spectator get the head only once nothing in the record is hidden from them, and a receipt
(HMAC of the head under a key the game's seed gives) all along."""

from __future__ import annotations

from domain.chain import receipt, receipt_key
from tests.api.bundles import record
from tests.api.conftest import OPERATOR, THIRTY_ONE_GAME, Api, bearer


async def test_seats_get_receipts_while_the_game_hides_cards_and_the_head_once_it_is_over(
    api: Api,
) -> None:
    table = await api.create()
    seen: list[str] = []  # every answer a seat or the spectator was given
    for seat, command in THIRTY_ONE_GAME:
        answer = await api.send(table, seat, command)
        seen.append(answer.text)
        for headers in (table.seat(0), table.seat(1), table.watcher):
            seen.append((await api.client.get(f"/games/{table.game_id}", headers=headers)).text)
            seen.append(
                (await api.client.get(f"/games/{table.game_id}/events", headers=headers)).text
            )
    rows = await api.store.read(table.game_id)
    hashes = [r.hash.hex() for r in rows]
    before_the_end = "".join(seen[:-7])  # the last command ended the game: all is out
    assert not [h for h in hashes if h in before_the_end]

    key = receipt_key("api-tests")  # the seed, revealed now the game is over
    final = await api.view(table, table.seat(1))
    assert final["chain_head"] == hashes[-1]
    assert final["receipt"] == receipt(key, rows[-1].hash)
    for version in (1, 12, len(rows)):
        replayed = await api.get(f"/games/{table.game_id}/replay", table.seat(0), version=version)
        assert replayed["view"]["chain_head"] == hashes[version - 1]
        assert replayed["view"]["receipt"] == receipt(key, rows[version - 1].hash)


async def test_every_answer_carries_the_receipt_of_the_version_it_made(api: Api) -> None:
    table = await api.create()
    key = receipt_key("api-tests")
    for seat, command in THIRTY_ONE_GAME[:6]:
        answer = await api.play(table, seat, command)
        rows = await api.store.read(table.game_id)
        assert answer["version"] == rows[-1].version and answer["chain_head"] is None
        assert answer["receipt"] == receipt(key, rows[-1].hash)
    operator = await api.view(table)
    assert operator["chain_head"] == rows[-1].hash.hex()
    assert operator["receipt"] == answer["receipt"]


async def test_closed_discard_keeps_the_raw_hashes_from_seats_even_after_the_game(
    api: Api,
) -> None:
    game_id = await record(api.store, "closed_discard")
    tokens, spectator = await api.service.seating.issue(game_id, 2)
    rows = await api.store.read(game_id)
    hashes = [r.hash.hex() for r in rows]
    for token in (*tokens, spectator):
        headers = bearer(token)
        answers = [
            await api.client.get(f"/games/{game_id}{path}", headers=headers)
            for path in ("", "/events", "/audit", "/verify", "/bundle", "/replay?version=9")
        ]
        assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
        text = "".join(a.text for a in answers)
        assert not [h for h in hashes if h in text]
        assert answers[0].json()["chain_head"] is None and answers[0].json()["receipt"]
        assert answers[3].json()["chain"]["ok"] and answers[3].json()["chain"]["head"] is None
    full = await api.client.get(f"/games/{game_id}/verify", headers=OPERATOR)
    assert full.json()["chain"]["head"] == hashes[-1]
