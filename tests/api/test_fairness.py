"""The shuffle commitments: a recorded game verifies once its seed is out, and any change
to a recorded deck, commitment or seed is caught."""

from __future__ import annotations

import uuid

from msgspec.structs import replace

from domain.commands import Concede, StartGame
from domain.decide import decide
from domain.events import DealStarted, Event, GameFinished
from domain.evolve import fold
from domain.fairness import verify_deals
from domain.rules import Rules
from domain.shuffle import commitment, deal_seed
from domain.state import NEW_GAME
from services.app.codec import to_new
from tests.api.conftest import THIRTY_ONE_DECK, Api


def played(deck: tuple[str, ...] | None = None) -> list[Event]:
    """A two-deal game: the first deal conceded, the second too; the seed revealed."""
    start = StartGame(
        seats=("ann", "bob"), seed="fair", dealer=1, deck=deck, rules=Rules(match_target=2)
    )
    events = decide(NEW_GAME, start, None)
    state = fold(NEW_GAME, events)
    while not state.finished:
        new = decide(state, Concede(), state.deal.turn)  # type: ignore[union-attr]
        events += new
        state = fold(state, new)
    return events


def tamper(events: list[Event], number: int, **changes: object) -> list[Event]:
    return [
        replace(e, **changes) if isinstance(e, DealStarted) and e.number == number else e
        for e in events
    ]


def seed_of(events: list[Event]) -> str:
    finished = events[-1]
    assert isinstance(finished, GameFinished)
    return finished.seed


def deck_of(events: list[Event], number: int) -> tuple[str, ...]:
    deck = next(e.deck for e in events if isinstance(e, DealStarted) and e.number == number)
    assert deck is not None
    return deck


def test_a_recorded_game_verifies_deal_by_deal() -> None:
    events = played()
    checks = verify_deals(events, seed_of(events))
    assert [c.number for c in checks] == [1, 2]
    assert all(c.ok and c.commitment_ok and c.shuffle_ok and not c.explicit for c in checks)


def test_a_changed_deck_order_is_caught() -> None:
    events = played()
    deck = list(deck_of(events, 2))
    deck[0], deck[1] = deck[1], deck[0]
    checks = verify_deals(tamper(events, 2, deck=tuple(deck)), seed_of(events))
    assert [c.ok for c in checks] == [True, False]
    assert not checks[1].commitment_ok and not checks[1].shuffle_ok


def test_a_changed_commitment_is_caught() -> None:
    events = played()
    checks = verify_deals(tamper(events, 1, commitment="0" * 64), seed_of(events))
    assert [c.ok for c in checks] == [False, True]
    assert not checks[0].commitment_ok and checks[0].shuffle_ok


def test_a_deck_recommitted_to_a_new_order_is_still_caught_by_the_shuffle() -> None:
    """Whoever rewrites both the deck and its commitment cannot make the seed shuffle it."""
    events = played()
    deck = tuple(reversed(deck_of(events, 1)))
    forged = commitment(deal_seed(seed_of(events), 1), deck)
    checks = verify_deals(tamper(events, 1, deck=deck, commitment=forged), seed_of(events))
    assert checks[0].commitment_ok and not checks[0].shuffle_ok and not checks[0].ok


def test_another_seed_is_caught() -> None:
    events = played()
    assert not any(c.ok for c in verify_deals(events, "not-the-seed"))


def test_an_operator_fixed_deck_verifies_against_its_commitment_only() -> None:
    events = played(tuple(THIRTY_ONE_DECK))
    checks = verify_deals(events, seed_of(events))
    assert checks[0].explicit and checks[0].ok
    assert not checks[1].explicit and checks[1].ok  # later deals are shuffled from the seed
    deck = list(deck_of(events, 1))
    deck[5], deck[6] = deck[6], deck[5]
    [first, _] = verify_deals(tamper(events, 1, deck=tuple(deck)), seed_of(events))
    assert not first.commitment_ok and not first.ok


async def test_the_verify_endpoint_reports_a_tampered_record(api: Api) -> None:
    events = played()
    deck = list(deck_of(events, 1))
    deck[0], deck[-1] = deck[-1], deck[0]
    forged = uuid.uuid4().hex
    await api.store.append(forged, 0, [to_new(e) for e in tamper(events, 1, deck=tuple(deck))])
    honest = uuid.uuid4().hex
    await api.store.append(honest, 0, [to_new(e) for e in events])

    assert (await api.get(f"/games/{honest}/verify"))["ok"] is True
    report = await api.get(f"/games/{forged}/verify")
    assert report["ok"] is False
    assert [(d["number"], d["ok"], d["commitment_ok"]) for d in report["deals"]] == [
        (1, False, False),
        (2, True, True),
    ]
