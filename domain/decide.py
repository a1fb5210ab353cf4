"""decide(state, command, actor, now) -> events: every rule of docs/rules.md, and no I/O.

Time enters only as `now` (milliseconds since 1970-01-01 UTC, read by the caller) and as
the time a server's command (TimeOut, CloseSeeding) carries. Deadlines are stamped on the
events here: a seeding's (the seats' shuffle), and on a table with a clock the turn's —
an act after its deadline is refused, and every accepted act ends with the clock started
for the seat due next (domain/clock.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from msgspec.structs import replace

from domain import cards as pack
from domain.cards import SUIT_OF, Card, count_trumps, covers
from domain.clock import check_in_time, restart
from domain.combinations import can_beat, combination, open_to_combinations, outranked
from domain.commands import (
    SEED_PATTERN,
    Act,
    AnyCommand,
    CloseSeeding,
    Concede,
    Dave,
    DaveAnswer,
    Declare,
    Draw,
    EndPause,
    Lead,
    Pass,
    PlayerCommand,
    Respond,
    Seed,
    ServerCommand,
    StartGame,
    TimeOut,
)
from domain.dealing import close_seeding, deal_cards, start_deal
from domain.errors import BadSetup, RuleViolation, TableChanged
from domain.events import (
    BuraShown,
    CardDrawn,
    CardsLed,
    CardsResponded,
    Conceded,
    DaveAccepted,
    DaveDeclined,
    DaveOffered,
    DealerChosen,
    Declared,
    Event,
    FourAcesShown,
    GameStarted,
    Passed,
    PenaltyApplied,
    PotPaid,
    SeedingOpened,
    SeedSent,
    TrickTaken,
)
from domain.evolve import fold
from domain.rules import Rules, check, clocked, dave_enabled, hand_sizes
from domain.settlement import count_up, end_deal
from domain.shuffle import draw_lot
from domain.state import Deal, Game, Shuffle
from domain.table import claim_points, lead_limit, next_seat
from domain.timeouts import end_pause, time_out
from domain.vocabulary import Combination, PenaltyRule

__all__ = ["deal_cards", "decide", "end_deal"]


def decide(
    state: Game, command: AnyCommand, actor: int | None, now: int | None = None
) -> list[Event]:
    """The events `command` by `actor` (a seat, or None for the server's own commands)
    brings about at `now`; a seeding it opens gets its deadline from `now` (none without)."""
    if isinstance(command, StartGame):
        events = _start(state, command)
        events = events + restart(state, events, _time(command.rules, now))
        return _stamped(events, command.rules, now)
    return _stamped(_decide(state, command, actor, now), state.rules, now)


def _stamped(events: list[Event], rules: Rules, now: int | None) -> list[Event]:
    if now is None:
        return events
    deadline = now + rules.seeding_seconds * 1000
    return [replace(e, deadline=deadline) if isinstance(e, SeedingOpened) else e for e in events]


def _decide(
    state: Game, command: PlayerCommand | ServerCommand, actor: int | None, now: int | None
) -> list[Event]:
    if not state.started:
        raise RuleViolation("not_started", "the game has not been started")
    if (
        isinstance(command, Act)
        and command.seen is not None
        and command.seen != state.version
        and not (
            isinstance(command, Seed) and state.seeding is not None and command.seen < state.version
        )
    ):
        # Judged on a table its player never saw, a legal move could be a penalty. A seed
        # can be none, and the seeds of a deal come in any order: another seat's seed
        # sent first changes nothing this one means.
        raise TableChanged(command.seen, state.version)
    if state.finished:
        raise RuleViolation("game_over", f"the game is over: {state.reason}")
    match command:
        case CloseSeeding(at=at):
            return _clocked(state, _close_seeding(state, at), at)
        case TimeOut():
            return time_out(state, command, _play)
        case EndPause():
            return end_pause(state, command, _time(state.rules, now))
    if actor is None or not 0 <= actor < len(state.seats):
        raise RuleViolation("not_a_seat", f"seat {actor} does not play at this table")
    seeding = state.seeding
    if isinstance(command, Seed):
        return _clocked(state, _seed(state, seeding, actor, command.value, now), now)
    if seeding is not None:
        waiting = [s for s in range(len(state.seats)) if s not in seeding.sent]
        raise RuleViolation(
            "seeds_pending",
            f"deal {seeding.number} is not dealt yet: it waits for the seeds of seats "
            f'{waiting} (send {{"type": "seed"}})',
        )
    if state.deal is None:
        raise RuleViolation("not_started", "the game has not been started")
    if not clocked(state.rules):
        return _play(state, command, actor)
    at = _time(state.rules, now)
    check_in_time(state, at)
    events = _play(state, command, actor)
    return events + restart(state, events, at)


def _clocked(state: Game, events: list[Event], now: int | None) -> list[Event]:
    """Seeding closed and the deal dealt: on a table with a clock, the leader's turn starts."""
    if not clocked(state.rules):
        return events
    return events + restart(state, events, _time(state.rules, now))


def _time(rules: Rules, now: int | None) -> int:
    if now is None:
        if clocked(rules):
            raise ValueError("a table with a clock is decided at a time: pass now")
        return 0
    return now


def _play(state: Game, command: PlayerCommand, actor: int) -> list[Event]:
    """The rules of play, clock aside."""
    deal = state.deal
    assert deal is not None
    seen = command.seen
    match command:
        case Draw(count=count):
            return _draw(state, deal, actor, count, seen)
        case Lead(cards=cards):
            return _lead(state, deal, actor, cards)
        case Respond(cards=cards):
            return _respond(state, deal, actor, cards)
        case Declare(claim="bura"):
            return _show_bura(state, deal, actor, seen)
        case Declare(claim="four_aces"):
            return _show_four_aces(state, deal, actor, seen)
        case Declare():
            return _declare(state, deal, actor, seen)
        case Dave():
            return _dave(state, deal, actor)
        case DaveAnswer(accept=accept):
            return _dave_answer(state, deal, actor, accept)
        case Pass():
            return _pass(state, deal, actor)
        case Concede():
            return _concede(state, deal, actor)
        case _:
            raise TypeError(f"unhandled command {type(command).__name__}")


# -- starting ---------------------------------------------------------------------------


def _start(state: Game, command: StartGame) -> list[Event]:
    if state.started:
        raise RuleViolation("already_started", "the game has already been started")
    seats = len(command.seats)
    rules = check(command.rules, seats)
    if command.dealer is not None and not 0 <= command.dealer < seats:
        raise BadSetup(f"dealer must be a seat 0 to {seats - 1}", code="bad_dealer")
    order = None if command.deck is None else _check_deck(command.deck, pack.deck(rules.deck))
    events: list[Event] = [
        GameStarted(
            seats=command.seats, rules=rules, seed=command.seed, rematch_of=command.rematch_of
        )
    ]
    if command.dealer is None:
        dealer = draw_lot(command.seed, seats)
        events.append(DealerChosen(dealer, "lot"))
    else:
        dealer = command.dealer
        # a rematch is dealt by the winner of the game it follows (docs/rules.md §14)
        events.append(DealerChosen(dealer, "winner" if command.rematch_of else "operator"))
    if order is not None and rules.shuffle == "seats":
        raise BadSetup(
            "the seats shuffle this table (shuffle: seats): an operator's deck cannot be dealt",
            code="bad_deck",
        )
    game = Game(seats=command.seats, rules=rules, seed=command.seed, started=True)
    return events + start_deal(game, 1, dealer, order)


def _check_deck(order: Sequence[Card], full: Sequence[Card]) -> tuple[Card, ...]:
    """The operator's deck, if it is the full pack (cards are parsed at the edge)."""
    cards = tuple(order)
    if len(set(cards)) != len(cards):
        raise BadSetup("the deck lists a card twice", code="bad_deck")
    if sorted(cards) != sorted(full):
        raise BadSetup(f"the deck must be the full {len(full)}-card pack", code="bad_deck")
    return cards


# -- seeding (shuffle: "seats") ---------------------------------------------------------


def _seed(
    game: Game, seeding: Shuffle | None, actor: int, value: str, now: int | None
) -> list[Event]:
    if seeding is None:
        closed = game.shuffle
        if closed is not None and not game.finished and actor in closed.missing:
            # its seed was missing when the deal's seeding closed at its deadline
            raise RuleViolation(
                "seed_too_late",
                f"the seeds for deal {closed.number} were due by {closed.deadline} "
                "(ms since the epoch): the deal is dealt without this one",
            )
        if game.rules.shuffle == "seats":
            raise RuleViolation(
                "not_seeding",
                "this deal is already dealt; the next one opens for seeds when this one ends",
            )
        raise RuleViolation("not_seeding", "the server shuffles this table (shuffle: server)")
    if actor in seeding.sent:
        raise RuleViolation(
            "seed_already_sent", f"seat {actor} has sent its seed for deal {seeding.number}"
        )
    if not re.fullmatch(SEED_PATTERN, value):
        raise RuleViolation("bad_seed", "a seed is 1 to 128 printable ASCII characters")
    if now is not None and seeding.deadline is not None and now >= seeding.deadline:
        raise RuleViolation(
            "seed_too_late",
            f"the seeds for deal {seeding.number} were due by {seeding.deadline} "
            "(ms since the epoch): the deal is dealt without this one",
        )
    sent: list[Event] = [SeedSent(actor, value)]
    if len(seeding.sent) + 1 < len(game.seats):
        return sent
    seeds = tuple(value if s == actor else v for s, v in enumerate(seeding.seeds))
    everyone = replace(seeding, seeds=seeds, sent=(*seeding.sent, actor))
    return sent + close_seeding(game, everyone, None)


def _close_seeding(game: Game, at: int) -> list[Event]:
    seeding = game.seeding
    if seeding is None:
        raise RuleViolation("not_seeding", "no deal is waiting for seeds")
    if seeding.deadline is None or at < seeding.deadline:
        due = "has no deadline" if seeding.deadline is None else f"is due at {seeding.deadline}"
        raise RuleViolation(
            "deadline_not_passed", f"the seeding of deal {seeding.number} {due}, not at {at}"
        )
    return close_seeding(game, seeding, at)


# -- playing a trick --------------------------------------------------------------------


def _due(deal: Deal) -> str:
    what = {"lead": "lead", "respond": "respond", "draw": "draw", "dave_answer": "answer the dave"}
    return f"seat {deal.turn} is due to {what.get(deal.phase, deal.phase)}"


def _own_turn(deal: Deal, actor: int, *phases: str, when: str = "") -> None:
    """`when`: what the act waits for, said to a seat that is due but for another act (a
    responder declaring where 31 is declared on a lead), which `_due` alone would answer
    with its own turn, as if it had been allowed."""
    if deal.phase == "dave_answer":
        raise RuleViolation("dave_pending", f"a dave is pending: {_due(deal)}")
    if deal.phase not in phases or deal.turn != actor:
        said = _due(deal)
        raise RuleViolation(
            "not_your_turn", f"{said}; {when}" if when and deal.turn == actor else said
        )


def _own_cards(deal: Deal, actor: int, cards: Sequence[Card]) -> None:
    if len(set(cards)) != len(cards):
        raise RuleViolation("duplicate_cards", f"a card is named twice: {' '.join(cards)}")
    hand = deal.hands[actor]
    missing = [c for c in cards if c not in hand]
    if missing:
        raise RuleViolation("card_not_in_hand", f"not in seat {actor}'s hand: {' '.join(missing)}")


def _lead(game: Game, deal: Deal, actor: int, cards: Sequence[Card]) -> list[Event]:
    if deal.turn != actor and open_to_combinations(game, deal):
        return _lead_out_of_turn(game, deal, actor, cards)
    _own_turn(deal, actor, "lead")
    limit = lead_limit(deal)
    if limit == 0:
        raise RuleViolation("no_cards", "the hands are played out: declare 31 or pass")
    if game.rules.game == "kozel" and (len(cards) == 2 or not 1 <= len(cards) <= limit):
        # told the Kozel way however many were led: "1 to 3" would invite a 2
        now = "" if limit == 3 else ", and 3 only while every seat holds 3: lead 1"
        raise RuleViolation("wrong_card_count", f"in Kozel a lead is 1 or 3 cards of one suit{now}")
    if not 1 <= len(cards) <= limit:
        raise RuleViolation("wrong_card_count", f"lead 1 to {limit} cards of one suit")
    _own_cards(deal, actor, cards)
    czech = game.rules.combinations == "czech"
    kind = combination(cards, deal.trump) if czech else None
    if len({SUIT_OF[c] for c in cards}) > 1 and kind != "three_aces":
        raise RuleViolation("mixed_suits", f"a lead is cards of one suit: {' '.join(cards)}")
    if kind is not None:
        # «Pokud více hráčů má tyto kombinace, vynáší ten se silnější kombinací»: the seat due
        # holds no exemption. Its molodka gives way to another seat's bura or three aces;
        # its bura, the strongest and led earliest, never does.
        _precedence(game, deal, actor, kind)
    return _led(game, deal, actor, cards, kind)


def _lead_out_of_turn(game: Game, deal: Deal, actor: int, cards: Sequence[Card]) -> list[Event]:
    """CZ: «Pokud má hráč v ruce jednu z kombinací, může s ní vyjet, i když není na
    tahu» — a combination may be led out of turn, the stronger first."""
    out_of_turn = RuleViolation(
        "not_your_turn", f"{_due(deal)}; out of turn only bura, three aces or molodka may be led"
    )
    if len(cards) != 3:
        raise out_of_turn
    _own_cards(deal, actor, cards)
    kind = combination(cards, deal.trump)
    if kind is None:
        raise out_of_turn
    _precedence(game, deal, actor, kind)
    return _led(game, deal, actor, cards, kind)


def _precedence(game: Game, deal: Deal, actor: int, kind: Combination) -> None:
    if outranked(game, deal, actor, kind):
        raise RuleViolation(
            "combination_outranked",
            "another seat holds a stronger combination, or as strong a one and leads earlier",
        )


def _led(
    game: Game, deal: Deal, actor: int, cards: Sequence[Card], kind: Combination | None
) -> list[Event]:
    led = CardsLed(actor, tuple(cards), kind)
    if kind != "bura":
        return [led]
    # «Vynesení Bury znamená okamžité vítězství»: a led bura wins at once, unless a responder
    # holds a bura that beats it; then the responders answer, and the first that beats wins.
    others = [s for s in range(len(game.seats)) if s != actor]
    if any(can_beat(deal.hands[s], cards, deal.trump) for s in others):
        return [led]
    return [led, *end_deal(game, deal, winner=actor, reason="bura")]


def _respond(game: Game, deal: Deal, actor: int, cards: Sequence[Card]) -> list[Event]:
    _own_turn(deal, actor, "respond")
    trick = deal.trick
    assert trick is not None
    if len(cards) != len(trick.led):
        raise RuleViolation(
            "wrong_card_count", f"answer {len(trick.led)} card(s), as many as were led"
        )
    _own_cards(deal, actor, cards)
    beat = covers(cards, trick.winning, deal.trump)
    face_down = game.rules.closed_discard and not beat
    responded = CardsResponded(
        seat=actor, cards=tuple(cards), count=len(cards), beat=beat, face_down=face_down
    )
    last = next_seat(actor, len(game.seats)) == trick.leader
    if trick.combination == "bura":
        if beat:  # «Pokud hráč dokáže svojí Burou přebít Buru protivníkovu, vyhrává on»
            return [responded, *end_deal(game, deal, winner=actor, reason="bura")]
        if last:
            return [responded, *end_deal(game, deal, winner=trick.leader, reason="bura")]
        return [responded]
    if not last:
        return [responded]
    events: list[Event] = [responded, TrickTaken(actor if beat else trick.winner)]
    return events + _played_out(game, events)


def _played_out(game: Game, events: list[Event]) -> list[Event]:
    """Kozel is played until no further trick can be led; then the tricks are counted."""
    if game.rules.game != "kozel":
        return []
    after = fold(game, events)
    deal = after.deal
    assert deal is not None
    if deal.phase == "lead" and lead_limit(deal) == 0:
        return count_up(after, deal)
    return []


# -- drawing and its penalties ----------------------------------------------------------


def _draw(game: Game, deal: Deal, actor: int, count: int, seen: int | None) -> list[Event]:
    if count < 1:
        raise RuleViolation("wrong_card_count", "a draw takes at least one card")
    if not deal.stock:
        raise RuleViolation("stock_empty", "the stock is empty: there is nothing to draw")
    due = deal.draws[0] if deal.phase == "draw" else None
    full = len(deal.hands[actor]) >= hand_sizes(game.rules, len(game.seats))[actor]
    rule: PenaltyRule
    if count >= 2:
        rule, why = "double_draw", f"seat {actor} took {count} cards at once"
    elif full:
        rule, why = "extra_card", f"seat {actor} drew with a full hand"
    elif due != actor:
        rule = "out_of_turn_draw"
        why = f"seat {actor} drew, but " + (
            f"seat {due} was due to draw" if due is not None else "no draw was due"
        )
    else:
        card = deal.stock[0]
        drawn: list[Event] = [
            CardDrawn(actor, card, card == deal.trump_card and len(deal.stock) == 1)
        ]
        return drawn + _played_out(game, drawn)
    if game.rules.penalties == "reject":
        raise RuleViolation(rule, why + " (refused: penalties are not enforced at this table)")
    taken = deal.stock[:count]
    penalty = PenaltyApplied(
        seat=actor, rule=rule, due=due, cards=taken, count=len(taken), seen=seen, asked=count
    )
    return [penalty, *end_deal(game, deal, loser=actor, reason=rule)]


# -- declaring, bura, passing, conceding ------------------------------------------------


def _declare(game: Game, deal: Deal, actor: int, seen: int | None) -> list[Event]:
    rules = game.rules
    if rules.game == "kozel":
        raise RuleViolation(
            "no_thirty_one", "Kozel has no declaration of 31: the deal is played out and counted"
        )
    if rules.declare_on == "any_turn":
        _own_turn(
            deal, actor, "lead", "respond", when="31 is declared on a turn to lead or respond"
        )
    else:
        _own_turn(deal, actor, "lead", when='31 is declared on a turn to lead (declare_on "lead")')
    if actor in deal.refuted:
        raise RuleViolation(
            "already_declared", "your 31 was found false: take another trick before declaring"
        )
    value = claim_points(game, deal, actor)
    needed = rules.target_points
    declared = Declared(
        seat=actor, claim="thirty_one", value=value, needed=needed, true=value >= needed, seen=seen
    )
    if declared.true:
        return [declared, *end_deal(game, deal, winner=actor, reason="thirty_one")]
    if rules.false_declaration == "pay_pot":
        # «доставляет кон»: the false declarer adds a stake to the pot for every other side
        # and the deal goes on; the pot is settled with the deal, whatever its end.
        return [declared, PotPaid(actor, rules.stake * deal.multiplier)]
    return [declared, *end_deal(game, deal, loser=actor, reason="false_declaration")]


def _show_bura(game: Game, deal: Deal, actor: int, seen: int | None) -> list[Event]:
    if deal.trump is None:
        raise RuleViolation("no_trumps", "this deal has no trumps, so there is no bura")
    if game.rules.combinations == "czech":
        raise RuleViolation("lead_the_bura", "with Czech combinations bura is shown by leading it")
    _own_turn(deal, actor, "lead", "respond", when="bura is shown on a turn to lead or respond")
    trumps = tuple(c for c in deal.hands[actor] if SUIT_OF[c] == deal.trump)
    if count_trumps(trumps, deal.trump) >= 3:
        return [BuraShown(actor, trumps), *end_deal(game, deal, winner=actor, reason="bura")]
    declared = Declared(
        seat=actor, claim="bura", value=len(trumps), needed=3, true=False, seen=seen
    )
    return [declared, *end_deal(game, deal, loser=actor, reason="false_declaration")]


def _show_four_aces(game: Game, deal: Deal, actor: int, seen: int | None) -> list[Event]:
    if game.rules.game != "kozel":
        raise RuleViolation("not_kozel", "four aces win a deal of Kozel only")
    _own_turn(deal, actor, "lead", "respond")
    aces = tuple(c for c in deal.hands[actor] if c[:-1] == "A")
    if len(aces) == 4:
        return [FourAcesShown(actor, aces), *end_deal(game, deal, winner=actor, reason="four_aces")]
    declared = Declared(
        seat=actor, claim="four_aces", value=len(aces), needed=4, true=False, seen=seen
    )
    return [declared, *end_deal(game, deal, loser=actor, reason="false_declaration")]


def _pass(game: Game, deal: Deal, actor: int) -> list[Event]:
    _own_turn(deal, actor, "lead")
    if lead_limit(deal) > 0:
        raise RuleViolation("cannot_pass", "pass only with the hands played out; lead a card")
    if game.rules.no_claim == "most_points":
        return [Passed(actor), *count_up(game, deal)]
    return [Passed(actor), *end_deal(game, deal, reason="no_claim")]


def _concede(game: Game, deal: Deal, actor: int) -> list[Event]:
    if deal.turn != actor or deal.phase not in ("lead", "respond", "draw", "dave_answer"):
        raise RuleViolation("not_your_turn", f"concede on your own turn; {_due(deal)}")
    return [Conceded(actor), *end_deal(game, deal, loser=actor, reason="conceded")]


# -- dave -------------------------------------------------------------------------------


def _dave(game: Game, deal: Deal, actor: int) -> list[Event]:
    if not dave_enabled(game.rules, len(game.seats)):
        raise RuleViolation("dave_off", "dave is not played at this table")
    _own_turn(deal, actor, "lead", when="a dave is offered on a turn to lead, before leading")
    if lead_limit(deal) == 0:
        raise RuleViolation(
            "dave_not_allowed",
            "the hands are played out: nothing is left to double; declare or pass",
        )
    if deal.cube is not None and deal.cube != actor:
        raise RuleViolation(
            "dave_not_yours",
            f"only seat {deal.cube}, who accepted the last dave, may offer the next",
        )
    doubled = deal.multiplier * 2
    if doubled > game.rules.dave_max_multiplier:
        raise RuleViolation(
            "dave_limit",
            f"the stake is already x{deal.multiplier}, the table's limit is "
            f"x{game.rules.dave_max_multiplier}",
        )
    return [DaveOffered(actor, doubled)]


def _dave_answer(game: Game, deal: Deal, actor: int, accept: bool) -> list[Event]:
    if deal.phase != "dave_answer":
        raise RuleViolation("no_dave_pending", "there is no dave to answer")
    if deal.turn != actor:
        raise RuleViolation("not_your_turn", _due(deal))
    offerer = deal.dave_from
    assert offerer is not None
    if accept:
        return [DaveAccepted(actor, deal.multiplier * 2)]
    return [DaveDeclined(actor), *end_deal(game, deal, winner=offerer, reason="dave_declined")]
