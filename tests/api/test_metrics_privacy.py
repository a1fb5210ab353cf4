"""`/metrics` is read without a token: what it counts must not tell of any seat's cards."""

from __future__ import annotations

from tests.api.conftest import Api, stacked

# Dealer 1: seat 0 leads and holds three aces; seat 1 holds a molodka (three clubs, hearts
# are trumps), which it may lead out of turn only if no seat holds a stronger combination.
DECK = stacked(hands=[["AS", "AD", "AC"], ["KC", "QC", "JC"]], trump="6H")


async def test_a_refusal_that_tells_of_another_seat_s_cards_is_counted_apart_from_its_code(
    api: Api,
) -> None:
    """`combination_outranked` tells the refused seat that another holds a stronger
    combination (docs/rules.md §8.8); counted by its code, anyone reading /metrics learned
    that some seat held one. It is counted as `refused`; other refusals keep their code."""
    table = await api.create(rules={"combinations": "czech"}, deck=DECK)
    molodka = {"type": "lead", "cards": ["KC", "QC", "JC"]}
    refused = await api.send(table, 1, molodka)
    assert (refused.status_code, refused.json()["code"]) == (409, "combination_outranked")
    not_held = await api.send(table, 1, {"type": "lead", "cards": ["AS", "AD", "AC"]})
    assert not_held.json()["code"] == "card_not_in_hand"
    metrics = (await api.client.get("/metrics")).text
    assert "combination_outranked" not in metrics
    assert 'bura_commands_total{outcome="refused",type="lead"} 1.0' in metrics
    assert 'bura_commands_total{outcome="card_not_in_hand",type="lead"} 1.0' in metrics
