"""The default ``harmonic`` against scikit-network's ``Propagation`` on one saved graph, in
alternating fresh processes, optionally beside another checkout of graphlabel (the code
before a change), so that every ratio pairs runs of the same moment on a shared machine.

    python -m bench harmonic_paired                       # 100k nodes, 3 rounds
    python -m bench harmonic_paired --n 1000000 --rounds 3
    python -m bench harmonic_paired --against /tmp/old    # also that checkout's harmonic
    python -m bench harmonic_paired --out NAME            # bench/results/NAME.md
    python -m bench harmonic_paired --classes 500         # 500 blobs: blocks of n × 500

Graph: ``bench/solver_scale.py``'s ``graph_for(n)`` (10 blobs in 32-d, seed 0,
``similarity.knn_graph(X, 10)``, 1% labelled, seed 0; ``--classes C``: C blobs, the same share
labelled), built once and kept in ``.data/bench/solver_scale_graph_N[_C].npz`` (at 1M about 7
minutes to build, 190 MB). Each run is
a new interpreter that loads the graph, imports the method's module (as solver_scale's
``PRELOAD`` does: start-up, not solving) and times the call alone: ``Propagation().fit_predict``
with its defaults, ``solve(problem, "harmonic")`` with its defaults (noise flags on) and with
``solver="cg", detect_noise=False`` (the solve alone), the defaults again with
``OMP_NUM_THREADS=1`` (graphlabel's sparse products, and BLAS, on one thread, as on a one-core
machine; this checkout only), and how far the call's resident memory rose, at its highest,
above what the process held when the call began (MiB: the kernel's peak mark reset at the
call, ``bench/_common.py``'s ``peak_mark``, as ``peak_memory_call`` measures; until
2026-12-07 it was ``ru_maxrss`` over the process's peak before the call, which for harmonic
held the ``LabelProblem``'s transposed copy of W), and
harmonic's own clock of its steps (``info["timings"]``: the components, the solve, the
leave-one-out estimate, the re-solve and the rest).
A round runs each once, in that order; a ratio is a run's seconds over the same round's
``Propagation``; the table gives medians over the rounds. ``bench/solver_scale.py`` gives
the other peers at 100k; this one exists for 1M, where that bench's full run takes 40
minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ._common import Report
from .knn_build import N_CLASSES

CACHE = Path(__file__).resolve().parent.parent / ".data" / "bench"
RUNS = (("Propagation", "scikit-network Propagation (defaults)"),
        ("defaults", "harmonic, defaults (noise flags)"),
        ("flagless", "harmonic, solver='cg', detect_noise=False"),
        ("one thread", "harmonic, defaults, OMP_NUM_THREADS=1 (its products on one thread)"))
# runs of this checkout only (--against need not read the setting)
HERE_ONLY = {"Propagation", "one thread"}

# One run in a fresh interpreter with CODE first on its path (another checkout need not have
# this module, so the runner is a script, not an import of it).
RUNNER = """
import importlib.util, json, sys, time
import numpy as np, scipy.sparse as sp
code, method, graph, common_file = sys.argv[1:5]
# this checkout's bench/_common.py by its path: the same measure for every checkout's run
spec = importlib.util.spec_from_file_location("bench_common", common_file)
common = importlib.util.module_from_spec(spec)
spec.loader.exec_module(common)
sys.path.insert(0, code)
data = np.load(graph)
W = sp.csr_matrix((data["data"], data["indices"], data["indptr"]), shape=tuple(data["shape"]))
y, given = data["y"], data["given"]
y_given = np.where(given, y, -1)
info = {}
if method == "Propagation":
    from sknetwork.classification import Propagation
    mark = common.peak_mark()
    start = time.perf_counter()
    labels = Propagation().fit_predict(W, y_given)
else:
    from solvers import LabelProblem, solve
    import solvers.harmonic  # before the clock, as Propagation's module is (solve() imports it on first use)
    problem = LabelProblem(W, y_given, n_classes=int(y.max()) + 1)
    params = {"solver": "cg", "detect_noise": False} if method == "flagless" else {}
    mark = common.peak_mark()
    start = time.perf_counter()
    prediction = solve(problem, "harmonic", **params)
    labels = prediction.labels
    info = {"block products": prediction.info.get("cg_block_products"), "flagged": int(prediction.noisy.sum()),
            "local re-solve nodes": (prediction.info.get("resolve_near") or {}).get("nodes"),
            **{f"step {step}": sec for step, sec in (prediction.info.get("timings") or {}).items()}}
seconds = time.perf_counter() - start
peak = common.peak_since(mark)  # MiB the call's resident memory rose above its start
hidden = ~given
print(json.dumps({"seconds": seconds, "peak MiB": peak, "accuracy": float(np.mean(labels[hidden] == y[hidden])),
                  **info}))
