"""docs/rules.md §8.13, docs/fairness.md: a table whose seats shuffle (`shuffle: "seats"`).

The server commits to its seed first; each seat sends one seed per deal; when all are in,
or the deadline passes (a missing seed counts as empty), the deal is shuffled from
HMAC-SHA256(server seed, the seeds in seat order, the deal number)."""

from __future__ import annotations

import pytest

from domain.cards import deck
from domain.commands import CloseSeeding, Concede, Draw, Lead, Seed
from domain.decide import decide
from domain.errors import BadSetup
from domain.events import (
    DealerChosen,
    DealStarted,
    SeedingClosed,
    SeedingOpened,
    SeedRevealed,
    SeedSent,
)
from domain.evolve import fold
from domain.fairness import verify_deals
from domain.legal import ANY_SEED, legal_commands
from domain.shuffle import commitment, deal_seed, seated_deal_seed, seed_commitment, shuffled
from domain.state import Game
from domain.views import ARBITER, SPECTATOR, redact, redact_all, view
from tests.domain.given import act, play, refused, start
from tests.domain.vectors import vectors

T0 = 1_767_225_600_000  # when the game is created, ms since the epoch
SEED = "seeding"
DEADLINE = T0 + 30_000  # seeding_seconds defaults to 30


def seated(seats: int = 2, **options: object) -> Game:
    """A seat-shuffled table just created at T0: deal 1 waits for the seeds."""
    return start(seats, dealer=seats - 1, seed=SEED, now=T0, shuffle="seats", **options)[0]


def test_the_server_commits_to_its_seed_before_any_seat_sends_one() -> None:
    _, events = start(2, dealer=1, seed=SEED, now=T0, shuffle="seats")
    assert events[-1] == SeedingOpened(
        number=1, server_commitment=seed_commitment(deal_seed(SEED, 1)), deadline=DEADLINE
    )
    given = seated()
    seat = view(given, 0)
    assert (seat.phase, seat.due, seat.turn, seat.deal, seat.hand) == (
        "seeding",
        "seed",
        None,
        1,
        (),
    )
    assert (
        seat.shuffle is not None and seat.shuffle.server_commitment == events[-1].server_commitment
    )  # type: ignore[attr-defined]
    assert seat.shuffle.deadline == DEADLINE and seat.shuffle.sent == ()
    assert legal_commands(given, 0) == [Seed(ANY_SEED)]
    for command in (Draw(), Lead(("AS",)), Concede()):
        assert refused(given, 0, command) == "seeds_pending"


def test_when_every_seat_has_sent_its_seed_the_deal_is_shuffled_from_their_hmac() -> None:
    given = seated()
    state, first = act(given, 1, Seed("bob: 0c55e2"), now=T0 + 1_000)
    assert first == [SeedSent(1, "bob: 0c55e2")]
    assert view(state, 1).due is None and view(state, 0).due == "seed"

    state, events = act(state, 0, Seed("ann: 7f3a91"), now=T0 + 2_000)

    seeds = ("ann: 7f3a91", "bob: 0c55e2")
    mixed = seated_deal_seed(deal_seed(SEED, 1), seeds, 1)
    dealt = shuffled(mixed, deck(36))
    assert events[:3] == [
        SeedSent(0, "ann: 7f3a91"),
        SeedingClosed(number=1, seeds=seeds, missing=()),
        DealStarted(number=1, dealer=1, commitment=commitment(mixed, dealt), deck=dealt),
    ]
    seat = view(state, 0)
    assert (
        seat.phase == "lead" and seat.due == "lead" and seat.hand == (dealt[0], dealt[2], dealt[4])
    )
    assert seat.shuffle is not None and seat.shuffle.seeds == seeds and seat.shuffle.missing == ()
    assert [
        c.ok
        for c in verify_deals(
            [*start(2, dealer=1, seed=SEED, now=T0, shuffle="seats")[1], *first, *events], SEED
        )
    ] == [True]


