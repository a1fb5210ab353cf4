"""Table options (docs/rules.md): every default and switch, and the checks that refuse bad ones."""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec.structs import replace

from domain.errors import BadOption
from domain.vocabulary import OnTimeout

# The longest any clock may be set to: a day. Longer is no clock at all.
LONGEST_CLOCK = 86_400

# Every score must fit in an IEEE double exactly (2^53 - 1): JSON clients in JavaScript
# hold numbers that way, and a score they cannot hold exactly is a dispute waiting to
# happen. These bounds keep the worst game within it (score_bound).
MAX_SAFE_SCORE = 2**53 - 1
MAX_STAKE = 1_000_000
MAX_MULTIPLIER = 2**20
MAX_MATCH_TARGET = 1_000_000_000


class Rules(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    game: Literal["bura", "kozel"] = "bura"
    deck: Literal[36, 32, 52] = 36
    hand_size: tuple[int, ...] | None = None  # one entry per seat; None: 3 each (Kozel 4)
    trumps: bool = True
    first_lead_compensation: int = 0
    penalties: Literal["enforce", "reject"] = "enforce"
    short_stock: Literal["draw_in_order", "set_aside"] = "draw_in_order"
    declare_on: Literal["lead", "any_turn"] = "lead"
    no_claim: Literal["void", "most_points"] = "void"
    show_own_points: bool = False
    dave: bool | None = None  # None: on with two seats, off otherwise
    dave_max_multiplier: int = 64
    stake: int = 1
    match_target: int = 1
    closed_discard: bool = False
    false_declaration: Literal["lose", "pay_pot"] = "lose"
    open_seats: tuple[int, ...] = ()
    compensation: int = 0
    combinations: Literal["none", "czech"] = "none"
    teams: tuple[tuple[int, ...], ...] | None = None
    target_points: int = 31
    shuffle: Literal["server", "seats"] = "server"
    seeding_seconds: int = 30  # shuffle "seats": how long the seats have to send their seeds
    # The clock (docs/rules.md §13): seconds for each act, an optional bank per seat per
    # deal, what a timeout does, and how long a seat due to act may be away.
    turn_seconds: int | None = None
    time_bank_seconds: int = 0
    on_timeout: OnTimeout = "lose_deal"
    abandon_seconds: int | None = None


def dave_enabled(rules: Rules, seats: int) -> bool:
    return seats == 2 and rules.dave is not False


def hand_sizes(rules: Rules, seats: int) -> tuple[int, ...]:
    if rules.hand_size is not None:
        return rules.hand_size
    return (4 if rules.game == "kozel" else 3,) * seats


def in_effect(rules: Rules, seats: int) -> Rules:
    """The options as the table plays them, for views and lists: the defaults that depend
    on the seats (`dave`, `hand_size`) spelled out. The record keeps what was sent."""
    return replace(rules, dave=dave_enabled(rules, seats), hand_size=hand_sizes(rules, seats))


def clocked(rules: Rules) -> bool:
    """The table has a clock: every act is timed, and the events record its deadlines."""
    return rules.turn_seconds is not None


def check(rules: Rules, seats: int) -> Rules:
    """Refuse a table whose options contradict each other; the message names the option."""
    if not 2 <= seats <= 6:
        raise BadOption("seats", f"a table has 2 to 6 seats, not {seats}")
    if rules.dave and seats != 2:
        raise BadOption("dave", f"dave is played by two seats only, this table has {seats}")
    limit = rules.dave_max_multiplier
    if limit < 2 or limit & (limit - 1) or limit > MAX_MULTIPLIER:
        raise BadOption("dave_max_multiplier", f"must be a power of two from 2 to {MAX_MULTIPLIER}")
    if not 1 <= rules.stake <= MAX_STAKE:
        raise BadOption("stake", f"must be 1 to {MAX_STAKE}")
    if not 1 <= rules.match_target <= MAX_MATCH_TARGET:
        raise BadOption("match_target", f"must be 1 to {MAX_MATCH_TARGET}")
    if rules.target_points not in (31, 41, 51):  # before the compensations measured by it
        raise BadOption("target_points", "31, or 41 or 51 in a team game")
    rules = _open_the_larger_hands(rules, seats)
    _check_compensations(rules, seats)
    _check_hands(rules, seats)
    _check_closed_discard(rules)
    _check_shuffle(rules)
    _check_clock(rules)
    if rules.game == "kozel":
        _check_kozel(rules, seats)
    if rules.teams is not None:
        _check_teams(rules.teams, rules, seats)
    elif rules.target_points != 31:
        raise BadOption("target_points", "41 or 51 points are a team game: set teams")
    return rules


def score_bound(rules: Rules, seats: int) -> int:
    """The largest score, in either direction, any seat of such a table can reach.

    Scores are zero-sum and the game ends once the best reaches match_target, so before
    the last settlement no seat is above match_target - 1 and none below -(seats - 1)
    times that. One settlement moves a seat by at most (seats - 1) stakes at the highest
    multiplier, once for the deal and once for each pot (pay_pot: at most one false 31
    per trick, and a deal has fewer tricks than cards)."""
    most_pots = rules.deck if rules.false_declaration == "pay_pot" else 0
    deal = rules.stake * rules.dave_max_multiplier * (1 + most_pots)
    return (seats - 1) * (rules.match_target - 1 + deal)


def _check_compensations(rules: Rules, seats: int) -> None:
    if not 0 <= rules.first_lead_compensation <= 30:
        raise BadOption("first_lead_compensation", "must be 0 to 30")
    if rules.first_lead_compensation and rules.trumps:
        raise BadOption("first_lead_compensation", "is given only in a game without trumps")
    if not 0 <= rules.compensation <= 30:
        raise BadOption("compensation", "must be 0 to 30")
    if rules.compensation and not rules.open_seats:
        raise BadOption("compensation", "is paid to open seats: name them in open_seats")
    if rules.compensation and len(rules.open_seats) == seats:
        raise BadOption("compensation", "every seat plays open: no closed side is left to pay it")
    # a side that starts a deal with its target in compensation would win every deal
    # unplayed; in Kozel 31 wins nothing (every deal is played out and counted)
    if rules.game == "kozel":
        return
    for side in rules.teams or tuple((s,) for s in range(seats)):
        given = rules.compensation * sum(1 for s in side if s in rules.open_seats)
        if given + rules.first_lead_compensation >= rules.target_points:
            option = "compensation" if given else "first_lead_compensation"
            raise BadOption(
                option,
                f"seats {list(side)} would start a deal with "
                f"{given + rules.first_lead_compensation} points, and {rules.target_points} "
                "win it: no deal would be played",
            )


def _open_the_larger_hands(rules: Rules, seats: int) -> Rules:
    """«на 3-х закрытых против 4-х открытых»: the extra card is paid for by playing open.
    A seat dealt more than the smallest hand is open whether `open_seats` names it or not
    (`hand_size: [4, 3]` is the whole variant); the table's rules name it there."""
    if any(not 0 <= s < seats for s in rules.open_seats) or len(set(rules.open_seats)) != len(
        rules.open_seats
    ):
        raise BadOption("open_seats", f"must list distinct seats 0 to {seats - 1}")
    sizes = hand_sizes(rules, seats)
    if len(sizes) != seats:
        raise BadOption("hand_size", f"needs one entry per seat ({seats}), got {len(sizes)}")
    if any(s not in (3, 4) for s in sizes):
        raise BadOption("hand_size", "each hand holds 3 or 4 cards")
    unnamed = tuple(s for s in range(seats) if sizes[s] > min(sizes) and s not in rules.open_seats)
    if not unnamed:
        return rules
    return msgspec.structs.replace(rules, open_seats=rules.open_seats + unnamed)


def _check_hands(rules: Rules, seats: int) -> None:
    sizes = hand_sizes(rules, seats)
    if sum(sizes) + (1 if rules.trumps else 0) > rules.deck:
        raise BadOption("hand_size", f"a {rules.deck}-card pack cannot deal {sum(sizes)} cards")


def _check_closed_discard(rules: Rules) -> None:
    if rules.false_declaration == "pay_pot" and not rules.closed_discard:
        raise BadOption("false_declaration", "pay_pot belongs to the closed_discard variant")
    if rules.closed_discard and rules.show_own_points:
        raise BadOption(
            "show_own_points",
            "contradicts closed_discard: the taker may not know what face-down cards it won",
        )


def _check_shuffle(rules: Rules) -> None:
    if not 1 <= rules.seeding_seconds <= 86_400:
        raise BadOption("seeding_seconds", "must be 1 to 86400 seconds")
    if rules.shuffle == "server" and rules.seeding_seconds != Rules().seeding_seconds:
        raise BadOption(
            "seeding_seconds", "is the seats' time to send their seeds: set shuffle: seats"
        )


def _check_clock(rules: Rules) -> None:
    if rules.turn_seconds is not None and not 1 <= rules.turn_seconds <= LONGEST_CLOCK:
        raise BadOption("turn_seconds", f"must be 1 to {LONGEST_CLOCK} seconds")
    if not 0 <= rules.time_bank_seconds <= LONGEST_CLOCK:
        raise BadOption("time_bank_seconds", f"must be 0 to {LONGEST_CLOCK} seconds")
    if rules.abandon_seconds is not None and not 1 <= rules.abandon_seconds <= LONGEST_CLOCK:
        raise BadOption("abandon_seconds", f"must be 1 to {LONGEST_CLOCK} seconds")
    if rules.turn_seconds is not None:
        return
    # Without a clock nothing is timed: an option that would do nothing is a mistake.
    for option, given in (
        ("time_bank_seconds", rules.time_bank_seconds != 0),
        ("on_timeout", rules.on_timeout != "lose_deal"),
        ("abandon_seconds", rules.abandon_seconds is not None),
    ):
        if given:
            raise BadOption(option, "times the table's clock: set turn_seconds too")


def _check_kozel(rules: Rules, seats: int) -> None:
    if seats > 5:
        raise BadOption("game", f"Kozel is for at most 5 seats, not {seats}")
    if rules.combinations != "none":
        raise BadOption("combinations", "Kozel has its own combinations")
    if rules.hand_size is not None and set(rules.hand_size) != {4}:
        raise BadOption("hand_size", "Kozel deals 4 cards to every seat")
    if rules.teams is not None:
        raise BadOption("teams", "the team game is Bura to 41 or 51, not Kozel")
    if rules.false_declaration == "pay_pot":
        raise BadOption("false_declaration", "pay_pot fines a false 31, and Kozel has no 31")


def _check_teams(teams: tuple[tuple[int, ...], ...], rules: Rules, seats: int) -> None:
    if rules.deck != 52:
        raise BadOption("teams", "the team game is played with the 52-card pack (deck: 52)")
    if len(teams) != 2 or sorted(s for t in teams for s in t) != list(range(seats)):
        raise BadOption("teams", f"two teams that together hold every seat 0 to {seats - 1}")
    if len(teams[0]) != len(teams[1]) or len(teams[0]) not in (2, 3):
        raise BadOption("teams", "two teams of 2 or 3 seats each")
    if any(seat % 2 != teams[0][0] % 2 for seat in teams[0]):
        raise BadOption("teams", "team mates sit alternately: [[0, 2], [1, 3]]")
    if rules.target_points not in (31, 41, 51):
        raise BadOption("target_points", "31, 41 or 51")
