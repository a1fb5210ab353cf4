"""Old rows stay readable: when an event's shape changes its schema version is bumped and an
upcaster lifts the old payloads, one version at a time, before they are decoded."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from domain.events import CardsLed, Declared, GameStarted, PenaltyApplied
from domain.rules import Rules
from infra.ports.events import Metadata, RecordedEvent
from services.app import codec


def row(type_: str, schema_version: int, payload: dict[str, object]) -> RecordedEvent:
    return RecordedEvent(
        stream_id="g",
        version=1,
        type=type_,
        data=msgspec.json.encode(payload),
        schema_version=schema_version,
        metadata=Metadata(),
        recorded_at=datetime.now(UTC),
        tx_id=0,
        position=1,
    )


@pytest.fixture
def cards_led_v3(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if `cards_led` had changed shape twice: v1 named the seat `by` and held the cards as
    one string; v2 had `seat` but still the string; v3 is today's."""
    monkeypatch.setitem(codec.SCHEMA_VERSIONS, "cards_led", 3)
    monkeypatch.setitem(
        codec.UPCASTERS,
        ("cards_led", 1),
        lambda p: {k if k != "by" else "seat": v for k, v in p.items()},
    )
    monkeypatch.setitem(
        codec.UPCASTERS,
        ("cards_led", 2),
        lambda p: {**p, "cards": str(p["cards"]).split()},
    )


@pytest.mark.usefixtures("cards_led_v3")
def test_an_old_row_is_lifted_through_every_version_to_the_current_shape() -> None:
    old = row("cards_led", 1, {"type": "cards_led", "by": 1, "cards": "AS KS"})
    middle = row("cards_led", 2, {"type": "cards_led", "seat": 1, "cards": "AS KS"})
    assert codec.from_recorded(old) == codec.from_recorded(middle) == CardsLed(1, ("AS", "KS"))


@pytest.mark.usefixtures("cards_led_v3")
def test_new_rows_are_written_at_the_current_version() -> None:
    written = codec.to_new(CardsLed(0, ("10H",)))
    assert written.schema_version == 3
    assert codec.from_recorded(row("cards_led", 3, msgspec.json.decode(written.data))) == (
        CardsLed(0, ("10H",))
    )


def test_a_row_at_the_current_version_is_decoded_as_it_is() -> None:
    current = row("cards_led", 1, {"type": "cards_led", "seat": 0, "cards": ["QD"]})
    assert codec.from_recorded(current) == CardsLed(0, ("QD",))


def test_a_game_started_row_from_before_clocks_and_rematches_decodes_unchanged() -> None:
    """Written before the clock options and the rematch link existed: both are optional with
    their defaults, so the row decodes at schema version 1 with no upcaster."""
    old = {
        "type": "game_started",
        "seats": ["ann", "bob"],
        "rules": {"game": "bura", "deck": 36, "stake": 2, "match_target": 1},
        "seed": "s",
    }
    assert codec.SCHEMA_VERSIONS.get("game_started", 1) == 1
    event = codec.from_recorded(row("game_started", 1, old))
    assert event == GameStarted(seats=("ann", "bob"), rules=Rules(stake=2), seed="s")
    assert isinstance(event, GameStarted) and event.rematch_of is None
    assert event.rules.turn_seconds is None and event.rules.on_timeout == "lose_deal"


# -- the version the player saw, recorded in penalties and declarations since version 2 --------


def test_a_penalty_stored_before_seen_versions_reads_as_one_that_named_none() -> None:
    old = row(
        "penalty_applied",
        1,
        {
            "type": "penalty_applied",
            "seat": 0,
            "rule": "out_of_turn_draw",
            "due": 1,
            "cards": ["KC"],
            "count": 1,
        },
    )
    assert codec.from_recorded(old) == PenaltyApplied(
        seat=0, rule="out_of_turn_draw", due=1, cards=("KC",), count=1, seen=None
    )


def test_a_declaration_stored_before_seen_versions_reads_as_one_that_named_none() -> None:
    old = row(
        "declared",
        1,
        {
            "type": "declared",
            "seat": 1,
            "claim": "thirty_one",
            "value": 20,
            "needed": 31,
            "true": False,
        },
    )
    assert codec.from_recorded(old) == Declared(
        seat=1, claim="thirty_one", value=20, needed=31, true=False
    )


def test_penalties_are_written_at_version_2_with_the_version_seen() -> None:
    penalty = PenaltyApplied(seat=0, rule="double_draw", due=0, cards=("KC", "QC"), count=2, seen=7)
    written = codec.to_new(penalty)
    assert written.schema_version == codec.SCHEMA_VERSIONS["penalty_applied"] == 2
    stored = row(written.type, 2, msgspec.json.decode(written.data))
    assert codec.from_recorded(stored) == penalty
