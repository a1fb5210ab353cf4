"""Invariants over random legal play with 2-6 seats and random options,
every variant of docs/rules.md §8 among them (and each variant surely on, in the last test).

Cards are conserved and never in two places, every game ends, a replay (also through JSON)
rebuilds the live state, decide accepts exactly what legal_commands lists and what a seat's
view offers (its `moves`), and no viewer learns a card it may not see, from its view or
from its redacted events.
"""

from __future__ import annotations

import random
from functools import partial
from itertools import combinations

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from domain.audit import audit
from domain.cards import Card, deck
from domain.combinations import combination_leads
from domain.commands import (
    Concede,
    Dave,
    DaveAnswer,
    Declare,
    Draw,
    Lead,
    Pass,
    PlayerCommand,
    Respond,
    Seed,
    StartGame,
)
from domain.decide import decide
from domain.errors import RuleViolation
from domain.events import (
    AnyEvent,
    CardDealt,
    CardDrawn,
    CardsResponded,
    DealStarted,
    Declared,
    Event,
    GameFinished,
    GameStarted,
    PauseEnded,
    PenaltyApplied,
    SeedRevealed,
    SeedSent,
    TimedOut,
    TrumpTurned,
)
from domain.evolve import replay
from domain.legal import combination_offers, legal_commands
from domain.moves import commands
from domain.playback import play_back
from domain.rules import hand_sizes, score_bound
from domain.state import Game
from domain.views import ARBITER, SPECTATOR, Viewer, redact_all, review, view
from tests.domain.given import in_time
from tests.domain.play import (
    VARIANTS,
    Played,
    Style,
    cards_in_play,
    play_game,
    styles,
    tables,
)
from tests.examples import examples