"""


def saved_graph(n: int, classes: int = N_CLASSES) -> Path:
    """``graph_for(n, classes)``'s W, classes and labelled mask, built once."""
    path = CACHE / (f"solver_scale_graph_{n}.npz" if classes == N_CLASSES else f"solver_scale_graph_{n}_{classes}.npz")
    if not path.exists():
        from .solver_scale import graph_for

        _, y, W, given, seconds = graph_for(n, classes)
        W = sp.csr_matrix(W)
        CACHE.mkdir(parents=True, exist_ok=True)
        np.savez(path, data=W.data, indices=W.indices, indptr=W.indptr, shape=np.array(W.shape), y=y, given=given)
        print(f"graph of {n:,} nodes built in {seconds:.0f} s, kept in {path}", flush=True)
    return path


def run(code: Path, method: str, graph: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code)}
    if method == "one thread":
        env["OMP_NUM_THREADS"] = "1"
    common = Path(__file__).resolve().parent / "_common.py"
    out = subprocess.run([sys.executable, "-c", RUNNER, str(code), method, str(graph), str(common)], env=env,
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench harmonic_paired")
    parser.add_argument("--n", type=int, default=100_000, help="nodes (default 100,000)")
    parser.add_argument("--classes", type=int, default=N_CLASSES,
                        help=f"blobs, one class each (default {N_CLASSES}): the solve's blocks are n × classes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", type=Path, help="another checkout of graphlabel: its harmonic runs too")
    parser.add_argument("--out", help="results file name (bench/results/OUT.md); default harmonic_paired_N")
    args = parser.parse_args(argv)
    graph = saved_graph(args.n, args.classes)
    here = Path(__file__).resolve().parent.parent
    codes = [("this checkout", here)] + ([("--against", args.against.resolve())] if args.against else [])
    load_before = os.getloadavg()[0]
    runs = []
    for round_ in range(args.rounds):
        for method, label in RUNS:
            for name, code in codes if method not in HERE_ONLY else codes[:1]:
                result = {"round": round_, "run": label, "code": name, **run(code, method, graph)}
                runs.append(result)
                print(f"  round {round_}: {label} ({name}) {result['seconds']:.2f} s", flush=True)
    frame = pd.DataFrame(runs)
    peer = frame[frame["run"] == RUNS[0][1]].set_index("round")["seconds"]
    frame["× Propagation"] = frame["seconds"] / frame["round"].map(peer)
    table = frame.groupby(["run", "code"], sort=False).agg(
        runs=("seconds", "size"), seconds=("seconds", "median"), ratio=("× Propagation", "median"),
        **{"peak MiB": ("peak MiB", "median")}, accuracy=("accuracy", "median"),
        **{c: (c, "median") for c in ("block products", "flagged", "local re-solve nodes") if c in frame}
    ).reset_index().rename(columns={"ratio": "× Propagation (same round, median)"})
    of = "" if args.classes == N_CLASSES else f" of {args.classes:,} classes"
    report = Report(args.out or f"harmonic_paired_{args.n}" + (f"_{args.classes}" if of else ""),
                    f"harmonic against Propagation on one {args.n:,}-node graph{of}, alternating fresh processes")
    # the checkouts by role, not by path: a result names no folder of the machine it ran on
    report.table(f"Medians of {args.rounds} rounds; the code: this checkout"
                 + (", and --against (another checkout, the code before)" if args.against else ""),
                 table)
    steps = [column for column in frame if column.startswith("step ")]
    if steps:  # harmonic's own clock of its steps (info["timings"]): where its time goes, this checkout
        mine = frame[(frame["code"] == "this checkout") & frame[steps].notna().any(axis=1)].copy()
        for column in steps:
            mine[column.replace("step ", "× Propagation: ")] = mine[column] / mine["round"].map(peer)
        report.table("Where harmonic's time goes, by its own clock (info['timings'], medians of the rounds; "
                     "seconds, and over the same round's Propagation)",
                     mine.groupby("run", sort=False)[[c for c in mine if "step " in c or "× Propagation: " in c]]
                     .median().reset_index())
    report.table("Every run", frame)
    from solvers._row_split_product import product_threads

    report.note(f"this checkout's sparse products on {product_threads()} threads (OMP_NUM_THREADS "
                f"{os.environ.get('OMP_NUM_THREADS', 'unset')}; solvers/_row_split_product.py), except in the "
                "OMP_NUM_THREADS=1 row")
    report.note(f"load average (1 min) {load_before:.2f} at the start, {os.getloadavg()[0]:.2f} at the end, "
                f"{os.cpu_count()} cores shared with other jobs; the seconds of one round spread by "
                f"{100 * statistics.pstdev(peer) / statistics.mean(peer):.0f}% (Propagation's)")
    print(f"written to {report.save()}")
