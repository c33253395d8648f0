"""Run benchmark modules: `python -m bench` runs every one with its quick settings,
`python -m bench NAME [ARGS...]` runs one (e.g. `python -m bench cut_solvers --full`).

Each module under bench/ exposes ``main(argv: list[str]) -> None`` and prints its tables.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def _modules() -> list[str]:
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if not m.name.startswith("_"))


def main(argv: list[str]) -> None:
    names = _modules()
    if argv and not argv[0].startswith("-"):
        name, rest = argv[0], argv[1:]
        if name not in names:
            raise SystemExit(f"unknown benchmark {name!r}; choose one of {names}")
        importlib.import_module(f"bench.{name}").main(rest)
        return
    for name in names:
        print(f"\n=== bench {name} ===", flush=True)
        importlib.import_module(f"bench.{name}").main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
