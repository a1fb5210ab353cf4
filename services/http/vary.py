"""`Vary: Origin` on every answer of a server that allows some origins (CORS): whether an
answer carries `Access-Control-Allow-Origin` depends on the request's `Origin`, so a cache
must key on it even for the answers to requests that sent none, or to an origin refused.
The CORS middleware says it only on the answers it lets through."""

from __future__ import annotations

from litestar.types import Message, Send


def varying_by_origin(send: Send) -> Send:
    """`send` with `Origin` named in the answer's `Vary` (added to one already there)."""

    async def send_varying(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": with_origin(list(message.get("headers", ())))}
        await send(message)

    return send_varying


def with_origin(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    for i, (name, value) in enumerate(headers):
        if name.lower() == b"vary":
            named = {v.strip().lower() for v in value.split(b",")}
            if b"origin" in named or b"*" in named:
                return headers
            headers[i] = (name, value + b", Origin")
            return headers
    return [*headers, (b"vary", b"Origin")]
