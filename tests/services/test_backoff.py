"""A failed delivery's next attempt (README, Webhooks): the delay doubles from
BURA_WEBHOOK_RETRY_SECONDS up to BURA_WEBHOOK_RETRY_MAX_SECONDS, with up to a tenth of
jitter, for as many attempts as BURA_WEBHOOK_MAX_ATTEMPTS allows, however many that is."""

from __future__ import annotations

import pytest

from services.config import Settings
from services.live.dispatcher import backoff

SETTINGS = Settings(webhook_retry_seconds=1.0, webhook_retry_max_seconds=300.0)


@pytest.mark.parametrize(("attempts", "base"), [(1, 1.0), (2, 2.0), (5, 16.0), (9, 256.0)])
def test_the_delay_doubles(attempts: int, base: float) -> None:
    assert base <= backoff(SETTINGS, attempts) <= base * 1.1


@pytest.mark.parametrize("attempts", [10, 64, 1025, 10**6])
def test_the_delay_stops_at_its_cap_however_many_attempts(attempts: int) -> None:
    assert 300.0 <= backoff(SETTINGS, attempts) <= 330.0
