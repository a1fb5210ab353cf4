"""CPU time of processes, from /proc: what a server spent on a timed window, read from
outside it (its own counters would cost it CPU and need an endpoint)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

_TICK = os.sysconf("SC_CLK_TCK")


def seconds(pid: int) -> float:
    """User + system CPU seconds the process (all its threads) has used so far."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        # the command name may hold spaces: the fields after it follow its closing ')'
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14 and 15)


def thread_seconds(pid: int) -> float:
    """CPU seconds of a single-threaded process (a PostgreSQL backend) to the nanosecond:
    the time the scheduler ran its main thread (/proc/PID/schedstat), where `seconds`
    counts clock ticks (10 ms each): over a window of a few hundred ms the ticks alone are
    several per cent either way. Falls back to `seconds` where schedstat is missing."""
    try:
        with open(f"/proc/{pid}/schedstat", encoding="ascii") as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return seconds(pid)


def database_seconds() -> float | None:
    """CPU seconds of every PostgreSQL process on this machine (the postmaster, each
    backend, the WAL writer and the rest), or None when none can be seen (a server on
    another host). Backends come and go: one that ended within a window takes its time
    with it, so this reads low, never high."""
    total, seen = 0.0, False
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm", encoding="ascii") as f:
                if f.read().strip() != "postgres":
                    continue
            total += thread_seconds(int(entry))
            seen = True
        except (OSError, ValueError):
            continue
    return total if seen else None


class Meter:
    """CPU of some server processes and of this process (the load generator) over a window,
    and of the database's processes when they run on this machine."""

    def __init__(self, pids: Iterable[int]) -> None:
        self.pids = list(pids)
        self.servers = 0.0  # CPU seconds, summed over the servers
        self.client = 0.0  # CPU seconds of this process
        self.database: float | None = None  # CPU seconds of PostgreSQL, if local
        self.wall = 0.0

    def __enter__(self) -> Meter:
        self._servers = sum(seconds(p) for p in self.pids)
        self._client = time.process_time()
        self._database = database_seconds()
        self._wall = time.perf_counter()
        return self

    def __exit__(self, *_: object) -> None:
        self.servers = sum(seconds(p) for p in self.pids) - self._servers
        self.client = time.process_time() - self._client
        after = database_seconds()
        if after is not None and self._database is not None:
            self.database = after - self._database
        self.wall = time.perf_counter() - self._wall

    def client_share(self) -> float:
        """The generator's CPU over the servers' and its own: near 0.5 on two cores it is
        as busy as the servers, and may be what limits them."""
        total = self.servers + self.client
        return round(self.client / total, 3) if total else 0.0
