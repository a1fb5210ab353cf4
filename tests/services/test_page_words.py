"""The table and the audit in words, for the arbiter's page and `bura audit`: every event
as a sentence, what the table waits for at every version (in the middle of one command's
events too), a timeout judged by the server's clock or the operator with readable times, a
false 31's compensation, and the pot of pay_pot in the deal's settlement."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime

import msgspec

from domain.audit import audit
from domain.commands import Concede, Declare, Draw, EndPause, TimeOut
from domain.events import (
    EVENT_TYPES,
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
from domain.evolve import fold
from domain.rules import Rules
from domain.state import NEW_GAME, Game
from domain.views import ARBITER, view
from services.app.results import AuditFinding
from services.cli.table_text import finding_lines, render
from services.pages.arbiter import Record, Shown, Step, finding_article, printable, whole
from services.pages.words import describe
from tests.domain.given import HANDS, act, lead, respond, table_and_events

NAMES = ("ann", "bob")
T0 = 1_796_539_212_345  # 2026-12-06T06:40:12.345Z
EPOCH_MS = re.compile(r"\b1[0-9]{12}\b")


def utc(ms: int | None) -> str:
    """A time as the pages write it: ISO 8601, UTC, to the millisecond."""
    assert ms is not None
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def game(*steps: tuple[int | None, object], **options: object) -> list[Event]:
    """The two-seat table of tests/domain/given.py (seat 0 "AS 6S QD" leads, seat 1 holds
    "7S 6H 8D", hearts are trumps) dealt at T0, then each (seat, command)."""
    state, events = table_and_events(HANDS, trump="9H", stock="KC QC JC 10C", now=T0, **options)
    for seat, command in steps:
        state, new = act(state, seat, command)  # type: ignore[arg-type]
        events = [*events, *new]
    return events


def timed_out(events: list[Event], verdict: str = "lose_deal") -> list[Event]:
    state = fold(NEW_GAME, events)
    assert state.clock is not None
    command = TimeOut(seat=state.clock.seat, version=state.version, at=state.clock.deadline + 5)
    state, new = act(state, None, command)
    return [*events, *new]


def requests(events: list[Event], timer_from: int | None = None) -> list[str]:
    """A request id for each event: `timer` from the version the server's timer acted."""
    return [
        "timer" if timer_from is not None and v >= timer_from else f"request-{v}"
        for v in range(1, len(events) + 1)
    ]


def record(events: list[Event], at: int | None = None, ids: list[str] | None = None) -> Record:
    """The arbiter's page as services/http/pages.py builds it from the rows."""
    ids = ids or requests(events)
    at = at or len(events)
    state = fold(NEW_GAME, events[:at])
    names = NAMES[: len(state.seats)]
    findings = [
        AuditFinding(
            **msgspec.structs.asdict(f),
            request_id=ids[f.versions[0] - 1],
            recorded_at=datetime.fromtimestamp(T0 / 1000, UTC),
        )
        for f in audit(events)
    ]
    steps = [
        Step(
            version=v,
            kind=str(msgspec.to_builtins(e)["type"]),
            said=describe(e, names),
            actor=None,
            recorded_at=None,
            request_id=ids[v - 1],
            finding=next((i for i, f in enumerate(findings) if v in f.versions), None),
        )
        for v, e in enumerate(events, start=1)
    ]
    return Record(
        game_id="g1",
        names=names,
        last=len(events),
        viewer=ARBITER,
        table=view(state, ARBITER),
        steps=steps,
        findings=[Shown(f, True) for f in findings],
        checks=[],
        seed=None,
    )


def evidence(r: Record, index: int = 0) -> str:
    """The finding's article as text: its table's cells, tags dropped."""
    return html.unescape(re.sub(r"<[^>]+>", " ", finding_article(r, index, r.findings[index])))


# -- a timeout, judged by the server's clock or ruled by the operator ----------------------------


