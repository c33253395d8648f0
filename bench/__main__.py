"""Run benchmark modules: `python -m bench` runs every one with its quick settings,
`python -m bench NAME [ARGS...]` runs one (e.g. `python -m bench mincut --full`),
`python -m bench --help` lists them, `python -m bench NAME --help` says what one measures.

Each module under bench/ exposes ``main(argv: list[str]) -> None`` and prints its tables
(most write them to bench/results/ too).
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import sys
from pathlib import Path


def _modules() -> list[str]:
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if not m.name.startswith("_"))


HELP = ("-h", "--help")


def _summary(name: str, width: int = 90) -> str:
    """The first sentence of a benchmark module's docstring, cut at ``width`` characters,
    read without importing the module."""
    tree = ast.parse((Path(__file__).parent / f"{name}.py").read_text())
    sentence = re.split(r"(?<!et al)\. ", " ".join((ast.get_docstring(tree) or "").split("\n\n")[0].split()))[0]
    return sentence if len(sentence) <= width else sentence[:width - 1] + "…"


def main(argv: list[str]) -> None:
    names = _modules()
    if argv[:1] and argv[0] in HELP:
        print(__doc__)
        width = max(map(len, names))
        print("\n".join(f"  {name:<{width}}  {_summary(name)}" for name in names))
        return
    if argv and not argv[0].startswith("-"):
        name, rest = argv[0], argv[1:]
        if name not in names:
            raise SystemExit(f"unknown benchmark {name!r}; choose one of {names}")
        module = importlib.import_module(f"bench.{name}")
        if any(flag in rest for flag in HELP) and "argparse" not in Path(module.__file__ or "").read_text():
            # a module that reads no options would run, and write its results, on --help
            print(module.__doc__)
            return
        module.main(rest)
        return
    for name in names:
        print(f"\n=== bench {name} ===", flush=True)
        importlib.import_module(f"bench.{name}").main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
