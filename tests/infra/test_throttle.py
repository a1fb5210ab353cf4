"""An outage's warning: said at once, then at most once a period, with the count left out."""

from __future__ import annotations

import json
import logging

import pytest

from infra import throttle
from infra.throttle import Throttled
from services.logs import JsonFormatter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_first_is_said_then_one_line_a_period_counting_those_left_out(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    monkeypatch.setattr(throttle.time, "monotonic", clock)
    warning = Throttled(logging.getLogger("bura.test"), every=10.0)
    with caplog.at_level("WARNING"):
        said = [warning.warn("redis gone (%s)", "refused")]
        for _ in range(4):
            clock.now += 2.0  # 8 s after the first: still within the period
            said.append(warning.warn("redis gone (%s)", "refused"))
        clock.now += 2.0  # 10 s after the first
        said.append(warning.warn("redis gone (%s)", "reset", extra={"error": "E"}))
        clock.now += 30.0
        said.append(warning.warn("redis gone (%s)", "refused"))
    assert said == [True, False, False, False, False, True, True]
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "redis gone (refused)",
        "redis gone (reset) (and 4 more like it since the last line)",
        "redis gone (refused)",
    ]
    fields = [json.loads(JsonFormatter().format(r)) for r in caplog.records]
    assert "repeats" not in fields[0] and "repeats" not in fields[2]
    assert fields[1]["repeats"] == 4 and fields[1]["error"] == "E"
    assert all(f["level"] == "warning" for f in fields)
