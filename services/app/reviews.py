"""The arbiter's reads of a game: the full table at a version, the audit, the record checked
(its hash chain and every deal against its commitments), and the audit bundle. Open to the
operator at any time, to everyone at the table once the game is over (Caller.may_review),
each seeing what it may (domain/views.py)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from domain.audit import audit
from domain.chain import check_chain
from domain.events import Event, GameStarted
from domain.evolve import RecordBroken, replay
from domain.fairness import verify_deals
from domain.playback import play_back
from domain.views import ARBITER, Viewer, disclosed_to, review
from infra.ports.events import RecordedEvent
from services.app.bundle import make_bundle
from services.app.callers import Caller
from services.app.codec import (
    RecordChanged,
    Unreadable,
    chain_row,
    cut_short_why,
    from_recorded,
)
from services.app.errors import VersionNotFound
from services.app.games import GameService
from services.app.results import (
    Audit,
    AuditFinding,
    PlaybackCheck,
    Replay,
    Verification,
    with_head,
)


def check_record(
    game_id: str,
    rows: Sequence[RecordedEvent],
    indexed_finished: bool = False,
    *,
    whole: bool = True,
) -> Verification:
    """The chain recomputed from the rows as stored, every deal checked with the game's
    seed, and the record played back by the rules (a forger who rewrote every hash after
    changing a dealt or drawn card meets the chain, and the commitments of the deals as
    they were published, but not the table: the card is not the one the stock held). The
    chain and the deals are checked whether or not the record plays back; the report holds
    no secret (flags, commitments, published seeds, and of a row that cannot apply only its
    version and kind, unless `whole`: the operator's, which says why).

    Rows removed from the end of a record leave a valid chain; the games index, written
    apart from the rows, shows it when it holds the game finished (`indexed_finished`) and
    the record has no end."""
    chain = check_chain(game_id, [chain_row(r) for r in rows])
    cut = cut_short(rows, indexed_finished)
    if chain.ok and cut is not None:
        chain = msgspec.structs.replace(
            chain, ok=False, first_bad_version=len(rows) + 1, problem=cut
        )
    events: list[Event] = []
    for row in rows:
        try:
            events.append(from_recorded(row))
        except Unreadable:
            return Verification(game_id, False, [], chain, unreadable_version=row.version)
    seed = next((e.seed for e in events if isinstance(e, GameStarted)), None)
    checks = verify_deals(events, seed)
    playback = _played_back(events, whole)
    ok = chain.ok and playback.ok and all(c.ok for c in checks)
    return Verification(game_id, ok, checks, chain, playback=playback)


def cut_short(rows: Sequence[RecordedEvent], indexed_finished: bool) -> str | None:
    """What is wrong with a record whose last rows were removed, when the games index
    (written apart from the rows) holds the game finished and the record has no end; a
    valid chain cannot show it."""
    if not indexed_finished or any(r.type == "game_finished" for r in rows):
        return None
    return cut_short_why(len(rows))


def intact(game_id: str, rows: Sequence[RecordedEvent], indexed_finished: bool) -> None:
    """RecordChanged unless the rows chain from the first to the last and, when the games
    index holds the game finished, end with its end; RecordBroken unless they are what the
    rules decide, act by act (domain/playback.py: an outcome rewritten with every hash
    recomputed holds the chain)."""
    chain = check_chain(game_id, [chain_row(r) for r in rows])
    if not chain.ok:
        at = chain.first_bad_version or 0
        kind = next((f" ({r.type})" for r in rows if r.version == at), "")
        raise RecordChanged(at, f"its hash chain breaks at version {at}{kind}: {chain.problem}")
    cut = cut_short(rows, indexed_finished)
    if cut is not None:
        raise RecordChanged(len(rows), cut, "game_finished")
    play_back([from_recorded(r) for r in rows])


def _played_back(events: Sequence[Event], whole: bool) -> PlaybackCheck:
    try:
        play_back(events)
    except RecordBroken as broken:
        why = str(broken) if whole else f"event {broken.version} ({broken.event_type}) {broken.why}"
        return PlaybackCheck(ok=False, first_bad_version=broken.version, problem=why)
    return PlaybackCheck(ok=True)


def audited(rows: Sequence[RecordedEvent], viewer: Viewer = ARBITER) -> list[AuditFinding]:
    """The domain's findings, each with what the store recorded of its act: the request it
    came in and when it was recorded."""
    at = {r.version: r for r in rows}
    findings = []
    for finding in audit((from_recorded(r) for r in rows), viewer):
        act = at[finding.versions[0]]
        findings.append(
            AuditFinding(
                **msgspec.structs.asdict(finding),
                request_id=act.metadata.correlation_id,
                recorded_at=act.recorded_at,
                command_id=act.metadata.command_id if viewer == ARBITER else None,
            )
        )
    return findings


class Reviews:
    def __init__(self, games: GameService) -> None:
        self.games = games

    async def replay(self, game_id: str, caller: Caller, version: int | None) -> Replay:
        current = await self.games.load(game_id)
        caller.review(current)
        rows = await self.record(game_id)
        if version is not None and version > len(rows):
            raise VersionNotFound(game_id, version, len(rows))
        at = version or len(rows)
        state = replay([from_recorded(r) for r in rows[:at]])
        shown = with_head(review(state, caller.viewer), current, caller.viewer, rows[at - 1].hash)
        return Replay(state.version, shown)

    async def audit(self, game_id: str, caller: Caller) -> Audit:
        current = await self.games.load(game_id)
        caller.review(current)
        rows = await self.record(game_id)
        return Audit(game_id, len(rows), audited(rows, caller.viewer))

    async def record(self, game_id: str) -> list[RecordedEvent]:
        """The game's whole record, refused (RecordChanged) unless its chain holds and it
        was not cut short: evidence is shown of a record as the server wrote it, or not at
        all (`verify` says what is wrong)."""
        # the index first: it is written after the end's rows, so rows read after it hold
        # the end of a game it holds finished, unless they were cut
        finished = await self.games.indexed_finished(game_id)
        rows = await self.games.rows(game_id)
        intact(game_id, rows, finished)
        return rows

    async def verify(self, game_id: str, caller: Caller) -> Verification:
        if caller.role == "operator":  # the operator's check plays nothing back first
            finished = await self.games.indexed_finished(game_id)  # first, as in `record`
            rows = await self.games.rows(game_id)
            return check_record(game_id, rows, finished)
        current = await self.games.load(game_id)
        caller.review(current)
        finished = await self.games.indexed_finished(game_id)  # first, as in `record`
        rows = await self.games.rows(game_id)
        whole = disclosed_to(current, caller.viewer) == ARBITER
        verification = check_record(game_id, rows, finished, whole=whole)
        if not whole:
            # a closed-discard record hides cards from this viewer for ever: no raw hash
            chain = msgspec.structs.replace(verification.chain, head=None)
            verification = msgspec.structs.replace(verification, chain=chain)
        return verification

    async def bundle(self, game_id: str, caller: Caller) -> bytes:
        """The audit bundle (services/app/bundle.py) as the caller may see the record."""
        current = await self.games.load(game_id)
        caller.review(current)
        return make_bundle(game_id, await self.record(game_id), caller.viewer)
