"""The test vectors and the reference implementation that docs/fairness.md publishes, read
from the page itself, so that what a third party checks is what the tests check."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

PAGE = Path(__file__).resolve().parents[2] / "docs" / "fairness.md"


def block(section: str, language: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    part = text.split(f"\n## {section}", 1)[1].split("\n## ", 1)[0]
    found = re.search(rf"```{language}\n(.*?)\n```", part, re.S)
    assert found, f"docs/fairness.md §{section} has no {language} block"
    return found.group(1)


def vectors() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(block("8. Test vectors", "json"))
    return data


def reference() -> dict[str, Any]:
    """The reference implementation's functions, run from the page's own text."""
    namespace: dict[str, Any] = {}
    exec(block("7. Reference implementation", "python"), namespace)
    return namespace