def test_a_timeout_says_which_clock_ran_out_when_and_that_the_servers_clock_judged_it() -> None:
    events = timed_out(game(turn_seconds=10))
    timer = next(v for v, e in enumerate(events, start=1) if isinstance(e, TimedOut))
    r = record(events, ids=requests(events, timer_from=timer))
    [f] = r.findings
    assert f.finding.rule == "timeout"
    deadline, at = f.finding.deadline, f.finding.at
    assert deadline is not None and at is not None
    said = evidence(r)
    assert f"deadline {utc(deadline)}" in " ".join(said.split())
    assert utc(deadline) == "2026-12-06T06:40:22.345Z" and utc(at) in said
    assert "the server's clock" in said and "turn" in said
    assert "seen" not in said and "judged on the table it found" not in said  # no command
    lines = "\n".join(finding_lines(r.findings[0].finding, NAMES))
    assert "judged by the server's clock" in lines and f"deadline {utc(deadline)}" in lines
    assert f"judged at {utc(at)}" in lines and "clock turn" in lines
    assert "named no version" not in lines and "judged on the table it found" not in lines
    assert not EPOCH_MS.search(said) and not EPOCH_MS.search(lines)


def test_a_timeout_ruled_by_the_operator_after_a_pause_says_so() -> None:
    events = timed_out(game(turn_seconds=10, on_timeout="pause"))
    ruled = T0 + 90_000
    _, new = act(fold(NEW_GAME, events), None, EndPause("lose_deal"), now=ruled)
    events = [*events, *new]
    ids = requests(events, timer_from=len(events) - len(new))  # the ruling's own request
    ids[len(events) - len(new) :] = ["operator-ruling"] * len(new)
    r = record(events, ids=ids)
    [f] = r.findings
    said = evidence(r)
    assert "the operator's ruling after a pause" in said and "server's clock" not in said
    assert f"ruled at {utc(ruled)}" in " ".join(said.split())
    assert "the version the player had seen" not in said
    lines = "\n".join(finding_lines(f.finding, NAMES))
    assert "judged by the operator's ruling after a pause" in lines
    assert f"ruled at {utc(ruled)}" in lines and "named no version" not in lines


def test_an_abandonment_says_since_when_the_seat_was_away() -> None:
    finding = AuditFinding(
        rule="abandoned",
        text="docs/rules.md §13",
        deal=1,
        seat=1,
        due=1,
        turn=1,
        phase="respond",
        hand_sizes=(2, 3),
        stock_count=27,
        clock="abandon",
        deadline=T0 + 60_000,
        at=T0 + 60_010,
        away_since=T0,
        before_version=12,
        versions=(13, 14),
        judged_by="clock",
        request_id="timer",
    )
    lines = "\n".join(finding_lines(finding, NAMES))
    assert f"away since {utc(T0)}" in lines and "clock abandon" in lines
    assert "judged by the server's clock" in lines and "named no version" not in lines
    assert "hands: ann 2 cards, bob 3 cards; stock 27" in lines  # no Python list


# -- a false 31: the compensation counted with the pile ------------------------------------------


def test_a_false_31_shows_the_compensation_counted_with_the_pile() -> None:
    events = game(
        (0, lead("AS")),
        (1, respond("7S")),
        (0, Draw()),
        (1, Draw()),
        (0, Declare("thirty_one")),
        open_seats=(0,),
        compensation=10,
    )
    r = record(events)
    [f] = r.findings
    assert (f.finding.value, f.finding.compensation) == (21, 10)
    said = " ".join(evidence(r).split())
    assert "A♠ 7♠ = 11 points, and 10 points of compensation: 21" in said
    assert "[" not in said  # "hands, stock" reads as words
    lines = "\n".join(finding_lines(f.finding, NAMES))
    assert "counted pile: AS 7S (11 points), and 10 points of compensation: 21" in lines
    assert "the command named no version" in lines  # a player's command, unlike a timeout


def test_a_double_draw_of_the_last_card_says_what_it_asked_for_beside_what_it_took() -> None:
    """The rule reads "taking two cards at once": of the stock's last card, one was taken,
    two asked for (`asked`, which only the JSON showed). Both are said where they differ."""
    events = game((0, lead("AS")), (1, respond("7S")), (0, Draw(2)))
    r = record(events)
    [shown] = r.findings
    assert (shown.finding.rule, shown.finding.asked) == ("double_draw", 2)
    assert "asked for" not in evidence(r)  # two asked, two taken: nothing more to say
    last = msgspec.structs.replace(shown.finding, cards=shown.finding.cards[:1])  # one left
    r.findings[0] = Shown(last, True)
    assert "cards taken" in evidence(r) and "(2 asked for, 1 left in the stock)" in evidence(r)
    lines = "\n".join(finding_lines(last, NAMES))
    assert f"cards taken: {last.cards[0]} (2 asked for, 1 left in the stock)" in lines


