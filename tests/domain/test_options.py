"""docs/rules.md §1-7 options: defaults, decoding at the edge, and refusals that name the option."""

import random

import msgspec
import pytest

from domain.commands import AnyCommand, StartGame
from domain.errors import BadOption
from domain.rules import (
    MAX_MATCH_TARGET,
    MAX_MULTIPLIER,
    MAX_SAFE_SCORE,
    MAX_STAKE,
    Rules,
    check,
    dave_enabled,
    in_effect,
    score_bound,
)
from tests.domain.given import start
from tests.domain.play import Style, play_game

rules_from_json = msgspec.json.Decoder(Rules).decode
command_from_json = msgspec.json.Decoder(AnyCommand).decode


def test_the_defaults_make_the_classic_two_player_game():
    rules = Rules()
    assert (rules.deck, rules.penalties, rules.short_stock, rules.declare_on, rules.no_claim) == (
        36,
        "enforce",
        "draw_in_order",
        "lead",
        "void",
    )
    assert (rules.show_own_points, rules.dave_max_multiplier, rules.stake, rules.match_target) == (
        False,
        64,
        1,
        1,
    )
    assert dave_enabled(rules, 2) and not dave_enabled(rules, 3)
    assert rules_from_json(b"{}") == rules


def test_views_spell_out_the_defaults_that_depend_on_the_seats():
    """`dave` is on by default at two seats and off otherwise; a hand is 3 cards (Kozel 4).
    A view or a list shows the table as played, not the null it was sent with."""
    assert (in_effect(Rules(), 2).dave, in_effect(Rules(), 2).hand_size) == (True, (3, 3))
    assert (in_effect(Rules(), 3).dave, in_effect(Rules(), 3).hand_size) == (False, (3, 3, 3))
    assert in_effect(Rules(game="kozel"), 4).hand_size == (4, 4, 4, 4)
    assert in_effect(Rules(dave=False), 2).dave is False
    assert in_effect(Rules(hand_size=(4, 3), open_seats=(0,)), 2).hand_size == (4, 3)
    shown = in_effect(Rules(stake=5, match_target=3), 2)
    assert check(shown, 2) == shown  # what a view shows is a valid table to send again
    assert (shown.stake, shown.match_target) == (5, 3)


def test_every_section_1_to_7_option_decodes_from_json():
    raw = (
        b'{"deck": 52, "penalties": "reject", "short_stock": "set_aside", "declare_on":'
        b' "any_turn", "no_claim": "most_points", "show_own_points": true, "dave": false,'
        b' "dave_max_multiplier": 8, "stake": 5, "match_target": 7}'
    )
    assert rules_from_json(raw) == Rules(
        deck=52,
        penalties="reject",
        short_stock="set_aside",
        declare_on="any_turn",
        no_claim="most_points",
        show_own_points=True,
        dave=False,
        dave_max_multiplier=8,
        stake=5,
        match_target=7,
    )


def test_an_unknown_option_is_refused_naming_it():
    with pytest.raises(msgspec.ValidationError, match="unknown field `colour`"):
        rules_from_json(b'{"colour": "red"}')


def test_an_unknown_option_inside_a_new_game_is_refused_naming_it():
    raw = b'{"type": "start_game", "seats": ["a", "b"], "seed": "s", "rules": {"colour": 1}}'
    with pytest.raises(msgspec.ValidationError, match=r"unknown field `colour` - at `\$.rules`"):
        command_from_json(raw)


@pytest.mark.parametrize(
    ("raw", "option"),
    [
        (b'{"deck": 40}', "deck"),
        (b'{"deck": "36"}', "deck"),
        (b'{"penalties": "sometimes"}', "penalties"),
        (b'{"short_stock": "deal_again"}', "short_stock"),
        (b'{"declare_on": "respond"}', "declare_on"),
        (b'{"no_claim": "dealer"}', "no_claim"),
        (b'{"show_own_points": "yes"}', "show_own_points"),
        (b'{"dave": "on"}', "dave"),
        (b'{"dave_max_multiplier": 2.5}', "dave_max_multiplier"),
        (b'{"stake": "one"}', "stake"),
        (b'{"match_target": null}', "match_target"),
    ],
)
def test_a_bad_value_is_refused_naming_the_option(raw, option):
    with pytest.raises(msgspec.ValidationError, match=rf"at `\$.{option}`"):
        rules_from_json(raw)


