"""Each solver's peak memory in blocks of n × C float32: what the memory checks at the solvers'
doors ask for (``PEAK_BLOCKS`` in ``solvers/harmonic.py``, ``nmf.py``, ``mincut.py``,
``maxmargin.py``; ``solvers/_memory.py``), measured beside scikit-network's ``Propagation``
on the same graph, each solve in a fresh process, optionally also with another checkout.

    python -m bench solver_memory                                  # 20,000 nodes of 200 classes
    python -m bench solver_memory --n 5000 --classes 50 --solvers spectral,lcsnc --no-time-limit
    python -m bench solver_memory --against /tmp/old               # also that checkout's solves

Data: ``make_blobs`` (``--classes`` centres in 16-d, cluster_std 3.0, seed 0), 5 given labels
per class (``labelling.sampling.keep_per_class``, seed 0), the 10-NN graph of
``similarity.knn_graph``, the features in the problem (``maxmargin`` needs them). A process
builds the problem, then traces ``solve(problem, METHOD)`` with its defaults (``--no-time-limit``:
``time_limit=None``) under ``tracemalloc``: the peak of what numpy and Python allocated during
the call, over the problem already held. "blocks" is that peak over n × C × 4 bytes. The
peer is ``Propagation().fit_predict(W, y)``, traced the same way. Memory that a library
allocates outside Python's allocators (libsvm's kernel cache, the engine's pages) is not
traced; the process's ``ru_maxrss`` is given beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from ._common import Report

SOLVERS = ("harmonic", "nmf", "mincut", "maxmargin")

# One solve in this process, from the checkout CODE (first on the path: before the working
# folder, which "python -c" puts first)
TRACE = """
import json, resource, sys, time, tracemalloc
sys.path.insert(0, sys.argv[1])
import numpy as np
from sklearn.datasets import make_blobs
from labelling.sampling import keep_per_class
from similarity import knn_graph
from solvers import LabelProblem, solve
n, classes, method, limited = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5] == "limited"
X, y = make_blobs(n_samples=n, centers=classes, n_features=16, cluster_std=3.0, random_state=0)
given = np.where(keep_per_class(y, 5, np.random.default_rng(0)), y, -1)
problem = LabelProblem(knn_graph(X, 10), given, n_classes=classes, X=X)
if method == "Propagation":
    from sknetwork.classification import Propagation
    run = lambda: Propagation().fit_predict(problem.W, given)
else:
    params = {} if limited or method == "harmonic" else {"time_limit": None}
    run = lambda: solve(problem, method, **params).labels
tracemalloc.start()
start = time.perf_counter()
labels = run()
seconds = time.perf_counter() - start
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"blocks": peak / (n * classes * 4), "traced MiB": peak / 2**20, "seconds": seconds,
                  "accuracy": float(np.mean(labels == y)),
                  "process MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def traced_solve(code: Path, n: int, classes: int, method: str, limited: bool) -> dict:
    done = subprocess.run([sys.executable, "-c", TRACE, str(code), str(n), str(classes), method,
                           "limited" if limited else "unlimited"], capture_output=True, text=True)
    if done.returncode:
        # a solver that stops itself (its time limit, its memory check) is a result, in its own line
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:160]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench solver_memory")
    parser.add_argument("--n", type=int, default=20_000, help="nodes (default 20,000)")
    parser.add_argument("--classes", type=int, default=200, help="classes, one blob each (default 200)")
    parser.add_argument("--solvers", default=",".join(SOLVERS), help=f"comma-separated (default {','.join(SOLVERS)})")
    parser.add_argument("--no-time-limit", action="store_true", help="solve with time_limit=None")
    parser.add_argument("--against", type=Path, help="another checkout of graphlabel: its solves too")
    parser.add_argument("--out", help="results file name (bench/results/OUT.md); default solver_memory_N_C")
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent.parent
    codes = [("this checkout", here)] + ([("--against", args.against.resolve())] if args.against else [])
    load_before = os.getloadavg()[0]
    runs = [{"solver": "scikit-network Propagation (peer)", "code": "",
             **traced_solve(here, args.n, args.classes, "Propagation", True)}]
    for method in args.solvers.split(","):  # a loop over solvers: one process each
        for name, code in codes:
            runs.append({"solver": method, "code": name,
                         **traced_solve(code, args.n, args.classes, method, not args.no_time_limit)})
            print(f"  {method} ({name}): {runs[-1]}", flush=True)
    frame = pd.DataFrame(runs)
    peer = runs[0].get("traced MiB")
    if peer and "traced MiB" in frame:
        frame["× Propagation's peak"] = frame["traced MiB"] / peer
    report = Report(args.out or f"solver_memory_{args.n}_{args.classes}",
                    f"Peak memory of each solver on {args.n:,} nodes of {args.classes:,} classes, in blocks of "
                    "n × C float32")
    report.table("One fresh process per solve; tracemalloc's peak during the call, the problem already held"
                 + ("; with time_limit=None" if args.no_time_limit else "; each solver's defaults"), frame)
    report.note(f"data: make_blobs, 16-d, cluster_std 3.0, 5 given labels per class, 10-NN graph. A block is "
                f"{args.n * args.classes * 4 / 2**20:.1f} MiB. Load average (1 min) {load_before:.2f} at the start, "
                f"{os.getloadavg()[0]:.2f} at the end, {os.cpu_count()} cores shared with other jobs")
    print(f"written to {report.save()}")
