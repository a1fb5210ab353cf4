"""The arbiter's page of one game, rendered whole on the server: the timeline of every
version, the table at the version chosen, the audit's findings with their evidence and the
fairness check of every deal. The same HTML serves a browser without JavaScript (the form
posts the key) and arbiter.js, which fetches it with the key in a header and swaps it in.

Seen "as seat k", everything here was redacted for seat k by domain/views.py before it
reached this module: the page holds no card that seat could not see at that version."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from domain.cards import POINTS
from domain.fairness import DealCheck
from domain.views import View, Viewer
from services.app.results import AuditFinding
from services.pages.html import card, cards, page, text
from services.pages.words import (
    POT_PAID,
    asked_for,
    awaited,
    clock_evidence,
    compensated,
    goes_on,
    reason_named,
    ruled_by_operator,
    seat_named,
    sizes_named,
    timed,
    waiting_for,
)


@dataclass(frozen=True)
class Step:
    """One version of the timeline; `said` is None when the viewer may not read it yet."""

    version: int
    kind: str
    said: str | None
    actor: str | None
    recorded_at: datetime | None
    request_id: str | None
    finding: int | None  # the index of the finding this version proves, if any
    command_id: str | None = None  # its Idempotency-Key: the arbiter's perspective only


@dataclass(frozen=True)
class Shown:
    """A finding as the page may show it: with its evidence once the viewer may see it."""

    finding: AuditFinding
    evidence: bool


@dataclass(frozen=True)
class Record:
    game_id: str
    names: tuple[str, ...]
    last: int
    viewer: Viewer
    table: View
    steps: list[Step]
    findings: list[Shown]
    checks: list[DealCheck]
    seed: str | None
    key: str | None = None  # only for a page without JavaScript: the next form posts it


def _viewer_name(viewer: Viewer, names: Sequence[str]) -> str:
    return (
        "the arbiter (everything)"
        if isinstance(viewer, str)
        else f"as {seat_named(viewer, names)} saw it"
    )


def key_form(game_id: str, problem: str | None = None) -> str:
    said = f'<p class="problem" role="alert">{text(problem)}</p>' if problem else ""
    return (
        f'<form id="key-form" method="post" action="/arbiter/games/{text(game_id)}" '
        'aria-label="The operator key">'
        f'{said}<label>Operator key <input type="password" name="key" autocomplete="off" '
        'required></label> <button type="submit">Open the record</button>'
        '<p class="note">The key is kept in this tab only (sessionStorage), sent in a '
        "header or a form's body, never in an address.</p></form>"
    )


def shell(game_id: str, problem: str | None = None) -> str:
    body = (
        f"<header><h1>Arbiter · game <code>{text(game_id)}</code></h1></header>"
        f'{key_form(game_id, problem)}<main id="arbiter"></main>'
    )
    return page(f"Arbiter · {game_id}", body, script="arbiter.js", kind="arbiter", game_id=game_id)


def whole(record: Record) -> str:
    body = (
        f"<header><h1>Arbiter · game <code>{text(record.game_id)}</code></h1></header>"
        f"{_main(record)}"
    )
    return page(
        f"Arbiter · {record.game_id}",
        body,
        script="arbiter.js",
        kind="arbiter",
        game_id=record.game_id,
    )


def _main(r: Record) -> str:
    v = r.table.version
    return (
        f'<main id="arbiter" data-version="{v}" data-last="{r.last}" '
        f'data-viewer="{text(r.viewer)}" data-over="{str(_over(r)).lower()}">'
        f'<form id="steps" method="post" action="/arbiter/games/{text(r.game_id)}">'
        + (f'<input type="hidden" name="key" value="{text(r.key)}">' if r.key else "")
        + f'<input type="hidden" name="as" value="{text(r.viewer)}">'
        + _controls(r)
        + '<div class="record">'
        + _table(r)
        + _timeline(r)
        + "</div>"
        + _findings(r)
        + _fairness(r)
        + "</form></main>"
    )


def _over(r: Record) -> bool:
    """Whether the record has its end: arbiter.js follows a game that goes on."""
    return bool(r.steps) and r.steps[-1].kind == "game_finished"


def _controls(r: Record) -> str:
    v = r.table.version
    options = [("arbiter", "the arbiter (everything)")] + [
        (str(s), f"as {seat_named(s, r.names)} saw it") for s in range(len(r.names))
    ]
    choose = "".join(
        f'<option value="{value}"{" selected" if value == str(r.viewer) else ""}>'
        f"{text(label)}</option>"
        for value, label in options
    )
    return (
        '<nav class="controls" aria-label="versions">'
        f'<button type="submit" name="version" value="{max(1, v - 1)}" id="previous" '
        f'aria-label="previous version"{" disabled" if v <= 1 else ""}>◀</button>'
        f'<label for="slider">version <output id="shown-version">{v}</output> of {r.last}</label>'
        f'<input type="range" id="slider" name="slider" min="1" max="{r.last}" value="{v}">'
        f'<button type="submit" name="version" value="{min(r.last, v + 1)}" id="next" '
        f'aria-label="next version"{" disabled" if v >= r.last else ""}>▶</button>'
        f'<label>perspective <select id="perspective" name="perspective">{choose}</select></label>'
        f'<button type="submit" name="show" value="1" id="show">Show</button>'
        f'<span id="viewing">{text(_viewer_name(r.viewer, r.names))}</span></nav>'
    )


def _step(r: Record, version: int) -> Step | None:
    return r.steps[version - 1] if 0 < version <= len(r.steps) else None


def _waiting(r: Record) -> str:
    here, after = _step(r, r.table.version), _step(r, r.table.version + 1)
    if (
        here is None
        or after is None
        or not goes_on((here.kind, here.request_id), (after.kind, after.request_id))
    ):
        return awaited(r.table, r.names)
    follows = after.said if after.said is not None else "an event not yet seen from here"
    return awaited(r.table, r.names, (after.version, follows))


def _table(r: Record) -> str:
    t = r.table
    names = r.names
    waits = _waiting(r)
    rows = []
    for s in t.seats:
        pile = s.pile
        counted = (
            f'{cards(pile)} <span class="points">({sum(POINTS[c] for c in pile)} points)</span>'
            if pile is not None
            else f"{s.tricks} trick(s), face down"
        )
        rows.append(
            f'<tr data-seat="{s.seat}"><th scope="row">{text(seat_named(s.seat, names))}</th>'
            f'<td class="hand">{cards(s.hand, s.cards)}</td><td>{counted}</td>'
            f"<td>{'' if s.points is None else s.points}</td><td>{s.score}</td></tr>"
        )
    trick = "—"
    if t.trick is not None:
        answers = "".join(
            f"<li>{text(seat_named(a.seat, names))}: {cards(a.cards, a.count)}"
            f"{' (beats)' if a.beat else ''}</li>"
            for a in t.trick.responses
        )
        trick = (
            f"{text(seat_named(t.trick.leader, names))} led {cards(t.trick.led)}<ul>{answers}</ul>"
        )
    stock = cards(t.stock) if t.stock is not None else f"{t.stock_count} card(s), face down"
    dave = (
        f"×{t.dave.multiplier}"
        + (
            f", offered by {text(seat_named(t.dave.offered_by, names))}"
            if t.dave.offered_by is not None
            else ""
        )
        + (", off at this table" if not t.dave.enabled else "")
    )
    return (
        f'<section id="table" aria-labelledby="table-title" data-version="{t.version}">'
        f'<h2 id="table-title">The table at version {t.version}, '
        f"{text(_viewer_name(r.viewer, names))}</h2>"
        f"<p>deal {t.deal} · {text(reason_named(t.status))} · "
        f"waiting for <strong>{text(waits)}</strong></p>"
        f"<p>trump: {card(t.trump) if t.trump else text(t.trump_suit or 'none')} · "
        f'stock, top first: <span id="stock">{stock}</span></p>'
        f'<p id="trick">on the table: {trick}</p><p>dave: {dave}</p>'
        "<table><thead><tr><th>seat</th><th>hand</th><th>trick pile</th><th>points</th>"
        f"<th>score</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        + (
            f"<p>result: {', '.join(text(seat_named(w, names)) for w in t.result.winners)} "
            f"({text(reason_named(t.result.reason))})</p>"
            if t.result
            else ""
        )
        + "</section>"
    )


def _timeline(r: Record) -> str:
    items = []
    pots: list[str] = []  # what the pots of the deal on the table owe, as their steps said
    for step in r.steps:
        if step.kind == "deal_started":
            pots = []
        elif step.kind == "pot_paid" and step.said is not None:
            pots.append(step.said.removesuffix(POT_PAID))
        elif step.kind == "stake_settled" and step.said is not None and pots:
            # the stake less the pots: without them "+0, +0" reads as nothing won
            step = replace(step, said=f"{step.said}, net of the pot: {'; '.join(pots)}")
        classes = ["step"]
        if step.version == r.table.version:
            classes.append("current")
        if step.finding is not None:
            classes.append("finding")
        at = step.recorded_at.isoformat(timespec="milliseconds") if step.recorded_at else "—"
        flag = (
            f' <a class="flag" href="#finding-{step.finding}">finding {step.finding + 1}</a>'
            if step.finding is not None
            else ""
        )
        said = text(step.said) if step.said is not None else "<em>not yet seen from here</em>"
        current = ' aria-current="step"' if step.version == r.table.version else ""
        items.append(
            f'<li id="v{step.version}" class="{" ".join(classes)}" data-version="{step.version}"'
            f"{current}>"
            f'<button type="submit" name="version" value="{step.version}">v{step.version}</button> '
            f'<span class="kind">{text(step.kind)}</span> <span class="said">{said}</span>{flag}'
            f'<span class="meta">{text(step.actor or "the server")} · {text(at)} · '
            f"request {text(step.request_id or '—')}{_key(step.command_id)}</span></li>"
        )
    return (
        '<section id="timeline" aria-labelledby="timeline-title">'
        f'<h2 id="timeline-title">Timeline</h2><ol>{"".join(items)}</ol></section>'
    )


DRAWS = ("out_of_turn_draw", "double_draw", "extra_card")  # the faulty draws


def _evidence(r: Record, f: AuditFinding) -> list[tuple[str, str]]:
    names = r.names
    rows = [
        ("rule", text(f.text)),
        # `due` is the seat due to draw for a faulty draw (nobody when no draw was due),
        # else the seat whose turn it was
        ("seat due to draw" if f.rule in DRAWS else "seat due", text(seat_named(f.due, names))),
        ("the table was waiting for", text(waiting_for(f, names))),
        ("judged on the table at version", str(f.before_version)),
    ]
    if timed(f):  # no player sent a command: the server's clock or the operator judged
        rows += [(k, text(v)) for k, v in clock_evidence(f, ruled_by_operator(f))]
    else:
        seen = str(f.seen) if f.seen_carried else "none named: judged on the table it found"
        rows.append(("the version the player had seen", seen))
    rows += [
        ("events that prove it", f"{f.versions[0]} to {f.versions[1]}"),
        ("hands, stock", text(f"{sizes_named(f.hand_sizes, names)}; {f.stock_count} in the stock")),
    ]
    if f.cards is not None:
        rows.append(("cards taken", cards(f.cards) + text(asked_for(f.asked, len(f.cards)))))
    if f.claim is not None:
        rows.append(("claim", f"{text(f.claim)}: had {f.value}, needed {f.needed}"))
    if f.pile is not None:
        counted = sum(POINTS[c] for c in f.pile)
        hidden = f" ({f.hidden} face-down card(s) left out)" if f.hidden else ""
        rows.append(
            (
                "counted pile",
                f"{cards(f.pile)} = {counted} points{text(compensated(counted, f.compensation))}"
                f"{hidden}",
            )
        )
    if f.hand is not None:
        rows.append(("judged on the hand", cards(f.hand)))
    rows.append(("request", text(f.request_id or "—")))
    if f.command_id is not None:
        rows.append(("command key", text(f.command_id)))
    rows.append(("recorded at", text(f.recorded_at.isoformat() if f.recorded_at else "—")))
    return rows


def finding_article(r: Record, index: int, shown: Shown, *, controls: bool = True) -> str:
    """One finding with its evidence; `controls`: its buttons to step there and print it
    (a printable page has none: they would do nothing there)."""
    f = shown.finding
    head = (
        f"<h3>Finding {index + 1}: {text(f.rule)} by {text(seat_named(f.seat, r.names))}, "
        f"deal {f.deal}</h3>"
    )
    go = (
        f'<button type="submit" name="version" value="{f.versions[0]}" class="go">'
        f"step to version {f.versions[0]}</button> "
        f'<button type="submit" name="print" value="{index}" class="print">'
        "printable summary</button>"
        if controls
        else ""
    )
    if not shown.evidence:
        return (
            f'<article class="finding" id="finding-{index}" data-finding="{index}">{head}'
            f"<p>at version {f.versions[0]}: step there to see its evidence from here.</p>"
            f"{go}</article>"
        )
    body = "".join(f'<tr><th scope="row">{k}</th><td>{v}</td></tr>' for k, v in _evidence(r, f))
    return (
        f'<article class="finding" id="finding-{index}" data-finding="{index}">{head}'
        f'<table class="evidence">{body}</table>{go}</article>'
    )


def _findings(r: Record) -> str:
    if not r.findings:
        inner = "<p>No penalty and no false declaration.</p>"
    else:
        inner = "".join(finding_article(r, i, s) for i, s in enumerate(r.findings))
    return (
        f'<section id="findings" aria-labelledby="findings-title">'
        f'<h2 id="findings-title">Findings</h2>{inner}</section>'
    )


def _fairness(r: Record) -> str:
    def ok(flag: bool | None) -> str:
        return "—" if flag is None else ("verified" if flag else "MISMATCH")

    rows = "".join(
        f"<tr><td>{c.number}</td><td>{c.version}</td><td>{text(c.shuffle)}</td>"
        f"<td><code>{text(c.commitment)}</code></td><td>{ok(c.commitment_ok)}</td>"
        f"<td>{ok(c.shuffle_ok)}{' (operator-fixed deck)' if c.explicit else ''}</td>"
        f"<td>{_seeds(c)}</td>"
        f"<td>{'verified' if c.ok else 'DOES NOT VERIFY'}</td></tr>"
        for c in r.checks
    )
    seed = f"<code>{text(r.seed)}</code>" if r.seed is not None else "not revealed to this viewer"
    return (
        '<section id="fairness" aria-labelledby="fairness-title">'
        f'<h2 id="fairness-title">Fairness</h2><p>game seed: {seed}</p>'
        '<div class="wide"><table><thead><tr><th>deal</th><th>dealt at version</th>'
        "<th>shuffle</th><th>commitment</th><th>commitment matches</th>"
        "<th>deck matches</th><th>seeds</th><th>the deal verifies</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></div>{_downloads(r)}</section>"
    )


def _seeds(c: DealCheck) -> str:
    """What the deal was shuffled from: the game's seed, or the seats' with the server's."""
    if c.shuffle == "server":
        return "the game seed"
    seeds = ", ".join(f"<code>{text(s or '∅')}</code>" for s in c.seeds or ())
    server = "verified" if c.server_commitment_ok else "MISMATCH"
    missing = f"; {', '.join(f'seat {s}' for s in c.missing)} sent none" if c.missing else ""
    return f"seats' seeds {seeds}{missing}; server seed {server}"


