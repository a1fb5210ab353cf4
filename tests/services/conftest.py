"""Fixtures of the services' own tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The Python client's waits, recorded instead of slept."""
    waits: list[float] = []
    monkeypatch.setattr("bura_client.client.time.sleep", waits.append)
    return waits
