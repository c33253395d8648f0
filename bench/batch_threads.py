"""How many solve batches to run side by side on threads: one at a time, one per CPU, or
all at once, on one problem of several large connected components, in alternating fresh
processes.

    python -m bench batch_threads                 # 8 components of 100k nodes, 3 rounds
    python -m bench batch_threads --rounds 9      # the figures of flows/runners.py and the README

Why: a run solves its connected components in batches (``labelling.components``), one task
each. Run by Prefect's default task runner (``ThreadPoolTaskRunner()``, no limit), every
batch started at once, so the solves' working memory added up over all batches; graphlabel's
flows now run them on ``flows.runners.thread_runner``, and a run without a server on as many
threads (``flows.direct``): one per usable CPU. Each policy here
is that runner's executor: a ``ThreadPoolExecutor`` of that many threads mapping
``solvers.solve(batch, "harmonic")`` (defaults, noise flags on) over the batches of
``labelling.components.plan_components`` with its default ``batch_nodes``. A fourth row runs
one per CPU with ``OMP_NUM_THREADS=1``: each solve's sparse products on one thread
(``solvers._row_split_product``); in the other rows they are split over the CPUs.

Problem: ``--copies`` disjoint copies of ``bench/harmonic_paired.py``'s saved graph of
``--n`` nodes (``bench/solver_scale.py``'s 10 blobs in 32-d, 10-NN, 1% labelled), so that every
component is one batch of ``--n`` nodes. Each run is a new interpreter that loads the graph
and plans the batches (not timed), then times the solves alone and how far they raised the
process's peak resident memory (``ru_maxrss``, MiB). A round runs each policy once; a ratio
is a run's seconds over the same round's "one at a time"; the table gives medians.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from flows.direct import usable_cpus

from ._common import Report
from .harmonic_paired import saved_graph

RUNNER = """
import hashlib, json, resource, sys, time
from concurrent.futures import ThreadPoolExecutor
import numpy as np, scipy.sparse as sp
from labelling.components import batch_problem, plan_components
from solvers import LabelProblem, solve
import solvers.harmonic
graph, copies, workers = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data = np.load(graph)
W = sp.csr_matrix((data["data"], data["indices"], data["indptr"]), shape=tuple(data["shape"]))
W = sp.block_diag([W] * copies, format="csr")
y_true = np.tile(data["y"], copies)
given = np.tile(data["given"], copies)
problem = LabelProblem(W, np.where(given, y_true, -1), n_classes=int(y_true.max()) + 1)
parts = [batch_problem(problem, nodes) for nodes in plan_components(problem).batches]
workers = len(parts) if workers == "all" else int(workers)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
with ThreadPoolExecutor(workers) as pool:
    predictions = list(pool.map(lambda part: solve(part.problem, "harmonic"), parts))
seconds = time.perf_counter() - start
peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024
labels = np.concatenate([part.classes[p.labels] for part, p in zip(parts, predictions)])
nodes = np.concatenate([part.nodes for part in parts])
print(json.dumps({"threads": workers, "batches": len(parts), "seconds": seconds, "peak MiB": peak,
                  "accuracy": float(np.mean(labels[~given[nodes]] == y_true[nodes][~given[nodes]])),
                  "labels md5": hashlib.md5(labels.tobytes()).hexdigest()}))
"""


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench batch_threads")
    parser.add_argument("--n", type=int, default=100_000, help="nodes per component (default 100,000)")
    parser.add_argument("--copies", type=int, default=8, help="components, one batch each (default 8)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    graph = saved_graph(args.n)
    here = Path(__file__).resolve().parent.parent
    # (label, threads, OMP_NUM_THREADS for the run or None)
    policies = (("one at a time", "1", None), ("one per CPU (the flows' runner)", str(usable_cpus()), None),
                ("all at once (Prefect's default runner)", "all", None),
                ("one per CPU, each solve's products on one thread", str(usable_cpus()), "1"))
    load_before = os.getloadavg()[0]
    runs = []
    for round_ in range(args.rounds):
        for label, workers, omp_threads in policies:
            env = {**os.environ, "PYTHONPATH": str(here), **({"OMP_NUM_THREADS": omp_threads} if omp_threads else {})}
            out = subprocess.run([sys.executable, "-c", RUNNER, str(graph), str(args.copies), workers], env=env,
                                 check=True, capture_output=True, text=True)
            runs.append({"round": round_, "policy": label, **json.loads(out.stdout.strip().splitlines()[-1])})
            print(f"  round {round_}: {label}: {runs[-1]['seconds']:.2f} s, {runs[-1]['peak MiB']:.0f} MiB", flush=True)
    frame = pd.DataFrame(runs)
    first = frame[frame["policy"] == policies[0][0]].set_index("round")
    frame["× one at a time (s)"] = frame["seconds"] / frame["round"].map(first["seconds"])
    frame["× one at a time (MiB)"] = frame["peak MiB"] / frame["round"].map(first["peak MiB"])
    table = frame.groupby("policy", sort=False).agg(
        threads=("threads", "first"), batches=("batches", "first"), runs=("seconds", "size"),
        seconds=("seconds", "median"), **{"× one at a time (s)": ("× one at a time (s)", "median"),
                                          "peak MiB": ("peak MiB", "median"),
                                          "× one at a time (MiB)": ("× one at a time (MiB)", "median")},
        accuracy=("accuracy", "median"), **{"same labels": ("labels md5", lambda s: s.nunique() == 1)},
    ).reset_index()
    report = Report("batch_threads", f"{args.copies} batches of {args.n:,} nodes on threads: one at a time, "
                                      "one per CPU, all at once")
    report.table(f"Medians of {args.rounds} rounds (harmonic, defaults; peak MiB over the loaded problem)", table)
    report.table("Every run", frame)
    report.note(f"{usable_cpus()} usable CPUs; load average (1 min) {load_before:.2f} at the start, "
                f"{os.getloadavg()[0]:.2f} at the end, on a machine shared with other jobs")
    print(f"written to {report.save()}")
