"""Invariants over random games (tests/domain/play.py) whose verdicts are worked out a second
time, from docs/rules.md alone (tests/domain/oracle.py), and held against the record.

The record is followed event by event into a table of its own (hands, piles, compensation,
the stock's size, the trick, the pot, the multiplier), never the domain's state. Against it:
every `beat` and every taker, the seats' draws in order, each declaration's value, every
settlement and next dealer, every deal's reason and what brought it about, the game's end at
the target, the clock's banks. Besides: every refusal is a code of §11, every deal verifies
against its commitment, and a seat's view rebuilt as a table (domain/seen.py) offers the
seat the same moves as the table itself.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.combinations import combination
from domain.commands import (
    CloseSeeding,
    Draw,
    EndPause,
    Lead,
    PlayerCommand,
    Respond,
    StartGame,
    TimeOut,
)
from domain.decide import decide
from domain.errors import RuleViolation
from domain.events import (
    BuraShown,
    CardDealt,
    CardDrawn,
    CardsLed,
    CardsResponded,
    ClockStarted,
    CompensationGiven,
    Conceded,
    DaveAccepted,
    DaveDeclined,
    DealerChosen,
    DealLost,
    DealStarted,
    DealVoid,
    DealWon,
    Declared,
    Event,
    FourAcesShown,
    GameFinished,
    GameStarted,
    Passed,
    PauseEnded,
    PenaltyApplied,
    PotPaid,
    SeedRevealed,
    StakeSettled,
    TimedOut,
    TrickTaken,
    TrumpTurned,
)
from domain.fairness import verify_deals
from domain.legal import legal_commands
from domain.rules import Rules
from domain.seen import as_seen
from domain.state import Game
from domain.views import SPECTATOR, redact_all, view
from tests.domain import oracle
from tests.domain.given import in_time
from tests.domain.play import VARIANTS, Played, Style, play_game, styles, tables
from tests.domain.test_properties import candidates, nothing
from tests.examples import examples

PROPERTY = settings(
    max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
VARIANT = settings(
    max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
chances = st.randoms(use_true_random=True)

RULES_PAGE = (Path(__file__).resolve().parents[2] / "docs" / "rules.md").read_text("utf-8")


def section(number: str) -> str:
    return RULES_PAGE.split(f"\n## {number}. ", 1)[1].split("\n## ", 1)[0]


def body_rows(text: str) -> list[list[str]]:
    """The cells of each row of the tables in `text`, below their header."""
    rows, header = [], True
    for line in text.splitlines():
        if not line.startswith("|"):
            header = True
        elif line.startswith("|---"):
            header = False
        elif not header:
            rows.append(line.split("|")[1:-1])
    return rows


def reason_kinds() -> dict[str, str]:
    """§10's table: each reason and what the deal is ("won", "lost" or "void")."""
    return {row[0].strip(" `"): row[1].split()[0] for row in body_rows(section("10"))}


def refusal_codes() -> set[str]:
    """§11: the codes of its table of broken rules, and those the domain alone refuses with."""
    text = section("11")
    domain_only = text.split("The domain also refuses", 1)[1].split("\n\n", 1)[0]
    cells = [row[0] for row in body_rows(text.split("**Other answers:**")[0])]
    return {c for cell in [*cells, domain_only] for c in re.findall(r"`([a-z_]+)`", cell)}


REASONS = reason_kinds()
CODES = refusal_codes()


# -- the table as the record shows it -----------------------------------------------------


@dataclass
class Deal:
    number: int
    dealer: int
    stock: int  # how many cards it holds, the turned trump card among them
    hands: list[list[str]]
    piles: list[list[str]]
    bonus: list[int]
    pot: list[int]
    trump: str | None = None
    trump_card: str | None = None
    multiplier: int = 1
    on_table: list[str] = field(default_factory=list)
    winning: tuple[str, ...] = ()  # the set the next answer must beat
    beater: int = 0  # who takes the trick if nobody beats from here
    draws: list[int] = field(default_factory=list)  # the draws still due, in order
    winner: int | None = None
    loser: int | None = None
    reason: str | None = None
    settled: bool = False