PROPERTY = settings(
    max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
VARIANT = settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
chances = st.randoms(use_true_random=True)
encode = msgspec.json.Encoder().encode
decode_events = msgspec.json.Decoder(list[AnyEvent]).decode


def conserved(state: Game, events: list[Event]) -> None:
    """After every command: each card of the pack in exactly one place, scores zero-sum."""
    assert state.version == len(events)
    assert sum(state.score) == 0
    if state.started:
        assert max(map(abs, state.score)) <= score_bound(state.rules, len(state.seats))
    deal = state.deal
    if deal is None:
        return
    pack = sorted(deck(state.rules.deck))
    cards = cards_in_play(deal)
    assert len(cards) == len(set(cards)), "a card in two places"
    assert sorted(cards) == pack
    assert sorted(deal.deck) == pack
    if deal.phase != "over":  # a faulty draw may leave the offender over-full
        sizes = hand_sizes(state.rules, len(state.seats))
        assert all(len(h) <= sizes[s] for s, h in enumerate(deal.hands))
        assert deal.stock[-1:] in ((), (deal.trump_card,)) or deal.trump_card not in deal.stock


def nothing(state: Game, events: list[Event]) -> None:
    pass


def check_the_end(played: Played) -> None:
    state = played.state
    assert state.finished and state.winners
    assert max(state.score) >= state.rules.match_target
    assert all(state.score[w] == max(state.score) for w in state.winners)
    assert state.reason == state.deals[-1].reason
    for reason in {d.reason for d in state.deals}:
        event(f"a deal ended by {reason}")
    event(f"{len(state.seats)} seats")
    for kind in {type(e).__name__ for e in played.events}:
        event(f"an event {kind}")
    event(f"{len(played.states) // 100 * 100}+ commands")


def check_replay(played: Played, chance: random.Random) -> None:
    assert replay(played.events) == played.state
    # every act decided again on the table before it gives exactly the record
    assert play_back(played.events) == played.state
    stored = decode_events(encode(played.events))
    assert stored == played.events
    assert replay(stored) == played.state
    if played.states:
        earlier = chance.choice(played.states)
        assert replay(played.events[: earlier.version]) == earlier
    wrongs = [
        e
        for e in played.events
        if isinstance(e, PenaltyApplied)
        or (isinstance(e, Declared) and not e.true)
        or (isinstance(e, TimedOut | PauseEnded) and e.verdict == "lose_deal")
    ]
    assert len(audit(played.events)) == len(wrongs)


def check_redaction(played: Played) -> None:
    """Each secret as docs/rules.md states it: own and open hands are seen, face-down answers
    only by their player, the seed of a closed_discard game by nobody but the arbiter."""
    rules = played.state.rules
    assert redact_all(played.events, ARBITER, rules) == played.events
    for viewer in [*range(len(played.start.seats)), SPECTATOR]:
        seen = redact_all(played.events, viewer, rules)
        assert [type(e) for e in seen] == [type(e) for e in played.events]
        shown = {s for s in range(len(played.start.seats)) if s == viewer or s in rules.open_seats}
        trump: Card | None = None
        for original, redacted in zip(played.events, seen, strict=True):
            match redacted:
                case TrumpTurned(card=card):
                    trump = card
                case CardDealt(seat=seat, card=card):
                    assert card == (original.card if seat in shown else None)  # type: ignore[attr-defined]
                case CardDrawn(seat=seat, card=card, face_up=face_up):
                    if seat in shown or face_up:
                        assert card == original.card  # type: ignore[attr-defined]
                        assert not face_up or card == trump
                    else:
                        assert card is None
                case PenaltyApplied(seat=seat, cards=cards):
                    assert cards == (original.cards if seat in shown else None)  # type: ignore[attr-defined]
                case CardsResponded(seat=seat, cards=cards, face_down=face_down, beat=beat):
                    assert face_down == (rules.closed_discard and not beat)
                    assert cards == (None if face_down and seat != viewer else original.cards)  # type: ignore[attr-defined]
                case DealStarted(deck=order):
                    assert order is None
                case GameStarted(seed=seed):
                    assert seed is None
                case GameFinished(seed=seed):
                    assert seed == (None if rules.closed_discard else original.seed)  # type: ignore[attr-defined]
                case SeedSent(seat=seat, value=value):
                    assert value == (original.value if seat == viewer else None)  # type: ignore[attr-defined]
                case SeedRevealed(server_seed=server_seed):
                    # a deal's server seed gives its deck: closed discard keeps it from all
                    assert server_seed == (None if rules.closed_discard else original.server_seed)  # type: ignore[attr-defined]
                case _:
                    assert redacted == original


def check_face_down_stays_hidden(played: Played, chance: random.Random) -> None:
    """closed_discard: a card a closed seat played face down reaches no other viewer, ever:
    not in its events, its views, its replay after the game, nor the audit."""
    rules = played.state.rules
    if not rules.closed_discard:
        return
    secret: dict[int, dict[int, set[Card]]] = {}  # deal -> seat -> its face-down cards
    number, trump = 0, None
    for e in played.events:
        if isinstance(e, DealStarted):
            number = e.number
        elif isinstance(e, TrumpTurned):
            trump = e.card  # it lay face up: whoever plays it later, it is no secret
        elif isinstance(e, CardsResponded) and e.face_down and e.seat not in rules.open_seats:
            assert e.cards is not None
            secret.setdefault(number, {}).setdefault(e.seat, set()).update(set(e.cards) - {trump})

    def leaks(deal: int, viewer: Viewer, shown: object) -> list[Card]:
        text = encode(shown)
        return [
            c
            for s, cards in secret.get(deal, {}).items()
            if s != viewer
            for c in cards
            if f'"{c}"'.encode() in text
        ]

    for viewer in [*range(len(played.start.seats)), SPECTATOR]:
        number = 0
        for e in redact_all(played.events, viewer, rules):
            number = e.number if isinstance(e, DealStarted) else number
            assert not leaks(number, viewer, e), e
        for state in chance.sample(played.states, min(8, len(played.states))):
            seen = view(state, viewer)
            assert seen.shuffle is None or seen.shuffle.server_seed is None
            assert all(d.server_seed is None for d in seen.deals)
            if state.deal is None:  # waiting for seeds: no card is on the table
                continue
            deal = state.deal.number
            assert not leaks(deal, viewer, seen)
            assert not leaks(deal, viewer, review(state, viewer))
        for finding in audit(played.events, viewer):
            assert not leaks(finding.deal, viewer, finding)
    event("face-down cards checked")


def check_audit(played: Played) -> None:
    """Every viewer gets every finding, but the cards a seat took by a faulty draw or was
    judged on (a false bura) only if it may see that seat's hand: its own, an open seat,
    or anyone's once a classic game is over (its seed shows every card)."""
    rules = played.state.rules
    full = audit(played.events, ARBITER)
    disclosed = played.state.finished and not rules.closed_discard
    for viewer in [*range(len(played.start.seats)), SPECTATOR]:
        seen = audit(played.events, viewer)
        assert len(seen) == len(full)
        for mine, whole in zip(seen, full, strict=True):
            shown = disclosed or mine.seat == viewer or mine.seat in rules.open_seats
            assert mine.cards == (whole.cards if shown else None)
            assert mine.hand == (whole.hand if shown else None)
            assert (mine.rule, mine.seat, mine.versions) == (whole.rule, whole.seat, whole.versions)


def check_views(played: Played, chance: random.Random) -> None:
    moments = chance.sample(played.states, min(3, len(played.states)))
    seeding = [s for s in played.states if s.seeding is not None]
    moments += chance.sample(seeding, min(2, len(seeding)))
    for state in moments:
        for viewer in [*range(len(played.start.seats)), SPECTATOR]:
            seen = view(state, viewer)
            assert view(hidden_shuffled(state, viewer, chance), viewer) == seen
            encode(seen)
        if state.deal is not None:
            assert view(state, ARBITER).stock == state.deal.stock


def check_legal(played: Played, chance: random.Random) -> None:
    """decide accepts exactly what legal_commands lists, for the seat due and every other."""
    moments = chance.sample(played.states, min(4, len(played.states)))
    seeding = [s for s in played.states if s.seeding is not None]
    moments += chance.sample(seeding, min(2, len(seeding)))
    for state in moments:
        if state.finished:
            continue
        deal = state.deal
        if deal is None:
            assert state.seeding is not None
        for seat in range(len(played.start.seats)):
            legal = legal_commands(state, seat)
            for command in legal:
                assert accepted(state, command, seat), command
            for command in candidates(state, seat, chance):
                assert accepted(state, command, seat) == listed(command, legal), command
        if deal is not None and deal.phase == "draw":
            assert Draw(1) in legal_commands(state, deal.turn)


@PROPERTY
@given(tables(), styles, chances)
def test_cards_are_conserved_and_every_game_ends(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    check_the_end(play_game(start, style, chance, conserved))


@PROPERTY
@given(tables(), styles, chances)
def test_a_replay_rebuilds_the_live_state(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    check_replay(play_game(start, style, chance, nothing), chance)


@PROPERTY
@given(tables(), styles, chances)
def test_redacted_events_never_show_a_viewer_a_card_it_may_not_see(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    played = play_game(start, style, chance, nothing)
    check_redaction(played)
    check_face_down_stays_hidden(played, chance)
    check_audit(played)


def hidden_shuffled(state: Game, viewer: Viewer, chance: random.Random) -> Game:
    """The same table with every card the viewer may not see moved around at random: other
    closed seats' hands, the stock, the face-down trick piles and the face-down answers of
    others on the table. The turned trump card is public wherever it lies, so it stays put.
    While a deal waits for seeds, the other seats' seeds are changed instead."""
    seeding = state.seeding
    if seeding is not None:
        seeds = tuple(
            v if s == viewer or v is None else f"{chance.random()}"
            for s, v in enumerate(seeding.seeds)
        )
        return replace(state, shuffle=replace(seeding, seeds=seeds))
    deal = state.deal
    assert deal is not None
    rules = state.rules
    hands = [list(h) for h in deal.hands]
    stock = list(deal.stock)
    piles = [list(p) for p in deal.piles]
    answers = [list(r.cards) for r in deal.trick.responses] if deal.trick else []
    own = viewer if isinstance(viewer, int) else None
    places: list[tuple[list[Card], int]] = []
    for seat, hand in enumerate(hands):
        if seat != own and seat not in rules.open_seats:
            places += [(hand, i) for i in range(len(hand))]
    places += [(stock, i) for i in range(len(stock))]
    for seat, pile in enumerate(piles):
        if not (seat == own and rules.show_own_points):
            places += [(pile, i) for i in range(len(pile))]
    if deal.trick is not None:
        for response, cards in zip(deal.trick.responses, answers, strict=True):
            if response.face_down and response.seat != own:
                places += [(cards, i) for i in range(len(cards))]
    places = [(where, i) for where, i in places if where[i] != deal.trump_card]
    cards = [where[i] for where, i in places]
    chance.shuffle(cards)
    for (where, i), card in zip(places, cards, strict=True):
        where[i] = card
    trick = deal.trick and replace(
        deal.trick,
        responses=tuple(
            replace(r, cards=tuple(a)) for r, a in zip(deal.trick.responses, answers, strict=True)
        ),
    )
    moved = replace(
        deal,
        hands=tuple(map(tuple, hands)),
        stock=tuple(stock),
        piles=tuple(map(tuple, piles)),
        trick=trick,
    )
    return replace(state, deal=moved)


@PROPERTY
@given(tables(), styles, chances)
def test_a_view_does_not_depend_on_cards_the_viewer_may_not_see(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    check_views(play_game(start, style, chance, nothing), chance)


# -- decide accepts exactly what legal_commands lists -----------------------------------------


def candidates(state: Game, seat: int, chance: random.Random) -> list[PlayerCommand]:
    """Every kind of command, with random card sets drawn from the seat's hand, and every
    combination it could lead; and a seed."""
    deal = state.deal
    if deal is None:  # waiting for seeds: no hand is dealt
        return [
            Seed(f"probe {chance.random()}"),
            Draw(1),
            Lead(("AS",)),
            Declare("thirty_one"),
            Dave(),
            Pass(),
            Concede(),
        ]
    hand = deal.hands[seat]
    sets = [c for n in (1, 2, 3) for c in combinations(hand, n)]
    picked = chance.sample(sets, min(4, len(sets)))
    return [
        *(Lead(c) for c in picked),
        *(Respond(c) for c in picked),
        *(Lead(c) for c in combination_leads(hand, deal.trump)),
        Declare("thirty_one"),
        Declare("bura"),
        Declare("four_aces"),
        Dave(),
        DaveAnswer(True),
        DaveAnswer(False),
        Pass(),
        Concede(),
        Seed("probe"),
    ]


def same(command: PlayerCommand) -> object:
    """A command with its cards as a set: a lead of AS KS is a lead of KS AS; every seed is
    the same move (legal_commands lists one seed standing for all)."""
    if isinstance(command, Seed):
        return Seed
    if isinstance(command, Lead | Respond):
        return (type(command), frozenset(command.cards))
    return command


def check_moves(played: Played, chance: random.Random) -> None:
    """The moves of each seat's view against decide: every offer is accepted, except a
    contested combination, which may only be refused for precedence; the offers decide
    accepts are exactly legal_commands; nothing outside the offer is accepted. Besides a
    few random moments, every moment a Czech combination is on offer (they are rare)."""
    moments = chance.sample(played.states, min(4, len(played.states)))
    offers = [
        s for s in played.states if any(map(partial(combination_offers, s), range(len(s.seats))))
    ]
    for state in [*moments, *offers[:30], played.state]:
        deal = state.deal
        for seat in range(len(played.start.seats)):
            shown = view(state, seat).moves
            assert shown is not None
            offered = commands(shown, deal.hands[seat] if deal is not None else ())
            assert len({same(c) for c in offered}) == len(offered), "an offer listed twice"
            contested = {frozenset(c.cards) for c in shown.combinations if c.contested}
            taken = []
            for command in offered:
                try:
                    decide(state, command, seat, now=in_time(state))
                except RuleViolation as refusal:
                    assert isinstance(command, Lead), command
                    assert frozenset(command.cards) in contested, command
                    assert refusal.code == "combination_outranked", refusal
                    event("a contested combination refused")
                    continue
                taken.append(command)
            assert {same(c) for c in taken} == {same(c) for c in legal_commands(state, seat)}
            for command in candidates(state, seat, chance):
                if accepted(state, command, seat):
                    assert same(command) in {same(c) for c in offered}, command
            if state.finished:
                assert offered == []


def listed(command: PlayerCommand, legal: list[PlayerCommand]) -> bool:
    if isinstance(command, Seed):  # legal_commands stands one seed for every seed
        return any(isinstance(m, Seed) for m in legal)
    if isinstance(command, Lead | Respond):
        return any(
            type(m) is type(command) and set(m.cards) == set(command.cards)  # type: ignore[attr-defined]
            for m in legal
        )
    return command in legal


def accepted(state: Game, command: PlayerCommand, seat: int) -> bool:
    try:
        decide(state, command, seat, now=in_time(state))
    except RuleViolation:
        return False
    return True


@PROPERTY
@given(tables(), styles, chances)
def test_decide_accepts_exactly_the_commands_legal_commands_lists(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    check_legal(play_game(start, style, chance, nothing), chance)


# -- the table the player saw (docs/rules.md §4) ----------------------------------------------


def outcome(state: Game, command: PlayerCommand, seat: int) -> list[Event] | str:
    try:
        return decide(state, command, seat, in_time(state))
    except RuleViolation as violation:
        return violation.code


def check_seen(played: Played, chance: random.Random) -> None:
    """A command naming the version it was made on is judged exactly as one naming none;
    naming any other version, it is refused as table_changed, whatever it would have been
    (a legal move, a penalty, a refusal)."""
    moments = chance.sample(played.states, min(4, len(played.states)))
    for state in moments:
        if not state.started:
            continue
        for seat in range(len(played.start.seats)):
            commands = [*candidates(state, seat, chance), Draw(1), Draw(2)] if state.deal else []
            if state.seeding is not None:
                commands = [Seed(f"seat {seat}'s seed"), Draw(1)]
            for command in chance.sample(commands, min(6, len(commands))):
                judged = outcome(state, command, seat)
                assert outcome(state, replace(command, seen=state.version), seat) == (
                    [_seen_in(e, state.version) for e in judged]
                    if isinstance(judged, list)
                    else judged
                )
                other = chance.choice([v for v in range(state.version + 3) if v != state.version])
                # the seeds of a deal commute: one made on an earlier table is still taken
                commutes = isinstance(command, Seed) and state.seeding and other < state.version
                assert outcome(state, replace(command, seen=other), seat) == (
                    judged if commutes else "table_changed"
                )


def _seen_in(event: Event, version: int) -> Event:
    """The events of a command made on `version`: its penalty or declaration records it."""
    if isinstance(event, PenaltyApplied | Declared):
        return replace(event, seen=version)
    return event


@PROPERTY
@given(tables(), styles, chances)
def test_a_command_is_judged_on_the_version_it_names_or_not_at_all(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    check_seen(play_game(start, style, chance, nothing), chance)


@PROPERTY
@given(tables(), styles, chances)
def test_a_seat_view_offers_exactly_what_decide_accepts(
    start: StartGame, style: Style, chance: random.Random
) -> None:
    check_moves(play_game(start, style, chance, nothing), chance)


# -- every variant of docs/rules.md §8, each surely on ------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
@VARIANT
@given(data=st.data())
def test_every_invariant_holds_in_each_variant(variant: str, data: st.DataObject) -> None:
    start = data.draw(tables(variant=variant), label="start")
    chance = data.draw(chances, label="chance")
    played = play_game(start, data.draw(styles, label="style"), chance, conserved)
    check_the_end(played)
    check_replay(played, chance)
    check_redaction(played)
    check_face_down_stays_hidden(played, chance)
    check_audit(played)
    check_views(played, chance)
    check_legal(played, chance)
    check_seen(played, chance)
    check_moves(played, chance)
