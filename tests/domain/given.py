"""Builders for given/when/then domain tests: a table whose hands and stock are known.

`table(["AS 6S 7S", "10H KH QH"], trump="9H")` starts a game whose explicit deck deals
exactly those hands (seat 0 leads: the dealer is the last seat unless told otherwise),
turns 9H, and stacks the named `stock` cards on top of the rest of the pack. Any table
option may be added (`table(..., closed_discard=True)`); hands of 4 deal 4.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from domain.cards import Card
from domain.commands import AnyCommand, Draw, Lead, PlayerCommand, Respond, StartGame
from domain.decide import decide
from domain.errors import RuleViolation
from domain.events import DealVoid, DealWon, Event
from domain.evolve import fold
from domain.rules import Rules, clocked
from domain.state import NEW_GAME, Deal, Game
from domain.table import lead_limit
from tests.decks import dealing_order

SEED = "given"


def cards(text: str) -> tuple[Card, ...]:
    return tuple(text.split())


def lead(text: str) -> Lead:
    return Lead(cards(text))


def respond(text: str) -> Respond:
    return Respond(cards(text))


def start(
    seats: int = 2,
    *,
    dealer: int | None = None,
    order: Sequence[Card] | None = None,
    seed: str = SEED,
    now: int | None = None,
    **options: object,
) -> tuple[Game, list[Event]]:
    """A started game and the events that started it (at `now`, ms since the epoch)."""
    command = StartGame(
        seats=tuple(f"seat{i}" for i in range(seats)),
        rules=Rules(**options),  # type: ignore[arg-type]
        seed=seed,
        dealer=dealer,
        deck=None if order is None else tuple(order),
    )
    events = decide(
        NEW_GAME, command, None, now if now is not None or not clocked(command.rules) else 0
    )
    return fold(NEW_GAME, events), events


# The two-seat table many rules are shown on: seat 0 leads, hearts are trumps, and the
# stock starts KC QC JC 10C.
HANDS = ["AS 6S QD", "7S 6H 8D"]


def given_table(**options: object) -> Game:
    return table(HANDS, trump="9H", stock="KC QC JC 10C", **options)


def table(
    hands: Sequence[str],
    trump: str | None,
    stock: str = "",
    *,
    dealer: int | None = None,
    **options: object,
) -> Game:
    """A game dealt exactly these hands; seat 0 leads unless a dealer is named. With
    `trump=None` the game is played without trumps (`trumps: false`)."""
    return table_and_events(hands, trump, stock, dealer=dealer, **options)[0]


def table_and_events(
    hands: Sequence[str],
    trump: str | None,
    stock: str = "",
    *,
    dealer: int | None = None,
    **options: object,
) -> tuple[Game, list[Event]]:
    """`table`, and the events that dealt it (for the audit and redaction tests)."""
    if trump is None:
        options.setdefault("trumps", False)
    dealer = len(hands) - 1 if dealer is None else dealer
    size = options.get("deck", 36)
    assert isinstance(size, int)
    order = dealing_order(hands, trump, stock, dealer=dealer, size=size)
    return start(len(hands), dealer=dealer, order=order, **options)


def record(state: Game, events: list[Event], *steps: tuple[int, PlayerCommand]) -> Game:
    """Plays the steps, then every due draw, appending their events to `events`."""
    for seat, command in steps:
        state, new = act(state, seat, command)
        events += new
    while current(state).phase == "draw":
        state, new = act(state, current(state).turn, Draw())
        events += new
    return state


def act(
    state: Game, seat: int | None, command: AnyCommand, now: int | None = None
) -> tuple[Game, list[Event]]:
    """The command decided and folded: the new state and the events it produced. At a table
    with a clock it is made `now`, by default the moment the seat became due (in time)."""
    events = decide(state, command, seat, in_time(state) if now is None else now)
    return fold(state, events), events


def in_time(state: Game) -> int:
    """A moment at which the seat due is surely in time: when its clock started."""
    return state.clock.started if state.clock is not None else 0


def play(state: Game, *steps: tuple[int, PlayerCommand]) -> Game:
    for seat, command in steps:
        state = act(state, seat, command)[0]
    return state


def current(state: Game) -> Deal:
    assert state.deal is not None
    return state.deal


def draw_all(state: Game) -> Game:
    """Every due draw done, each by the seat due, one card at a time."""
    while current(state).phase == "draw":
        state = act(state, current(state).turn, Draw())[0]
    return state


def trick(state: Game, *plays: str) -> Game:
    """One trick: the leader leads the first cards, each next seat answers in turn; then
    every due draw is made."""
    state = act(state, current(state).turn, lead(plays[0]))[0]
    for answer in plays[1:]:
        state = act(state, current(state).turn, respond(answer))[0]
    return draw_all(state)


def play_out(state: Game, stop: Callable[[Deal], bool] | None = None) -> Game:
    """Plays the current deal by a plain rule (lead your first card, answer with your first
    cards) until `stop` holds at the start of a trick, or else until the leader is due with
    nothing to lead."""
    number = current(state).number
    while True:
        deal = current(state)
        assert deal.number == number and not state.finished
        if deal.phase == "draw":
            state = draw_all(state)
        elif deal.phase == "lead" and (lead_limit(deal) == 0 or (stop is not None and stop(deal))):
            return state
        elif deal.phase == "lead":
            state = act(state, deal.turn, Lead(deal.hands[deal.turn][:1]))[0]
        else:
            assert deal.trick is not None
            answer = deal.hands[deal.turn][: len(deal.trick.led)]
            state = act(state, deal.turn, Respond(answer))[0]


def refused(state: Game, seat: int | None, command: AnyCommand, now: int | None = None) -> str:
    """The code of the RuleViolation the command is refused with (it must be refused)."""
    try:
        decide(state, command, seat, in_time(state) if now is None else now)
    except RuleViolation as violation:
        return violation.code
    raise AssertionError(f"{command} by seat {seat} was accepted")


def play_to_the_count(state: Game) -> tuple[Game, list[Event]]:
    """Plays a Kozel deal by play_out's plain rule until it is counted (docs/rules.md §8.11:
    no further trick can be led): the table it was counted on (the last trick taken, every
    draw made) and the events from the deal's end on."""
    number = current(state).number
    while True:
        deal = current(state)
        assert deal.number == number and not state.finished
        if deal.phase == "draw":
            command: PlayerCommand = Draw()
        elif deal.phase == "lead":
            command = Lead(deal.hands[deal.turn][:1])
        else:
            assert deal.trick is not None
            command = Respond(deal.hands[deal.turn][: len(deal.trick.led)])
        before = state
        state, events = act(state, deal.turn, command)
        ends = [i for i, e in enumerate(events) if isinstance(e, DealWon | DealVoid)]
        if ends:
            return fold(before, events[: ends[0]]), events[ends[0] :]
