"""Every variant of docs/rules.md §8 played to its end by bots through the HTTP API.

The bots choose from the arbiter's events folded into a state (they play fair: the
greedy bot reads only what its seat could know), and every move goes in as that seat's
own HTTP command, with its own token, on each event store.
"""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from domain.bots import greedy_bot, random_bot
from domain.events import AnyEvent
from domain.evolve import replay
from domain.legal import claimants, seeding_seats
from tests.api.conftest import Api, cards_in

VARIANTS: dict[str, tuple[int, dict[str, Any]]] = {
    "classic": (2, {}),
    "closed_discard": (2, {"closed_discard": True, "false_declaration": "pay_pot"}),
    "open_seats": (2, {"open_seats": [0], "compensation": 10}),
    "both_open": (2, {"open_seats": [0, 1]}),
    "three_closed_four_open": (2, {"hand_size": [4, 3], "open_seats": [0]}),
    "no_trumps": (2, {"trumps": False, "first_lead_compensation": 10}),
    "czech": (3, {"combinations": "czech"}),
    "deck_32": (2, {"deck": 32}),
    "teams": (4, {"deck": 52, "teams": [[0, 2], [1, 3]], "target_points": 41}),
    "kozel": (4, {"game": "kozel"}),
    "seats_shuffle": (3, {"shuffle": "seats", "match_target": 2}),
}
_events = msgspec.json.Decoder(list[AnyEvent])


@pytest.mark.parametrize("variant", list(VARIANTS))
async def test_a_bot_game_of_every_variant_through_http(api: Api, variant: str) -> None:
    seats, rules = VARIANTS[variant]
    table = await api.create(seats=seats, rules=rules, deck=None, dealer=None, seed=variant)
    chance = random.Random(variant)
    bots = [greedy_bot, random_bot] * 3
    for _ in range(2000):
        page = await api.get(f"/games/{table.game_id}/events")
        state = replay(_events.decode(msgspec.json.encode([e["event"] for e in page["events"]])))
        if state.finished:
            break
        if state.seeding is not None:  # every seat sends its seed with its own token
            seat = seeding_seats(state)[0]
        else:
            assert state.deal is not None
            seat = next(iter(claimants(state)), state.deal.turn)
        command = bots[seat](state, seat, chance)
        await api.play(table, seat, msgspec.to_builtins(command))
    else:
        pytest.fail(f"{variant}: no end after 2000 commands")

    final = await api.view(table)
    assert final["status"] == "finished" and final["result"]["winners"]
    assert final["version"] == state.version
    # The spectator never saw a hand, whatever the variant (open seats excepted).
    watched = await api.view(table, table.watcher)
    hidden_hands = [s for s in watched["seats"] if not s["open"]]
    assert all(s["hand"] is None for s in hidden_hands)
    if variant == "closed_discard":
        # Face-down answers stay hidden from the other seats for ever, game over or not.
        arbiter_events = page["events"]
        face_down = {
            c
            for e in arbiter_events
            if e["event"]["type"] == "cards_responded" and e["event"]["face_down"]
            for c in e["event"]["cards"]
        }
        assert face_down, "the game played no face-down answer: pick another seed"
        for seat in range(seats):
            seen = await api.events(table, table.seat(seat))
            shown = [
                c
                for e in seen
                if e["event"]["type"] == "cards_responded" and e["event"]["seat"] != seat
                for c in cards_in(e["event"])
            ]
            assert not face_down & set(shown)
        # Nor through the replay or the audit that open to seats once the game is over:
        # every hand and the stock held cards that were later played face down.
        trumps = {
            e["event"]["card"] for e in arbiter_events if e["event"]["type"] == "trump_turned"
        }
        for seat in range(seats):
            others = {
                c
                for e in arbiter_events
                if e["event"]["type"] == "cards_responded"
                and e["event"]["face_down"]
                and e["event"]["seat"] != seat
                for c in e["event"]["cards"]
            } - trumps
            for version in range(1, final["version"] + 1):
                replayed = await api.get(
                    f"/games/{table.game_id}/replay", table.seat(seat), version=version
                )
                assert not others & set(cards_in(replayed)), (seat, version)
            audited = await api.get(f"/games/{table.game_id}/audit", table.seat(seat))
            assert not others & set(cards_in(audited)), seat


async def test_three_closed_against_four_open_is_asked_by_its_hand_sizes_alone(api: Api) -> None:
    """`hand_size: [4, 3]` is the whole variant: the seat dealt four plays open, named in
    `open_seats` or not, and the table's rules name it there."""
    table = await api.create(rules={"hand_size": [4, 3]})
    view = await api.view(table, table.seat(1))
    assert view["rules"]["open_seats"] == [0]
    first, second = view["seats"]
    assert first["open"] and len(first["hand"]) == 4
    assert not second["open"] and len(second["hand"]) == 3
    watched = await api.view(table, table.watcher)
    assert watched["seats"][0]["hand"] == first["hand"] and watched["seats"][1]["hand"] is None
