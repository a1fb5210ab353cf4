"""Server-Sent Events parsed from a stream's lines, as the SSE specification reads them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from bura_client.models import StreamMessage


def messages(lines: Iterable[str]) -> Iterator[StreamMessage]:
    event: str = "message"
    ident: int | None = None
    data: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if line == "":
            if data:
                text = "\n".join(data)
                try:
                    parsed = json.loads(text)
                except ValueError:
                    parsed = {"text": text}
                yield StreamMessage(event, ident, parsed if isinstance(parsed, dict) else {})
            event, ident, data = "message", None, []
            continue
        if line.startswith(":"):
            continue  # a keep-alive comment
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id" and value.isdigit():
            ident = int(value)
