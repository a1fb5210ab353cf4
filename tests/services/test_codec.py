"""Old rows stay readable: a game_started written before the clock options and the rematch
link existed decodes at the same schema version, with their defaults."""

from __future__ import annotations

from datetime import UTC, datetime

from domain.events import GameStarted
from domain.rules import Rules
from infra.ports.events import Metadata, RecordedEvent
from services.app.codec import SCHEMA_VERSIONS, from_recorded

# A game_started row exactly as the server wrote it before (no clock, no rematch_of).
OLD = (
    b'{"type":"game_started","seats":["ann","bob"],"rules":{"game":"bura","deck":36,'
    b'"hand_size":null,"trumps":true,"first_lead_compensation":0,"penalties":"enforce",'
    b'"short_stock":"draw_in_order","declare_on":"lead","no_claim":"void",'
    b'"show_own_points":false,"dave":null,"dave_max_multiplier":64,"stake":2,'
    b'"match_target":1,"closed_discard":false,"false_declaration":"lose","open_seats":[],'
    b'"compensation":0,"combinations":"none","teams":null,"target_points":31},"seed":"s"}'
)


def test_a_game_started_row_from_before_clocks_and_rematches_decodes_unchanged() -> None:
    row = RecordedEvent(
        stream_id="old",
        version=1,
        type="game_started",
        data=OLD,
        schema_version=1,
        metadata=Metadata(),
        recorded_at=datetime.now(UTC),
        tx_id=0,
        position=1,
    )
    assert SCHEMA_VERSIONS.get("game_started", 1) == 1
    event = from_recorded(row)
    assert event == GameStarted(seats=("ann", "bob"), rules=Rules(stake=2), seed="s")
    assert isinstance(event, GameStarted) and event.rematch_of is None
    assert event.rules.turn_seconds is None and event.rules.on_timeout == "lose_deal"
