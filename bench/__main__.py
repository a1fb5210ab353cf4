"""Run the benchmarks in order, print their figures, keep them in bench/results/<name>.json.

Each benchmark is a module bench.<name> with `run() -> dict`. A module that does not
exist (yet) is passed over. `python -m bench store` runs only the named ones;
`python -m bench --quick` (or BENCH_QUICK=1) runs them with small counts (bench.quick()).
BENCH_RESULTS names another folder for the JSON files.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ORDER = (
    "append",
    "store",
    "domain",
    "service",
    "replicas",
    "instructions",
    "push",
    "load",
    "newcomer",
)
RESULTS = Path(os.environ.get("BENCH_RESULTS") or Path(__file__).parent / "results")


def main(names: list[str]) -> int:
    if "--quick" in names:
        # before any benchmark module is imported: they size themselves at import
        os.environ["BENCH_QUICK"] = "1"
        names = [n for n in names if n != "--quick"]
    ran = 0
    for name in names or ORDER:
        try:
            module = importlib.import_module(f"bench.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"bench.{name}":
                raise  # the benchmark exists but needs something missing
            if names:
                print(f"no benchmark named {name!r}", file=sys.stderr)
                return 2
            continue
        print(f"\n== {name} ==", flush=True)
        started = time.perf_counter()
        figures = module.run()
        print(render(figures))
        print(f"({time.perf_counter() - started:.1f} s)")
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"{name}.json"
        path.write_text(json.dumps(figures, indent=2, default=str) + "\n")
        print(f"-> {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}")
        ran += 1
    return 0 if ran else 1


def render(figures: dict[str, Any]) -> str:
    """A benchmark's rows ("table": list of dicts) as aligned columns, then its other figures."""
    lines = [f"{key}: {value}" for key, value in figures.items() if key != "table"]
    rows = figures.get("table") or []
    if rows:
        columns = list(dict.fromkeys(c for row in rows for c in row))
        cells = [[str(row.get(c, "")) for c in columns] for row in rows]
        widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
        lines.append("  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True)))
        lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
