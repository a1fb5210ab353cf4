"""Is a change cheaper? The working tree against a git revision, both loaded at once.

    python -m bench.ab [REV] [--games N] [--windows N] [--think S] [--env NAME=VALUE ...]
                       [--replicas N [--by-game]]

Two `bura serve` processes with production's settings, each on a scratch database and a
Redis server of its own (so that neither hears the other's hints): one runs REV (HEAD by
default, checked out in a temporary git worktree), the other the working tree, with
`--env` added to its environment only (to price a setting: `--env BURA_RATE_LIMITS=false`).
Each window drives the same number of bot games (bench/service.py's driver) at both at
the same time, and reads each server's CPU over the same seconds (/proc); a window's
figure is new over old, CPU per request. The figures are the windows' median and range.
With `--replicas N` each side is N replicas on its database and Redis, their CPU summed
(what replicas do for one another is priced), each seat keeping to one replica, or with
`--by-game` each game's commands going to the replica its id hashes to.

Why at the same time: this machine's speed moves by a fifth from minute to minute, and
windows taken in turn (bench/service.py, the interleaved way) carry that into every
ratio. Two servers measured over the same seconds meet the same machine: on a clean tree
(the same code both sides) eight windows at 8 games read 1.00, each within 0.96 to 1.05,
where windows in turn read 0.90 to 1.31. So a change of 4 % or more shows. Each server
has about half of what it would have alone, so the figures are ratios, never costs: the
costs are bench/service.py's.

Results go to bench/results/ab.json (or BENCH_RESULTS)."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench import PRODUCTION, database_url
from bench.__main__ import RESULTS
from bench.service import Target, bura_replicas, window
from harness.databases import fresh_database
from harness.processes import ROOT, RedisServer


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__.split("\n")[0])
    parser.add_argument("rev", nargs="?", default="HEAD", help="the revision to beat (HEAD)")
    parser.add_argument("--games", type=int, default=8, help="bot games at each server (8)")
    parser.add_argument("--windows", type=int, default=8, help="timed windows (8)")
    parser.add_argument(
        "--think", type=float, default=0.0, help="mean pause before each move, s (0: flat out)"
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="for the new side"
    )
    parser.add_argument("--replicas", type=int, default=1, help="replicas on each side (1)")
    parser.add_argument(
        "--by-game", action="store_true", help="each game's commands to one replica"
    )
    args = parser.parse_args(argv)
    malformed = [pair for pair in args.env if "=" not in pair]
    if malformed:
        parser.error(f"--env takes NAME=VALUE, not {malformed[0]!r}")
    extra = dict(pair.split("=", 1) for pair in args.env)
    if args.replicas < 1:
        parser.error("--replicas takes 1 or more")
    figures = run(
        args.rev, args.games, args.windows, args.think, extra, args.replicas, args.by_game
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "ab.json").write_text(json.dumps(figures, indent=2) + "\n")
    return 0


def run(
    rev: str = "HEAD",
    games: int = 8,
    windows: int = 8,
    think: float = 0.0,
    extra: dict[str, str] | None = None,
    replicas: int = 1,
    by_game: bool = False,
) -> dict[str, Any]:
    """Also `python -m bench ab`, with the defaults."""
    extra = extra or {}
    with ExitStack() as stack:
        old_root = stack.enter_context(worktree(rev))
        old = stack.enter_context(server(old_root, {}, replicas))
        new = stack.enter_context(server(ROOT, extra, replicas))
        rows = []
        for n in range(windows):
            # which side's games start first alternates
            if n % 2:
                f_new, f_old = asyncio.run(_both(new, old, games, think, by_game))
            else:
                f_old, f_new = asyncio.run(_both(old, new, games, think, by_game))
            ratio = f_new["cpu_ms"] / f_old["cpu_ms"]
            rows.append(
                {
                    "window": n,
                    "old_cpu_ms": round(f_old["cpu_ms"], 4),
                    "new_cpu_ms": round(f_new["cpu_ms"], 4),
                    "new/old": round(ratio, 3),
                    "old_per_s": f_old["per_second"],
                    "new_per_s": f_new["per_second"],
                    "client_cpu_share": _client_share(f_old, f_new),
                    "errors": f_old["errors"] + f_new["errors"],
                }
            )
            print(*(f"{k}={v}" for k, v in rows[-1].items()), flush=True)
    ratios = [r["new/old"] for r in rows]
    median = round(statistics.median(ratios), 3)
    print(f"new over old, CPU per request: {median} (windows {min(ratios)} to {max(ratios)})")
    return {
        "unit": "server CPU per request, the working tree over the revision, same windows",
        "rev": rev,
        "games": games,
        "think_s": think,
        "env": extra,
        "replicas": replicas,
        "by_game": by_game,
        "median": median,
        "low": min(ratios),
        "high": max(ratios),
        "table": rows,
    }


def _client_share(old: dict[str, Any], new: dict[str, Any]) -> float:
    """The generator's CPU over its own and both servers': each window's own share counts
    one server, though the one generator drives both."""
    share, servers = old["client_cpu_share"], old["server_cpu_s"]
    client = share * servers / (1 - share) if share < 1 else 0.0
    total = client + servers + new["server_cpu_s"]
    return round(client / total, 3) if total else 0.0


async def _both(
    a: Target, b: Target, games: int, think: float, by_game: bool
) -> list[dict[str, Any]]:
    return list(
        await asyncio.gather(
            window(a, games, think=think, by_game=by_game),
            window(b, games, think=think, by_game=by_game),
        )
    )


@contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """REV checked out (detached) in a temporary directory, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="bura-ab-") as home:
        path = Path(home) / "tree"
        git = ["git", "-C", str(ROOT)]
        subprocess.run([*git, "worktree", "add", "--detach", "-q", str(path), rev], check=True)
        try:
            yield path
        finally:
            subprocess.run([*git, "worktree", "remove", "--force", str(path)], check=False)


@contextmanager
def server(root: Path, extra: dict[str, str], replicas: int = 1) -> Iterator[Target]:
    """`replicas` of `bura serve` from `root`'s code, on a scratch database and a Redis of
    their own."""
    with fresh_database(database_url()) as scratch, tempfile.TemporaryDirectory() as home:
        redis = RedisServer(Path(home)).start()
        env = {**PRODUCTION, "BURA_DATABASE_URL": scratch, "BURA_REDIS_URL": redis.url, **extra}
        try:
            with bura_replicas(env, replicas, root) as target:
                yield target
        finally:
            redis.kill()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
