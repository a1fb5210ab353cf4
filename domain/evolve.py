"""evolve(state, event) -> state: how each event changes the table. Never validates."""

from __future__ import annotations

from collections.abc import Iterable

from msgspec.structs import replace

from domain.cards import SUIT_OF
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
    DaveOffered,
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
    SeedingClosed,
    SeedingOpened,
    SeedRevealed,
    SeedSent,
    StakeSettled,
    TimedOut,
    TrickTaken,
    TrumpTurned,
)
from domain.rules import hand_sizes
from domain.state import NEW_GAME, Clock, Deal, DealResult, Game, Response, Shuffle, Trick
from domain.table import draw_order, next_seat, remove, replace_at, take, team_of
from domain.vocabulary import Reason

# a deal won on the count of the tricks' points: no one seat's act ended it
COUNTED: Reason = "most_points"


def evolve(state: Game, event: Event) -> Game:
    version = state.version + 1
    deal = state.deal
    match event:
        case CardDrawn(seat=seat, card=card):
            assert deal is not None and card is not None
            draws = deal.draws[1:]
            deal = replace(
                deal,
                stock=take(deal.stock, (card,)),
                hands=replace_at(deal.hands, seat, (*deal.hands[seat], card)),
                draws=draws,
                phase="draw" if draws else "lead",
                turn=draws[0] if draws else deal.leader,
            )
            return replace(state, version=version, deal=deal)
        case CardsLed(seat=seat, cards=cards, combination=combination):
            assert deal is not None
            trick = Trick(
                leader=seat, led=cards, winning=cards, winner=seat, combination=combination
            )
            deal = replace(
                deal,
                hands=replace_at(deal.hands, seat, remove(deal.hands[seat], cards)),
                trick=trick,
                phase="respond",
                leader=seat,
                turn=next_seat(seat, len(state.seats)),
            )
            return replace(state, version=version, deal=deal)
        case CardsResponded(seat=seat, cards=cards, beat=beat, face_down=face_down):
            assert deal is not None and deal.trick is not None and cards is not None
            trick = deal.trick
            trick = replace(
                trick,
                responses=(*trick.responses, Response(seat, cards, beat, face_down)),
                winning=cards if beat else trick.winning,
                winner=seat if beat else trick.winner,
            )
            face_down_cards = deal.face_down
            if face_down:
                face_down_cards = replace_at(deal.face_down, seat, deal.face_down[seat] + cards)
            deal = replace(
                deal,
                hands=replace_at(deal.hands, seat, remove(deal.hands[seat], cards)),
                trick=trick,
                turn=next_seat(seat, len(state.seats)),
                face_down=face_down_cards,
            )
            return replace(state, version=version, deal=deal)
        case TrickTaken(seat=seat):
            assert deal is not None and deal.trick is not None
            trick = deal.trick
            won = trick.led + tuple(c for r in trick.responses for c in r.cards)
            draws = draw_order(state.rules, deal, deal.hands, seat)
            deal = replace(
                deal,
                piles=replace_at(deal.piles, seat, deal.piles[seat] + won),
                tricks=tuple(n + 1 if s == seat else n for s, n in enumerate(deal.tricks)),
                trick=None,
                leader=seat,
                draws=draws,
                phase="draw" if draws else "lead",
                turn=draws[0] if draws else seat,
                tricks_played=deal.tricks_played + 1,
                refuted=(),
            )
            return replace(state, version=version, deal=deal)
        case CardDealt(seat=seat, card=card):
            assert deal is not None and card is not None
            hands = replace_at(deal.hands, seat, (*deal.hands[seat], card))
            dealt = sum(len(h) for h in hands) == sum(hand_sizes(state.rules, len(state.seats)))
            ready = dealt and not state.rules.trumps
            deal = replace(
                deal,
                stock=take(deal.stock, (card,)),
                hands=hands,
                phase="lead" if ready else deal.phase,
            )
            return replace(state, version=version, deal=deal)
        case TrumpTurned(card=card):
            assert deal is not None
            # The turned card lies under the stock laid across it: it is drawn last.
            stock = (*take(deal.stock, (card,)), card)
            deal = replace(deal, stock=stock, trump=SUIT_OF[card], trump_card=card, phase="lead")
            return replace(state, version=version, deal=deal)
        case DealStarted(number=number, dealer=dealer, deck=deck, commitment=commitment):
            assert deck is not None
            seats = len(state.seats)
            leader = next_seat(dealer, seats)
            deal = Deal(
                number=number,
                dealer=dealer,
                deck=deck,
                commitment=commitment,
                stock=deck,
                hands=((),) * seats,
                piles=((),) * seats,
                tricks=(0,) * seats,
                bonus=(0,) * seats,
                leader=leader,
                turn=leader,
                face_down=((),) * seats,
                pot=(0,) * seats,
            )
            return replace(state, version=version, deal=deal, dealer=dealer)
        case PenaltyApplied(seat=seat, cards=cards):
            assert deal is not None and cards is not None
            # The cards taken stay with the offender: the arbiter sees what was taken.
            deal = replace(
                deal,
                stock=take(deal.stock, cards),
                hands=replace_at(deal.hands, seat, deal.hands[seat] + cards),
            )
            return replace(state, version=version, deal=deal)
        case DaveOffered(seat=seat):
            assert deal is not None
            other = next_seat(seat, len(state.seats))
            deal = replace(deal, phase="dave_answer", turn=other, dave_from=seat)
            return replace(state, version=version, deal=deal)
        case DaveAccepted(seat=seat, multiplier=multiplier):
            assert deal is not None and deal.dave_from is not None
            deal = replace(
                deal,
                phase="lead",
                turn=deal.dave_from,
                multiplier=multiplier,
                cube=seat,
                dave_from=None,
            )
            return replace(state, version=version, deal=deal)
        case DealWon(seat=seat, reason=reason):
            assert deal is not None
            winners = team_of(state.rules, seat)
            losers = tuple(s for s in range(len(state.seats)) if s not in winners)
            # a declined dave is won by its offerer, by the act of the seat that answered
            by = deal.turn if reason == "dave_declined" else seat
            return _deal_over(
                state, deal, version, winners, losers, reason, None if reason == COUNTED else by
            )
        case DealLost(seat=seat, reason=reason):
            assert deal is not None
            losers = team_of(state.rules, seat)
            winners = tuple(s for s in range(len(state.seats)) if s not in losers)
            return _deal_over(state, deal, version, winners, losers, reason, seat)
        case DealVoid(reason=reason):
            assert deal is not None
            return _deal_over(state, deal, version, (), (), reason)
        case StakeSettled(payments=payments):
            score = tuple(a + b for a, b in zip(state.score, payments, strict=True))
            return replace(state, version=version, score=score)
        case CompensationGiven(seat=seat, points=points):
            assert deal is not None
            bonus = tuple(b + points if s == seat else b for s, b in enumerate(deal.bonus))
            return replace(state, version=version, deal=replace(deal, bonus=bonus))
        case PotPaid(seat=seat, amount=amount):
            assert deal is not None
            pot = tuple(p + amount if s == seat else p for s, p in enumerate(deal.pot))
            deal = replace(deal, pot=pot, refuted=(*deal.refuted, seat))
            return replace(state, version=version, deal=deal)
        case DealerChosen(seat=seat):
            return replace(state, version=version, dealer=seat)
        case SeedingOpened(number=number, server_commitment=committed, deadline=deadline):
            # the last deal is off the table while the next one waits for its seeds
            shuffle = Shuffle(
                number=number,
                server_commitment=committed,
                deadline=deadline,
                seeds=(None,) * len(state.seats),
            )
            # no turn is timed while the seats send their seeds (the seeding has its own
            # deadline): the clock starts again once the deal is dealt
            return replace(state, version=version, deal=None, shuffle=shuffle, clock=None)
        case SeedSent(seat=seat, value=value):
            assert state.shuffle is not None
            shuffle = state.shuffle
            seeds = tuple(value if s == seat else v for s, v in enumerate(shuffle.seeds))
            shuffle = replace(shuffle, seeds=seeds, sent=(*shuffle.sent, seat))
            return replace(state, version=version, shuffle=shuffle)
        case SeedingClosed(seeds=seeds, missing=missing, at=at):
            assert state.shuffle is not None
            shuffle = replace(
                state.shuffle, seeds=seeds, missing=missing, closed=True, closed_at=at
            )
            return replace(state, version=version, shuffle=shuffle)
        case SeedRevealed(number=number, server_seed=server_seed):
            revealed = state.shuffle
            if revealed is not None and revealed.number == number:
                revealed = replace(revealed, server_seed=server_seed)
            deals = tuple(
                replace(d, server_seed=server_seed) if d.number == number else d
                for d in state.deals
            )
            return replace(state, version=version, shuffle=revealed, deals=deals)
        case GameStarted(seats=seats, rules=rules, seed=seed, rematch_of=rematch_of):
            return replace(
                state,
                version=version,
                seats=seats,
                rules=rules,
                seed=seed or "",
                score=(0,) * len(seats),
                started=True,
                rematch_of=rematch_of,
            )
        case GameFinished(winners=winners, reason=reason):
            return replace(state, version=version, winners=winners, reason=reason, clock=None)
        case ClockStarted(seat=seat, at=at, turn_ends=turn_ends, deadline=deadline, banks=banks):
            clock = Clock(
                seat=seat,
                started=at,
                turn_ends=turn_ends,
                deadline=deadline,
                banks=banks,
                unanswered=event.unanswered,
                version=version,
            )
            return replace(state, version=version, clock=clock)
        case TimedOut(verdict="pause"):
            assert state.clock is not None
            return replace(state, version=version, clock=replace(state.clock, paused=True))
        case PauseEnded():
            assert state.clock is not None
            return replace(state, version=version, clock=replace(state.clock, paused=False))
        case TimedOut():
            return replace(state, version=version)
        case BuraShown() | FourAcesShown() | Declared() | Passed() | Conceded() | DaveDeclined():
            return replace(state, version=version)
        case _:
            raise TypeError(f"unhandled event {type(event).__name__}")


