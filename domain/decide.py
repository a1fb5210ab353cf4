"""decide(state, command, actor) -> events: every rule of RULES.md sections 1-7, and no I/O."""

from __future__ import annotations

from collections.abc import Sequence

from domain import cards as pack
from domain.cards import SUIT_OF, Card, count_trumps, covers
from domain.commands import (
    AnyCommand,
    Concede,
    Dave,
    DaveAnswer,
    Declare,
    Draw,
    Lead,
    Pass,
    Respond,
    StartGame,
)
from domain.errors import BadCard, RuleViolation
from domain.events import (
    BuraShown,
    CardDealt,
    CardDrawn,
    CardsLed,
    CardsResponded,
    CompensationGiven,
    Conceded,
    DaveAccepted,
    DaveDeclined,
    DaveOffered,
    DealerChosen,
    DealLost,
    DealStarted,
    DealVoid,
    DealWon,
    Declared,
    Event,
    GameFinished,
    GameStarted,
    Passed,
    PenaltyApplied,
    StakeSettled,
    TrickTaken,
    TrumpTurned,
)
from domain.evolve import fold
from domain.rules import check, dave_enabled, hand_sizes
from domain.shuffle import commitment, deal_seed, draw_lot, shuffled
from domain.state import Deal, Game
from domain.table import claim_points, lead_limit, next_seat, team_of


def decide(state: Game, command: AnyCommand, actor: int | None) -> list[Event]:
    if isinstance(command, StartGame):
        return _start(state, command)
    if not state.started or state.deal is None:
        raise RuleViolation("not_started", "the game has not been started")
    if state.finished:
        raise RuleViolation("game_over", f"the game is over: {state.reason}")
    if actor is None or not 0 <= actor < len(state.seats):
        raise RuleViolation("not_a_seat", f"seat {actor} does not play at this table")
    deal = state.deal
    match command:
        case Draw(count=count):
            return _draw(state, deal, actor, count)
        case Lead(cards=cards):
            return _lead(state, deal, actor, _parsed(cards))
        case Respond(cards=cards):
            return _respond(state, deal, actor, _parsed(cards))
        case Declare(claim="bura"):
            return _show_bura(state, deal, actor)
        case Declare():
            return _declare(state, deal, actor)
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


# -- starting and dealing ---------------------------------------------------------------


def _start(state: Game, command: StartGame) -> list[Event]:
    if state.started:
        raise RuleViolation("already_started", "the game has already been started")
    seats = len(command.seats)
    rules = check(command.rules, seats)
    if command.dealer is not None and not 0 <= command.dealer < seats:
        raise RuleViolation("bad_dealer", f"dealer must be a seat 0 to {seats - 1}")
    order = None if command.deck is None else _check_deck(command.deck, pack.deck(rules.deck))
    events: list[Event] = [GameStarted(seats=command.seats, rules=rules, seed=command.seed)]
    if command.dealer is None:
        dealer = draw_lot(command.seed, seats)
        events.append(DealerChosen(dealer, "lot"))
    else:
        dealer = command.dealer
        events.append(DealerChosen(dealer, "operator"))
    game = Game(seats=command.seats, rules=rules, seed=command.seed, started=True)
    return events + deal_cards(game, 1, dealer, order)


def _check_deck(order: Sequence[Card], full: Sequence[Card]) -> tuple[Card, ...]:
    """The operator's deck in canonical notation (`10h` -> `10H`), if it is the full pack."""
    try:
        cards = pack.parse_cards(order)
    except BadCard as e:
        raise RuleViolation("bad_deck", str(e)) from None
    if len(set(cards)) != len(cards):
        raise RuleViolation("bad_deck", "the deck lists a card twice")
    if sorted(cards) != sorted(full):
        raise RuleViolation("bad_deck", f"the deck must be the full {len(full)}-card pack")
    return cards


def _parsed(cards: Sequence[str]) -> tuple[Card, ...]:
    """Card input is case-insensitive (RULES.md 1); events always hold the upper-case code."""
    try:
        return pack.parse_cards(cards)
    except BadCard as e:
        raise RuleViolation("bad_card", str(e)) from None


