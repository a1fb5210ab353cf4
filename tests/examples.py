"""How many examples a property tries: the full count in `make test`, a fifth of it in the
fast tier (`make test-fast` sets BURA_EXAMPLES_SCALE=0.2)."""

from __future__ import annotations

import os


def examples(full: int) -> int:
    scale = float(os.environ.get("BURA_EXAMPLES_SCALE", "1"))
    return max(5, round(full * scale))