def test_a_seed_missing_at_the_deadline_is_recorded_as_empty_and_the_view_says_so() -> None:
    given = play(seated(3), (0, Seed("d41d8cd9")), (2, Seed("Charlie's seed")))
    assert refused(given, None, CloseSeeding(at=DEADLINE - 1)) == "deadline_not_passed"

    events = decide(given, CloseSeeding(at=DEADLINE + 250), None)

    seeds = ("d41d8cd9", "", "Charlie's seed")
    assert events[0] == SeedingClosed(number=1, seeds=seeds, missing=(1,), at=DEADLINE + 250)
    mixed = seated_deal_seed(deal_seed(SEED, 1), seeds, 1)
    assert isinstance(events[1], DealStarted) and events[1].deck == shuffled(mixed, deck(36))
    assert refused(given, 1, Seed("too late"), now=DEADLINE) == "seed_too_late"
    dealt = fold(given, events)
    # once closed at the deadline (by its timer, or the request that found it passed), the
    # missing seat's seed is still too late, not "no deal waiting"; a seat that sent its
    # seed is told there is no seeding to send one to
    assert refused(dealt, 1, Seed("too late"), now=DEADLINE + 9000) == "seed_too_late"
    assert refused(dealt, 0, Seed("again"), now=DEADLINE + 9000) == "not_seeding"
    for viewer in (0, 1, SPECTATOR, ARBITER):
        shown = view(dealt, viewer).shuffle
        assert shown is not None and shown.missing == (1,) and shown.seeds == seeds


def test_a_seed_sent_twice_is_refused() -> None:
    given = play(seated(3), (1, Seed("first")))
    assert refused(given, 1, Seed("second")) == "seed_already_sent"
    assert legal_commands(given, 1) == [] and legal_commands(given, 0) == [Seed(ANY_SEED)]


def test_a_spectator_sends_no_seed() -> None:
    assert refused(seated(), None, Seed("watching")) == "not_a_seat"


def test_a_seed_is_printable_ascii_and_only_while_seeding() -> None:
    assert refused(seated(), 0, Seed("séed")) == "bad_seed"
    assert refused(seated(), 0, Seed("x" * 129)) == "bad_seed"
    dealt = play(seated(), (0, Seed("a")), (1, Seed("b")))
    assert refused(dealt, 0, Seed("again")) == "not_seeding"
    assert refused(start(2)[0], 0, Seed("server table")) == "not_seeding"
    assert refused(dealt, None, CloseSeeding(at=DEADLINE)) == "not_seeding"


def test_no_seat_sees_another_seats_seed_before_seeding_closes() -> None:
    state, events = act(seated(), 0, Seed("ann's secret"))
    rules = state.rules
    assert redact(events[0], 0, rules) == SeedSent(0, "ann's secret")
    assert redact(events[0], 1, rules) == SeedSent(0, None)
    assert redact(events[0], SPECTATOR, rules) == SeedSent(0, None)
    assert view(state, 0).shuffle.seed == "ann's secret"  # type: ignore[union-attr]
    assert view(state, 1).shuffle.seed is None  # type: ignore[union-attr]
    assert view(state, 1).shuffle.sent == (0,)  # type: ignore[union-attr]
    assert "ann's secret" not in repr(view(state, 1))


def test_the_server_seed_is_revealed_when_the_deal_ends_and_the_next_deal_waits_for_seeds() -> None:
    dealt = play(seated(match_target=2), (0, Seed("a")), (1, Seed("b")))
    at = T0 + 60_000

    state, events = act(dealt, 0, Concede(), now=at)

    revealed = SeedRevealed(number=1, server_seed=deal_seed(SEED, 1))
    assert revealed in events
    assert events[-2:] == [
        DealerChosen(1, "winner"),
        SeedingOpened(
            number=2,
            server_commitment=seed_commitment(deal_seed(SEED, 2)),
            deadline=at + 30_000,
        ),
    ]
    seat = view(state, 0)
    assert (
        seat.phase == "seeding"
        and seat.deal == 2
        and seat.deals[0].server_seed == deal_seed(SEED, 1)
    )
    assert redact(revealed, 1, state.rules) == revealed


def test_closed_discard_reveals_the_server_seed_to_the_arbiter_only() -> None:
    dealt = play(seated(closed_discard=True, match_target=2), (0, Seed("a")), (1, Seed("b")))
    state, events = act(dealt, 0, Concede())
    revealed = next(e for e in events if isinstance(e, SeedRevealed))
    for viewer in (0, 1, SPECTATOR):
        assert redact(revealed, viewer, state.rules).server_seed is None  # type: ignore[attr-defined]
        assert view(state, viewer).deals[0].server_seed is None
    assert view(state, ARBITER).deals[0].server_seed == deal_seed(SEED, 1)


