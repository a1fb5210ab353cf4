"""The arbiter's reading of a game: every penalty and false declaration, with evidence."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, cast

import msgspec

from domain.cards import Card
from domain.events import DealLost, Declared, Event, PauseEnded, PenaltyApplied, PotPaid, TimedOut
from domain.evolve import fold
from domain.state import NEW_GAME, Deal, Game
from domain.table import team_of
from domain.views import ARBITER, Viewer, disclosed_to, sees_hand
from domain.vocabulary import Claim, ClockKind, FindingRule, Phase

RULE_TEXT: dict[FindingRule, str] = {
    "double_draw": "docs/rules.md §4: taking two cards at once («двойной подъём») loses the deal",
    "extra_card": "docs/rules.md §4: drawing with a full hand («подъём лишней карты») "
    "loses the deal",
    "out_of_turn_draw": "docs/rules.md §4: drawing when another seat is due, or when no "
    "draw is due («чужой подъём»), loses the deal",
    "false_declaration": "docs/rules.md §5: declaring 31 without the points, or bura without three "
    "trumps (Kozel: four aces without four aces), loses the deal; with pay_pot (docs/rules.md §8) "
    "a false 31 instead adds a stake for every other side to the pot",
    "timeout": "docs/rules.md §13: a seat due to act whose time (its turn, then its bank) ran "
    "out loses the deal at a table with on_timeout: lose_deal, or when the operator so rules "
    "after a pause",
    "abandoned": "docs/rules.md §13: a seat due to act that had no live stream open for "
    "abandon_seconds loses the deal",
}


class RecordedFinding(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A finding as the audit bundle records it (services/app/bundle.py, format
    `bura-audit-bundle/1`): these fields, in this order, spell every bundle ever written,
    so they never change. What explains a verdict further goes in Finding."""

    rule: FindingRule
    text: str
    deal: int
    seat: int  # the seat that acted
    due: int | None  # a faulty draw: the seat due to draw, None when no draw was due;
    # a declaration: the seat whose turn it was
    turn: int  # the seat the table was waiting for, whatever it was waiting for
    phase: Phase  # what the table was waiting for
    hand_sizes: tuple[int, ...]
    stock_count: int
    cards: tuple[Card, ...] | None = None  # cards taken by a faulty draw
    asked: int | None = None  # a faulty draw: the cards it asked for (None: not recorded)
    claim: Claim | None = None
    value: int | None = None  # a declaration: the points (or trumps) the seat really had
    needed: int | None = None
    pile: tuple[Card, ...] | None = None  # a declaration of 31: the tricks that were counted
    hidden: int = 0  # cards of that pile played face down by others, left out for this viewer
    hand: tuple[Card, ...] | None = None  # bura or four aces: the hand it was judged on
    clock: ClockKind | None = None  # a timeout: the turn clock, or the absence allowed
    deadline: int | None = None  # a timeout: when the time ran out (ms since 1970, UTC)
    at: int | None = None  # a timeout: when it was judged (a ruling: when the operator ruled)
    away_since: int | None = None  # an abandonment: since when the seat had no live stream
    before_version: int  # the table state the verdict was judged on
    versions: tuple[int, ...]  # the events that prove it: the act and the verdict
    # The version the player said it acted on, when its command carried one (then it is
    # before_version: a command is never judged on a table other than the one it names).
    # seen_carried false: the command named none, and was judged on the table it found.
    seen: int | None = None
    seen_carried: bool = False


