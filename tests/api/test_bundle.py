"""The audit bundle (docs/fairness.md), on each store: a game of every variant exported by
`GET /games/{id}/bundle` verifies with nothing but the file; a byte changed anywhere in it
is found and located; seats get it once the game is over, redacted as their replay is."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from domain.chain import GENESIS, canonical, link
from domain.events import CardsResponded, DealStarted, Event
from services import cli
from services.app.bundle import Bundle, BundleRow, make_bundle
from services.app.bundle_check import Kept, check_bundle
from services.app.codec import from_recorded
from tests.api.bundles import VARIANTS, record
from tests.api.conftest import OPERATOR, THIRTY_ONE_GAME, Api, bearer
from tests.tampering import Tables

# Real receivers, timers, documents or whole games per case: left out of make test-fast.
pytestmark = pytest.mark.slow


async def bundle_of(api: Api, game_id: str, headers: dict[str, str] = OPERATOR) -> bytes:
    answer = await api.client.get(f"/games/{game_id}/bundle", headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    assert f'filename="bura-{game_id}.json"' in answer.headers["content-disposition"]
    return answer.content


def rows_at(raw: bytes) -> list[tuple[int, int]]:
    """Where each event row lies in the file: its encoding is the bundle's, byte for byte."""
    bundle = msgspec.json.decode(raw, type=Bundle)
    spans, at = [], 0
    for row in bundle.events:
        encoded = msgspec.json.encode(row)
        at = raw.index(encoded, at)
        spans.append((at, at + len(encoded)))
        at += len(encoded)
    return spans


def flipped(raw: bytes, at: int, mask: int) -> bytes:
    changed = bytearray(raw)
    changed[at] ^= mask
    return bytes(changed)


def located(raw: bytes, at: int, where: str, spans: list[tuple[int, int]]) -> bool:
    """The problem is placed where the byte was changed: at a byte at or after it (the JSON
    broke there; or at the start of the UTF-8 character it is part of), or at the event row
    holding it (the chain broke there)."""
    if where.startswith("byte "):
        return int(where.split()[1]) >= at - 3
    row = next((i for i, (a, b) in enumerate(spans) if a <= at < b), None)
    if row is not None:
        return where.startswith(f"events[{row}]")
    return bool(where)