def test_the_printable_finding_has_no_buttons_that_would_do_nothing() -> None:
    events = game((0, Declare("bura")))
    page = printable(record(events), 0)
    assert "step to version" not in page and "printable summary" not in page
    assert "<button" not in page


def test_a_claim_judged_on_an_empty_hand_says_no_cards() -> None:
    """A false bura is judged on the hand; an empty one reads as such, on the page and in
    `bura audit`, not as nothing after the colon."""
    [f] = record(game((0, Declare("bura")))).findings
    assert "  judged on the hand: AS 6S QD" in finding_lines(f.finding, NAMES)
    emptied = msgspec.structs.replace(f.finding, hand=())
    assert "  judged on the hand: no cards" in finding_lines(emptied, NAMES)


# -- pay_pot: the settlement says what the pot took ---------------------------------------------


def test_the_settlement_of_a_deal_with_a_pot_explains_the_net() -> None:
    events = game(
        (0, Declare("thirty_one")),
        (0, lead("AS")),
        (1, Concede()),
        closed_discard=True,
        false_declaration="pay_pot",
    )
    page = whole(record(events))
    settled = next(
        s.said for s in record(events).steps if s.kind == "stake_settled" and s.said is not None
    )
    assert settled.startswith("deal 1 settled at stake 1: ann +0, bob +0")
    assert "ann +0, bob +0, net of the pot: seat 0 (ann) owes 1 to every other side" in page


# -- every event in a sentence ---------------------------------------------------------------------

EVERY_EVENT: list[Event] = [
    GameStarted(seats=NAMES, rules=Rules(), seed=None),
    DealerChosen(1, "lot"),
    SeedingOpened(number=1, server_commitment="ab" * 32, deadline=T0),
    SeedSent(0, None),
    SeedingClosed(number=1, seeds=("x", ""), missing=(1,), at=T0),
    SeedRevealed(number=1, server_seed="s"),
    DealStarted(number=1, dealer=1, commitment="cd" * 32, deck=None),
    CardDealt(0, None),
    TrumpTurned("9H"),
    CompensationGiven(1, 10, "open_seat"),
    CompensationGiven(0, 15, "first_lead"),
    CardsLed(0, ("AS",)),
    CardsResponded(seat=1, cards=None, count=1, beat=False, face_down=True),
    TrickTaken(0),
    CardDrawn(0, None),
    PenaltyApplied(seat=1, rule="out_of_turn_draw", due=0, cards=None, count=1),
    BuraShown(0, ("AH", "KH", "QH")),
    FourAcesShown(0, ("AS", "AH", "AD", "AC")),
    Declared(seat=0, claim="thirty_one", value=0, needed=31, true=False),
    PotPaid(0, 1),
    Passed(0),
    Conceded(1),
    DaveOffered(0, 2),
    DaveAccepted(1, 2),
    DaveDeclined(1),
    DealWon(0, "most_points"),
    DealLost(1, "out_of_turn_draw"),
    DealVoid("no_claim"),
    StakeSettled(deal=1, stake=1, multiplier=2, payments=(2, -2)),
    GameFinished(winners=(0,), reason="conceded", seed=None),
    ClockStarted(seat=0, at=T0, turn_ends=T0 + 10_000, deadline=T0 + 40_000, banks=(0, 0)),
    ClockStarted(
        seat=1, at=T0, turn_ends=T0 + 10_000, deadline=T0 + 10_000, banks=(), unanswered=(T0, None)
    ),
    TimedOut(seat=0, clock="turn", phase="lead", deadline=T0, at=T0 + 5, verdict="pause"),
    TimedOut(
        seat=1,
        clock="abandon",
        phase="respond",
        deadline=T0,
        at=T0,
        verdict="lose_deal",
        away_since=T0 - 60_000,
    ),
    PauseEnded(seat=0, verdict="lose_deal", at=T0),
    PauseEnded(seat=0, verdict="play_on", at=T0),
]