def _downloads(r: Record) -> str:
    """The API's audit and bundle of the game. They take the key in a header: arbiter.js
    fetches them with it (the links alone carry no key, and would be refused)."""
    game = text(r.game_id)
    return (
        '<p id="downloads">From the API, with the operator key: '
        f'<a href="/games/{game}/audit" data-download="audit-{game}.json">the audit (JSON)</a> · '
        f'<a href="/games/{game}/bundle" data-download="bura-{game}.json">the audit bundle</a>'
        ' <span class="note">(this page\'s script sends the key in a header)</span></p>'
    )


def printable(r: Record, index: int) -> str:
    """One finding alone, to print and hand over (a page without JavaScript asks for it;
    with JavaScript the print style sheet prints the chosen finding)."""
    body = (
        f"<header><h1>Finding in game <code>{text(r.game_id)}</code></h1>"
        f"<p>seats: {text(', '.join(r.names))}</p></header>"
        f'<main id="printable">'
        f"{finding_article(r, index, r.findings[index], controls=False)}</main>"
    )
    return page(
        f"Finding {index + 1} · {r.game_id}",
        body,
        script="arbiter.js",
        kind="print",
        game_id=r.game_id,
    )


def _key(command_id: str | None) -> str:
    """A timeline step's command key (the arbiter's perspective only): a retry under the
    same key is never a second move, so two acts under two keys were two commands."""
    return "" if command_id is None else f" · key {text(command_id)}"
