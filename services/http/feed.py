"""/events: the operator's feed of every game's events, in the store's global order, as
Server-Sent Events or NDJSON, resumable from a checkpoint."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

import msgspec
from litestar import Controller, Request, get
from litestar.di import NamedDependency
from litestar.exceptions import ServiceUnavailableException
from litestar.openapi import ResponseSpec
from litestar.params import HeaderParameter, QueryParameter
from litestar.response import Stream

from infra.ports.events import START, Checkpoint, checkpoint_text, parse_checkpoint
from services.app.callers import Caller
from services.app.errors import BadCheckpoint
from services.app.feed import FeedEntry, entry
from services.http.problems import responses
from services.http.schemas import invalid
from services.live.sse import KEEPALIVE, SHUTDOWN
from services.live.timeline import Timeline
from services.wording import worded

_encode = msgspec.json.Encoder().encode
Format = Literal["sse", "ndjson"]
# A checkpoint as an entry carries it (infra.ports.events.parse_checkpoint reads it).
CHECKPOINT_PATTERN = worded(
    r"^ *[0-9]{1,19}:[0-9]{1,19} *$",
    "a checkpoint as an entry carries it, `<transaction>:<position>` in digits (`0:0`: "
    "from the beginning)",
)
NDJSON = "application/x-ndjson"

_RESPONSES: dict[int, ResponseSpec] = {
    200: ResponseSpec(
        data_container=FeedEntry,
        media_type=NDJSON,
        generate_examples=False,
        description="One entry per event, in the global order: as NDJSON one JSON object a "
        "line (an empty line is a keep-alive), or as text/event-stream messages whose `id` "
        "is the entry's checkpoint and whose data is the entry (`: keep-alive` comments; "
        "`event: shutdown` when the server stops: reconnect with Last-Event-ID).",
    ),
    **responses(400, 401, 403, 429, 503, only={400: ("bad_request", "bad_checkpoint")}),
}


# where a checkpoint was sent: its name as written, as `errors` keys it, its source
_HEADER = ("Last-Event-ID", "last-event-id", "header")
_QUERY = ("after", "after", "query")


def never_given(checkpoint: str) -> str:
    return (
        f"{checkpoint.strip()} is no checkpoint this store gave: resume from the checkpoint "
        "of an entry you received, or from 0:0"
    )


def _start(after: str | None, last_event_id: str | None) -> Checkpoint:
    """Last-Event-ID (an EventSource reconnecting) wins over `after` (its first URL). A
    checkpoint written right but past any the store can give is one it never gave."""
    for (name, key, source), text in ((_HEADER, last_event_id), (_QUERY, after)):
        if text is not None and text.strip():
            try:
                return parse_checkpoint(text)
            except ValueError as error:
                if re.fullmatch(CHECKPOINT_PATTERN, text):
                    raise BadCheckpoint(name, key, source, never_given(text)) from None
                raise invalid(key, str(error), source) from None
    return START


def _format(chosen: Format | None, request: Request[Any, Any, Any]) -> Format:
    if chosen is not None:
        return chosen
    return "sse" if "text/event-stream" in request.headers.get("accept", "") else "ndjson"


class FeedController(Controller):
    path = "/events"
    tags = ("operator",)
    security = [{"bearer": []}]  # noqa: RUF012 (Litestar reads it per controller)

    @get(
        "/",
        operation_id="followEvents",
        responses=_RESPONSES,
        summary="Every game's events in the global order (operator)",
        opt={"deadline": False},  # a feed lasts; each read it makes has the store's own bound
    )
    async def feed(
        self,
        request: Request[Any, Any, Any],
        operator: NamedDependency[Caller],
        timeline: NamedDependency[Timeline],
        after: Annotated[
            str | None,
            QueryParameter(
                max_length=40,
                pattern=CHECKPOINT_PATTERN,
                description="Start after this checkpoint (`<tx_id>:<position>`, from an "
                "entry); from the beginning if left out",
            ),
        ] = None,
        chosen: Annotated[
            Format | None,
            QueryParameter(
                name="format",
                description="sse or ndjson; left out, text/event-stream in Accept chooses "
                "sse, anything else ndjson",
            ),
        ] = None,
        follow: Annotated[
            bool,
            QueryParameter(
                description="Stay open and send each new event as it is recorded (true), or "
                "end once caught up (false)"
            ),
        ] = True,
        limit: Annotated[
            int | None,
            QueryParameter(ge=1, le=1_000_000, description="End after this many entries"),
        ] = None,
        last_event_id: Annotated[
            str | None,
            HeaderParameter(
                name="Last-Event-ID",
                required=False,
                max_length=40,
                pattern=CHECKPOINT_PATTERN,
                description="What an EventSource sends when it reconnects: the last "
                "entry's checkpoint, read as `after`; when both are sent this one is used "
                "(the URL keeps the `after` the stream first opened with)",
            ),
        ] = None,
    ) -> Stream:
        """The arbiter's record of every game (hidden cards and all), one entry per event:
        `checkpoint`, `game_id`, `version`, `type`, `event`, `recorded_at`, `seat`,
        `command_id`, `request_id`. Resume from the last checkpoint you processed
        (`after`, or Last-Event-ID for an EventSource): nothing is missed or repeated,
        whichever replica answers."""
        start = _start(after, last_event_id)
        kind = _format(chosen, request)
        if timeline.draining.is_set():
            raise ServiceUnavailableException("the server is shutting down; reconnect")
        await timeline.store.ping()  # a store that is down is a 503 now, not a cut stream
        # a checkpoint this store never gave is refused, not read as "after whatever sorts
        # there" (that would skip events, or give them all again, depending on the store)
        if not await timeline.store.issued(start):
            header = bool(last_event_id and last_event_id.strip())
            name, key, source = _HEADER if header else _QUERY
            raise BadCheckpoint(name, key, source, never_given(checkpoint_text(start)))
        return Stream(
            _framed(timeline, start, kind, follow, limit),
            media_type="text/event-stream" if kind == "sse" else NDJSON,
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )


async def _framed(
    timeline: Timeline, start: Checkpoint, kind: Format, follow: bool, limit: int | None
) -> AsyncIterator[bytes]:
    timeline.open_streams += 1
    try:
        async for row in timeline.follow(start, live=follow, limit=limit):
            if row is None:
                yield KEEPALIVE if kind == "sse" else b"\n"
                continue
            item = entry(row)
            if kind == "sse":
                yield b"id: %s\ndata: %s\n\n" % (item.checkpoint.encode(), _encode(item))
            else:
                yield _encode(item) + b"\n"
        if kind == "sse" and timeline.draining.is_set():
            yield SHUTDOWN
    finally:
        timeline.open_streams -= 1
