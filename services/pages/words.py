"""The table in words, shared by the pages and the command line: cards as people say them,
who the table waits for, times as UTC, and each event as one sentence naming the seats."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from domain.audit import Finding
from domain.cards import Card
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
from domain.views import View

RANK_NAMES = {
    "A": "ace",
    "K": "king",
    "Q": "queen",
    "J": "jack",
    "10": "ten",
    "9": "nine",
    "8": "eight",
    "7": "seven",
    "6": "six",
    "5": "five",
    "4": "four",
    "3": "three",
    "2": "two",
}
SUIT_NAMES = {"S": "spades", "H": "hearts", "D": "diamonds", "C": "clubs"}
SUIT_SIGNS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
VERBS = {
    "lead": "lead",
    "respond": "respond",
    "draw": "draw",
    "dave_answer": "answer the dave",
    "seeding": "send seeds",
}


def card_name(card: Card) -> str:
    """ "QS" -> "queen of spades": what a screen reader says for a card."""
    return f"{RANK_NAMES[card[:-1]]} of {SUIT_NAMES[card[-1]]}"


def card_sign(card: Card) -> str:
    """ "QS" -> "Q♠": what the page shows."""
    return card[:-1] + SUIT_SIGNS[card[-1]]


def cards_named(cards: Sequence[Card] | None) -> str:
    if cards is None:
        return "hidden cards"
    return ", ".join(card_name(c) for c in cards) or "no card"


def seat_named(seat: int | None, names: Sequence[str]) -> str:
    if seat is None:
        return "nobody"
    name = names[seat] if 0 <= seat < len(names) else "?"
    return f"seat {seat} ({name})"


def utc(ms: int | None) -> str:
    """Milliseconds since 1970 as people read a time: ISO 8601, UTC, to the millisecond."""
    if ms is None:
        return "none"
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def seconds(ms: int) -> str:
    return f"{ms / 1000:g} s"


def reason_named(reason: str) -> str:
    """A reason, a rule or a status as people say it: "out_of_turn_draw" -> "out of turn
    draw", "in_progress" -> "in progress"."""
    return "31" if reason == "thirty_one" else reason.replace("_", " ")


def sizes_named(sizes: Sequence[int], names: Sequence[str]) -> str:
    """Each seat's hand size: "ann 2 cards, bob 1 card"."""
    return ", ".join(
        f"{names[s] if s < len(names) else f'seat {s}'} {n} card{'' if n == 1 else 's'}"
        for s, n in enumerate(sizes)
    )


def asked_for(asked: int | None, taken: int) -> str:
    """What a faulty draw asked for beside the cards it took, where they differ: a double
    draw of the stock's last card asked for two and took one (` (2 asked for, 1 left in
    the stock)`); the rule is broken by the asking."""
    if asked is None or asked == taken:
        return ""
    return f" ({asked} asked for, {taken} left in the stock)"


def waiting(v: View, names: Sequence[str]) -> str:
    """What the table at `v` waits for, in every phase. A version in the middle of one
    command's events (a trick answered by every seat, not yet taken; a deal over, not yet
    followed by the next) waits for no seat: it says what the server does next."""
    who = seat_named(v.turn, names)
    match v.phase:
        case "finished":
            return "nobody: the game is over"
        case "over":
            return f"nobody: deal {v.deal} is over; the next deal or the game's end follows"
        case "seeding":
            sent = ", ".join(seat_named(s, names) for s in v.shuffle.sent) if v.shuffle else ""
            return f"every seat's seed for deal {v.deal}" + (
                f" ({sent} sent theirs)" if sent else ""
            )
        case "dealing" if v.turn is None:
            return "the server, which deals next"
        case "dealing":  # the server deals, not a seat
            return f"the server, dealing: {who} leads once the cards are out"
        case "respond" if v.trick is not None and len(v.trick.responses) >= len(v.seats) - 1:
            taker = seat_named(v.trick.winner, names)
            return f"nobody: every seat has answered, and {taker} takes the trick next"
        case _ if v.turn is not None:
            return f"{who} to {VERBS.get(v.phase, v.phase)}"
    return reason_named(v.phase)


def goes_on(here: tuple[str, str | None], after: tuple[str, str | None] | None) -> bool:
    """Whether a version is in the middle of one command's events: the event after it
    (`after`, its kind and request id, None at the record's end) came from the same
    request as `here`'s. The table then waits for no seat: the server's next event
    follows. A clock_started closes a command; a timed_out opens the timer's next."""
    if after is None or here[1] is None or after[1] != here[1]:
        return False
    return here[0] != "clock_started" and after[0] not in ("timed_out", "clock_started")


def awaited(v: View, names: Sequence[str], follows: tuple[int, str] | None = None) -> str:
    """What the table at `v` waits for, as `waiting` says; at a version in the middle of one
    command (`goes_on`), that the command goes on, with `follows`: the next version and what
    it says (a seat that broke a rule is not still due: its penalty follows)."""
    said = waiting(v, names)
    if follows is None or said.startswith(("nobody", "the server", "every seat")):
        return said
    version, next_said = follows
    return f"nobody: the same command goes on with version {version}: {next_said}"