@dataclass
class Table:
    rules: Rules = field(default_factory=Rules)
    seats: int = 0
    score: list[int] = field(default_factory=list)
    deal: Deal | None = None
    last: Event | None = None  # the event before the one being looked at

    @property
    def teams(self) -> tuple[tuple[int, ...], ...] | None:
        return self.rules.teams

    def sizes(self) -> list[int]:
        """§2, §8.6, §8.11: 3 cards a seat, or each seat's own size, Kozel 4."""
        if self.rules.hand_size is not None:
            return list(self.rules.hand_size)
        return [4 if self.rules.game == "kozel" else 3] * self.seats


def follow(events: list[Event]) -> Iterator[tuple[Table, Event]]:
    """Each event with the table as it was just before it."""
    table = Table()
    for event in events:
        yield table, event
        apply(table, event)
        table.last = event


def apply(table: Table, event: Event) -> None:
    deal = table.deal
    match event:
        case GameStarted(seats=seats, rules=rules):
            table.rules, table.seats, table.score = rules, len(seats), [0] * len(seats)
        case DealStarted(number=number, dealer=dealer):
            n = table.seats
            table.deal = Deal(
                number=number,
                dealer=dealer,
                stock=table.rules.deck,
                hands=[[] for _ in range(n)],
                piles=[[] for _ in range(n)],
                bonus=[0] * n,
                pot=[0] * n,
            )
        case CardDealt(seat=seat, card=card) if deal:
            assert card is not None
            deal.hands[seat].append(card)
            deal.stock -= 1
        case TrumpTurned(card=card) if deal:
            deal.trump, deal.trump_card = oracle.suit(card), card
        case CompensationGiven(seat=seat, points=points) if deal:
            deal.bonus[seat] += points
        case CardsLed(seat=seat, cards=cards) if deal:
            _play(deal.hands[seat], cards)
            deal.on_table, deal.winning, deal.beater = list(cards), cards, seat
        case CardsResponded(seat=seat, cards=cards, beat=beat) if deal:
            assert cards is not None
            _play(deal.hands[seat], cards)
            deal.on_table += cards
            if beat:
                deal.winning, deal.beater = cards, seat
        case TrickTaken(seat=seat) if deal:
            deal.piles[seat] += deal.on_table
            deal.on_table = []
            held = [len(h) for h in deal.hands]
            set_aside = table.rules.short_stock == "set_aside"
            deal.draws = oracle.draw_order(table.sizes(), held, deal.stock, seat, set_aside)
        case CardDrawn(seat=seat, card=card) if deal:
            assert card is not None
            deal.hands[seat].append(card)
            deal.stock -= 1
            deal.draws = deal.draws[1:]
        case PenaltyApplied(seat=seat, cards=cards, count=count) if deal:
            deal.hands[seat] += cards or ()
            deal.stock -= count
        case PotPaid(seat=seat, amount=amount) if deal:
            deal.pot[seat] += amount
        case DaveAccepted(multiplier=multiplier) if deal:
            deal.multiplier = multiplier
        case DealWon(seat=seat, reason=reason) if deal:
            deal.winner, deal.reason = seat, reason
        case DealLost(seat=seat, reason=reason) if deal:
            deal.loser, deal.reason = seat, reason
        case DealVoid(reason=reason) if deal:
            deal.reason = reason
        case StakeSettled(payments=payments) if deal:
            table.score = [a + b for a, b in zip(table.score, payments, strict=True)]
            deal.settled = True


def _play(hand: list[str], cards: tuple[str, ...]) -> None:
    for card in cards:
        hand.remove(card)


def ended(deal: Deal | None) -> bool:
    return deal is not None and deal.reason is not None


def random_game(start: StartGame, style: Style, chance: random.Random) -> Played:
    return play_game(start, style, chance, nothing)


# -- §3: every trick judged by a brute-force search of the pairings -----------------------------


def check_tricks(events: list[Event]) -> None:
    for table, event in follow(events):
        deal = table.deal
        match event:
            case CardsResponded(cards=cards, beat=beat) if deal:
                assert cards is not None
                assert beat == oracle.covers(cards, deal.winning, deal.trump), event
            case TrickTaken(seat=seat) if deal:
                assert seat == deal.beater, (event, deal.winning)


# -- §4: the seats draw in the order the rules give, the trump card last and face up ----------


def check_draws(events: list[Event]) -> None:
    for table, event in follow(events):
        deal = table.deal
        match event:
            case CardDrawn(seat=seat, card=card, face_up=face_up) if deal:
                assert deal.draws[:1] == [seat], (event, deal.draws)
                assert face_up == (card == deal.trump_card and deal.stock == 1), event
            case CardsLed() if deal:
                assert deal.draws == [], "a lead before every due draw was made"


