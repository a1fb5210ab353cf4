"""The record played back by the rules (domain/playback.py): a record the rules wrote plays
back to the same game; one whose outcome was rewritten by hand (who lost a deal, what a
deal paid, who won the game), which folds without a complaint, is refused at the first
event the rules would not have recorded."""

from __future__ import annotations

import random

import msgspec
import pytest

from domain.bots import greedy_bot, random_bot
from domain.events import (
    CardDealt,
    Conceded,
    DealLost,
    DealWon,
    Event,
    GameFinished,
    StakeSettled,
    TrickTaken,
)
from domain.evolve import RecordBroken, replay
from domain.playback import ENDS_TOO_SOON, NOT_DECIDED, REFUSED, play_back
from domain.rules import Rules
from domain.simulation import play_game


def _game(seats: int = 2, **options: object) -> list[Event]:
    rules = Rules(match_target=3, **options)  # type: ignore[arg-type]
    _, events = play_game(
        "playback", [greedy_bot, random_bot, greedy_bot][:seats], random.Random(3), rules
    )
    return events


def _at(events: list[Event], kind: type[Event], last: bool = False) -> int:
    found = [i for i, e in enumerate(events) if isinstance(e, kind)]
    return found[-1] if last else found[0]


def _refused(edited: list[Event], version: int) -> str:
    replay(edited)  # a fold takes it: it applies whatever it is given
    with pytest.raises(Exception) as broken:
        play_back(edited)
    assert getattr(broken.value, "version", None) == version, str(broken.value)
    return str(broken.value)


@pytest.mark.parametrize("seats", [2, 3])
def test_a_record_the_rules_wrote_plays_back_to_the_same_game(seats: int) -> None:
    events = _game(seats)
    assert play_back(events) == replay(events)


def test_a_deal_given_to_the_other_seat_is_refused_where_it_is_recorded() -> None:
    events = _game()
    at = _at(events, DealWon | DealLost)  # type: ignore[arg-type]
    ended = events[at]
    assert isinstance(ended, DealWon | DealLost)
    flipped = msgspec.structs.replace(ended, seat=1 - ended.seat)
    said = _refused([*events[:at], flipped, *events[at + 1 :]], at + 1)
    assert NOT_DECIDED in said and "the rules decide" in said


def test_a_settlement_rewritten_is_refused() -> None:
    events = _game()
    at = _at(events, StakeSettled)
    settled = events[at]
    assert isinstance(settled, StakeSettled)
    more = msgspec.structs.replace(
        settled, stake=100, payments=tuple(p * 100 for p in settled.payments)
    )
    assert NOT_DECIDED in _refused([*events[:at], more, *events[at + 1 :]], at + 1)


def test_a_game_given_to_the_loser_is_refused() -> None:
    events = _game()
    at = _at(events, GameFinished, last=True)
    finished = events[at]
    assert isinstance(finished, GameFinished)
    losers = tuple(s for s in range(2) if s not in finished.winners)
    given = msgspec.structs.replace(finished, winners=losers)
    assert NOT_DECIDED in _refused([*events[:at], given, *events[at + 1 :]], at + 1)


def test_a_consequence_left_out_or_added_is_refused() -> None:
    events = _game()
    at = _at(events, TrickTaken)
    _refused([*events[:at], *events[at + 1 :]], at + 1)  # the trick never taken
    taken = events[at]
    assert isinstance(taken, TrickTaken)
    # a concession by the seat that did not take the trick: the taker is due to draw
    extra = Conceded(seat=1 - taken.seat)
    said = _refused([*events[: at + 1], extra, *events[at + 1 :]], at + 2)
    assert REFUSED in said and "not_your_turn" in said
    # by the taker, it is an act the rules take, and then the deal is lost, not drawn on
    extra = Conceded(seat=taken.seat)
    said = _refused([*events[: at + 1], extra, *events[at + 1 :]], at + 3)
    assert "the rules decide deal_lost" in said


def test_a_record_cut_in_the_middle_of_an_act_says_the_rules_go_on() -> None:
    events = _game()
    at = _at(events, StakeSettled)
    said = _refused(events[:at], at + 1)
    assert "the rules go on with stake_settled" in said
    assert f"event {at + 1} (end) {ENDS_TOO_SOON}" in said  # not "not what the rules decide"


def test_the_first_row_the_rules_would_not_have_written_is_named_not_a_later_one() -> None:
    """A settlement rewritten in the first deal and a card dealt in a later one that cannot
    apply: the record is refused at the settlement, where it first departs, and a card
    that cannot apply is named as a fold names it."""
    events = _game()
    settled = _at(events, StakeSettled)
    later = next(i for i, e in enumerate(events) if i > settled and isinstance(e, CardDealt))
    dealt = events[later]
    assert isinstance(dealt, CardDealt)
    edited = list(events)
    stake = edited[settled]
    assert isinstance(stake, StakeSettled)
    edited[settled] = msgspec.structs.replace(stake, payments=tuple(-p for p in stake.payments))
    edited[later] = msgspec.structs.replace(dealt, seat=7)
    with pytest.raises(RecordBroken) as broken:
        play_back(edited)
    assert broken.value.version == settled + 1 and NOT_DECIDED in str(broken.value)
    edited[settled] = stake
    with pytest.raises(RecordBroken) as broken:
        play_back(edited)
    assert broken.value.version == later + 1
    assert "cannot apply to the table before it" in str(broken.value)