def waiting_for(finding: Finding, names: Sequence[str]) -> str:
    """What the table was waiting for when the act came: a draw is due from a seat only in
    the draw phase; at the lead (where a false 31 is declared) it waits for the leader."""
    if finding.phase == "draw" and finding.due is not None:
        return f"{seat_named(finding.due, names)} to draw"
    verb = VERBS.get(finding.phase, finding.phase)
    told = f"{seat_named(finding.turn, names)} to {verb}"
    if finding.rule in ("out_of_turn_draw", "double_draw", "extra_card") and finding.due is None:
        told += " (no draw was due)"
    return told


def timed(finding: Finding) -> bool:
    """A timeout or an abandonment: judged by the server's clock or the operator, on no
    player's command (so no version was seen by anyone)."""
    return finding.rule in ("timeout", "abandoned")


def ruled_by_operator(finding: Finding) -> bool:
    """A timeout the operator ruled after a pause (`pause_ended`), not the server's clock."""
    return finding.judged_by == "operator"


def judged_by(ruled: bool) -> str:
    return "the operator's ruling after a pause" if ruled else "the server's clock"


def clock_evidence(finding: Finding, ruled: bool) -> list[tuple[str, str]]:
    """A timeout's evidence: which clock ran out and when, who judged it and when."""
    clock = (
        "abandon: no live stream for abandon_seconds while due"
        if finding.clock == "abandon"
        else "turn: its turn time, then its bank"
    )
    rows = [
        ("judged by", judged_by(ruled)),
        ("clock", clock),
        ("deadline", utc(finding.deadline)),
    ]
    if finding.away_since is not None:
        rows.append(("away since", utc(finding.away_since)))
    rows.append(("ruled at" if ruled else "judged at", utc(finding.at)))
    return rows


def compensated(counted: int, compensation: int | None) -> str:
    """What a false 31 counted besides its pile: ", and 10 points of compensation: 15"
    (nothing when the declarer's side was given none)."""
    if not compensation:
        return ""
    return f", and {compensation} points of compensation: {counted + compensation}"


# what a pot_paid's sentence says after who owes what (the timeline's settlement of the deal
# repeats the first part, so that its payments add up)
POT_PAID = " (the pot for a false 31), paid when the deal is settled"