class Finding(RecordedFinding, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A finding with all the evidence the audit gives (GET /games/{id}/audit, the pages,
    `bura audit`)."""

    # a declaration of 31: the points the declarer's side was given (open seats' or the first
    # lead's compensation), counted with the pile toward `value`
    compensation: int | None = None
    # a timeout: who judged it, the server's clock or the operator ruling after a pause
    judged_by: Literal["clock", "operator"] | None = None


_RECORDED = RecordedFinding.__struct_fields__


def as_recorded(finding: Finding) -> RecordedFinding:
    """The finding with the fields a bundle records, and no others."""
    return RecordedFinding(**{name: getattr(finding, name) for name in _RECORDED})


def audit(events: Iterable[Event], viewer: Viewer = ARBITER) -> list[Finding]:
    """Every finding as `viewer` may see it, by the same rules that hide cards everywhere
    else: a face-down card (closed_discard) stays out of the evidence for every seat but
    the one that played it, and the cards a seat took or was judged on stay hidden from
    whoever may not see that seat's hand (once a classic game is over, everyone may)."""
    findings, state = _findings(events, viewer)
    shown_as = disclosed_to(state, viewer)
    return [_redacted(f, shown_as, state) for f in findings]


def _redacted(finding: Finding, viewer: Viewer, state: Game) -> Finding:
    if sees_hand(viewer, finding.seat, state.rules):
        return finding
    return msgspec.structs.replace(finding, cards=None, hand=None)


def _findings(events: Iterable[Event], viewer: Viewer) -> tuple[list[Finding], Game]:
    findings: list[Finding] = []
    state: Game = NEW_GAME
    pending: dict[str, object] | None = None
    for event in events:
        before = state
        state = fold(state, (event,))
        deal = before.deal
        match event:
            case PenaltyApplied(
                seat=seat, rule=rule, due=due, cards=cards, seen=seen, asked=asked
            ) if deal is not None:
                pending = dict(
                    rule=rule,
                    deal=deal.number,
                    seat=seat,
                    due=due,
                    turn=deal.turn,
                    phase=deal.phase,
                    hand_sizes=tuple(len(h) for h in deal.hands),
                    stock_count=len(deal.stock),
                    cards=cards,
                    asked=asked,
                    before_version=before.version,
                    seen=seen,
                    seen_carried=seen is not None,
                    act=state.version,
                )
            case Declared(
                seat=seat, claim=claim, value=value, needed=needed, true=False, seen=seen
            ) if deal is not None:
                pile = _pile(deal, seat, viewer) if claim == "thirty_one" else None
                pending = dict(
                    rule="false_declaration",
                    deal=deal.number,
                    seat=seat,
                    due=deal.turn,
                    turn=deal.turn,
                    phase=deal.phase,
                    hand_sizes=tuple(len(h) for h in deal.hands),
                    stock_count=len(deal.stock),
                    claim=claim,
                    value=value,
                    needed=needed,
                    pile=pile,
                    hidden=len(deal.piles[seat]) - len(pile) if pile is not None else 0,
                    compensation=sum(deal.bonus[s] for s in team_of(state.rules, seat))
                    if claim == "thirty_one"
                    else None,
                    hand=deal.hands[seat] if claim != "thirty_one" else None,
                    before_version=before.version,
                    seen=seen,
                    seen_carried=seen is not None,
                    act=state.version,
                )
            case TimedOut(verdict="lose_deal") | PauseEnded(verdict="lose_deal") if (
                deal is not None and before.clock is not None
            ):
                pending = _timeout(event, before, deal)
            case DealLost(seat=seat) | PotPaid(seat=seat) if (
                pending is not None and pending["seat"] == seat
            ):
                act = pending.pop("act")
                found = cast(FindingRule, pending["rule"])
                findings.append(
                    msgspec.convert(
                        {**pending, "text": RULE_TEXT[found], "versions": (act, state.version)},
                        Finding,
                    )
                )
                pending = None
    return findings, state


def _timeout(event: TimedOut | PauseEnded, before: Game, deal: Deal) -> dict[str, object]:
    assert before.clock is not None
    abandoned = isinstance(event, TimedOut) and event.clock == "abandon"
    return dict(
        rule="abandoned" if abandoned else "timeout",
        deal=deal.number,
        seat=event.seat,
        due=event.seat,
        turn=deal.turn,
        phase=deal.phase,
        hand_sizes=tuple(len(h) for h in deal.hands),
        stock_count=len(deal.stock),
        clock=event.clock if isinstance(event, TimedOut) else "turn",
        deadline=event.deadline if isinstance(event, TimedOut) else before.clock.deadline,
        at=event.at,
        judged_by="clock" if isinstance(event, TimedOut) else "operator",
        away_since=event.away_since if isinstance(event, TimedOut) else None,
        before_version=before.version,
        act=before.version + 1,
    )


def _pile(deal: Deal, seat: int, viewer: Viewer) -> tuple[Card, ...]:
    if viewer == ARBITER:
        return deal.piles[seat]
    unseen = {c for s, cards in enumerate(deal.face_down) if s != viewer for c in cards}
    return tuple(c for c in deal.piles[seat] if c not in unseen)
