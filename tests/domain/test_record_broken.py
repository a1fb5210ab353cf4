"""A record the rules could not have written (edited by hand) folds to no game: the fold
says which event cannot apply, and the audit does the same."""

from __future__ import annotations

import msgspec
import pytest

from domain.audit import audit
from domain.events import CardDealt, Event
from domain.evolve import RecordBroken, replay
from domain.views import ARBITER
from tests.domain.given import start


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