def describe(event: Event, names: Sequence[str]) -> str:
    """One sentence for an event as the viewer may see it (a hidden card says so)."""

    def who(seat: int | None) -> str:
        return seat_named(seat, names)

    def name(seat: int) -> str:
        return names[seat] if 0 <= seat < len(names) else f"seat {seat}"

    match event:
        case GameStarted(seats=seats, rematch_of=rematch_of):
            again = f" (the rematch of game {rematch_of})" if rematch_of else ""
            return "the game starts: " + ", ".join(seats) + again
        case DealerChosen(seat=seat, by=chosen_by):
            return f"{who(seat)} deals ({DEALER_BY[chosen_by]})"
        case SeedingOpened(number=number, server_commitment=committed, deadline=deadline):
            return (
                f"deal {number} waits for every seat's seed; the server's seed is committed "
                f"({committed[:16]}…)"
                + (f", seeds due by {utc(deadline)}" if deadline is not None else "")
            )
        case SeedSent(seat=seat):
            return f"{who(seat)} sends its seed"
        case SeedingClosed(number=number, missing=missing, at=at):
            late = (
                f": {', '.join(who(s) for s in missing)} sent none by the deadline, "
                f"judged at {utc(at)}"
                if missing
                else ": every seat's seed is in"
            )
            return f"the seeds of deal {number} are closed{late}"
        case SeedRevealed(number=number, server_seed=server_seed):
            return f"the server's seed of deal {number} is revealed" + (
                f": {server_seed}" if server_seed is not None else " (to the arbiter only)"
            )
        case DealStarted(number=number, commitment=commitment):
            return f"deal {number} starts; commitment {commitment[:16]}…"
        case CardDealt(seat=seat, card=card):
            return f"{who(seat)} is dealt {card_name(card) if card else 'a hidden card'}"
        case TrumpTurned(card=card):
            return f"trump turned: {card_name(card)}"
        case CompensationGiven(seat=seat, points=points, why="open_seat"):
            return (
                f"{who(seat)} is given {points} points toward its target by the closed side, "
                "for playing open"
            )
        case CompensationGiven(seat=seat, points=points):
            return (
                f"{who(seat)} is given {points} points toward its target by the first leader, "
                "for the right to lead first"
            )
        case CardsLed(seat=seat, cards=cards, combination=combination):
            shown = f" ({reason_named(combination)})" if combination else ""
            return f"{who(seat)} leads {cards_named(cards)}{shown}"
        case CardsResponded(seat=seat, cards=cards, count=count, beat=beat, face_down=down):
            hidden = f"{count} card{'' if count == 1 else 's'} face down"
            shown = hidden if cards is None else cards_named(cards)
            return f"{who(seat)} responds with {shown}{' (beats)' if beat else ''}" + (
                " face down" if down and cards is not None else ""
            )
        case TrickTaken(seat=seat):
            return f"{who(seat)} takes the trick"
        case CardDrawn(seat=seat, card=card):
            return f"{who(seat)} draws {card_name(card) if card else 'a hidden card'}"
        case PenaltyApplied(seat=seat, rule=rule, due=due, cards=cards):
            return (
                f"penalty: {reason_named(rule)} by {who(seat)}, "
                f"{'due to draw: ' + who(due) if due is not None else 'no draw was due'}; "
                f"took {cards_named(cards)}"
            )
        case BuraShown(seat=seat, cards=cards):
            return f"{who(seat)} shows bura: {cards_named(cards)}"
        case FourAcesShown(seat=seat, cards=cards):
            return f"{who(seat)} shows four aces: {cards_named(cards)}"
        case Declared(seat=seat, claim=claim, value=value, needed=needed, true=true):
            return (
                f"{who(seat)} declares {reason_named(claim)}: {value} of {needed}, "
                f"{'true' if true else 'FALSE'}"
            )
        case PotPaid(seat=seat, amount=amount):
            return f"{who(seat)} owes {amount} to every other side{POT_PAID}"
        case Passed(seat=seat):
            return f"{who(seat)} passes: the hands are played out, with no claim"
        case Conceded(seat=seat):
            return f"{who(seat)} concedes the deal"
        case DaveOffered(seat=seat, multiplier=multiplier):
            return f"{who(seat)} offers a dave: the deal would count ×{multiplier}"
        case DaveAccepted(seat=seat, multiplier=multiplier):
            return f"{who(seat)} accepts the dave: the deal counts ×{multiplier}"
        case DaveDeclined(seat=seat):
            return f"{who(seat)} declines the dave, and gives up the deal"
        case DealWon(seat=seat, reason=reason):
            return f"{who(seat)} wins the deal ({reason_named(reason)})"
        case DealLost(seat=seat, reason=reason):
            return f"{who(seat)} loses the deal ({reason_named(reason)})"
        case DealVoid(reason=reason):
            return f"the deal is void ({reason_named(reason)}): nobody wins it"
        case StakeSettled(deal=deal, stake=stake, multiplier=multiplier, payments=payments):
            times = f" ×{multiplier}" if multiplier != 1 else ""
            return f"deal {deal} settled at stake {stake}{times}: " + ", ".join(
                f"{name(s)} {p:+d}" for s, p in enumerate(payments)
            )
        case GameFinished(winners=winners, reason=reason):
            return (
                f"the game is over: {', '.join(who(w) for w in winners) or 'nobody'} "
                f"({reason_named(reason)})"
            )
        case ClockStarted(seat=seat, at=at, turn_ends=turn_ends, deadline=deadline, banks=banks):
            left = ", ".join(f"{name(s)} {seconds(b)}" for s, b in enumerate(banks))
            away = [
                f"{name(s)} has not acted itself since {utc(since)}"
                for s, since in enumerate(event.unanswered)
                if since is not None
            ]
            return (
                f"the clock runs for {who(seat)}, due since {utc(at)}: its turn ends at "
                f"{utc(turn_ends)}, its time runs out at {utc(deadline)}"
                + (f"; banks left: {left}" if left else "")
                + (f"; {'; '.join(away)}" if away else "")
            )
        case TimedOut(
            seat=seat, clock=clock, phase=phase, deadline=deadline, at=at, verdict=verdict
        ):
            ran = (
                f"was away from the table since {utc(event.away_since)}"
                if clock == "abandon"
                else "ran out of time"
            )
            return (
                f"{who(seat)} {ran} while due to {DUE_VERBS.get(phase, phase)} "
                f"(deadline {utc(deadline)}); the server's clock judged it at {utc(at)}: "
                f"{TIMEOUT_VERDICTS[verdict]}"
            )
        case PauseEnded(seat=seat, verdict=verdict, at=at):
            ruled = "plays on with a fresh turn" if verdict == "play_on" else "loses the deal"
            return f"the operator ruled on the pause at {utc(at)}: {who(seat)} {ruled}"
    # an event type newer than this module: its type and fields, rather than no page at all
    # (tests/services/test_page_words.py keeps every type of domain/events.py out of here)
    return f"{type(event).__name__}: {event}"


DEALER_BY = {
    "lot": "chosen by lot",
    "operator": "named by the operator",
    "winner": "the last deal's winner deals",
    "same_dealer": "the same dealer again",
}
DUE_VERBS = {**VERBS, "seed": "send its seed"}
TIMEOUT_VERDICTS = {
    "lose_deal": "it loses the deal",
    "auto_play": "the server plays for it",
    "pause": "the clock pauses for the operator's ruling",
}
