"""How much longer the work of one request may take: set once where the request enters,
read by every store call it makes, so that waiting for a connection, a lock or an answer
never outlasts the request (a stalled database answers 503 in time, and queues of waiting
requests drain instead of growing).

A context variable, so the bound follows the request through every await without being
passed down each call, and into every task the request starts (asyncio copies the context).
Work with no deadline set (the command line, background feeds) uses the adapter's own
default bound; work a request starts that outlives it (a clock's timer, a seeding's, a
snapshot's save) is started `detached`, so that its reads do not all fail once the request's
few seconds have passed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine, Iterable, Iterator
from contextlib import contextmanager
from contextvars import Context, ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_deadline: ContextVar[float | None] = ContextVar("bura_deadline", default=None)


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Bound the work done in this context to `seconds` from now (never beyond a deadline
    already set around it)."""
    at = time.monotonic() + seconds
    outer = _deadline.get()
    token = _deadline.set(at if outer is None else min(at, outer))
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining(default: float) -> float:
    """Seconds left before the deadline (0 once it has passed), or `default` when no
    deadline is set."""
    at = _deadline.get()
    if at is None:
        return default
    return max(0.0, at - time.monotonic())


def bounded() -> bool:
    return _deadline.get() is not None


def detached(work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """`work` as a task of its own, outside whatever request is running: no deadline
    follows it from there (nor the request's id into its log lines)."""
    return asyncio.create_task(work, context=Context())


# what stopping waits for cancelled background work to end: a query cut off on a stalled
# database waits for the server to hear the cancel, which a stalled server never does
STOP_SECONDS = 1.0


async def cancelled(tasks: Iterable[asyncio.Task[Any]], within: float = STOP_SECONDS) -> None:
    """Cancel background `tasks` and wait for them `within` seconds at most, all together:
    what is still waiting on a stalled database by then ends when its pool is closed."""
    every = list(tasks)
    waiting = [task for task in every if not task.done()]
    for task in waiting:
        task.cancel()
    if waiting:
        await asyncio.wait(waiting, timeout=within)
    for task in every:  # what ended with an error is logged by its own code, not here
        if task.done() and not task.cancelled():
            task.exception()
