"""A view as a few lines of text, for the CLI's `replay` and for people reading logs; and
the audit's findings, each with its evidence, for `bura audit`."""

from __future__ import annotations

from collections.abc import Sequence

from domain.cards import POINTS
from domain.views import View
from services.app.results import AuditFinding
from services.pages.words import (
    asked_for,
    awaited,
    clock_evidence,
    compensated,
    ruled_by_operator,
    seat_named,
    sizes_named,
    timed,
    waiting_for,
)


def render(v: View, follows: tuple[int, str] | None = None) -> str:
    """`follows`: the next version and what it says, when `v` is in the middle of one
    command (services/pages/words.py goes_on)."""
    names = [s.name for s in v.seats]
    lines = [
        f"version {v.version}  deal {v.deal}  dealer {seat_named(v.dealer, names)}  "
        f"status {v.status}",
        f"phase {v.phase}  turn {'-' if v.turn is None else v.turn}  "
        f"trump {v.trump or '-'} ({v.trump_suit or 'none'})  "
        f"stock {v.stock_count}",
    ]
    if v.turn is not None and v.phase == "dealing":
        # no seat deals: the server does, and `turn` is the seat that leads after it
        lines.append(f"  dealing: {seat_named(v.turn, names)} leads once the cards are out")
    else:
        lines.append(f"  waiting for {awaited(v, names, follows)}")
    for s in v.seats:
        # an empty hand reads as an empty pile and stock do, seen or not
        if s.hand is not None:
            hand = " ".join(s.hand) or "-"
        else:
            hand = f"{s.cards} cards" if s.cards else "-"
        pts = f"  points {s.points}" if s.points is not None else ""
        lines.append(
            f"  seat {s.seat} {s.name:<12} hand {hand:<20} tricks {s.tricks}{pts}  score {s.score}"
        )
        if s.pile is not None:
            counted = sum(POINTS[c] for c in s.pile)
            lines.append(f"    pile: {' '.join(s.pile) or '-'} ({counted} card points)")
    if v.stock is not None:
        lines.append(f"  stock, top first: {' '.join(v.stock) or '-'}")
    if v.trick is not None:
        answers = ", ".join(
            f"seat {r.seat}: {' '.join(r.cards) if r.cards else 'face down'}"
            f"{' (beats)' if r.beat else ''}"
            for r in v.trick.responses
        )
        lines.append(
            f"  on the table: seat {v.trick.leader} led {' '.join(v.trick.led)}"
            + (f"; {answers}" if answers else "")
        )
    if v.draws:
        lines.append(f"  due to draw: {', '.join(seat_named(s, names) for s in v.draws)}")
    if v.dave.multiplier > 1 or v.dave.offered_by is not None:
        by = seat_named(v.dave.offered_by, names) if v.dave.offered_by is not None else "nobody"
        lines.append(f"  dave: x{v.dave.multiplier}, offered by {by}")
    if v.shuffle is not None:  # the seats' shuffle of the current deal
        sh = v.shuffle
        seeds = (
            f"seeds in from seats {list(sh.sent)}, due by {sh.deadline}"
            if sh.seeds is None
            else "seeds " + ", ".join(f"{s!r}" for s in sh.seeds)
        )
        missing = f", missing {list(sh.missing)}" if sh.missing else ""
        lines.append(
            f"  shuffle of deal {sh.deal}: server commitment {sh.server_commitment}, "
            f"{seeds}{missing}"
        )
    for d in v.deals:
        lines.append(
            f"  deal {d.number}: {d.reason}"
            + (f" by {seat_named(d.by, names)}" if d.by is not None else "")
            + f", winners {list(d.winners)}, losers {list(d.losers)}, stake {d.stake}"
        )
    if v.result is not None:
        winners = ", ".join(seat_named(w, names) for w in v.result.winners)
        lines.append(f"  result: winners {list(v.result.winners)} ({v.result.reason}): {winners}")
    return "\n".join(lines)


def finding_lines(f: AuditFinding, names: Sequence[str]) -> list[str]:
    """One finding and its evidence: the rule, what the table waited for, the cards taken or
    counted, and what the store recorded of the act."""
    lines = [
        f"deal {f.deal}: {f.rule} by seat {f.seat} ({names[f.seat]}) "
        f"(events {f.versions[0]}-{f.versions[1]})",
        f"  rule: {f.text}",
        f"  table at version {f.before_version}: waiting for {waiting_for(f, names)}; "
        f"hands: {sizes_named(f.hand_sizes, names)}; stock {f.stock_count}",
    ]
    if f.phase == "draw" and f.due is not None:
        lines.append(f"  due to draw: {seat_named(f.due, names)}")
    if f.cards:
        lines.append(f"  cards taken: {' '.join(f.cards)}{asked_for(f.asked, len(f.cards))}")
    if f.claim:
        lines.append(f"  claimed {f.claim}: had {f.value}, needed {f.needed}")
    if f.pile is not None:
        counted = sum(POINTS[c] for c in f.pile)
        hidden = f", {f.hidden} face-down card(s) left out" if f.hidden else ""
        lines.append(
            f"  counted pile: {' '.join(f.pile) or 'no trick taken'} ({counted} points{hidden})"
            + compensated(counted, f.compensation)
        )
    if f.hand is not None:
        lines.append(f"  judged on the hand: {' '.join(f.hand) or 'no cards'}")
    at = f.recorded_at.isoformat() if f.recorded_at else "-"
    if timed(f):
        # no player sent a command: the server's timer judged it, or the operator ruled
        evidence = clock_evidence(f, ruled_by_operator(f))
        lines.append("  " + "; ".join(f"{k} {v}" for k, v in evidence))
        lines.append(f"  request {f.request_id or '-'}, recorded at {at}")
        return lines
    seen = (
        f"the command named version {f.seen}"
        if f.seen_carried
        else "the command named no version: judged on the table it found"
    )
    key = f", key {f.command_id}" if f.command_id is not None else ""
    lines.append(f"  {seen}; request {f.request_id or '-'}{key}, recorded at {at}")
    return lines
