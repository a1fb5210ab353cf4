"""Two real replicas behind a real nginx that routes by game (k8s/routing/by-game.conf):
every request about a game, its commands, reads and stream, reaches the one replica its id
hashes to, so no command there waits for another replica's hint; the games still play to
their end and a seat's stream through the router has each version."""

from __future__ import annotations

import random

import httpx

from domain.bots import random_bot
from harness.router import by_game
from harness.sse import Stream
from tests.e2e.conftest import StartService, metric
from tests.e2e.play import Table


async def test_a_game_routed_by_its_id_is_played_on_one_replica(
    start_service: StartService, client: httpx.AsyncClient
) -> None:
    replicas = [await start_service(), await start_service()]
    upstreams = [service.url.removeprefix("http://") for service in replicas]
    with by_game(upstreams) as router:
        played_on: set[int] = set()
        for n in range(30):  # at least 4 games, until both replicas have had one
            if n >= 4 and played_on == {0, 1}:
                break
            table = await Table.create(client, router)  # on either replica (round robin)
            before = [await metric(client, r, "bura_commands_total") for r in replicas]
            async with Stream(client, table.stream_url(router), table.tokens[0]) as seat0:
                state = await table.play(client, router, random_bot, random.Random(n))
                assert state.finished
                await seat0.version(state.version)  # the last version, through nginx
                assert [m.id for m in seat0.views][-1] == state.version
            after = [await metric(client, r, "bura_commands_total") for r in replicas]
            moved = [a - b for a, b in zip(after, before, strict=True)]
            assert sorted(moved) == [0, len(table.acked)], moved  # all on one replica
            played_on.add(moved.index(len(table.acked)))
        for replica in replicas:  # none waited for a hint: no game's moves were elsewhere
            assert await metric(client, replica, "bura_hint_waits_total") == 0
        assert played_on == {0, 1}  # the games' ids spread over both
