"""What every benchmark prints: the machine, medians of repeated timings, markdown tables."""

from __future__ import annotations

import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd

RESULTS = Path(__file__).parent / "results"


def machine() -> str:
    return (f"{platform.node()} · {platform.machine()} · {os.cpu_count()} cores · "
            f"Python {platform.python_version()} · {platform.platform(terse=True)}")


def median_time(fn, repeat: int = 3) -> tuple[float, object]:
    """Median wall time of ``repeat`` calls and the last call's result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def markdown_table(frame: pd.DataFrame, floatfmt: str = ".3f", index: bool = False) -> str:
    """A GitHub markdown table (pandas' to_markdown needs tabulate, which we do not ship).
    NaN prints as an empty cell; ``index=True`` keeps the index as the first column."""
    if index:
        frame = frame.reset_index().rename(columns={"index": ""})

    def cell(v) -> str:
        if isinstance(v, (float, np.floating)):
            return "" if np.isnan(v) else format(float(v), floatfmt)
        return str(v)

    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    rows = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([header, rule, *rows])


class Report:
    """Collects sections; prints each as it comes and writes them all to bench/results/NAME.md."""

    def __init__(self, name: str, title: str) -> None:
        self.name = name
        self.parts = [f"# {title}", "", f"machine: {machine()}", ""]
        print("\n".join(self.parts), flush=True)

    def table(self, heading: str, frame: pd.DataFrame, floatfmt: str = ".3f") -> None:
        text = f"## {heading}\n\n{markdown_table(frame, floatfmt)}\n"
        self.parts.append(text)
        print(text, flush=True)

    def note(self, text: str) -> None:
        self.parts.append(text + "\n")
        print(text, flush=True)

    def save(self) -> Path:
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"{self.name}.md"
        path.write_text("\n".join(self.parts))
        return path