# -- §5, §8.4, §8.10: each declaration's value ---------------------------------------------------


def check_declarations(events: list[Event]) -> None:
    for table, event in follow(events):
        deal = table.deal
        if deal is None:
            continue
        match event:
            case Declared(seat=seat, claim="thirty_one", value=value, needed=needed, true=true):
                assert value == oracle.counted(table.teams, deal.piles, deal.bonus, seat), event
                assert needed == table.rules.target_points and true == (value >= needed)
            case Declared(seat=seat, claim="bura", value=value, needed=3, true=False):
                assert value == sum(oracle.suit(c) == deal.trump for c in deal.hands[seat]) < 3
            case Declared(seat=seat, claim="four_aces", value=value, needed=4, true=False):
                assert value == sum(oracle.rank(c) == "A" for c in deal.hands[seat]) < 4
            case Declared():
                raise AssertionError(f"a declaration the rules do not make: {event}")
            case BuraShown(seat=seat, cards=cards):
                trumps = {c for c in deal.hands[seat] if oracle.suit(c) == deal.trump}
                assert set(cards) == trumps and len(trumps) >= 3, event
            case FourAcesShown(seat=seat, cards=cards):
                assert sorted(cards) == sorted(c for c in deal.hands[seat] if oracle.rank(c) == "A")
                assert len(cards) == 4
            case PotPaid(seat=seat, amount=amount):
                assert table.rules.false_declaration == "pay_pot"
                assert amount == table.rules.stake * deal.multiplier
                assert isinstance(table.last, Declared) and table.last.seat == seat
                assert table.last.claim == "thirty_one" and not table.last.true


# -- §5, §2: the count, the settlement and the next dealer --------------------------------------


def check_settlements(events: list[Event]) -> None:
    for table, event in follow(events):
        deal, rules = table.deal, table.rules
        if deal is None:
            continue
        counting = rules.game == "kozel" or (
            rules.no_claim == "most_points" and isinstance(table.last, Passed)
        )
        match event:
            case DealWon(seat=seat, reason="most_points"):
                assert counting
                assert oracle.count_winner(table.teams, deal.piles, deal.bonus) == seat
            case DealVoid():
                if counting:
                    assert oracle.count_winner(table.teams, deal.piles, deal.bonus) is None
            case StakeSettled(deal=number, stake=stake, multiplier=multiplier, payments=payments):
                assert (number, stake, multiplier) == (deal.number, rules.stake, deal.multiplier)
                expected = oracle.settlement(
                    table.teams,
                    table.seats,
                    rules.stake * deal.multiplier,
                    winner=deal.winner,
                    loser=deal.loser,
                    pot=deal.pot,
                )
                assert list(payments) == expected, (deal.reason, deal.pot)
            case DealerChosen(seat=seat, by=by) if ended(deal):
                assert (seat, by) == oracle.next_dealer(
                    table.seats, deal.dealer, winner=deal.winner, loser=deal.loser
                )
        if isinstance(event, DealerChosen | GameFinished) and ended(deal):
            assert deal.settled == (deal.reason != "no_claim" or any(deal.pot))


# -- §10: every reason of its kind, and brought about by what the rules name -------------------


def brought_about(reason: str, seat: int | None, last: Event | None, rules: Rules) -> bool:
    """Whether `last`, the event just before a deal's end, is what §10 says ends it so."""
    counted = isinstance(last, Passed) or (
        rules.game == "kozel" and isinstance(last, TrickTaken | CardDrawn)
    )
    match reason, last:
        case "thirty_one", Declared(seat=s, claim="thirty_one", true=True):
            return s == seat
        case "bura", BuraShown(seat=s):
            return s == seat
        case "bura", CardsLed(seat=s, combination="bura"):
            return s == seat
        case "bura", CardsResponded():  # a Czech bura beaten by a bura, or by none to the last
            return rules.combinations == "czech"
        case "four_aces", FourAcesShown(seat=s):
            return s == seat
        case "dave_declined", DaveDeclined():
            return True
        case "most_points" | "no_claim", _:
            return counted
        case "false_declaration", Declared(seat=s, true=False):
            return s == seat
        case "double_draw" | "extra_card" | "out_of_turn_draw", PenaltyApplied(seat=s, rule=r):
            return (s, r) == (seat, reason)
        case "conceded", Conceded(seat=s):
            return s == seat
        case "timeout", TimedOut(seat=s, clock="turn", verdict="lose_deal"):
            return s == seat
        case "timeout", PauseEnded(seat=s, verdict="lose_deal"):
            return s == seat
        case "abandoned", TimedOut(seat=s, clock="abandon", verdict="lose_deal"):
            return s == seat
    return False


