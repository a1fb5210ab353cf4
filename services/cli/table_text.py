"""A view as a few lines of text, for the CLI's `replay` and for people reading logs."""

from __future__ import annotations

from domain.views import View


def render(v: View) -> str:
    lines = [
        f"version {v.version}  deal {v.deal}  dealer {v.dealer}  status {v.status}",
        f"phase {v.phase}  turn {v.turn}  trump {v.trump or '-'} ({v.trump_suit or 'none'})  "
        f"stock {v.stock_count}",
    ]
    for s in v.seats:
        hand = " ".join(s.hand) if s.hand is not None else f"{s.cards} cards"
        pts = f"  points {s.points}" if s.points is not None else ""
        lines.append(
            f"  seat {s.seat} {s.name:<12} hand {hand:<20} tricks {s.tricks}{pts}  score {s.score}"
        )
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
        lines.append(f"  due to draw: {' '.join(str(s) for s in v.draws)}")
    if v.dave.multiplier > 1 or v.dave.offered_by is not None:
        lines.append(f"  dave: x{v.dave.multiplier}, offered by {v.dave.offered_by}")
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
            f"  deal {d.number}: {d.reason}, winners {list(d.winners)}, "
            f"losers {list(d.losers)}, stake {d.stake}"
        )
    if v.result is not None:
        lines.append(f"  result: winners {list(v.result.winners)} ({v.result.reason})")
    return "\n".join(lines)
