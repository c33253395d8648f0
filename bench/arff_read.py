"""Reading an ARFF file: graphlabel's reader (``labelling.arfffiles``, every bad line a
reject) against scipy's ``scipy.io.arff.loadarff`` (stops at the first bad line), on the same
files in the same run.

    python -m bench arff_read                  # 100,000 records, 5 rounds
    python -m bench arff_read --rows 1000000 --rounds 3

Files: weka's ``diabetes.arff`` (8 numeric attributes and a nominal class, no quotes) and
``credit-g.arff`` (7 numeric and 14 nominal attributes, many quoted: ``'<0'``), their
records repeated to ``--rows`` lines, written once to a temporary directory. A round reads
each file with both readers in turn, in this process (the files are in the page cache after
their first read); the ratio is each round's graphlabel time over the same round's scipy
time, and the table gives medians over the rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

from ._common import Report


def _repeated(name: str, rows: int, folder: Path) -> Path:
    """weka's NAME.arff with its records repeated to ``rows`` lines."""
    from labelling.datasets import weka_path

    lines = weka_path(name).read_text().splitlines()
    data = [line for line in lines if line.strip() and not line.lstrip().startswith(("@", "%"))]
    header = lines[:next(i for i, line in enumerate(lines) if line.strip().lower() == "@data") + 1]
    path = folder / f"{name}_{rows}.arff"
    path.write_text("\n".join(header + (data * (rows // len(data) + 1))[:rows]) + "\n")
    return path


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench arff_read")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    from scipy.io import arff

    from labelling.arfffiles import read_arff_table

    report = Report("arff_read", f"Reading ARFF files of {args.rows:,} records: graphlabel against scipy.io.arff")
    load = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in ("diabetes", "credit-g"):
            path = _repeated(name, args.rows, Path(folder))
            times: dict[str, list[float]] = {"graphlabel": [], "scipy": []}
            for _ in range(args.rounds):
                start = time.perf_counter()
                table = read_arff_table(path, text_columns=["class"])
                times["graphlabel"].append(time.perf_counter() - start)
                start = time.perf_counter()
                reference, _ = arff.loadarff(path)
                times["scipy"].append(time.perf_counter() - start)
                assert len(table.frame) == len(reference) == args.rows, "the readers disagree on the records"
            ratios = [ours / theirs for ours, theirs in zip(times["graphlabel"], times["scipy"])]
            for reader in ("graphlabel", "scipy"):
                seconds = statistics.median(times[reader])
                rows.append({"file": path.name, "reader": reader, "rounds": args.rounds, "seconds": seconds,
                             "µs per record": seconds / args.rows * 1e6,
                             "× scipy (median of the rounds)": statistics.median(ratios) if reader == "graphlabel"
                             else 1.0})
    report.table("Median seconds to read the file into a table", pd.DataFrame(rows))
    report.note(f"load average (1 min) {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end, on"
                f" {os.cpu_count()} cores shared with other jobs. graphlabel's time includes building the"
                " pandas frame and the float columns; scipy's ends at its numpy record array (bytes for nominal"
                " values).")
    report.save()