def check_reasons(events: list[Event]) -> None:
    kinds = {DealWon: "won", DealLost: "lost", DealVoid: "void"}
    for table, event in follow(events):
        if isinstance(event, DealWon | DealLost | DealVoid):
            assert REASONS[event.reason] == kinds[type(event)], event
            seat = None if isinstance(event, DealVoid) else event.seat
            assert brought_about(event.reason, seat, table.last, table.rules), (table.last, event)
        if isinstance(event, GameFinished):
            assert table.deal is not None and event.reason == table.deal.reason


# -- §7: the game ends exactly when a score reaches the target ---------------------------------


def check_the_match(events: list[Event]) -> None:
    for table, event in follow(events):
        target = table.rules.match_target
        reached = bool(table.score) and max(table.score) >= target
        match event:
            case StakeSettled(payments=payments):
                assert sum(payments) == 0 and not reached
            case GameFinished(winners=winners):
                assert reached and isinstance(table.last, StakeSettled | SeedRevealed)
                best = max(table.score)
                assert winners == tuple(s for s, v in enumerate(table.score) if v == best)
            case DealerChosen() | DealStarted():
                assert not reached, "a deal dealt after the target was reached"
    assert isinstance(events[-1], GameFinished)


# -- §13.2, §13.4: the banks -----------------------------------------------------------------


def check_banks(events: list[Event], rules: Rules, seats: int) -> None:
    """Every deal gives each seat its whole bank; within a deal only the seat the clock ran
    for loses any, what it used past its turn time: all of it when the server played for it
    or the table paused on it."""
    assert rules.turn_seconds is not None
    whole = (rules.time_bank_seconds * 1000,) * seats
    clock: ClockStarted | None = None
    spent = False  # the seat's bank went at a timeout (auto_play) or a pause
    for event in events:
        match event:
            case DealStarted():
                clock = None
            case TimedOut(verdict="auto_play" | "pause"):
                spent = True
            case ClockStarted(seat=seat, at=at, turn_ends=turn_ends, deadline=deadline):
                assert turn_ends == at + rules.turn_seconds * 1000
                assert deadline == turn_ends + event.banks[seat]
                if clock is None:
                    assert event.banks == whole, event
                else:
                    banks = list(clock.banks)
                    used = max(0, at - clock.turn_ends)
                    banks[clock.seat] = 0 if spent else max(0, banks[clock.seat] - used)
                    assert list(event.banks) == banks, (clock, event)
                    assert at >= clock.at
                clock, spent = event, False


# -- the properties ----------------------------------------------------------------------------


