"""Rules of docs/rules.md that no other example showed: the pot under a dave and in the team
game, the count with three seats, teams and compensation, the played-out point with cards
still held, the clock when the same seat is due again and what auto_play picks, a pending
dave, and the fairness record's forgeries (docs/fairness.md) that verify and the chain catch.

Hands named in a test are dealt by tests/domain/given.py's explicit deck; a few deals come
from a named seed instead, with what the test rests on asserted first."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from msgspec.structs import replace

from domain.cards import points
from domain.chain import GENESIS, ChainCheck, Row, canonical, check_chain, link
from domain.commands import (
    CloseSeeding,
    Concede,
    Dave,
    DaveAnswer,
    Declare,
    Draw,
    Pass,
    Seed,
    TimeOut,
)
from domain.decide import decide
from domain.errors import BadOption
from domain.events import (
    BuraShown,
    CardsLed,
    CardsResponded,
    ClockStarted,
    DaveAccepted,
    DealerChosen,
    DealLost,
    DealStarted,
    DealVoid,
    DealWon,
    Declared,
    Event,
    GameFinished,
    Passed,
    PotPaid,
    SeedingClosed,
    SeedSent,
    StakeSettled,
    TimedOut,
)
from domain.fairness import verify_deals
from domain.legal import legal_commands
from domain.rules import Rules, check
from domain.seen import as_seen
from domain.state import Game
from domain.views import SPECTATOR, DaveView, view
from tests.domain.given import (
    HANDS,
    SEED,
    act,
    current,
    draw_all,
    given_table,
    lead,
    play,
    play_out,
    play_to_the_count,
    refused,
    respond,
    start,
    table,
    table_and_events,
    trick,
)

T0 = 1_700_000_000_000
THIRTY_ONE = Declare("thirty_one")
ACCEPT = DaveAnswer(True)


def pot_table(**options: object) -> Game:
    """Two seats, closed discard, pay_pot: seat 0 leads AS and takes 21 with it."""
    return table(
        ["AS AD 7C", "10D 10S 8C"],
        trump="9H",
        stock="QS JS 9S 8S",
        closed_discard=True,
        false_declaration="pay_pot",
        **options,
    )


# -- §8.4 paying the pot ------------------------------------------------------------------------


def test_the_pot_is_the_stake_times_the_dave_multiplier_and_is_settled_so() -> None:
    given = play(pot_table(stake=3, match_target=100), (0, Dave()), (1, ACCEPT))
    given = trick(given, "AS", "10D")
    given, events = act(given, 0, THIRTY_ONE)
    assert events == [
        Declared(seat=0, claim="thirty_one", value=21, needed=31, true=False),
        PotPaid(0, 6),
    ]
    settled, events = act(given, 0, Concede())
    # the doubled stake, and the pot of 6 on top
    assert events[2] == StakeSettled(deal=1, stake=3, multiplier=2, payments=(-12, 12))
    # the settled deal keeps its pot in every view, after the next deal's pot starts empty
    for viewer in (0, 1, SPECTATOR):
        (deal,) = view(settled, viewer).deals
        assert (deal.stake, deal.pot) == (6, (6, 0))
        assert view(settled, viewer).pot == (0, 0)


def test_a_false_bura_still_loses_the_deal_under_pay_pot_and_pays_no_pot() -> None:
    given = table(
        ["6H 7H 8D", "AS 10S KS"],
        trump="9H",
        closed_discard=True,
        false_declaration="pay_pot",
        match_target=5,
    )
    _, events = act(given, 0, Declare("bura"))
    assert events[:3] == [
        Declared(seat=0, claim="bura", value=2, needed=3, true=False),
        DealLost(0, "false_declaration"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(-1, 1)),
    ]
    assert not any(isinstance(e, PotPaid) for e in events)


def test_in_the_team_game_each_seat_of_the_declarer_s_team_pays_the_pot() -> None:
    given = table(
        ["AS 10D 2C", "3S 4D 5C", "10S AD 2D", "5S 5D 3C"],
        trump="9H",
        deck=52,
        teams=((0, 2), (1, 3)),
        closed_discard=True,
        false_declaration="pay_pot",
        match_target=5,
    )
    given = trick(given, "AS", "3S", "10S", "5S")  # seat 0 takes 21
    given, events = act(given, 0, THIRTY_ONE)
    assert events[1] == PotPaid(0, 1)
    given = play_out(given)
    last = current(given).turn
    _, events = act(given, last, Pass())
    assert events[:4] == [
        Passed(last),
        DealVoid("no_claim"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(-1, 1, -1, 1)),
        DealerChosen(3, "same_dealer"),
    ]


def test_a_void_deal_that_settles_a_pot_ends_the_game_once_a_score_reaches_the_target() -> None:
    given = trick(pot_table(), "AS", "10D")
    given = play_out(act(given, 0, THIRTY_ONE)[0])
    last = current(given).turn
    after, events = act(given, last, Pass())
    assert events == [
        Passed(last),
        DealVoid("no_claim"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(-1, 1)),
        GameFinished(winners=(1,), reason="no_claim", seed=SEED),
    ]
    assert after.finished and after.reason == "no_claim"


# -- §5 most_points: three seats, teams, compensation ----------------------------------------


def test_with_three_seats_a_tie_below_the_top_does_not_void_the_count() -> None:
    given = play_out(start(3, dealer=2, seed="m19", no_claim="most_points", match_target=3)[0])
    assert [points(p) for p in current(given).piles] == [38, 44, 38]
    last = current(given).turn
    _, events = act(given, last, Pass())
    assert events[:4] == [
        Passed(last),
        DealWon(1, "most_points"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(-1, 2, -1)),
        DealerChosen(1, "winner"),
    ]


def test_a_team_that_wins_on_a_count_deals_next_from_its_first_listed_seat() -> None:
    """§2, §8.10: teams listed [2, 0] and [1, 3]; seats 0 and 2 pool 45 + 21 against 54."""
    given = start(
        4,
        dealer=3,
        seed="t",
        deck=52,
        teams=((2, 0), (1, 3)),
        no_claim="most_points",
        match_target=5,
    )[0]
    given = play_out(given)
    assert [points(p) for p in current(given).piles] == [45, 54, 21, 0]
    last = current(given).turn
    _, events = act(given, last, Pass())
    assert events[1:4] == [
        DealWon(2, "most_points"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(1, -1, 1, -1)),
        DealerChosen(2, "winner"),
    ]


def test_an_open_seat_s_compensation_counts_toward_its_most_points_total() -> None:
    given = start(
        2,
        dealer=1,
        seed="c4",
        no_claim="most_points",
        open_seats=(0,),
        compensation=30,
        match_target=3,
    )[0]
    given = play_out(given)
    deal = current(given)
    assert [points(p) for p in deal.piles] == [57, 63] and deal.bonus == (30, 0)
    _, events = act(given, deal.turn, Pass())
    assert events[1] == DealWon(0, "most_points")  # 87 against 63


def test_an_open_seat_s_compensation_counts_in_the_kozel_count() -> None:
    given = start(
        2, dealer=1, seed="k2", game="kozel", open_seats=(1,), compensation=30, match_target=3
    )[0]
    counted, events = play_to_the_count(given)
    deal = current(counted)
    assert [points(p) for p in deal.piles] == [61, 59] and deal.bonus == (0, 30)
    assert events[0] == DealWon(1, "most_points")  # 89 against 61


# -- §5 played out with three seats; §8.11, §12.25 Kozel with three ---------------------------


def test_with_three_seats_the_deal_is_played_out_while_the_leader_still_holds_a_card() -> None:
    """The stock ran short: seat 0 leads holding AH, seat 1 has nothing to answer with.
    Nothing can be led, nothing doubled; a pass counts the piles, the held cards for nobody
    (with its AH seat 0 would have 54, the most)."""
    given = start(3, dealer=2, deck=32, seed="p25", no_claim="most_points", match_target=3)[0]
    given = play_out(given)
    deal = current(given)
    assert deal.hands == (("AH",), (), ("QS",)) and not deal.stock and deal.turn == 0
    assert [points(p) for p in deal.piles] == [43, 19, 44]
    assert refused(given, 0, lead("AH")) == "no_cards"
    assert refused(given, 0, Dave()) == "dave_off"
    _, events = act(given, 0, Pass())
    assert events[:3] == [
        Passed(0),
        DealWon(2, "most_points"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(-1, -1, 2)),
    ]


def test_three_seat_kozel_is_counted_when_a_hand_empties_held_cards_for_nobody() -> None:
    given = start(3, dealer=2, seed="k46", game="kozel", deck=32, match_target=3)[0]
    counted, events = play_to_the_count(given)
    deal = current(counted)
    assert deal.hands == (("9C",), ("10D",), ()) and not deal.stock
    assert [points(p) for p in deal.piles] == [38, 32, 40]  # seat 1 would have 42 with 10D
    assert events[:2] == [
        DealWon(2, "most_points"),
        StakeSettled(deal=1, stake=1, multiplier=1, payments=(-1, -1, 2)),
    ]


# -- §13.2 whose time runs -----------------------------------------------------------------------


def test_a_combination_led_out_of_turn_charges_the_seat_that_was_due_its_bank() -> None:
    given = table(
        ["AS 7D 8C", "KC QC JC", "6S 7S 9D"],
        trump="9H",
        combinations="czech",
        now=T0,
        turn_seconds=10,
        time_bank_seconds=30,
    )
    assert given.clock is not None and given.clock.seat == 0
    _, events = act(given, 1, lead("KC QC JC"), now=T0 + 15_000)  # 5 s into seat 0's bank
    assert events == [
        CardsLed(1, ("KC", "QC", "JC"), "molodka"),
        ClockStarted(
            seat=2,
            at=T0 + 15_000,
            turn_ends=T0 + 25_000,
            deadline=T0 + 55_000,
            banks=(25_000, 30_000, 30_000),
        ),
    ]


def clocked(**options: object) -> Game:
    """given_table with a 10-second clock and a 30-second bank, dealt at T0."""
    return given_table(now=T0, turn_seconds=10, time_bank_seconds=30, **options)


def test_the_clock_starts_again_for_the_offerer_due_again_after_an_accepted_dave() -> None:
    given, events = act(clocked(), 0, Dave(), now=T0 + 12_000)  # 2 s of seat 0's bank
    assert events[-1].banks == (28_000, 30_000)  # type: ignore[attr-defined]
    _, events = act(given, 1, ACCEPT, now=T0 + 13_000)
    assert events == [
        DaveAccepted(1, 2),
        ClockStarted(
            seat=0,
            at=T0 + 13_000,
            turn_ends=T0 + 23_000,
            deadline=T0 + 51_000,
            banks=(28_000, 30_000),
        ),
    ]


def test_the_clock_starts_again_for_a_false_declarer_that_keeps_the_turn_under_pay_pot() -> None:
    given = trick(pot_table(now=T0, turn_seconds=10), "AS", "10D")
    assert given.clock is not None and given.clock.seat == 0
    at = given.clock.started + 4_000
    _, events = act(given, 0, THIRTY_ONE, now=at)
    assert events[1:] == [
        PotPaid(0, 1),
        ClockStarted(seat=0, at=at, turn_ends=at + 10_000, deadline=at + 10_000, banks=(0, 0)),
    ]


# -- §13.3 auto_play: the act that risks least ---------------------------------------------------


def auto_played(hands: list[str], led: str | None = None) -> Event:
    """What the server plays for the seat due once its time runs out (hearts are trumps)."""
    given = table(hands, trump="9H", now=T0, turn_seconds=10, on_timeout="auto_play")
    if led is not None:
        given = act(given, 0, lead(led))[0]
    assert given.clock is not None
    timeout = TimeOut(seat=given.clock.seat, version=given.version, at=given.clock.deadline)
    events = act(given, None, timeout)[1]
    assert isinstance(events[0], TimedOut) and events[0].verdict == "auto_play"
    assert not any(isinstance(e, BuraShown | Declared) for e in events)
    return events[1]


def test_auto_play_answers_with_the_cheapest_card_that_beats() -> None:
    # 10S and the trump 6H beat 7S too; 8S spends neither a trump nor a point
    answer = auto_played(["7S 8D 9D", "10S 8S 6H"], led="7S")
    assert answer == CardsResponded(seat=1, cards=("8S",), count=1, beat=True)


def test_auto_play_answers_with_the_cheapest_card_when_nothing_beats() -> None:
    answer = auto_played(["AH 8D 9D", "KS 6D 7C"], led="AH")
    assert answer == CardsResponded(seat=1, cards=("6D",), count=1, beat=False)


def test_auto_play_leads_one_card_for_a_seat_holding_bura_and_never_shows_it() -> None:
    assert auto_played(["6H 7H 8H", "KS 6D 7C"]) == CardsLed(0, ("6H",))


def test_auto_play_leads_the_lowest_card_sparing_trumps_first() -> None:
    assert auto_played(["6H 8D 7S", "KS 6D 7C"]) == CardsLed(0, ("7S",))


def test_auto_play_spends_the_seat_s_bank_its_next_turn_has_the_turn_time_only() -> None:
    given = clocked(on_timeout="auto_play")
    assert given.clock is not None
    timeout = TimeOut(seat=0, version=given.version, at=given.clock.deadline)
    given, events = act(given, None, timeout)
    assert events[1] == CardsLed(0, ("6S",))
    assert isinstance(events[-1], ClockStarted) and events[-1].banks == (0, 30_000)
    given = act(given, 1, respond("7S"))[0]  # seat 1 takes, and draws first
    given = act(given, 1, Draw())[0]
    clock = given.clock
    assert clock is not None and clock.seat == 0 and clock.deadline == clock.turn_ends


# -- §6 a pending dave, and the view's dave -------------------------------------------------


def test_while_a_dave_is_pending_the_offerer_may_not_concede_and_nobody_may_pass() -> None:
    given = act(given_table(), 0, Dave())[0]
    assert refused(given, 0, Concede()) == "not_your_turn"
    assert refused(given, 0, Pass()) == "dave_pending"
    assert refused(given, 1, Pass()) == "dave_pending"


def test_no_czech_combination_may_be_led_while_a_dave_is_pending() -> None:
    given = table(["KC QC JC", "AS AD AC"], trump="9H", combinations="czech")
    given = act(given, 0, Dave())[0]
    assert refused(given, 1, lead("AS AD AC")) == "dave_pending"
    assert refused(given, 0, lead("KC QC JC")) == "dave_pending"


def test_the_view_s_dave_shows_the_multiplier_the_offer_and_who_holds_the_cube() -> None:
    fresh = given_table()
    offered = act(fresh, 0, Dave())[0]
    accepted = act(offered, 1, ACCEPT)[0]
    shown = [view(state, SPECTATOR).dave for state in (fresh, offered, accepted)]
    assert shown == [
        DaveView(enabled=True, multiplier=1, may_offer=None, offered_by=None),
        DaveView(enabled=True, multiplier=1, may_offer=None, offered_by=0),
        DaveView(enabled=True, multiplier=2, may_offer=1, offered_by=None),
    ]
    assert not view(given_table(dave=False), 0).dave.enabled
    assert not view(start(3)[0], 0).dave.enabled


# -- smaller rules ---------------------------------------------------------------------------


def test_with_declare_on_any_turn_a_seat_still_may_not_declare_while_drawing() -> None:
    given = given_table(declare_on="any_turn")
    given = act(act(given, 0, lead("AS"))[0], 1, respond("6H"))[0]  # seat 1 takes, draws
    assert (current(given).phase, current(given).turn) == ("draw", 1)
    assert refused(given, 1, THIRTY_ONE) == "not_your_turn"
    assert refused(given, 0, THIRTY_ONE) == "not_your_turn"


def test_the_view_lists_the_seats_due_to_draw_in_order() -> None:
    given = act(given_table(), 0, lead("AS 6S"))[0]
    given = act(given, 1, respond("7S 6H"))[0]  # seat 1 takes: it draws first
    assert view(given, SPECTATOR).draws == (1, 0, 1, 0)
    given = act(given, 1, Draw())[0]
    assert view(given, 0).draws == (0, 1, 0)
    assert view(draw_all(given), 1).draws == ()


def test_deal_started_marks_the_operator_s_deck_explicit_and_no_later_deal() -> None:
    given, events = table_and_events(HANDS, trump="9H", match_target=3)
    [first] = [e for e in events if isinstance(e, DealStarted)]
    assert first.explicit
    _, events = act(given, 0, Concede())
    [second] = [e for e in events if isinstance(e, DealStarted)]
    assert second.number == 2 and not second.explicit


def test_show_own_points_counts_the_compensation_with_the_pile() -> None:
    given = given_table(open_seats=(0,), compensation=10, show_own_points=True)
    assert [s.points for s in view(given, 0).seats] == [10, None]
    assert [s.points for s in view(given, 1).seats] == [None, 0]
    given = trick(given, "AS", "7S")  # seat 0 takes 11
    assert view(given, 0).seats[0].points == 21


def test_three_trumps_among_four_cards_are_a_bura_in_bura_too() -> None:
    given = table(["6H 7H AS 8H", "KS 6D 7C 8C"], trump="9H", hand_size=(4, 4))
    _, events = act(given, 0, Declare("bura"))
    assert events[:2] == [BuraShown(0, ("6H", "7H", "8H")), DealWon(0, "bura")]


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"turn_seconds": 10, "time_bank_seconds": 86_401}, "time_bank_seconds"),
        ({"turn_seconds": 10, "abandon_seconds": 86_401}, "abandon_seconds"),
        ({"shuffle": "seats", "seeding_seconds": 86_401}, "seeding_seconds"),
    ],
)
def test_a_time_longer_than_a_day_is_refused_naming_the_option(
    options: dict[str, object], option: str
) -> None:
    with pytest.raises(BadOption) as refusal:
        check(Rules(**options), 2)  # type: ignore[arg-type]
    assert refusal.value.option == option


# -- docs/fairness.md: a seats' shuffle record that lies about its seeds ------------------------

DEADLINE = T0 + 30_000  # seeding_seconds defaults to 30


def seated_record(*senders: int) -> list[Event]:
    """A two-seat table whose seats shuffle: deal 1 dealt from the seeds of `senders`, closed
    at the deadline if a seat sent none."""
    given, events = start(2, dealer=1, seed=SEED, now=T0, shuffle="seats")
    for seat in senders:
        given, new = act(given, seat, Seed(f"seat {seat}'s"), now=T0 + 1_000)
        events += new
    if len(senders) < 2:
        events += decide(given, CloseSeeding(at=DEADLINE), None, DEADLINE)
    return events


def forged(events: list[Event], make: Callable[[SeedingClosed], list[Event]]) -> list[Event]:
    """The record with its seeding_closed replaced by what `make` makes of it."""
    return [new for e in events for new in (make(e) if isinstance(e, SeedingClosed) else [e])]


def test_a_seed_counted_missing_before_the_deadline_fails_verification() -> None:
    events = seated_record(0)
    [honest] = verify_deals(events, SEED)
    assert honest.ok and honest.missing == (1,)
    early = forged(events, lambda e: [replace(e, at=DEADLINE - 1)])
    [caught] = verify_deals(early, SEED)
    assert not caught.ok and not caught.seeds_ok and caught.commitment_ok


def test_a_sent_seed_counted_missing_fails_verification() -> None:
    events = seated_record(0)
    sent = forged(events, lambda e: [SeedSent(1, "seat 1's"), e])
    [caught] = verify_deals(sent, SEED)
    assert not caught.ok and not caught.seeds_ok and caught.commitment_ok


def test_a_seed_mixed_in_that_was_never_sent_fails_verification() -> None:
    events = seated_record(0, 1)
    [honest] = verify_deals(events, SEED)
    assert honest.ok and honest.missing == ()
    unsent = [e for e in events if not (isinstance(e, SeedSent) and e.seat == 1)]
    [caught] = verify_deals(unsent, SEED)
    assert not caught.ok and not caught.seeds_ok and caught.commitment_ok


# -- domain/chain.py: the rows that break the chain ----------------------------------------------


def chained(stream_id: str = "game-1", count: int = 3) -> list[Row]:
    rows, previous = [], GENESIS
    for version in range(1, count + 1):
        fields = (stream_id, version, "cards_led", 1, b'{"seat":0}', None, 0, None, 1_000)
        previous = link(previous, canonical(*fields))
        rows.append(
            Row(
                stream_id=stream_id,
                version=version,
                type="cards_led",
                schema_version=1,
                data=b'{"seat":0}',
                command_id=None,
                actor=0,
                correlation_id=None,
                recorded_at=1_000,
                hash=previous,
            )
        )
    return rows


def test_an_honest_chain_holds_and_names_its_head() -> None:
    rows = chained()
    assert check_chain("game-1", rows) == ChainCheck(ok=True, rows=3, head=rows[-1].hash.hex())


@pytest.mark.parametrize(
    ("rows", "version", "problem"),
    [
        ([chained()[0], chained()[1], chained()[1]], 3, "version 3 is given as 2, again"),
        ([chained()[0], chained()[2]], 2, "version 2 is missing"),
        ([chained()[0], chained("game-2")[1]], 2, "belongs to game game-2, not game-1"),
        (
            [chained()[0], replace(chained()[1], hash=chained()[1].hash[:31])],
            2,
            "not a SHA-256 digest",
        ),
    ],
    ids=["repeated", "missing", "another_game", "short_hash"],
)
def test_the_chain_names_the_first_row_that_does_not_hold(
    rows: list[Row], version: int, problem: str
) -> None:
    found = check_chain("game-1", rows)
    assert not found.ok and found.first_bad_version == version
    assert found.problem is not None and problem in found.problem
    assert found.head == rows[version - 2].hash.hex()


def test_the_table_a_seat_rebuilds_from_its_view_keeps_its_refuted_31() -> None:
    """After a false 31 under pay_pot the declarer may not declare again before another
    trick (§8.4, `already_declared`). The table `bura play` rebuilds from the seat's view
    (domain/seen.py) must not offer the 31 the server refuses."""
    given = trick(
        table(
            ["AS AD 7C", "10D 10S 8C"],
            trump="9H",
            stock="QS JS 9S 8S",
            closed_discard=True,
            false_declaration="pay_pot",
        ),
        "AS",
        "10D",
    )
    given = act(given, 0, Declare("thirty_one"))[0]  # 21 points: false, a pot of 1
    assert refused(given, 0, Declare("thirty_one")) == "already_declared"
    rebuilt = as_seen(view(given, 0))
    assert Declare("thirty_one") not in legal_commands(rebuilt, 0)
    assert set(legal_commands(rebuilt, 0)) == set(legal_commands(given, 0))