def test_a_seat_checks_from_its_own_events_that_its_seed_went_into_the_deal() -> None:
    _, opening = start(2, dealer=1, seed=SEED, now=T0, shuffle="seats", match_target=2)
    state = fold(Game(), opening)
    events = list(opening)
    for seat, command in ((1, Seed("bob's")), (0, Seed("ann's")), (0, Concede())):
        state, new = act(state, seat, command)
        events += new
    own = redact_all(events, 1, state.rules)  # what seat 1 was sent, nothing more

    [check] = verify_deals(own, None)  # deal 2 is not over: its server seed is still secret

    assert check.ok and check.shuffle == "seats" and check.seeds == ("ann's", "bob's")
    assert check.server_commitment_ok and check.seeds_ok and check.commitment_ok
    forged = [
        SeedingClosed(number=1, seeds=("ann's", "not bob's"), missing=())
        if isinstance(e, SeedingClosed) and e.number == 1
        else e
        for e in own
    ]
    [caught] = verify_deals(forged, None)
    assert not caught.ok and not caught.seeds_ok and not caught.commitment_ok


def test_the_seats_shuffle_takes_no_fixed_deck_and_seeding_seconds_belong_to_it() -> None:
    with pytest.raises(BadSetup) as fixed:
        start(2, order=deck(36), shuffle="seats")
    assert fixed.value.code == "bad_deck"
    with pytest.raises(BadSetup) as lone:
        start(2, seeding_seconds=10)
    assert lone.value.option == "seeding_seconds"
    with pytest.raises(BadSetup) as bounds:
        start(2, shuffle="seats", seeding_seconds=0)
    assert bounds.value.option == "seeding_seconds"
    quick = seated(seeding_seconds=5)
    assert quick.seeding is not None and quick.seeding.deadline == T0 + 5_000


def test_without_a_clock_the_seeding_has_no_deadline_and_waits_for_every_seed() -> None:
    given = start(2, shuffle="seats")[0]
    assert given.seeding is not None and given.seeding.deadline is None
    assert refused(given, None, CloseSeeding(at=T0)) == "deadline_not_passed"


def test_the_deck_dealt_from_the_seats_seeds_is_the_published_test_vector() -> None:
    """docs/fairness.md §8 `seats`: deal 1 with both seeds in; deal 2 with seat 1's missing
    at the deadline."""
    first, second = vectors()["seats"]
    game = first["game_seed"]
    given = start(2, dealer=1, seed=game, now=T0, shuffle="seats")[0]
    state = play(given, (0, Seed(first["seeds"][0])), (1, Seed(first["seeds"][1])))
    dealt = state.deal
    assert dealt is not None and list(dealt.deck) == first["deck"]
    assert dealt.commitment == first["commitment"]
    assert view(given, 0).shuffle.server_commitment == first["server_commitment"]  # type: ignore[union-attr]

    table = start(3, dealer=2, seed=game, now=T0, shuffle="seats", match_target=5)[0]
    table = play(table, *((s, Seed(f"deal 1, seat {s}")) for s in range(3)))
    table = act(table, table.deal.turn, Concede(), now=T0 + 5_000)[0]  # type: ignore[union-attr]
    seeding = table.seeding
    assert seeding is not None and seeding.number == 2
    assert seeding.server_commitment == second["server_commitment"]
    for seat, seed in enumerate(second["seeds"]):
        if seed:
            table = act(table, seat, Seed(seed), now=T0 + 6_000)[0]
    assert seeding.deadline is not None
    events = decide(table, CloseSeeding(at=seeding.deadline), None)
    [started] = [e for e in events if isinstance(e, DealStarted)]
    assert started.number == 2 and list(started.deck or ()) == second["deck"]
    assert started.commitment == second["commitment"]


def test_seeds_sent_on_the_same_table_are_both_taken_whichever_comes_first() -> None:
    given = seated(3)
    saw = given.version
    after = play(given, (2, Seed("c", seen=saw)))
    dealt = play(after, (0, Seed("a", seen=saw)), (1, Seed("b", seen=saw)))
    assert dealt.seeding is None and dealt.deal is not None and len(dealt.deal.hands[0]) == 3


def test_a_seed_naming_an_old_table_is_table_changed_once_the_seeding_has_closed() -> None:
    given = seated()
    dealt = play(given, (0, Seed("a")), (1, Seed("b")))
    assert refused(dealt, 0, Seed("late", seen=given.version)) == "table_changed"