def _deal_over(
    state: Game,
    deal: Deal,
    version: int,
    winners: tuple[int, ...],
    losers: tuple[int, ...],
    reason: Reason,
    by: int | None = None,
) -> Game:
    result = DealResult(
        number=deal.number,
        winners=winners,
        losers=losers,
        reason=reason,
        stake=state.rules.stake * deal.multiplier,
        pot=deal.pot if any(deal.pot) else (),
        by=by,
    )
    return replace(
        state, version=version, deal=replace(deal, phase="over"), deals=(*state.deals, result)
    )


APPLIES = "cannot apply to the table before it"


class RecordBroken(Exception):
    """An event that cannot apply to the table before it, or a row that is no event at
    all. The server only ever records what its rules decided, so such a record was changed
    outside it (a row edited or deleted by hand): `version` is the event's place, where the
    verification of the hash chain goes on from; `why`, what is wrong with it."""

    def __init__(
        self, version: int, event_type: str, cause: BaseException, why: str = APPLIES
    ) -> None:
        self.version = version
        self.event_type = event_type
        self.why = why
        said = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
        super().__init__(f"event {version} ({event_type}) {why} ({said})")


def fold(state: Game, events: Iterable[Event]) -> Game:
    for event in events:
        try:
            state = evolve(state, event)
        except Exception as error:
            tag = str(event.__struct_config__.tag)
            raise RecordBroken(state.version + 1, tag, error) from error
    return state


def replay(events: Iterable[Event]) -> Game:
    return fold(NEW_GAME, events)
