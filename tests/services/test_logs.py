"""The command's log line, written straight by services.logs.info: the very line the
logging module would write for the same record, and a record whenever lines go anywhere
else than the one JSON stream the server set up."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from typing import TextIO

import pytest

from infra import throttle
from services import logs
from services.config import load

FIELDS = {"game_id": "g1", "version": 14, "seat": 0, "command_id": "k-1"}
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$")


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    """The server's logging as `bura serve` sets it up (JSON at info), onto a buffer;
    the logging module as it was, afterwards. Pytest adds handlers of its own to the
    root logger while a test runs: `alone()` takes them off again."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    chatty = {name: logging.getLogger(name).level for name in ("httpx", "httpcore")}
    logs.configure(load({"BURA_LOG_FORMAT": "json", "BURA_LOG_LEVEL": "info"}))
    buffer = io.StringIO()
    assert isinstance(logs._lines, logging.StreamHandler)
    logs._lines.setStream(buffer)
    try:
        yield buffer
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        for name, was in chatty.items():
            logging.getLogger(name).setLevel(was)
        logs._lines = None


def alone() -> logging.StreamHandler[TextIO]:
    """The server's handler as the root logger's only one, as in `bura serve`."""
    handler = logs._lines
    assert handler is not None
    logging.getLogger().handlers[:] = [handler]
    return handler


def _no_record(*args: object, **kwargs: object) -> None:
    raise AssertionError("a record was made where the line was to be written straight")


def lines(buffer: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


REFUSED = {"game_id": "g1", "seat": 1, "command_id": "k-2", "code": "not_your_turn"}


@pytest.mark.parametrize("fields", [FIELDS, REFUSED], ids=["accepted", "refused"])
def test_the_line_written_straight_is_the_line_of_the_record(
    stream: io.StringIO, fields: dict[str, object]
) -> None:
    alone()
    log = logging.getLogger("bura.games")
    token = logs.request_id.set("trace-42")
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(log, "info", _no_record)
            logs.info(log, "draw accepted", fields)
        log.info("draw accepted", extra=fields)
    finally:
        logs.request_id.reset(token)
    straight, record = lines(stream)
    assert TIME.match(str(straight.pop("time"))) and TIME.match(str(record.pop("time")))
    assert list(straight.items()) == list(record.items())  # the same fields, in order
    assert straight == {
        "level": "info",
        "logger": "bura.games",
        "message": "draw accepted",
        **fields,
        "request_id": "trace-42",
    }


def test_a_line_that_goes_elsewhere_too_is_a_record(
    stream: io.StringIO, caplog: pytest.LogCaptureFixture
) -> None:
    alone()
    logging.getLogger().addHandler(caplog.handler)
    logs.info(logging.getLogger("bura.games"), "lead accepted", FIELDS)
    (record,) = [r for r in caplog.records if r.name == "bura.games"]
    assert record.getMessage() == "lead accepted" and record.__dict__["command_id"] == "k-1"
    assert lines(stream)[0]["message"] == "lead accepted"  # and the stream has it once


def test_no_line_below_the_level(stream: io.StringIO) -> None:
    alone()
    logging.getLogger().setLevel(logging.WARNING)
    logs.info(logging.getLogger("bura.games"), "draw accepted", FIELDS)
    assert stream.getvalue() == ""


@pytest.fixture
def text() -> Iterator[io.StringIO]:
    """The server's logging set up for text lines at info, onto a buffer; the logging
    module as it was, afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    logs.configure(load({"BURA_LOG_FORMAT": "text", "BURA_LOG_LEVEL": "info"}))
    buffer = io.StringIO()
    handler = root.handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(buffer)
    try:
        yield buffer
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def test_text_lines_come_from_records(text: io.StringIO) -> None:
    logs.info(logging.getLogger("bura.games"), "draw accepted", FIELDS)
    assert text.getvalue().rstrip().endswith("INFO bura.games draw accepted")


class _Broken(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError("the reader went away")


def test_a_line_that_cannot_be_written_stops_nothing(
    stream: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone().setStream(_Broken())
    said = io.StringIO()
    monkeypatch.setattr("sys.stderr", said)  # where logging reports a line it could not write
    logs.info(logging.getLogger("bura.games"), "draw accepted", FIELDS)
    assert "BrokenPipeError" in said.getvalue()


def test_the_webhook_clients_own_line_per_request_is_not_logged_at_info(
    stream: io.StringIO,
) -> None:
    """httpx says "HTTP Request: POST ..." at info for every webhook attempt; the
    dispatcher's own lines and the delivery log tell what came of it."""
    alone()
    logging.getLogger("httpx").info("HTTP Request: POST https://platform.test/bura")
    logging.getLogger("httpx").warning("a warning still shows")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and "a warning still shows" in lines[0], lines


def test_asyncpgs_pool_warns_of_an_outage_once_a_period_not_once_a_retry(
    stream: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the store is out of reach, asyncpg's pool warns (with a traceback) each time
    it fails to restore its connections, every second or two: its warnings pass as the
    server's own outage warnings do, at most once a period, with `repeats`."""
    alone()
    clock = [100.0]
    monkeypatch.setattr(throttle.time, "monotonic", lambda: clock[0])
    pool = logging.getLogger("asyncpg.pool")
    logs.configure(load({"BURA_LOG_FORMAT": "json", "BURA_LOG_LEVEL": "info"}))  # again
    assert sum(isinstance(f, throttle.Quieted) for f in pool.filters) == 1
    assert isinstance(logs._lines, logging.StreamHandler)
    logs._lines.setStream(stream)
    for _ in range(15):  # 30 s of retries, one every 2 s
        pool.warning("Failed to restore the pool connection floor; retrying")
        clock[0] += 2.0
    pool.info("an info line is not held back")
    said = lines(stream)
    assert [line.get("repeats") for line in said if line["level"] == "warning"] == [None, 4, 4]
    assert said[-1]["message"] == "an info line is not held back"
    pool.filters[:] = []


def test_a_text_line_is_one_line_whatever_its_message_holds(text: io.StringIO) -> None:
    """A path sent with `%0a` in it is logged decoded: as text, its line break would start
    a line of the sender's own making (a forged entry). It is written escaped; a
    traceback after the message stays as Python writes it."""
    forged = "/games/x\n2026-12-07 13:00:00,000 ERROR bura.games FORGED\r\x00/events"
    logging.getLogger("bura.http").info("GET %s 401", forged)
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("bura.http").exception("unexpected error in GET %s", forged)
    first, second, *traceback = text.getvalue().splitlines()
    assert first.endswith(
        "INFO bura.http GET /games/x\\n2026-12-07 13:00:00,000 ERROR bura.games FORGED\\r"
        "\\x00/events 401"
    )
    assert "ERROR bura.http unexpected error in GET /games/x\\n2026" in second
    assert traceback[0] == "Traceback (most recent call last):"
    assert traceback[-1] == "ValueError: boom"