@pytest.mark.parametrize("variant", list(VARIANTS))
async def test_the_bundle_of_a_game_of_every_variant_verifies_from_the_file_alone(
    api: Api,
    variant: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    game_id = await record(api.store, variant)
    stored = await api.store.read(game_id)
    raw = await bundle_of(api, game_id)

    report = check_bundle(raw)

    assert report.ok, report.problems
    assert report.replayed and not report.unchecked and report.rows == len(stored)
    events: list[Event] = [from_recorded(r) for r in stored]
    dealt = [e for e in events if isinstance(e, DealStarted)]
    assert [c.number for c in report.deals] == [d.number for d in dealt]
    assert all(c.ok for c in report.deals)
    if variant.endswith("missing_seed"):
        assert all(c.missing for c in report.deals)
    bundle = msgspec.json.decode(raw, type=Bundle)
    assert bundle.head.hash == stored[-1].hash.hex() and bundle.rules == VARIANTS[variant][1]
    assert [bytes(r.data) for r in bundle.events] == [r.data for r in stored]
    path = tmp_path / "game.bura.json"
    path.write_bytes(raw)
    capsys.readouterr()
    assert cli.main(["verify-bundle", str(path)]) == 0
    assert capsys.readouterr().out.strip().endswith("verified")


@pytest.mark.parametrize("variant", list(VARIANTS))
async def test_one_flipped_byte_anywhere_in_the_bundle_fails_and_says_where(
    api: Api, variant: str
) -> None:
    raw = await bundle_of(api, await record(api.store, variant))
    spans = rows_at(raw)
    chance = random.Random(variant)
    # everywhere at random, and the first and last bytes of every row
    places = chance.sample(range(len(raw)), 150) + [
        at for span in spans for at in (span[0], span[1] - 1)
    ]
    for at in places:
        for mask in (0x01, 0x20, 0x80):
            report = check_bundle(flipped(raw, at, mask))
            assert not report.ok, (at, mask, raw[at - 20 : at + 20])
            where = report.problems[0].where
            assert located(raw, at, where, spans), (at, mask, where, raw[at - 20 : at + 20])


@pytest.mark.slow
async def test_every_byte_of_a_short_game_is_guarded(api: Api) -> None:
    table = await api.create(rules={"shuffle": "seats"}, deck=None, seed="short")
    await api.play(table, 0, {"type": "seed", "value": "ann"}, key="a")
    await api.play(table, 1, {"type": "seed", "value": "bob"}, key="b")
    view = await api.view(table)
    await api.play(table, view["turn"], {"type": "concede"}, key="c")
    raw = await bundle_of(api, table.game_id)
    assert check_bundle(raw).ok
    spans = rows_at(raw)
    for at in range(len(raw)):
        for mask in (0x01, 0x02, 0x20, 0x80):
            report = check_bundle(flipped(raw, at, mask))
            assert not report.ok, (at, mask, raw[at - 20 : at + 20])
            assert located(raw, at, report.problems[0].where, spans)


async def test_seats_get_the_arbiters_bundle_once_a_classic_game_is_over(api: Api) -> None:
    table = await api.create()
    await api.play(table, *THIRTY_ONE_GAME[0])
    early = await api.client.get(f"/games/{table.game_id}/bundle", headers=table.seat(0))
    assert early.status_code == 403
    for seat, command in THIRTY_ONE_GAME[1:]:
        await api.play(table, seat, command)
    operator = await bundle_of(api, table.game_id)
    for headers in (table.seat(0), table.seat(1), table.watcher):
        assert await bundle_of(api, table.game_id, headers) == operator
    assert msgspec.json.decode(operator, type=Bundle).seed == "api-tests"


async def test_a_bundle_whose_seats_were_renamed_says_both_names(api: Api) -> None:
    table = await api.create()
    for seat, command in THIRTY_ONE_GAME:
        await api.play(table, seat, command)
    bundle = msgspec.json.decode(await bundle_of(api, table.game_id), type=Bundle)
    renamed = msgspec.structs.replace(bundle, seats=("mallory", *bundle.seats[1:]))
    report = check_bundle(msgspec.json.encode(renamed))
    assert not report.ok
    assert [(p.where, p.what) for p in report.problems] == [
        ("seats", "the record gives ['p0', 'p1'], the bundle says ['mallory', 'p1']")
    ]


async def test_a_seats_bundle_of_a_closed_discard_game_keeps_what_it_may_not_see(
    api: Api, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    game_id = await record(api.store, "closed_discard")
    tokens, _ = await api.service.seating.issue(game_id, 2)
    events = [from_recorded(r) for r in await api.store.read(game_id)]
    hidden = {
        c
        for e in events
        if isinstance(e, CardsResponded) and e.face_down and e.seat == 1 and e.cards
        for c in e.cards
    }
    assert hidden, "the game played no face-down answer of seat 1: pick another variant seed"

    raw = await bundle_of(api, game_id, bearer(tokens[0]))

    bundle = msgspec.json.decode(raw, type=Bundle)
    assert bundle.redacted and bundle.viewer == 0 and bundle.seed is None
    assert all(d.server_seed is None and d.deal_seed is None for d in bundle.deals)
    for row in bundle.events:
        shown = msgspec.json.decode(bytes(row.data))
        if shown["type"] == "cards_responded" and shown["seat"] == 1 and shown["face_down"]:
            assert shown["cards"] is None and row.redacted
    assert not _rows_with(bundle.events, "deck")
    assert bundle.head is None and all(r.hash is None for r in bundle.events)
    report = check_bundle(raw)
    assert report.ok and not report.replayed and report.unchecked and report.chain is None
    path = tmp_path / "seat0.bura.json"
    path.write_bytes(raw)
    capsys.readouterr()
    assert cli.main(["verify-bundle", str(path)]) == 0
    said = capsys.readouterr().out
    assert "as far as this viewer may see" in said and ", as seat 0 sees it: " in said
    # a seat's bundle lacks cards: it is no record to import, and the refusal says whose
    assert await asyncio.to_thread(cli.main, ["import", str(path)]) == 1
    said = capsys.readouterr()
    assert "is seat 0's bundle, redacted" in said.out + said.err


async def test_a_redacted_bundle_that_says_its_game_is_not_over_after_its_end_fails(
    api: Api,
) -> None:
    """A seat's redacted bundle has no chain, but its rows still say whether the game
    ended: `finished` is held to them (it was taken as the file said)."""
    game_id = await record(api.store, "closed_discard")
    tokens, _ = await api.service.seating.issue(game_id, 2)
    raw = await bundle_of(api, game_id, bearer(tokens[0]))
    assert b',"finished":true,' in raw and check_bundle(raw).ok

    report = check_bundle(raw.replace(b',"finished":true,', b',"finished":false,', 1))

    assert not report.ok
    assert [(p.where, p.what) for p in report.problems] == [("finished", "the rows say True")]


@pytest.mark.parametrize(
    "respell",
    [
        pytest.param(lambda raw: raw.replace(b'{"format"', b'{ "format"', 1), id="a space"),
        pytest.param(lambda raw: raw + b"\n", id="a final line feed"),
        pytest.param(
            lambda raw: msgspec.json.encode(dict(reversed(msgspec.json.decode(raw).items()))),
            id="fields reordered",
        ),
        pytest.param(
            lambda raw: raw.replace(b"bura-audit-bundle/1", b"bura-audit-bundle\\/1"),
            id="an escaped slash",
        ),
    ],
)
async def test_another_spelling_of_the_same_bundle_is_not_the_exported_file(
    api: Api, respell: Callable[[bytes], bytes]
) -> None:
    """The bundle is one spelling of its record: a file re-formatted or re-escaped holds the
    same values but not the exported bytes (a digest of it names another file), and fails
    at the first byte that differs."""
    table = await api.create()
    for seat, command in THIRTY_ONE_GAME:
        await api.play(table, seat, command)
    raw = await bundle_of(api, table.game_id)
    assert check_bundle(raw).ok
    other = respell(raw)
    assert other != raw and msgspec.json.decode(other) == msgspec.json.decode(raw)

    report = check_bundle(other)

    assert not report.ok and len(report.problems) == 1
    [problem] = report.problems
    assert problem.where.startswith("byte ") and "not the bundle as the server wrote it" in (
        problem.what
    )


def _rows_with(rows: list[BundleRow], field: str) -> list[BundleRow]:
    """Rows whose payload shows a value (not null) for `field`."""
    return [r for r in rows if msgspec.json.decode(bytes(r.data)).get(field) is not None]


async def test_a_forged_bundle_whose_record_no_longer_folds_fails_and_says_where(
    api: Api,
) -> None:
    """A forger edits a dealt card's seat to one the table does not have and rewrites
    every hash after it, so the chain holds: the replay cannot apply that event, and the
    check says so at its row instead of failing."""
    table = await api.create()
    for seat, command in THIRTY_ONE_GAME:
        await api.play(table, seat, command)
    bundle = msgspec.json.decode(await bundle_of(api, table.game_id), type=Bundle)
    previous, rows, dealt = GENESIS, [], 0
    for row in bundle.events:
        data = bytes(row.data)
        if not dealt and row.type == "card_dealt":
            dealt = row.version
            data = msgspec.json.encode({**msgspec.json.decode(data), "seat": 7})
        previous = link(
            previous,
            canonical(
                bundle.game_id, row.version, row.type, row.schema_version, data,
                row.command_id, row.actor, row.correlation_id, row.recorded_at,
            ),
        )  # fmt: skip
        rows.append(msgspec.structs.replace(row, data=msgspec.Raw(data), hash=previous.hex()))
    assert bundle.head is not None
    head = msgspec.structs.replace(bundle.head, hash=previous.hex())
    forged = msgspec.json.encode(msgspec.structs.replace(bundle, events=rows, head=head))

    report = check_bundle(forged)

    assert not report.ok and report.chain is not None and report.chain.ok
    assert [(p.where, p.what.split(" (")[0]) for p in report.problems] == [
        (f"events[{dealt - 1}] (version {dealt})", f"event {dealt}")
    ]
    assert "(card_dealt) cannot apply to the table before it" in report.problems[0].what


def _reflagged(raw: bytes, flag: Callable[[int, BundleRow], bool]) -> bytes:
    bundle = msgspec.json.decode(raw, type=Bundle)
    rows = [
        msgspec.structs.replace(row, redacted=flag(i, row)) for i, row in enumerate(bundle.events)
    ]
    return msgspec.json.encode(msgspec.structs.replace(bundle, events=rows))


async def test_a_rows_redacted_flag_is_checked_against_what_its_viewer_may_see(
    api: Api, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The flag is outside the chain, so it is checked by meaning: the arbiter's bundle
    flags nothing, and a seat's flags exactly the rows it is shown redacted. A flag flipped
    either way fails and says where, and an import refuses the file."""
    game_id = await record(api.store, "closed_discard")
    tokens, _ = await api.service.seating.issue(game_id, 2)
    arbiter = await bundle_of(api, game_id)
    seat = await bundle_of(api, game_id, bearer(tokens[0]))
    flagged = [i for i, r in enumerate(msgspec.json.decode(seat, type=Bundle).events) if r.redacted]
    plain = [
        i for i, r in enumerate(msgspec.json.decode(seat, type=Bundle).events) if not r.redacted
    ]
    assert check_bundle(arbiter).ok and check_bundle(seat).ok and flagged and plain

    def fails(raw: bytes, where: str, what: str) -> None:
        report = check_bundle(raw)
        assert not report.ok
        assert (report.problems[0].where, report.problems[0].what) == (where, what)

    every = _reflagged(arbiter, lambda i, row: True)
    fails(every, "events[0] (version 1).redacted", "nothing of it is hidden from the arbiter")
    first = flagged[0]
    unflagged = _reflagged(seat, lambda i, row: row.redacted and i != first)
    version = first + 1
    fails(
        unflagged,
        f"events[{first}] (version {version}).redacted",
        "it withholds what seat 0 may not see, but is not flagged",
    )
    plain_row = plain[-1]
    overflagged = _reflagged(seat, lambda i, row: row.redacted or i == plain_row)
    fails(
        overflagged,
        f"events[{plain_row}] (version {plain_row + 1}).redacted",
        "nothing of it is hidden from seat 0",
    )
    # a withheld card put back, flag and all: the bundle shows what its viewer may not see
    whole = msgspec.json.decode(arbiter, type=Bundle).events
    back = msgspec.json.decode(seat, type=Bundle)
    rows = list(back.events)
    rows[first] = msgspec.structs.replace(rows[first], data=whole[first].data)
    shown = msgspec.json.encode(msgspec.structs.replace(back, events=rows))
    fails(shown, f"events[{first}] (version {version})", "it shows what seat 0 may not see")
    nothing = _reflagged(seat, lambda i, row: False)
    assert not check_bundle(nothing).ok

    path = tmp_path / "flagged.bura.json"
    path.write_bytes(every)
    capsys.readouterr()
    assert cli.main(["verify-bundle", str(path)]) == 1
    assert await asyncio.to_thread(cli.main, ["import", str(path)]) == 1
    said = capsys.readouterr()
    assert "does not verify, at events[0] (version 1).redacted" in said.err


async def test_a_bundle_that_gives_a_name_twice_in_one_object_fails(
    api: Api, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`"findings":[]` put before the real findings (or a second seed, `finished`,
    `viewer`): one reader would keep the first, another the last, so the file is no one
    record. It fails, and an import refuses it."""
    table = await api.create()
    for seat, command in THIRTY_ONE_GAME:
        await api.play(table, seat, command)
    raw = await bundle_of(api, table.game_id)
    assert check_bundle(raw).ok
    for name, value in (("findings", b"[]"), ("finished", b"false"), ("viewer", b"0")):
        at = raw.index(b'"%s":' % name.encode())
        forged = raw[:at] + b'"%s":%s,' % (name.encode(), value) + raw[at:]
        report = check_bundle(forged)
        assert not report.ok
        assert report.problems[0].where == "the bundle"
        assert f"gives `{name}` twice" in report.problems[0].what
    path = tmp_path / "twice.bura.json"
    path.write_bytes(forged)
    capsys.readouterr()
    assert await asyncio.to_thread(cli.main, ["import", str(path)]) == 1
    assert "does not verify, at the bundle" in capsys.readouterr().err


async def test_a_seats_bundle_holds_its_findings_to_the_rows_they_name(api: Api) -> None:
    """A redacted bundle cannot be replayed, but each finding names an act and a verdict
    its viewer sees whole: a finding whose rule or seat was edited, or a penalty whose
    finding was dropped, fails."""
    created = await api.client.post(
        "/games",
        json={"seats": [{"name": "a"}, {"name": "b"}], "rules": {"closed_discard": True},
              "seed": "findings", "dealer": 1},
        headers=OPERATOR,
    )  # fmt: skip
    assert created.status_code == 201, created.text
    body = created.json()
    seat_token = body["seats"][0]["token"]
    drawn = await api.client.post(
        f"/games/{body['game_id']}/commands",
        json={"type": "draw"},
        headers=bearer(body["seats"][1]["token"]),
    )  # seat 1 draws with a full hand (an extra card), and loses the deal
    assert drawn.status_code == 200, drawn.text
    raw = await api.client.get(f"/games/{body['game_id']}/bundle", headers=bearer(seat_token))
    assert raw.status_code == 200
    bundle = msgspec.json.decode(raw.content, type=Bundle)
    assert bundle.redacted and [f.rule for f in bundle.findings] == ["extra_card"]
    assert check_bundle(raw.content).ok

    def forged(**changes: object) -> bytes:
        findings = [msgspec.structs.replace(bundle.findings[0], **changes)]
        return msgspec.json.encode(msgspec.structs.replace(bundle, findings=findings))

    for edited in (forged(rule="out_of_turn_draw"), forged(seat=0)):
        report = check_bundle(edited)
        assert not report.ok and report.problems[0].where == "findings[0]", report.problems
    dropped = msgspec.json.encode(msgspec.structs.replace(bundle, findings=[]))
    report = check_bundle(dropped)
    assert not report.ok and report.problems[0].where == "findings"
    assert "has no finding" in report.problems[0].what


async def test_heads_and_receipts_kept_from_answers_find_a_record_cut_or_rewritten(
    api: Api, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record cut at its end, or rewritten with every hash recomputed, still verifies by
    itself (docs/fairness.md §4); what a seat or platform kept from the server's answers
    shows it: `bura verify-bundle --receipt VERSION:RECEIPT --head VERSION:HASH`."""
    table = await api.create()
    kept: list[Kept] = []
    for seat, command in THIRTY_ONE_GAME:
        answer = await api.play(table, seat, command)
        kept.append(Kept(answer["version"], receipt=answer["receipt"]))
    head = (await api.get(f"/games/{table.game_id}"))["chain_head"]
    last = kept[-1].version
    kept.append(Kept(last, hash=head))
    whole = await bundle_of(api, table.game_id)
    report = check_bundle(whole, kept)
    assert report.ok and report.kept == len(kept)
    path = tmp_path / "whole.bura.json"
    path.write_bytes(whole)
    capsys.readouterr()
    argv = ["verify-bundle", str(path), "--receipt", f"{last}:{kept[-2].receipt}"]
    assert cli.main([*argv, "--head", f"{last}:{head}"]) == 0
    assert "kept: 2 head(s) or receipt(s) given, each the bundle's" in capsys.readouterr().out

    tables = Tables(api.store)  # the end of the game removed, as a forger would
    # in the middle of the last act, the record alone shows it: the rules go on
    await tables.delete(table.game_id, last)
    halfway = check_bundle(make_bundle(table.game_id, await api.store.read(table.game_id)))
    assert not halfway.ok and "the rules go on with" in halfway.problems[0].what
    # named where the record stops: no row holds the version the rules go on with
    assert halfway.problems[0].where == f"the end, after events[{last - 2}] (version {last - 1})"
    # the whole last act removed: the record alone holds, and only what was kept shows it
    before = kept[-3].version  # kept[-2] is the last answer's receipt, kept[-1] the head
    for version in range(last - 1, before, -1):
        await tables.delete(table.game_id, version)
    # the server knows the game finished (its games index): it bundles no record cut short
    refused = await api.client.get(f"/games/{table.game_id}/bundle", headers=OPERATOR)
    assert refused.status_code == 500 and refused.json()["code"] == "record_broken"
    assert "rows were removed from its end" in refused.json()["detail"]
    # a forger writes the bundle of what is left himself
    cut = make_bundle(table.game_id, await api.store.read(table.game_id))
    assert check_bundle(cut).ok  # by itself, the shorter record holds
    report = check_bundle(cut, [kept[-1]])
    assert not report.ok
    [problem] = report.problems
    assert problem.where == f"kept head of version {last}"
    assert f"the bundle ends at version {before}" in problem.what
    path.write_bytes(cut)
    capsys.readouterr()
    assert cli.main(argv) == 1
    assert "rows were removed from its end" in capsys.readouterr().out

    # a seat's name rewritten in the first row, and every hash after it
    await tables.rewrite(table.game_id, "game_started", seats=["ann", "eve"])
    await tables.rechain(table.game_id)
    rewritten = make_bundle(table.game_id, await api.store.read(table.game_id))
    early = kept[0]
    assert check_bundle(rewritten).ok
    report = check_bundle(rewritten, [early])
    assert not report.ok and "changed after it was given" in report.problems[0].what


# The findings' fields of format bura-audit-bundle/1, in their order: every bundle ever
# written is spelled with them, so a verifier of today must read one of yesterday.
BUNDLE_1_FINDING = (
    "rule", "text", "deal", "seat", "due", "turn", "phase", "hand_sizes", "stock_count",
    "cards", "asked", "claim", "value", "needed", "pile", "hidden", "hand", "clock",
    "deadline", "at", "away_since", "before_version", "versions", "seen", "seen_carried",
)  # fmt: skip


async def test_a_bundle_spells_its_findings_as_format_1_while_the_audit_explains_more(
    api: Api,
) -> None:
    """The audit gains fields that explain a verdict (`compensation`, `judged_by`); the
    bundle's findings keep format 1's, so a bundle written before verifies as it did."""
    table = await api.create(rules={"open_seats": [0], "compensation": 5})
    for seat, command in THIRTY_ONE_GAME[:8]:
        await api.play(table, seat, command)
    await api.play(table, 0, {"type": "declare", "claim": "thirty_one"})  # false: 25 + 5
    [explained] = (await api.get(f"/games/{table.game_id}/audit"))["findings"]
    assert explained["compensation"] == 5 and explained["value"] == 30
    raw = await bundle_of(api, table.game_id)
    [recorded] = msgspec.json.decode(raw)["findings"]
    assert tuple(recorded) == BUNDLE_1_FINDING
    assert {k: v for k, v in explained.items() if k in BUNDLE_1_FINDING} == recorded
    assert check_bundle(raw).ok
