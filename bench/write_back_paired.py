"""The write-back of many classes' scores: ``graphlabel label --full`` on the embedded store,
its ``write_back`` stage, in alternating fresh processes, optionally beside another checkout
of graphlabel (the code before a change), with the same rows written to a Parquet file by
pyarrow in the same round as the peer (a floor: the bytes serialised, no store).

    python -m bench write_back_paired                       # 100k nodes of 1,000 classes, 3 rounds
    python -m bench write_back_paired --against /tmp/old    # also that checkout's run
    python -m bench write_back_paired --n 1000000 --rounds 1

Data: ``--classes`` well separated blobs in 16-d (``make_blobs``, cluster_std 0.5, seed 0),
every 20th node labelled, ingested and given its 10-NN graph once by this checkout's CLI, and
kept in ``.data/bench/write_back_N_C/``. Each run copies that store and runs ``python -m
graphlabel label --dataset b --full -q`` on the copy with the checkout first on its path:
harmonic with its defaults, every node's prediction, confidence, noise flag and C scores
written back. The table gives the ``write_back`` stage's seconds as the command printed them,
the whole command's, and the process's peak resident memory (``ru_maxrss``). The peer writes
a table of the same shape (the key, the C scores as a list of doubles per node, the label, the
confidence) with ``pyarrow.parquet.write_table``, its default compression.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ._common import Report

CACHE = Path(__file__).resolve().parent.parent / ".data" / "bench"
DATASET = "b"

# graphlabel's CLI in this process, from the checkout CODE (first on the path: before the
# working folder, which "python -c" puts first), then its peak resident memory (the CLI ends
# in SystemExit)
LABEL = """
import json, resource, runpy, sys
sys.path.insert(0, sys.argv[1])
sys.argv = ["graphlabel", *sys.argv[2:]]
try:
    runpy.run_module("graphlabel", run_name="__main__")
finally:
    print(json.dumps({"peak MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), file=sys.stderr)
"""

PARQUET = """
import json, resource, sys, time
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
n, classes, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(0)
scores = rng.random((n, classes))
scores /= scores.sum(axis=1, keepdims=True)
keys = pa.array([f"p{i}" for i in range(n)])
start = time.perf_counter()
lists = pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32) * classes, pa.int32()),
                                 pa.array(scores.ravel()))
table = pa.table({"key": keys, "label_scores": lists,
                  "predicted_label": pa.array(scores.argmax(axis=1).astype(str)),
                  "label_confidence": pa.array(scores.max(axis=1))})
pq.write_table(table, path)
print(json.dumps({"write_back": time.perf_counter() - start,
                  "peak MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def saved_store(n: int, classes: int) -> Path:
    """The store of ``n`` blobs of ``classes`` classes with its 10-NN graph, made once."""
    store = CACHE / f"write_back_{n}_{classes}"
    if (store / "graph.lbug").exists():
        return store
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=n, centers=classes, n_features=16, cluster_std=0.5, random_state=0)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frame["label"] = pd.Series(np.where(np.arange(n) % 20 == 0, y.astype(str), None), dtype=object)
    frame["id"] = [f"p{i}" for i in range(n)]
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        records = Path(tmp) / "blobs.parquet"
        frame.to_parquet(records)
        for command in (["ingest", str(records), "--dataset", DATASET, "--key", "id", "--features", "*",
                         "--label", "label"], ["build-graph", "--dataset", DATASET]):
            subprocess.run([sys.executable, "-m", "graphlabel", *command, "--store", str(store), "-q"], check=True,
                           capture_output=True, text=True)
    print(f"store of {n:,} nodes of {classes:,} classes made in {store}", flush=True)
    return store


def label_run(code: Path, store: Path) -> dict:
    """``label --full`` on a copy of ``store`` with ``code`` first on the path."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(store, copy)
        done = subprocess.run([sys.executable, "-c", LABEL, str(code), "label", "--dataset", DATASET, "--full",
                               "-q", "--store", str(copy)], env={**os.environ, "PYTHONPATH": str(code)},
                              capture_output=True, text=True, cwd=tmp)
    if done.returncode:
        raise RuntimeError(f"label failed: {done.stderr[-2000:]}")
    stages = {stage: float(seconds) for stage, seconds in re.findall(r"│ (\w+)\s*│ ([0-9.]+)", done.stdout)}
    return {"write_back": stages["write_back"], "command": sum(stages.values()),
            **json.loads(done.stderr.strip().splitlines()[-1])}


def parquet_run(n: int, classes: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([sys.executable, "-c", PARQUET, str(n), str(classes), str(Path(tmp) / "p.parquet")],
                              check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench write_back_paired")
    parser.add_argument("--n", type=int, default=100_000, help="nodes (default 100,000)")
    parser.add_argument("--classes", type=int, default=1_000, help="classes, one blob each (default 1,000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", type=Path, help="another checkout of graphlabel: its run too")
    parser.add_argument("--out", help="results file name (bench/results/OUT.md); default write_back_paired_N_C")
    args = parser.parse_args(argv)
    store = saved_store(args.n, args.classes)
    here = Path(__file__).resolve().parent.parent
    codes = [("this checkout", here)] + ([("--against", args.against.resolve())] if args.against else [])
    load_before = os.getloadavg()[0]
    runs = []
    for round_ in range(args.rounds):
        runs.append({"round": round_, "run": "pyarrow Parquet file (peer)", **parquet_run(args.n, args.classes)})
        for name, code in codes:
            runs.append({"round": round_, "run": f"graphlabel label --full ({name})", **label_run(code, store)})
        print("  " + ", ".join(f"{r['run']} {r['write_back']:.2f} s" for r in runs if r["round"] == round_),
              flush=True)
    frame = pd.DataFrame(runs)
    peer = frame[frame["run"].str.startswith("pyarrow")].set_index("round")["write_back"]
    frame["× Parquet"] = frame["write_back"] / frame["round"].map(peer)
    table = frame.groupby("run", sort=False).agg(
        runs=("write_back", "size"), write_back=("write_back", "median"), ratio=("× Parquet", "median"),
        command=("command", "median"), **{"peak MiB": ("peak MiB", "median")}).reset_index().rename(
        columns={"write_back": "write-back s", "ratio": "× Parquet (same round, median)", "command": "command s"})
    report = Report(args.out or f"write_back_paired_{args.n}_{args.classes}",
                    f"The write-back of {args.n:,} nodes' scores of {args.classes:,} classes, alternating fresh"
                    " processes")
    report.table(f"Medians of {args.rounds} rounds; the code: this checkout"
                 + (", and --against (another checkout, the code before)" if args.against else ""), table)
    report.table("Every run", frame)
    report.note(f"load average (1 min) {load_before:.2f} at the start, {os.getloadavg()[0]:.2f} at the end, "
                f"{os.cpu_count()} cores shared with other jobs; the peer's seconds spread by "
                f"{100 * statistics.pstdev(peer) / statistics.mean(peer):.0f}% over the rounds")
    print(f"written to {report.save()}")
