"""``python -m bench --help``: the benchmarks listed, and a benchmark's ``--help`` says what
it measures without running it (scaling ran on --help and rewrote its committed results)."""

import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent.parent / "bench" / "results"


def bench(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_help_lists_every_benchmark_with_what_it_measures():
    said = bench("--help")
    assert "python -m bench NAME [ARGS...]" in said
    lines = {line.split()[0]: line for line in said.splitlines() if line.startswith("  ")}
    assert {"scaling", "harmonic", "solver_scale", "noise_flags"} <= set(lines)
    assert "Max-margin graph cuts (Kveton et al. 2010)" in lines["maxmargin"]


def test_a_benchmark_that_reads_no_option_says_what_it_measures_on_help_and_writes_nothing():
    written = {path: path.stat().st_mtime_ns for path in RESULTS.glob("scaling.*")}
    said = bench("scaling", "--help")
    assert said.startswith("Feature scaling before the kNN graph")
    assert {path: path.stat().st_mtime_ns for path in RESULTS.glob("scaling.*")} == written
