"""How a deal ends: who won, who pays whom (docs/rules.md §5, teams, pay_pot), the next dealer."""

from __future__ import annotations

from domain.dealing import start_deal
from domain.events import (
    DealerChosen,
    DealLost,
    DealVoid,
    DealWon,
    Event,
    GameFinished,
    SeedRevealed,
    StakeSettled,
)
from domain.rules import Rules
from domain.shuffle import deal_seed
from domain.state import Deal, Game
from domain.table import claim_points, clockwise, next_seat, sides, team_of
from domain.vocabulary import DealerBy, Reason


def transfer(rules: Rules, seats: int, payer: int, amount: int) -> list[int]:
    """`payer` pays `amount` to every other seat; in a team game each seat of the payer's
    team pays `amount` and each seat of the other team receives it."""
    if rules.teams is None:
        payments = [amount] * seats
        payments[payer] = -amount * (seats - 1)
        return payments
    payers = team_of(rules, payer)
    return [-amount if s in payers else amount for s in range(seats)]


def end_deal(
    game: Game,
    deal: Deal,
    *,
    winner: int | None = None,
    loser: int | None = None,
    reason: Reason,
    last: bool = False,
) -> list[Event]:
    """The deal's result, its settlement and the next deal, or the game's end: once a seat
    reaches match_target, or when this is the `last` deal (a table every seat left, §13.5),
    won then by the best score."""
    seats = len(game.seats)
    rules = game.rules
    stake = rules.stake * deal.multiplier
    payments = [0] * seats
    events: list[Event]
    by: DealerBy
    if winner is not None:
        events = [DealWon(winner, reason)]
        payments = [-p for p in transfer(rules, seats, winner, stake)]
        next_dealer, by = winner, "winner"
    elif loser is not None:
        events = [DealLost(loser, reason)]
        payments = transfer(rules, seats, loser, stake)
        if seats == 2:
            next_dealer, by = next_seat(loser, seats), "winner"
        else:
            # docs/rules.md §2: with 3+ seats a loss has no single winner (in a team game,
            # a whole team wins), so the same dealer deals again
            next_dealer, by = deal.dealer, "same_dealer"
    else:
        events = [DealVoid(reason)]
        next_dealer, by = deal.dealer, "same_dealer"
    for seat, fine in enumerate(deal.pot):
        if fine:
            payments = [
                a + b for a, b in zip(payments, transfer(rules, seats, seat, fine), strict=True)
            ]
    if winner is not None or loser is not None or any(deal.pot):
        events.append(
            StakeSettled(
                deal=deal.number,
                stake=rules.stake,
                multiplier=deal.multiplier,
                payments=tuple(payments),
            )
        )
    if rules.shuffle == "seats":
        # the deal is over: its server seed proves the deck to anyone (views.sees_seed)
        events.append(
            SeedRevealed(number=deal.number, server_seed=deal_seed(game.seed, deal.number))
        )
    score = [a + b for a, b in zip(game.score, payments, strict=True)]
    best = max(score)
    if best >= rules.match_target or last:
        winners_ = tuple(s for s in range(seats) if score[s] == best)
        events.append(GameFinished(winners=winners_, reason=reason, seed=game.seed))
        return events
    events.append(DealerChosen(next_dealer, by))
    return events + start_deal(game, deal.number + 1, next_dealer)


def count_up(game: Game, deal: Deal) -> list[Event]:
    """The highest trick total (a team's pooled) wins the deal; a tie is void."""
    teams = sides(game.rules, len(game.seats))
    totals = [claim_points(game, deal, team[0]) for team in teams]
    best = max(totals)
    if totals.count(best) > 1:
        return end_deal(game, deal, reason="no_claim")
    return end_deal(game, deal, winner=teams[totals.index(best)][0], reason="most_points")


def rematch_dealer(game: Game) -> int:
    """Who deals the rematch of a finished game (docs/rules.md §14): its winner; of several
    winners, the first clockwise from the last dealer (that dealer itself, if it won)."""
    assert game.winners and game.dealer is not None
    return next(s for s in clockwise(game.dealer, len(game.seats)) if s in game.winners)