@PROPERTY
@given(tables(), styles, chances)
def test_every_answer_s_beat_and_every_taker_are_those_a_search_of_the_pairings_gives(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    check_tricks(random_game(start, style, chance).events)


@PROPERTY
@given(tables(), styles, chances)
def test_the_seats_draw_one_card_each_taker_first_then_clockwise_trump_card_last(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    check_draws(random_game(start, style, chance).events)


@PROPERTY
@given(tables(), styles, chances)
def test_a_declaration_counts_the_side_s_piles_and_compensation_a_bura_its_trumps(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    check_declarations(random_game(start, style, chance).events)


@PROPERTY
@given(tables(), styles, chances)
def test_every_count_settlement_and_next_dealer_is_the_one_the_rules_give(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    check_settlements(random_game(start, style, chance).events)


@PROPERTY
@given(tables(), styles, chances)
def test_every_deal_ends_with_a_reason_of_its_kind_brought_about_by_what_section_10_names(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    check_reasons(random_game(start, style, chance).events)


@PROPERTY
@given(tables(), styles, chances)
def test_the_game_ends_exactly_when_a_score_reaches_the_match_target(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    check_the_match(random_game(start, style, chance).events)


@PROPERTY
@given(tables(), styles, chances)
def test_only_the_seat_the_clock_ran_for_spends_its_bank_and_every_deal_refills_it(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    if start.rules.turn_seconds is None:
        return
    check_banks(random_game(start, style, chance).events, start.rules, len(start.seats))


def server_commands(state: Game, chance: random.Random) -> list[object]:
    """The server's own commands at a random moment, most of them with nothing to do."""
    at = in_time(state) + chance.choice([0, 1, 10**9])
    version = chance.choice([state.version, state.version - 1])
    seat = chance.randrange(len(state.seats))
    return [
        TimeOut(seat=seat, version=version, at=at),
        TimeOut(seat=seat, version=version, at=at, away_since=at - 1),
        EndPause("play_on"),
        CloseSeeding(at=at),
    ]


def check_refusals(played: Played, chance: random.Random) -> None:
    for state in chance.sample(played.states, min(4, len(played.states))):
        for seat in [*range(len(state.seats)), None]:
            commands: list[object] = server_commands(state, chance)
            if seat is not None:
                commands = [*candidates(state, seat, chance), Draw(1), Draw(2), Draw(0)]
            for command in commands:
                try:
                    decide(state, command, seat, in_time(state))  # type: ignore[arg-type]
                except RuleViolation as refusal:
                    assert refusal.code in CODES, refusal


@PROPERTY
@given(tables(), styles, chances)
def test_every_refusal_is_a_code_the_table_of_section_11_lists(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    check_refusals(random_game(start, style, chance), chance)


def check_verified(played: Played) -> None:
    """docs/fairness.md: with the game's seed every deal checks out; outside closed discard,
    so does each seat's and the spectator's own record with the seed revealed to them."""
    dealt = sum(isinstance(e, DealStarted) for e in played.events)
    checks = verify_deals(played.events, played.start.seed)
    assert len(checks) == dealt and all(c.ok for c in checks), checks
    rules = played.start.rules
    if rules.closed_discard:
        return
    for viewer in [*range(len(played.start.seats)), SPECTATOR]:
        seen = redact_all(played.events, viewer, rules)
        finished = seen[-1]
        assert isinstance(finished, GameFinished) and finished.seed is not None
        mine = verify_deals(seen, finished.seed)
        assert len(mine) == dealt and all(c.ok for c in mine), (viewer, mine)


@PROPERTY
@given(tables(), styles, chances)
def test_every_deal_of_a_finished_game_verifies_against_its_commitment(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    check_verified(random_game(start, style, chance))


def comparable(moves: list[PlayerCommand], state: Game, seat: int) -> list[tuple[str, object]]:
    """Moves as a sorted list, cards as sets. In the Czech game a combination's precedence
    hangs on hands the seat cannot see, so combination leads are left out on both sides."""
    deal = state.deal
    assert deal is not None
    czech = state.rules.combinations == "czech"
    kept = []
    for move in moves:
        if isinstance(move, Lead | Respond):
            if czech and isinstance(move, Lead) and combination(move.cards, deal.trump):
                continue
            kept.append((type(move).__name__, tuple(sorted(move.cards))))
        else:
            kept.append((type(move).__name__, repr(move)))
    return sorted(kept, key=repr)


def check_as_seen(played: Played, chance: random.Random) -> None:
    for state in chance.sample(played.states, min(8, len(played.states))):
        if state.deal is None or state.seeding is not None or state.finished:
            continue
        for seat in range(len(state.seats)):
            rebuilt = as_seen(view(state, seat))
            assert comparable(legal_commands(rebuilt, seat), state, seat) == comparable(
                legal_commands(state, seat), state, seat
            ), (seat, state.deal.phase)


@PROPERTY
@given(tables(), styles, chances)
def test_a_seat_s_view_rebuilt_as_a_table_offers_the_moves_the_table_does(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    check_as_seen(random_game(start, style, chance), chance)


EVERY_CHECK: list[Callable[[list[Event]], None]] = [
    check_tricks,
    check_draws,
    check_declarations,
    check_settlements,
    check_reasons,
    check_the_match,
]


@pytest.mark.parametrize("variant", VARIANTS)
@VARIANT
@given(data=st.data())
def test_every_oracle_holds_in_each_variant(variant: str, data: st.DataObject) -> None:
    start = data.draw(tables(variant=variant), label="start")
    chance = data.draw(chances, label="chance")
    game = random_game(start, data.draw(styles, label="style"), chance)
    for check in EVERY_CHECK:
        check(game.events)
    if start.rules.turn_seconds is not None:
        check_banks(game.events, start.rules, len(start.seats))
    check_refusals(game, chance)
    check_verified(game)
    check_as_seen(game, chance)