@pytest.mark.parametrize(
    ("options", "seats", "option"),
    [
        ({"stake": 0}, 2, "stake"),
        ({"match_target": 0}, 2, "match_target"),
        ({"dave_max_multiplier": 1}, 2, "dave_max_multiplier"),
        ({"dave_max_multiplier": 6}, 2, "dave_max_multiplier"),
        # every score must fit in 2^53 - 1 (score_bound)
        ({"stake": MAX_STAKE + 1}, 2, "stake"),
        ({"stake": 2**63 - 1}, 2, "stake"),
        ({"dave_max_multiplier": MAX_MULTIPLIER * 2}, 2, "dave_max_multiplier"),
        ({"dave_max_multiplier": 2**62}, 2, "dave_max_multiplier"),
        ({"match_target": MAX_MATCH_TARGET + 1}, 2, "match_target"),
        ({"dave": True}, 3, "dave"),
        ({"dave": True}, 6, "dave"),
        ({}, 1, "seats"),
        ({}, 7, "seats"),
        # contradictions among the section 8 variants are refused the same way
        ({"game": "kozel"}, 6, "game"),
        ({"teams": ((0, 2), (1, 3))}, 4, "teams"),
        ({"hand_size": (3, 3, 3)}, 2, "hand_size"),
    ],
)
def test_a_bad_or_contradictory_option_is_refused_when_the_game_is_created(options, seats, option):
    with pytest.raises(BadOption) as refused:
        check(Rules(**options), seats)
    assert refused.value.option == option
    assert str(refused.value).startswith(f"{option}: ")
    with pytest.raises(BadOption):
        start(seats, **options)


def test_dave_may_be_switched_off_or_on_explicitly_for_two_seats():
    assert not dave_enabled(check(Rules(dave=False), 2), 2)
    assert dave_enabled(check(Rules(dave=True), 2), 2)


@pytest.mark.parametrize("seats", [2, 3, 4, 5, 6])
def test_two_to_six_seats_play(seats):
    assert len(start(seats)[0].seats) == seats


def test_a_new_game_decodes_with_its_options():
    raw = (
        b'{"type": "start_game", "seats": ["a", "b", "c"], "seed": "s", "dealer": 2,'
        b' "rules": {"stake": 3, "match_target": 9}}'
    )
    assert command_from_json(raw) == StartGame(
        seats=("a", "b", "c"), seed="s", dealer=2, rules=Rules(stake=3, match_target=9)
    )


@pytest.mark.parametrize("seats", [2, 3, 6])
def test_at_the_largest_stakes_every_score_still_fits_in_a_javascript_number(seats):
    largest = Rules(
        deck=52,
        stake=MAX_STAKE,
        dave_max_multiplier=MAX_MULTIPLIER,
        match_target=MAX_MATCH_TARGET,
        closed_discard=True,
        false_declaration="pay_pot",
    )
    check(largest, seats)
    assert score_bound(largest, seats) <= MAX_SAFE_SCORE


def test_a_game_played_at_the_largest_stakes_keeps_within_the_bound():
    rules = Rules(stake=MAX_STAKE, dave_max_multiplier=MAX_MULTIPLIER, match_target=3)
    played = play_game(
        StartGame(seats=("a", "b"), rules=rules, seed="big"),
        Style("greedy", claims=0.1, faults=0.02),
        random.Random(5),
        lambda state, events: None,
    )
    assert played.state.finished
    assert all(score % MAX_STAKE == 0 for score in played.state.score)
    assert max(map(abs, played.state.score)) <= score_bound(rules, 2)
