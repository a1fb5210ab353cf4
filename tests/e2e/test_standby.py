"""BURA_READ_DATABASE_URL on a real `bura serve`, a real primary and a real hot standby:
replays, histories, audits, verifications and bundles read the record on the standby,
and a standby held behind the primary changes no answer (what it lacks comes from the
primary). The command path never reads it: play goes on while it is held."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import httpx

from domain.bots import greedy_bot
from harness.postgres import PostgresServer
from harness.processes import OPERATOR, ROOT
from tests.e2e.conftest import StartService, metric
from tests.e2e.play import Table


async def reads(client: httpx.AsyncClient, base: str, table: Table) -> dict[str, object]:
    """What an arbiter reads of the game: every route that reads the whole record."""
    game = f"{base}/games/{table.game_id}"
    seen: dict[str, object] = {}
    for path in ("replay", "replay?version=7", "events?after=0", "audit", "verify"):
        answer = await client.get(f"{game}/{path}", headers=OPERATOR)
        assert answer.status_code == 200, f"{path}: {answer.text}"
        seen[path] = answer.json()
    bundle = await client.get(f"{game}/bundle", headers=OPERATOR)
    assert bundle.status_code == 200, bundle.text
    seen["bundle"] = bundle.content
    return seen


def exported(game_id: str, out: Path, primary: PostgresServer, standby: PostgresServer) -> bytes:
    """`bura export --jsonl` with the standby set, as an operator runs it."""
    env = {**os.environ, "BURA_DATABASE_URL": primary.url, "BURA_READ_DATABASE_URL": standby.url}
    argv = [sys.executable, "-m", "services.cli", "export", game_id, "--jsonl", "--out", str(out)]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


async def test_the_record_is_read_on_the_standby_and_a_standby_held_behind_changes_nothing(
    start_service: StartService,
    postgres_pair: tuple[PostgresServer, PostgresServer],
    tmp_path: Path,
) -> None:
    primary, standby = postgres_pair
    service = await start_service(BURA_DATABASE_URL=primary.url, BURA_READ_DATABASE_URL=standby.url)
    chance = random.Random(11)
    async with httpx.AsyncClient(timeout=30) as client:
        # a seeded deal: an unseeded one can end within its first moves (a bura shown),
        # and then the standby, held after them, would lack nothing
        table = await Table.create(client, service.url, seed="standby-1")
        held_at = (await table.play(client, service.url, greedy_bot, chance, moves=12)).version
        await standby.caught_up(primary)
        await standby.replay(False)
        try:
            # the game goes on, to its end, with the standby held at the 13th move's table
            finished = await table.play(client, service.url, greedy_bot, chance)
            held = await reads(client, service.url, table)
            held_export = exported(table.game_id, tmp_path / "held.jsonl", primary, standby)
        finally:
            await standby.replay(True)
        await standby.caught_up(primary)
        caught_up = await reads(client, service.url, table)
        export = exported(table.game_id, tmp_path / "caught-up.jsonl", primary, standby)
        from_standby = await metric(client, service, 'bura_record_rows{source="standby"}')
        from_primary = await metric(client, service, 'bura_record_rows{source="primary"}')
        standby_errors = await metric(client, service, "bura_standby_errors")

    assert finished.finished and finished.version > held_at  # a tail the standby lacked
    assert held == caught_up  # the held standby's answers were the primary's, every one
    audit = held["audit"]
    assert isinstance(audit, dict) and audit["version"] == finished.version
    events = held["events?after=0"]
    assert isinstance(events, dict) and len(events["events"]) == finished.version
    assert held_export == export and len(export.splitlines()) == finished.version
    assert from_standby > 0
    assert from_primary > 0  # the held tail
    assert standby_errors == 0
