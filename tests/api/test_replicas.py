"""Work once per command: two app instances on the real PostgreSQL and Redis, as two
replicas. The replica that appends publishes the append; the other applies it to its copy
without reading the store, renders nothing unless a stream watches the game there, and
answers GET from its copy while it knows it current. A hint it missed is caught up from
the store, and no stream skips a version."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from domain.decide import decide
from domain.evolve import fold
from domain.state import Game
from infra.ports.hints import Hint
from infra.postgres.store import PostgresEventStore
from services.app import games
from services.app.codec import to_new
from services.app.games import HEARD_ONLY
from tests.api.conftest import OPERATOR, THIRTY_ONE_DECK, THIRTY_ONE_GAME, Table
from tests.api.replicas import Replica, two_replicas, until
from tests.infra.test_store_contract import rehashed


@pytest.fixture
async def replicas(database_url: str, redis_url: str) -> AsyncIterator[tuple[Replica, Replica]]:
    async with two_replicas(database_url, redis_url) as pair:
        yield pair


async def test_a_current_follower_takes_a_published_command_without_reading_the_store(
    replicas: tuple[Replica, Replica],
) -> None:
    one, two = replicas
    table = await one.api.create()
    before = await two.api.view(table)  # read once: now the follower's copy is current
    reads = two.counted.reads[table.game_id]
    for seat, command in THIRTY_ONE_GAME[:4]:
        answer = await one.api.play(table, seat, command)
        await until(
            lambda v=answer["version"]: two.api.service._cache[table.game_id].state.version == v
        )
    assert two.counted.reads[table.game_id] == reads  # four commands from the hints alone
    shown = await two.api.view(table)
    assert two.counted.reads[table.game_id] == reads  # and GET answered from the copy
    assert shown["version"] == answer["version"] > before["version"]
    assert shown == await one.api.view(table)
    two.api.service.gap()  # as if a hint had been missed: the store is read, same answer
    assert await two.api.view(table) == shown
    assert two.counted.reads[table.game_id] == reads + 1


async def test_a_copy_only_hints_move_is_let_go_and_read_once_when_it_is_used_again(
    replicas: tuple[Replica, Replica], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A game played on another replica (a router by game sends it there; the replica
    that created it, or read it once, keeps a copy otherwise): after HEARD_ONLY appends
    taken from hints with no use here, the copy is dropped rather than folded for nobody;
    asked again, it is read from the store once, and the answer is the other's."""
    one, two = replicas
    table = await one.api.create()
    await two.api.view(table)  # a copy here, current
    for seat, command in THIRTY_ONE_GAME[: HEARD_ONLY - 1]:
        answer = await one.api.play(table, seat, command)
        await until(
            lambda v=answer["version"]: two.api.service._cache[table.game_id].state.version == v
        )
    seat, command = THIRTY_ONE_GAME[HEARD_ONLY - 1]
    last = two.api.service._cache[table.game_id].state
    folded: list[Game] = []

    def folding(state: Game, events: Any) -> Game:
        folded.append(state)
        return fold(state, events)

    monkeypatch.setattr(games, "fold", folding)
    answer = await one.api.play(table, seat, command)
    await until(lambda: two.api.service._hinted.get(table.game_id) == answer["version"])
    assert table.game_id not in two.api.service._cache  # the eighth append let it go
    assert not any(state is last for state in folded)  # ...without folding it first
    reads = two.counted.reads[table.game_id]
    assert await two.api.view(table) == await one.api.view(table)
    assert two.counted.reads[table.game_id] == reads + 1  # read once, and current again
    assert two.api.service._cache[table.game_id].state.version == answer["version"]