def test_every_event_type_has_a_sentence_of_its_own() -> None:
    """No event falls back to its type and fields: no Python tuple, no raw epoch ms, no
    snake_case code where a word belongs."""
    assert {type(e) for e in EVERY_EVENT} == set(EVENT_TYPES.values())
    for event in EVERY_EVENT:
        said = describe(event, NAMES)
        kind = str(msgspec.to_builtins(event)["type"])
        assert not said.startswith((type(event).__name__, kind)), said
        assert "()" not in said and not re.search(r"\(\d+, \d+\)", said), said
        assert not EPOCH_MS.search(said), said
        assert not re.search(r"\b[a-z]+_[a-z_]+\b", said), said  # no out_of_turn_draw
    assert "given 10 points toward its target by the closed side" in describe(EVERY_EVENT[9], NAMES)
    ruled = describe(PauseEnded(seat=0, verdict="lose_deal", at=T0), NAMES)
    assert ruled == f"the operator ruled on the pause at {utc(T0)}: seat 0 (ann) loses the deal"
    clock = describe(EVERY_EVENT[30], NAMES)
    assert "the clock runs for seat 0 (ann)" in clock and "banks left: ann 0 s, bob 0 s" in clock


# -- what the table waits for, at every version ---------------------------------------------------


def state_at(events: list[Event], version: int) -> Game:
    return fold(NEW_GAME, events[:version])


def waiting_at(events: list[Event], version: int) -> tuple[str, str]:
    """What the table waits for at `version`: on the arbiter's page, and in `bura replay`."""
    page = whole(record(events, at=version))
    line = re.search(r"waiting for <strong>([^<]*)</strong>", page)
    assert line is not None
    told = [
        t
        for t in render(view(state_at(events, version), ARBITER)).splitlines()
        if t.startswith(("  waiting for ", "  dealing: "))
    ]
    # the command line names the seats as the game does (given.py's "seat0", "seat1")
    return html.unescape(line[1]), " ".join(told).replace("seat0", "ann").replace("seat1", "bob")


def test_the_waiting_line_is_right_in_every_phase_and_between_a_commands_events() -> None:
    events = game(
        (0, lead("AS")),
        (1, respond("7S")),
        (0, Draw()),
        (1, Draw()),
        (0, Concede()),
        match_target=1,
    )
    kinds = [str(msgspec.to_builtins(e)["type"]) for e in events]
    said = [waiting_at(events, v) for v in range(1, len(events) + 1)]
    for kind, (page, text) in zip(kinds, said, strict=True):
        assert page not in ("over", "finished", "dealing", "seeding"), (kind, page)
        if text.startswith("  dealing: "):  # `bura replay` has said so since before
            assert page.startswith("the server, dealing: ") and text[11:] in page, (kind, text)
        else:
            assert text.startswith("  waiting for ") and page in text, (kind, text)
    # bob's response, before trick_taken: every seat has answered, and ann takes it next
    answered = kinds.index("cards_responded") + 1
    assert said[answered - 1][0] == (
        "nobody: every seat has answered, and seat 0 (ann) takes the trick next"
    )
    assert said[kinds.index("deal_started")][0].startswith(
        "the server, dealing: seat 0 (ann) leads"
    )
    over = said[kinds.index("deal_lost")][0]
    assert over == "nobody: deal 1 is over; the next deal or the game's end follows"
    assert said[-1][0] == "nobody: the game is over"
    assert said[0][0] == "the server, which deals next"


def test_the_arbiter_between_a_commands_events_says_what_follows_not_a_seat() -> None:
    """A false bura: declared, then the deal lost, in one command. At the declaration's
    version the table is not waiting for the declarer to lead."""
    events = game((0, Declare("bura")))
    declared = next(i for i, e in enumerate(events, start=1) if isinstance(e, Declared))
    ids = requests(events)
    ids[declared] = ids[declared - 1]  # the deal lost came in the same request
    page = whole(record(events, at=declared, ids=ids))
    line = re.search(r"waiting for <strong>([^<]*)</strong>", page)
    assert line is not None
    assert "to lead" not in line[1], line[1]
    assert line[1].startswith("nobody: the same command goes on with version"), line[1]
    assert "seat 0 (ann) loses the deal (false declaration)" in line[1]


def test_an_answer_face_down_is_counted_in_words() -> None:
    def hidden(count: int) -> str:
        return describe(
            CardsResponded(seat=1, cards=None, count=count, beat=False, face_down=True), NAMES
        )

    assert hidden(1).endswith("responds with 1 card face down")
    assert hidden(2).endswith("responds with 2 cards face down")
