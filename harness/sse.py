"""A Server-Sent Events client for tests: reads a stream in the background, parses each
message (id, event, data) and keeps them, with the time each one arrived."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class Message:
    event: str
    id: int | None  # a game version; None when the message has none or it is no number
    data: Any  # the decoded JSON, or the raw text when it is not JSON
    raw: str
    at: float = field(default_factory=time.perf_counter)
    key: str | None = None  # the id as sent (the operator feed's checkpoints)


class Stream:
    """One SSE connection. `messages` grows as they come; `closed` is set when the server
    ends the stream or the connection breaks (`error` says how)."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        token: str,
        last_id: int | str | None = None,
        decode: bool = True,
    ) -> None:
        self.client = client
        self.decode = decode  # False: keep `data` as text (cheaper, for benchmarks)
        self.url = url
        self.headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
        if last_id is not None:
            self.headers["Last-Event-ID"] = str(last_id)
        self.messages: list[Message] = []
        self.comments = 0
        self.status: int | None = None
        self.error: BaseException | None = None
        self.closed = asyncio.Event()
        self._arrived = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Stream:
        self._task = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Hang up (the client side of a disconnect)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @property
    def views(self) -> list[Message]:
        return [m for m in self.messages if m.event == "view"]

    @property
    def last_id(self) -> int | None:
        ids = [m.id for m in self.messages if m.id is not None]
        return ids[-1] if ids else None

    @property
    def last_key(self) -> str | None:
        """The last id as sent, whatever it is (a checkpoint of the operator feed)."""
        keys = [m.key for m in self.messages if m.key is not None]
        return keys[-1] if keys else None

    async def wait_for(self, test: Any, timeout: float = 10.0) -> Message:
        """The first message (already here or to come) for which test(message) is true."""
        seen = 0
        async with asyncio.timeout(timeout):
            while True:
                for message in self.messages[seen:]:
                    if test(message):
                        return message
                seen = len(self.messages)
                if self.closed.is_set():
                    raise AssertionError(f"stream closed ({self.error!r}) before the message")
                self._arrived.clear()
                await self._arrived.wait()

    async def version(self, version: int, timeout: float = 10.0) -> Message:
        return await self.wait_for(lambda m: m.id is not None and m.id >= version, timeout)

    async def event(self, name: str, timeout: float = 10.0) -> Message:
        return await self.wait_for(lambda m: m.event == name, timeout)

    async def _read(self) -> None:
        try:
            timeout = httpx.Timeout(5.0, read=None)
            async with self.client.stream(
                "GET", self.url, headers=self.headers, timeout=timeout
            ) as response:
                self.status = response.status_code
                if response.status_code != 200:
                    await response.aread()
                    self.error = RuntimeError(f"{response.status_code}: {response.text}")
                    return
                await self._parse(response)
        except (httpx.TransportError, httpx.StreamError) as error:
            self.error = error
        finally:
            self.closed.set()
            self._arrived.set()

    async def _parse(self, response: httpx.Response) -> None:
        fields: dict[str, str] = {}
        lines: list[str] = []
        async for line in _lines(response):
            if line == "":
                if fields:
                    self._dispatch(fields, "\n".join(lines))
                fields, lines = {}, []
                continue
            lines.append(line)
            if line.startswith(":"):
                self.comments += 1
                self._arrived.set()
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data" and name in fields:
                value = fields[name] + "\n" + value
            fields[name] = value

    def _dispatch(self, fields: dict[str, str], raw: str) -> None:
        text = fields.get("data", "")
        data: Any = text
        if self.decode:
            with contextlib.suppress(ValueError):
                data = json.loads(text)
        ident = fields.get("id")
        number = int(ident) if ident is not None and ident.isdigit() else None
        self.messages.append(Message(fields.get("event", "message"), number, data, raw, key=ident))
        self._arrived.set()


async def _lines(response: httpx.Response) -> AsyncIterator[str]:
    """Lines as SSE defines them (ended by LF or CRLF), not as str.splitlines() does."""
    pending = b""
    async for chunk in response.aiter_bytes():
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line.removesuffix(b"\r").decode()