async def test_a_game_played_on_one_replica_alone_sends_its_hints_with_the_turn(
    replicas: tuple[Replica, Replica], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a router sends each game to one replica, no other replica can get the next
    move before the answer is out: its hints wait for the end of the loop's turn and
    leave together (one wake-up of each listener for a turn's hints). Once another
    replica appends to the game (its seats are spread), the hints are urgent again,
    written ahead of the answer; and the other replica hears every one of them."""
    one, two = replicas
    sent: list[tuple[int, bool]] = []
    bus = one.api.service.hints
    publish = bus.publish

    async def spied(hint: Hint, urgent: bool = True) -> None:
        if hint.game_id == table.game_id:
            sent.append((hint.version, urgent))
        await publish(hint, urgent)

    monkeypatch.setattr(bus, "publish", spied)
    table = await one.api.create()
    for seat, command in THIRTY_ONE_GAME[:3]:
        await one.api.play(table, seat, command)
    assert sent and not any(urgent for _, urgent in sent), sent  # played here alone
    seat, command = THIRTY_ONE_GAME[3]
    answer = await two.api.play(table, seat, command)  # another replica appends
    await until(lambda: one.api.service._hinted.get(table.game_id) == answer["version"])
    sent.clear()
    seat, command = THIRTY_ONE_GAME[4]
    mine = await one.api.play(table, seat, command)
    assert sent == [(mine["version"], True)]  # seats spread: ahead of the answer
    await until(lambda: two.api.service._hinted.get(table.game_id) == mine["version"])
    assert await two.api.view(table) == await one.api.view(table)


async def test_a_copy_used_between_hints_is_kept_and_never_read_again(
    replicas: tuple[Replica, Replica],
) -> None:
    """The seats of a game on two replicas: each uses its copy between the other's
    appends, so the copy is kept however many it takes."""
    one, two = replicas
    table = await one.api.create()
    await two.api.view(table)
    reads = two.counted.reads[table.game_id]
    for n, (seat, command) in enumerate(THIRTY_ONE_GAME[: 2 * HEARD_ONLY]):
        answer = await one.api.play(table, seat, command)
        await until(
            lambda v=answer["version"]: two.api.service._cache[table.game_id].state.version == v
        )
        if n % (HEARD_ONLY - 1) == HEARD_ONLY - 2:
            await two.api.view(table)  # a use here, from the copy
    assert two.counted.reads[table.game_id] == reads  # never dropped, never read again


async def test_a_replica_that_hears_of_a_new_game_without_a_clock_reads_nothing_of_it(
    replicas: tuple[Replica, Replica],
) -> None:
    """Every replica hears of every new game. The hint of its start says whether the table
    has a clock: without one, no timer is ever needed there, so the game is not read (nor
    its events decoded into a copy) until somebody asks that replica for it."""
    one, two = replicas
    plain = await one.api.create()
    clocked = await one.api.create(rules={"turn_seconds": 60})
    timers = two.api.runtime.timers
    # the timers hear the hints in order: by the clocked game's timer, the plain one's hint
    await until(lambda: clocked.game_id in timers.tasks)
    await until(lambda: two.counted.reads[clocked.game_id] >= 1)  # a timer reads its game
    assert plain.game_id in timers._settled
    assert plain.game_id not in timers.tasks
    assert two.counted.reads[plain.game_id] == 0
    assert plain.game_id not in two.api.service._cache
    assert (await two.api.view(plain))["version"] == plain.version  # asked: read once
    assert two.counted.reads[plain.game_id] == 1


async def test_a_replica_with_no_stream_on_a_game_renders_no_view(
    replicas: tuple[Replica, Replica],
) -> None:
    one, two = replicas
    table = await one.api.create()
    await two.api.view(table)
    for seat, command in THIRTY_ONE_GAME[:6]:
        answer = await one.api.play(table, seat, command)
    await until(lambda: two.api.service._cache[table.game_id].state.version == answer["version"])
    for replica in (one, two):
        assert replica.api.runtime.projector.renders == 0
        assert table.game_id not in replica.api.runtime.projector.feeds


async def test_a_missed_hint_is_caught_up_from_the_store_and_no_version_is_skipped(
    replicas: tuple[Replica, Replica],
) -> None:
    one, two = replicas
    table = await one.api.create()
    projector = two.api.runtime.projector
    stream = projector.stream(table.game_id, 0, None)
    versions: list[int] = []

    async def watch() -> None:
        async for chunk in stream:
            if chunk.startswith(b"id: "):
                versions.append(int(chunk.split(b"\n", 1)[0][4:]))

    watching = asyncio.create_task(watch())
    await until(lambda: versions == [table.version])
    steps = iter(THIRTY_ONE_GAME)
    for seat, command in [next(steps), next(steps)]:
        answer = await one.api.play(table, seat, command)
    await until(lambda: versions[-1] == answer["version"])

    # An append nobody hears of (its hint lost): the next hint does not follow the copy's
    # version, so the follower reads the store, for its copy and its stream.
    service = one.api.service
    state = await service.load(table.game_id)
    seat, command = next(steps)
    missed = decide(state, command_of(command), seat, service.now())
    await one.counted.store.append(table.game_id, state.version, [to_new(e) for e in missed])
    one.api.service.gap()  # the appender's own copy is read again too
    seat, command = next(steps)
    answer = await one.api.play(table, seat, command)
    await until(lambda: versions[-1] == answer["version"])
    assert versions == list(range(table.version, answer["version"] + 1))
    assert (await two.api.view(table))["version"] == answer["version"]
    watching.cancel()
    await asyncio.gather(watching, return_exceptions=True)


async def unheard(replica: Replica, table: Table, seat: int, command: dict[str, Any]) -> list[Any]:
    """The command appended straight to the store, with no hint: the events it recorded."""
    service = replica.api.service
    state = await service.load(table.game_id)
    events = decide(state, command_of(command), seat, service.now())
    await replica.counted.store.append(table.game_id, state.version, [to_new(e) for e in events])
    return events


def command_of(body: dict[str, Any]) -> Any:
    import msgspec

    from domain.commands import PlayerCommand

    return msgspec.convert(body, PlayerCommand)


async def test_each_version_is_rendered_once_per_viewer_watching(
    replicas: tuple[Replica, Replica],
) -> None:
    """Two spectators and a seat watch on one replica: two renders a version, not three."""
    one, two = replicas
    table = await one.api.create()
    projector = two.api.runtime.projector
    seen: dict[int, list[int]] = {0: [], 1: [], 2: []}

    async def watch(n: int, viewer: int | str) -> None:
        async for chunk in projector.stream(table.game_id, viewer, None):  # type: ignore[arg-type]
            if chunk.startswith(b"id: "):
                seen[n].append(int(chunk.split(b"\n", 1)[0][4:]))

    tasks = [
        asyncio.create_task(watch(n, viewer))
        for n, viewer in enumerate(["spectator", "spectator", 0])
    ]
    await until(lambda: all(versions == [table.version] for versions in seen.values()))
    first = projector.renders
    assert first == 3  # each stream's first message is its own (the clock as of now)
    for seat, command in THIRTY_ONE_GAME[:4]:
        answer = await one.api.play(table, seat, command)
    await until(lambda: all(v and v[-1] == answer["version"] for v in seen.values()))
    later = answer["version"] - table.version
    assert all(v == list(range(table.version, answer["version"] + 1)) for v in seen.values())
    assert projector.renders - first == 2 * later
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_copy_trusted_as_current_but_behind_is_read_again_before_judging(
    replicas: tuple[Replica, Replica],
) -> None:
    """A hint may come late (or never): a command judged on a copy that the store has
    moved past is judged again on what the store holds, never refused on the old table
    nor retried on it until the game is `busy`."""
    one, two = replicas
    table = await one.api.create()
    await two.api.view(table)  # two's copy, followed from the hints from now on
    steps = iter(THIRTY_ONE_GAME)
    for seat, command in [next(steps), next(steps)]:
        answer = await one.api.play(table, seat, command)
    await until(lambda: two.api.service.known(table.game_id) == answer["version"])

    # An append whose hint the follower never hears: its copy still looks current.
    missed = await unheard(one, table, *next(steps))
    assert two.api.service.known(table.game_id) == answer["version"]

    seat, command = next(steps)
    played = await two.api.play(table, seat, command)
    assert played["version"] > answer["version"] + len(missed), played


async def test_a_watched_follower_takes_a_command_of_several_events_from_its_hint(
    replicas: tuple[Replica, Replica],
) -> None:
    """The hint carries every version's chain hash, so a stream on the follower moves one
    version at a time with no store read, even when one command appends several events."""
    one, two = replicas
    table = await one.api.create()
    projector = two.api.runtime.projector
    heads: dict[int, str] = {}

    async def watch() -> None:
        async for chunk in projector.stream(table.game_id, "spectator", None):
            if chunk.startswith(b"id: "):
                head, data = chunk.split(b"\n", 1)
                message = msgspec.json.decode(data.split(b"data: ", 1)[1].split(b"\n", 1)[0])
                heads[int(head[4:])] = message["view"]["receipt"]

    watching = asyncio.create_task(watch())
    await until(lambda: table.version in heads)
    reads = two.counted.reads[table.game_id]
    version = table.version
    jumps = []
    for seat, command in THIRTY_ONE_GAME[:6]:
        answer = await one.api.play(table, seat, command)
        jumps.append(answer["version"] - version)
        version = answer["version"]
    await until(lambda: version in heads)
    assert max(jumps) > 1  # some command appended several events
    assert sorted(heads) == list(range(table.version, version + 1))
    assert two.counted.reads[table.game_id] == reads  # all of it from the hints
    # each version sealed with its own chain hash: the receipts differ, none is missing
    assert None not in heads.values() and len(set(heads.values())) == len(heads)
    # and with the right one: a stream opened now from the store gives the same receipts
    again: dict[int, str] = {}
    async for chunk in one.api.runtime.projector.stream(table.game_id, "spectator", table.version):
        if chunk.startswith(b"id: "):
            head, data = chunk.split(b"\n", 1)
            message = msgspec.json.decode(data.split(b"data: ", 1)[1].split(b"\n", 1)[0])
            again[int(head[4:])] = message["view"]["receipt"]
            if int(head[4:]) == version:
                break
    assert {v: again[v] for v in again if v > table.version} == {
        v: heads[v] for v in heads if v > table.version
    }
    watching.cancel()
    await asyncio.gather(watching, return_exceptions=True)


@pytest.mark.parametrize("told_by", ["hint", "seen"])
async def test_a_command_on_a_copy_known_behind_is_judged_after_reading_the_store(
    replicas: tuple[Replica, Replica], told_by: str
) -> None:
    """A hint heard without its append, or a command whose `seen` is past the copy: the
    copy is read again before the command is judged, not raced against the store."""
    one, two = replicas
    table = await one.api.create()
    await two.api.view(table)  # two's copy: current at the table's first version
    service = one.api.service
    state = await service.load(table.game_id)
    missed = []
    for seat, command in THIRTY_ONE_GAME[:2]:  # the first trick, behind two's back
        events = decide(state, command_of(command), seat, service.now())
        missed += events
        state = fold(state, events)
    written = await one.counted.store.append(
        table.game_id, table.version, [to_new(e) for e in missed]
    )
    # a draw: on the copy two has (nothing led yet) it is a penalty, not a refusal
    seat, body = THIRTY_ONE_GAME[2][0], dict(THIRTY_ONE_GAME[2][1])
    if told_by == "hint":  # the hint arrives, without the append: the copy stays behind
        await one.api.adapters.hints.publish(Hint(table.game_id, written.last_version))
        await until(lambda: two.api.service._hinted.get(table.game_id, 0) == written.last_version)
    else:
        body["seen"] = written.last_version
    conflicts = two.api.service.metrics.conflicts._value.get()
    reads = two.counted.reads[table.game_id]
    answer = await two.api.play(table, seat, body)
    assert answer["version"] > written.last_version
    assert not any(e["event"]["type"] == "penalty_applied" for e in answer["events"])
    assert two.api.service.metrics.conflicts._value.get() == conflicts  # no append lost
    assert two.counted.reads[table.game_id] == reads + 1  # one read, before judging


async def test_a_command_that_beats_its_hint_waits_for_it_instead_of_reading_the_store(
    replicas: tuple[Replica, Replica],
) -> None:
    """The replica that appended answers its seat before its hint reaches the other
    replica, so the other seat's next command, carrying `seen`, may get there first: it
    waits for the hint (a few milliseconds at most) and is judged on the copy the hint
    brings, with no store read; a hint that never comes leaves it to the store."""
    one, two = replicas
    table = await one.api.create()
    await two.api.view(table)  # two's copy: current at the table's first version
    bus = one.api.adapters.hints
    held: list[Hint] = []

    async def hold(hint: Hint, urgent: bool = True) -> None:
        held.append(hint)

    bus.publish = hold  # type: ignore[method-assign]
    try:
        (seat, first), (then, body) = THIRTY_ONE_GAME[0], THIRTY_ONE_GAME[1]
        answer = await one.api.play(table, seat, first)
    finally:
        del bus.publish  # type: ignore[method-assign]
    assert [h.version for h in held] == [answer["version"]]
    reads = two.counted.reads[table.game_id]
    conflicts = two.api.service.metrics.conflicts._value.get()
    arrivals = two.api.service.arrivals
    arrivals.seconds = 10.0  # long enough for this test to be the one sending the hint
    waits = two.api.service.metrics.hint_wait
    heard = waits("heard")._value.get()
    playing = asyncio.create_task(two.api.play(table, then, {**body, "seen": answer["version"]}))
    await until(lambda: table.game_id in arrivals._waiting, timeout=2.0)
    await bus.publish(held[0])  # the hint, late
    played = await playing
    assert played["version"] > answer["version"]
    assert waits("heard")._value.get() == heard + 1
    assert two.counted.reads[table.game_id] == reads  # judged on the hint's copy
    assert two.api.service.metrics.conflicts._value.get() == conflicts  # and on time
    assert not arrivals._waiting

    # a hint that never comes: the wait runs out and the store is read, as without it
    arrivals.seconds = 0.05
    seat, body = THIRTY_ONE_GAME[2]
    missed = waits("missed")._value.get()
    state = await two.api.service.load(table.game_id)  # current: no read
    events = decide(state, command_of(body), seat, two.api.service.now())
    written = await one.counted.store.append(
        table.game_id, state.version, [to_new(e) for e in events]
    )
    seat, body = THIRTY_ONE_GAME[3]
    later = await two.api.play(table, seat, {**body, "seen": written.last_version})
    assert later["version"] > written.last_version
    assert waits("missed")._value.get() == missed + 1
    assert two.counted.reads[table.game_id] == reads + 1


async def test_a_follower_that_took_the_hint_appends_its_next_command_as_one_insert(
    replicas: tuple[Replica, Replica], statements: list[str]
) -> None:
    """The hint told it the head's hash: its store chains onto it without asking the
    database (the function's path reads the head and links the rows in SQL)."""
    one, two = replicas
    table = await one.api.create()
    await two.api.view(table)  # the follower's copy, current
    for at, (seat, command) in enumerate(THIRTY_ONE_GAME[:4]):
        writer, follower = (one, two) if at % 2 == 0 else (two, one)
        await until(
            lambda f=follower, w=writer: (
                f.api.service._cache[table.game_id].state.version
                == w.api.service._cache[table.game_id].state.version
            )
        )
        statements.clear()
        await writer.api.play(table, seat, command)
        assert statements and "function" not in statements, (at, statements)
    store = one.counted.store
    assert isinstance(store, PostgresEventStore)
    rows = await store.read(table.game_id)
    assert [r.hash for r in rows] == rehashed(rows)


async def test_an_events_page_is_never_older_than_the_last_event_it_lists(
    replicas: tuple[Replica, Replica],
) -> None:
    """A page read from the store on a replica whose copy is behind (its hint not heard
    yet) lists the newer rows; its `version` is theirs, so a client that polls with
    `after=version` never reads them twice (it was the copy's older version)."""
    one, two = replicas
    table = await one.api.create()
    await two.api.view(table)
    steps = iter(THIRTY_ONE_GAME)
    seat, command = next(steps)
    answer = await one.api.play(table, seat, command)
    await until(lambda: two.api.service.known(table.game_id) == answer["version"])

    missed = await unheard(one, table, *next(steps))
    assert two.api.service.known(table.game_id) == answer["version"]

    page = await two.api.get(f"/games/{table.game_id}/events", after=0)

    listed = [e["version"] for e in page["events"]]
    assert listed[-1] == answer["version"] + len(missed)
    assert page["version"] == listed[-1]


async def test_a_read_with_seen_is_never_older_than_the_callers_last_answer(
    replicas: tuple[Replica, Replica],
) -> None:
    """Behind a load balancer the command's answer may come from one replica and the next
    read from another that has not heard of it yet. `?seen=` (the version the caller got)
    makes that replica read the store rather than show the table before the command."""
    one, two = replicas
    table = await one.api.create()
    await two.api.view(table)  # the follower's copy, current as far as it knows
    seat, command = THIRTY_ONE_GAME[0]
    await unheard(one, table, seat, command)  # its hint still on its way, for ever
    answered = table.version + 1
    path = f"/games/{table.game_id}"
    stale = await two.api.client.get(path, headers=table.seat(0))
    assert stale.json()["version"] == table.version  # what a read without seen may show
    reads = two.counted.reads[table.game_id]
    fresh = await two.api.client.get(path, params={"seen": answered}, headers=table.seat(0))
    assert fresh.status_code == 200 and fresh.json()["version"] == answered
    assert fresh.json()["turn"] == 1 and stale.json()["turn"] == 0  # the lead is made
    assert two.counted.reads[table.game_id] == reads + 1
    again = await two.api.client.get(path, params={"seen": answered}, headers=table.seat(0))
    assert again.json()["version"] == answered
    assert two.counted.reads[table.game_id] == reads + 1  # current now: no read
    ahead = await two.api.client.get(path, params={"seen": 10**6}, headers=table.seat(0))
    assert ahead.status_code == 200 and ahead.json()["version"] == answered
    bad = await two.api.client.get(path, params={"seen": -1}, headers=table.seat(0))
    assert bad.status_code == 400 and bad.json()["errors"][0]["key"] == "seen"


async def test_a_stream_resuming_later_is_given_the_clock_as_of_now(
    replicas: tuple[Replica, Replica],
) -> None:
    """The latest message is shared by the streams that want it at once, not by one that
    resumes seconds later: its `now` and the seat's `time_left` are those of the moment
    it is sent, so a client counting down from `time_left` counts the time truly left."""
    one, two = replicas
    clock = [1_800_000_000_000]
    for replica in replicas:
        replica.api.service.now = lambda: clock[0]
    table = await one.api.create(rules={"turn_seconds": 60})
    projector = two.api.runtime.projector
    got: dict[int, dict[str, Any]] = {}

    async def watch(after: int | None) -> None:
        async for chunk in projector.stream(table.game_id, "spectator", after):
            if chunk.startswith(b"id: "):
                data = chunk.split(b"\ndata: ", 1)[1].split(b"\n", 1)[0]
                got[int(chunk.split(b"\n", 1)[0][4:])] = msgspec.json.decode(data)

    live = asyncio.create_task(watch(None))  # a stream open as the move comes
    await until(lambda: table.version in got)
    seat, command = THIRTY_ONE_GAME[0]
    version = (await one.api.play(table, seat, command))["version"]
    await until(lambda: version in got)
    first = got.pop(version)
    assert first["latest"] and first["view"]["now"] == clock[0]
    clock[0] += 8_000  # a client gone for 8 s resumes from the version before
    resumed = asyncio.create_task(watch(version - 1))
    await until(lambda: version in got)
    again = got[version]
    assert again["latest"] and again["view"]["now"] == clock[0]
    due = next(s for s in again["view"]["seats"] if s["time_left"] is not None)
    before = next(s for s in first["view"]["seats"] if s["seat"] == due["seat"])
    assert due["time_left"] == before["time_left"] - 8_000
    for task in (live, resumed):
        task.cancel()
    await asyncio.gather(live, resumed, return_exceptions=True)


async def test_a_game_that_ends_while_another_replica_reads_it_is_never_called_cut_short(
    replicas: tuple[Replica, Replica],
) -> None:
    """The games index is marked finished after the game's end commits. A replica that
    read the rows just before that commit and the index just after saw "finished, but the
    record has no end" and answered 500 record_broken (verify: ok false) of a sound game."""
    one, two = replicas
    table = await one.api.create(deck=THIRTY_ONE_DECK, dealer=1)
    for seat, command in THIRTY_ONE_GAME[:-1]:
        await one.api.play(table, seat, command)
    closer, last = THIRTY_ONE_GAME[-1]

    async def ended() -> None:
        await one.api.play(table, closer, last)

    # a cold load on the other replica (nothing cached there yet)
    two.api.service._cache.pop(table.game_id, None)
    two.counted.then[table.game_id] = ended
    shown = await two.api.view(table)
    assert shown["status"] == "finished", shown  # the end read on, once the index said so
    assert not two.counted.then

    # the arbiter's reads of the whole record, on a game the replica has cached
    for path in ("verify", "bundle", "audit"):
        table = await one.api.create(deck=THIRTY_ONE_DECK, dealer=1)
        for seat, command in THIRTY_ONE_GAME[:-1]:
            await one.api.play(table, seat, command)
        await two.api.view(table)
        two.counted.then[table.game_id] = ended
        answer = await two.api.client.get(f"/games/{table.game_id}/{path}", headers=OPERATOR)
        assert answer.status_code == 200, (path, answer.text)
        assert not two.counted.then
        if path == "verify":
            assert answer.json()["ok"] is True, answer.json()
        assert (await two.api.view(table))["status"] == "finished"
