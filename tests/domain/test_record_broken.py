"""A record the rules could not have written (edited by hand) folds to no game: the fold
says which event cannot apply, and the audit does the same."""

from __future__ import annotations

import msgspec
import pytest

from domain.audit import audit
from domain.events import CardDealt, CardDrawn, CardsLed, CardsResponded, Event, TrumpTurned
from domain.evolve import RecordBroken, replay
from domain.views import ARBITER
from tests.domain.given import lead, record, respond, start, table_and_events


def _edited(events: list[Event]) -> tuple[list[Event], int]:
    """The first card dealt, moved to a seat the table does not have; its version."""
    at = next(i for i, e in enumerate(events) if isinstance(e, CardDealt))
    dealt = events[at]
    assert isinstance(dealt, CardDealt)
    return [*events[:at], msgspec.structs.replace(dealt, seat=7), *events[at + 1 :]], at + 1


def test_a_record_as_the_rules_wrote_it_folds() -> None:
    state, events = start()
    assert replay(events) == state


def test_an_event_that_cannot_apply_is_named_with_its_version() -> None:
    _, events = start()
    edited, version = _edited(events)
    with pytest.raises(RecordBroken) as broken:
        replay(edited)
    assert (broken.value.version, broken.value.event_type) == (version, "card_dealt")
    assert str(broken.value).startswith(
        f"event {version} (card_dealt) cannot apply to the table before it (IndexError"
    )


def test_the_audit_of_such_a_record_names_it_too() -> None:
    _, events = start()
    edited, version = _edited(events)
    with pytest.raises(RecordBroken) as broken:
        audit(edited, ARBITER)
    assert broken.value.version == version


def _broken(events: list[Event], at: int, **changes: object) -> RecordBroken:
    edited = [*events[:at], msgspec.structs.replace(events[at], **changes), *events[at + 1 :]]
    with pytest.raises(RecordBroken) as broken:
        replay(edited)
    assert broken.value.version == at + 1
    return broken.value


def test_a_card_played_that_the_hand_never_held_breaks_the_record() -> None:
    """An edit of which card was led, or answered with, is found by the fold itself: the
    rules never record a card that is not in the hand (an import without hashes relies on
    it)."""
    state, events = table_and_events(["AS 6S 7S", "10H KH QH"], trump="9H")
    record(state, events, (0, lead("AS")), (1, respond("10H")))
    led = next(i for i, e in enumerate(events) if isinstance(e, CardsLed))
    assert "KH not in the hand" in str(_broken(events, led, cards=("KH",)))
    answered = next(i for i, e in enumerate(events) if isinstance(e, CardsResponded))
    assert "AS not in the hand" in str(_broken(events, answered, cards=("AS",)))


def test_a_card_dealt_or_drawn_that_is_not_the_stocks_top_breaks_the_record() -> None:
    state, events = table_and_events(["AS 6S 7S", "10H KH QH"], trump="9H", stock="8C 8D")
    record(state, events, (0, lead("AS")), (1, respond("10H")))
    dealt = next(i for i, e in enumerate(events) if isinstance(e, CardDealt))
    assert "the stock's top is AS" in str(_broken(events, dealt, card="6S"))
    turned = next(i for i, e in enumerate(events) if isinstance(e, TrumpTurned))
    assert "the stock's top is 9H" in str(_broken(events, turned, card="8C"))
    drawn = next(i for i, e in enumerate(events) if isinstance(e, CardDrawn))
    assert "the stock's top is 8C" in str(_broken(events, drawn, card="8D"))