def deal_cards(game: Game, number: int, dealer: int, order: Sequence[Card] | None) -> list[Event]:
    """The deal: shuffle (or the operator's order), one card at a time clockwise from the
    seat after the dealer, then the trump card turned."""
    rules = game.rules
    seats = len(game.seats)
    seed = deal_seed(game.seed, number)
    deck = tuple(order) if order is not None else shuffled(seed, pack.deck(rules.deck))
    events: list[Event] = [
        DealStarted(
            number=number,
            dealer=dealer,
            commitment=commitment(seed, deck),
            deck=deck,
            explicit=order is not None,
        )
    ]
    sizes = hand_sizes(rules, seats)
    dealt = 0
    for round_ in range(max(sizes)):
        for k in range(1, seats + 1):
            seat = (dealer + k) % seats
            if sizes[seat] > round_:
                events.append(CardDealt(seat, deck[dealt]))
                dealt += 1
    if rules.trumps:
        events.append(TrumpTurned(deck[dealt]))
    for seat in rules.open_seats:
        for other in range(seats):
            if other != seat and rules.compensation:
                events.append(CompensationGiven(seat, rules.compensation, "open_seat"))
                break
    if rules.first_lead_compensation:
        leader = next_seat(dealer, seats)
        for other in range(seats):
            if other != leader:
                events.append(CompensationGiven(other, rules.first_lead_compensation, "first_lead"))
    return events


# -- playing a trick --------------------------------------------------------------------


def _due(deal: Deal) -> str:
    what = {"lead": "lead", "respond": "respond", "draw": "draw", "dave_answer": "answer the dave"}
    return f"seat {deal.turn} is due to {what.get(deal.phase, deal.phase)}"


def _own_turn(deal: Deal, actor: int, *phases: str) -> None:
    if deal.phase == "dave_answer":
        raise RuleViolation("dave_pending", f"a dave is pending: {_due(deal)}")
    if deal.phase not in phases or deal.turn != actor:
        raise RuleViolation("not_your_turn", _due(deal))


def _own_cards(deal: Deal, actor: int, cards: Sequence[Card]) -> None:
    if len(set(cards)) != len(cards):
        raise RuleViolation("duplicate_cards", f"a card is named twice: {' '.join(cards)}")
    hand = deal.hands[actor]
    missing = [c for c in cards if c not in hand]
    if missing:
        raise RuleViolation("card_not_in_hand", f"not in seat {actor}'s hand: {' '.join(missing)}")


def _lead(game: Game, deal: Deal, actor: int, cards: Sequence[Card]) -> list[Event]:
    _own_turn(deal, actor, "lead")
    limit = lead_limit(game, deal)
    if limit == 0:
        raise RuleViolation("no_cards", "the hands are played out: declare 31 or pass")
    if not 1 <= len(cards) <= limit:
        raise RuleViolation("wrong_card_count", f"lead 1 to {limit} cards of one suit")
    if game.rules.game == "kozel" and len(cards) == 2:
        raise RuleViolation("wrong_card_count", "in Kozel a lead is 1 or 3 cards of one suit")
    _own_cards(deal, actor, cards)
    if len({SUIT_OF[c] for c in cards}) > 1:
        raise RuleViolation("mixed_suits", f"a lead is cards of one suit: {' '.join(cards)}")
    return [CardsLed(actor, tuple(cards))]


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
    events: list[Event] = [
        CardsResponded(seat=actor, cards=tuple(cards), count=len(cards), beat=beat,
                       face_down=face_down)
    ]
    if next_seat(actor, len(game.seats)) == trick.leader:
        taker = actor if beat else trick.winner
        events.append(TrickTaken(taker))
        after = fold(game, events)
        played_out = not after.deal.stock and not any(after.deal.hands)  # type: ignore[union-attr]
        if game.rules.game == "kozel" and played_out:
            events += _most_points(after, after.deal, "most_points")  # type: ignore[arg-type]
    return events


# -- drawing and its penalties ----------------------------------------------------------


def _draw(game: Game, deal: Deal, actor: int, count: int) -> list[Event]:
    if count < 1:
        raise RuleViolation("wrong_card_count", "a draw takes at least one card")
    if not deal.stock:
        raise RuleViolation("stock_empty", "the stock is empty: there is nothing to draw")
    due = deal.draws[0] if deal.phase == "draw" else None
    full = len(deal.hands[actor]) >= hand_sizes(game.rules, len(game.seats))[actor]
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
        return [CardDrawn(actor, card, card == deal.trump_card and len(deal.stock) == 1)]
    if game.rules.penalties == "reject":
        raise RuleViolation(rule, why + " (refused: penalties are not enforced at this table)")
    taken = deal.stock[:count]
    penalty = PenaltyApplied(seat=actor, rule=rule, due=due, cards=taken, count=len(taken))
    return [penalty, *end_deal(game, deal, loser=actor, reason=rule)]


# -- declaring, bura, passing, conceding ------------------------------------------------


def _declare(game: Game, deal: Deal, actor: int) -> list[Event]:
    phases = ("lead", "respond") if game.rules.declare_on == "any_turn" else ("lead",)
    _own_turn(deal, actor, *phases)
    value = claim_points(game, deal, actor)
    needed = game.rules.target_points
    declared = Declared(seat=actor, claim="thirty_one", value=value, needed=needed,
                        true=value >= needed)
    if declared.true:
        return [declared, *end_deal(game, deal, winner=actor, reason="thirty_one")]
    return [declared, *end_deal(game, deal, loser=actor, reason="false_declaration")]


def _show_bura(game: Game, deal: Deal, actor: int) -> list[Event]:
    _own_turn(deal, actor, "lead", "respond")
    trumps = tuple(c for c in deal.hands[actor] if SUIT_OF[c] == deal.trump)
    if count_trumps(trumps, deal.trump) >= 3:
        return [BuraShown(actor, trumps), *end_deal(game, deal, winner=actor, reason="bura")]
    declared = Declared(seat=actor, claim="bura", value=len(trumps), needed=3, true=False)
    return [declared, *end_deal(game, deal, loser=actor, reason="false_declaration")]


def _pass(game: Game, deal: Deal, actor: int) -> list[Event]:
    _own_turn(deal, actor, "lead")
    if lead_limit(game, deal) > 0:
        raise RuleViolation("cannot_pass", "pass only with the hands played out; lead a card")
    if game.rules.no_claim == "most_points":
        return [Passed(actor), *_most_points(game, deal, "most_points")]
    return [Passed(actor), *end_deal(game, deal, reason="no_claim")]


def _most_points(game: Game, deal: Deal, reason: str) -> list[Event]:
    teams = game.rules.teams or tuple((s,) for s in range(len(game.seats)))
    totals = [sum(claim_points(game, deal, s) for s in t[:1]) for t in teams]
    best = max(totals)
    if totals.count(best) > 1:
        return end_deal(game, deal, reason="no_claim")
    return end_deal(game, deal, winner=teams[totals.index(best)][0], reason=reason)


def _concede(game: Game, deal: Deal, actor: int) -> list[Event]:
    if deal.turn != actor or deal.phase not in ("lead", "respond", "draw", "dave_answer"):
        raise RuleViolation("not_your_turn", f"concede on your own turn; {_due(deal)}")
    return [Conceded(actor), *end_deal(game, deal, loser=actor, reason="conceded")]


# -- dave -------------------------------------------------------------------------------


def _dave(game: Game, deal: Deal, actor: int) -> list[Event]:
    if not dave_enabled(game.rules, len(game.seats)):
        raise RuleViolation("dave_off", "dave is not played at this table")
    _own_turn(deal, actor, "lead")
    if deal.cube is not None and deal.cube != actor:
        raise RuleViolation(
            "dave_not_yours",
            f"only seat {deal.cube}, who accepted the last dave, may offer the next",
        )
    doubled = deal.multiplier * 2
    if doubled > game.rules.dave_max_multiplier:
        raise RuleViolation(
            "dave_limit", f"the stake is already x{deal.multiplier}, the table's limit is "
            f"x{game.rules.dave_max_multiplier}"
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


# -- ending a deal, settling, the next deal ---------------------------------------------


def end_deal(
    game: Game, deal: Deal, *, winner: int | None = None, loser: int | None = None, reason: str
) -> list[Event]:
    seats = len(game.seats)
    rules = game.rules
    stake = rules.stake * deal.multiplier
    payments = [0] * seats
    events: list[Event]
    if winner is not None:
        events = [DealWon(winner, reason)]
        winners = team_of(rules, winner)
        if rules.teams is None:
            payments = [-stake] * seats
            payments[winner] = stake * (seats - 1)
        else:
            payments = [stake if s in winners else -stake for s in range(seats)]
        next_dealer, by = winner, "winner"
    elif loser is not None:
        events = [DealLost(loser, reason)]
        losers = team_of(rules, loser)
        if rules.teams is None:
            payments = [stake] * seats
            payments[loser] = -stake * (seats - 1)
        else:
            payments = [-stake if s in losers else stake for s in range(seats)]
        if seats == 2:
            next_dealer, by = next_seat(loser, seats), "winner"
        else:
            next_dealer, by = deal.dealer, "same_dealer"
    else:
        events = [DealVoid(reason)]
        next_dealer, by = deal.dealer, "same_dealer"
    if winner is not None or loser is not None:
        events.append(
            StakeSettled(deal=deal.number, stake=rules.stake, multiplier=deal.multiplier,
                         payments=tuple(payments))
        )
    score = [a + b for a, b in zip(game.score, payments, strict=True)]
    best = max(score)
    if best >= rules.match_target:
        winners_ = tuple(s for s in range(seats) if score[s] == best)
        events.append(GameFinished(winners=winners_, reason=reason, seed=game.seed))
        return events
    events.append(DealerChosen(next_dealer, by))
    return events + deal_cards(game, deal.number + 1, next_dealer, None)
