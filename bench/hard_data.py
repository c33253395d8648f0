"""Accuracy on hard data: every solver against LabelSpreading (both α) and scikit-network's
diffusion and propagation, on the same graph, on generated and real data sets.

    python -m bench hard_data          # generated sets at 20k nodes, real sets; seeds 0-2
    python -m bench hard_data --full   # generated sets at 50k nodes
    python -m bench hard_data --n 5000 --seeds 1 --cap 15   # a quick run (about 15 min on 2 cores)
    python -m bench hard_data --solvers harmonic,nmf        # some of ours only (and the peers)

Data (``SETS``): six generators (scikit-learn ``make_classification`` / ``make_blobs`` in
32-d: overlapping classes, two clusters per class, wide blobs, unequal class sizes, 30
classes, 20% of the true labels flipped) and the real sets of ``labelling.datasets``
(digits; segment, WDBC, diabetes, ionosphere and vote z-scored). Graph:
``similarity.knn_graph(X, 10)`` (Gaussian weights, union), the same W for every method.
Labels: a uniformly random subset of the nodes (1% or 10%, at least one per class), seeds
0-2 on the real sets and seed 0 on the generated ones (20k nodes: one draw already holds
200 or 2,000 labels and 19,800 or 18,000 test nodes); accuracy on the other nodes (no
prediction counts as wrong); "chance" is the largest class's share of them.

Methods: every solver with its defaults (what users run), harmonic also with each class
mass normalisation rule, NMF also without its calibration (``calibrate=False``, what the
calibration's mean-field runs, up to five, cost), mincut also with α = 0.1 (the remedy its degenerate-labeling
warning names); the peers: scikit-learn ``LabelSpreading`` on W (α = 0.2 with its
defaults; α = 0.99 with max_iter = 1000, so that it converges), scikit-network
``DiffusionClassifier`` and ``Propagation`` with their defaults.

The issue's target for every solver: finish within 10× the harmonic solver's time on the
same problem with accuracy above chance, or stop with a clear message. Every solver runs
with its default time budget (``time_limit="auto"``: 10× an estimate of the harmonic solve
from one timed block product, at least 30 s; solvers/_budget.py) and stops itself with a
``SolverTimeLimit`` when it runs out: the note says "stopped itself" with the error's
numbers and step. spectral, mincut, lcsnc and maxmargin run in a child process
(``run_timed``) whose clock starts when the call does, after the interpreter, the imports
and the problem are loaded (process start-up is seconds, the harmonic solve on the real sets
hundredths), so ``× harmonic`` is the solvers' own ratio. The bench keeps a safety net: a
child still running at ``KILL_RATIO`` × the solver's default budget (or ``CAP`` s, if
longer) is killed and reported as "stopped by the bench", apart from the solvers' own stops;
the ``10× harmonic`` column says whether the target's time was met, ``note`` carries the
solver's own messages (a ``DegenerateLabelingWarning``, an error, its time limit).
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
import traceback
import warnings

import numpy as np
import pandas as pd

from labelling.sampling import random_labels
from similarity import knn_graph
from solvers import LabelProblem, SolverTimeLimit, solve
from solvers._budget import default_time_limit

from ._common import Report, real_set

# The bench kills a solver still running after this many seconds, or KILL_RATIO × the solver's
# own default budget if longer: a safety net for a step the solver cannot interrupt.
CAP = 60.0
KILL_RATIO = 3.0
TARGET_RATIO = 10.0
SLOW = (("spectral", {}), ("mincut", {}), ("mincut", {"alpha": 0.1}), ("lcsnc", {}), ("maxmargin", {}))
SOLVERS = ("harmonic", "nmf", "spectral", "mincut", "lcsnc", "maxmargin")
REAL = ("digits", "segment", "wdbc", "diabetes", "ionosphere", "vote")


def generated(name: str, n: int, seed: int = 0):
    from sklearn.datasets import make_blobs, make_classification

    common = dict(n_samples=n, n_features=32, n_redundant=0, random_state=seed)
    if name == "overlap":
        return make_classification(n_informative=16, n_classes=10, n_clusters_per_class=1, class_sep=1.0, **common)
    if name == "overlap, 2 clusters per class":
        return make_classification(n_informative=8, n_classes=10, n_clusters_per_class=2, class_sep=1.0, **common)
    if name == "wide blobs":
        return make_blobs(n, n_features=32, centers=10, cluster_std=11.0, center_box=(-10, 10), random_state=seed)
    if name == "unequal sizes":
        return make_classification(n_informative=16, n_classes=5, weights=[0.5, 0.25, 0.13, 0.07, 0.05],
                                   class_sep=1.0, **common)
    if name == "30 classes":
        return make_classification(n_informative=16, n_classes=30, n_clusters_per_class=1, class_sep=1.5, **common)
    if name == "100 classes":  # by --only: q > 1/√tol, where NMF's convergence test stopped at once
        return make_classification(n_informative=16, n_classes=100, n_clusters_per_class=1, class_sep=1.5, **common)
    if name == "20% of labels flipped":
        return make_classification(n_informative=16, n_classes=10, n_clusters_per_class=1, class_sep=1.5,
                                   flip_y=0.2, **common)
    raise ValueError(name)


GENERATED = ("overlap", "overlap, 2 clusters per class", "wide blobs", "unequal sizes", "30 classes",
             "20% of labels flipped")


class _FixedGraph:
    def __init__(self, W):
        self.W = W

    def __call__(self, a, b):
        return self.W.tocoo()


def peers(W, y_given) -> dict:
    from sklearn.semi_supervised import LabelSpreading
    from sknetwork.classification import DiffusionClassifier, Propagation

    out = {}
    ids = np.arange(W.shape[0], dtype=float)[:, None]
    for alpha, max_iter in ((0.2, 30), (0.99, 1000)):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = LabelSpreading(kernel=_FixedGraph(W), alpha=alpha, max_iter=max_iter).fit(ids, y_given)
        out[f"LabelSpreading α={alpha}"] = (model.transduction_, time.perf_counter() - start, "")
    for name, model in (("scikit-network DiffusionClassifier", DiffusionClassifier()),
                        ("scikit-network Propagation", Propagation())):
        start = time.perf_counter()
        labels = model.fit_predict(W, y_given)
        out[name] = (labels, time.perf_counter() - start, "")
    return out


def _child(conn, method: str) -> None:
    """Import, receive the problem, say ready, solve: the parent's clock starts at "ready"."""
    try:
        import importlib

        from solvers import SolverTimeLimit as Stopped
        from solvers import solve as solve_in_child
        from solvers.problem import DegenerateLabelingWarning

        importlib.import_module(f"solvers.{method}")
        problem, params = conn.recv()
        conn.send("ready")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DegenerateLabelingWarning)
            start = time.perf_counter()
            try:
                labels = solve_in_child(problem, method, **params).labels
            except Stopped as err:
                conn.send(("stopped", time.perf_counter() - start, _stopped_note(err)))
                return
            seconds = time.perf_counter() - start
        said = [str(w.message) for w in caught if issubclass(w.category, DegenerateLabelingWarning)]
        conn.send(("ok", seconds, labels, said))
    except BaseException as err:  # noqa: BLE001 - reported by the parent
        conn.send(("error", repr(err), traceback.format_exc()))
    finally:
        conn.close()


def _stopped_note(err: SolverTimeLimit) -> str:
    """The solver's own stop, short: its seconds, budget and the step it did not take."""
    ahead = f", {err.projected:.3g} s projected" if err.projected is not None else ""
    return f"stopped itself at {err.seconds:.3g} s of {err.budget:.3g} s{ahead} (before {err.stage})"


def _context():
    """A forkserver that imported the solvers once (a child then starts in milliseconds, not
    the seconds of a fresh interpreter's imports); spawn where there is no forkserver."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["numpy", "scipy.sparse", "sklearn", "solvers"]
                               + [f"solvers.{method}" for method, _ in SLOW])
    return ctx


def run_timed(problem: LabelProblem, method: str, params: dict, limit: float):
    """``solve(problem, method, **params)`` in a child process, timed from the call's start.

    Returns (labels or None, seconds, note): the note is the solver's warning, its error, or
    the bench's stop after ``limit`` seconds of the call."""
    ctx = _context()
    parent, child = ctx.Pipe()
    # not daemonic, as a user's process is not: a daemonic one may not start children, and
    # lcsnc's cuts go to worker processes (solvers/_worker_processes.py); terminated below
    proc = ctx.Process(target=_child, args=(child, method), daemon=False)
    proc.start()
    child.close()
    message = None
    try:
        parent.send((problem, params))
        if not parent.poll(300) or parent.recv() != "ready":  # start-up: imports and the problem
            return None, np.nan, "failed: the child did not start"
        started = time.monotonic()
        if not parent.poll(limit):
            return None, time.monotonic() - started, f"stopped by the bench at {limit:.3g} s"
        message = parent.recv()
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return None, np.nan, f"failed: the child died (exit code {proc.exitcode})"
    finally:
        proc.join(0 if message is None else 10)  # a child that answered ends by itself (its workers with it)
        if proc.is_alive():
            proc.terminate()
        proc.join(10)
        parent.close()
    if message[0] == "error":
        return None, np.nan, "failed: " + message[1][:150]
    if message[0] == "stopped":
        return None, message[1], message[2]
    _, seconds, labels, said = message
    return labels, seconds, "DegenerateLabelingWarning" if said else ""


def ours(W, X, y_given, C, cap: float = CAP, solvers: tuple[str, ...] = SOLVERS) -> dict:
    out = {}
    problem = LabelProblem(W, y_given, n_classes=C)
    # the default harmonic always runs: it is every cell's time base
    for rule in ("auto", "none", "uniform", "labels") if "harmonic" in solvers else ("auto",):
        start = time.perf_counter()
        p = solve(problem, "harmonic", class_mass=rule)
        label = "harmonic (defaults, class_mass=auto)" if rule == "auto" else f"harmonic class_mass={rule}"
        out[label] = (p.labels, time.perf_counter() - start, f"used {p.info['class_mass']}" if rule == "auto" else "")
    if "nmf" in solvers:  # with its defaults, and without the calibration's runs (what they cost)
        out["nmf"] = _nmf(problem)
        out["nmf calibrate=False"] = _nmf(problem, calibrate=False)
    limit = max(KILL_RATIO * default_time_limit(W, C), cap)
    for method, params in SLOW:
        if method not in solvers:
            continue
        label = method + "".join(f" {k}={v}" for k, v in params.items())
        prob = LabelProblem(W, y_given, n_classes=C, X=X) if method == "maxmargin" else problem
        out[label] = run_timed(prob, method, params, limit)
    return out


def _nmf(problem: LabelProblem, **params) -> tuple:
    """NMF timed in this process: (labels or None, seconds, note)."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            p = solve(problem, "nmf", **params)
        except SolverTimeLimit as err:
            p = None
            stopped = _stopped_note(err)
    seconds = time.perf_counter() - start
    degenerate = any(w.category.__name__ == "DegenerateLabelingWarning" for w in caught)
    said = ["DegenerateLabelingWarning"] if degenerate else []
    if p is None:
        return None, seconds, stopped
    skipped = p.info.get("calibration_skipped")
    notes = (["deflated"] if p.info["deflated"] else []) + ([f"uncalibrated: {skipped}"] if skipped else []) + said
    return p.labels, seconds, "; ".join(notes)


def table(sets, fractions, seeds, cap: float = CAP, solvers: tuple[str, ...] = SOLVERS) -> pd.DataFrame:
    rows = []
    for name, X, y in sets:
        W = knn_graph(X, 10)
        C = int(y.max()) + 1
        for fraction in fractions:
            for seed in (seeds if name in REAL else seeds[:1]):
                rng = np.random.default_rng(seed)
                kept = random_labels(y, fraction, rng)
                y_given = np.where(kept, y, -1)
                hidden = ~kept
                chance = np.bincount(y[hidden]).max() / hidden.sum()
                results = {**ours(W, X, y_given, C, cap, solvers), **peers(W, y_given)}
                base = results["harmonic (defaults, class_mass=auto)"][1]
                for method, (labels, seconds, note) in results.items():
                    acc = np.nan if labels is None else float(np.mean(labels[hidden] == y[hidden]))
                    rows.append({"data": name, "n": len(y), "labeled": fraction, "seed": seed, "method": method,
                                 "accuracy": acc, "chance": chance, "seconds": seconds,
                                 "× harmonic": seconds / base, "note": note})
                print(f"  {name} {fraction} seed {seed}: " + ", ".join(
                    f"{m.split(' ')[0]} {np.mean(r[0][hidden] == y[hidden]) if r[0] is not None else np.nan:.3f}"
                    for m, r in results.items()), flush=True)
    return pd.DataFrame(rows)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean accuracy over seeds per (data, labelled) and method, with the best peer's, and the
    issue's target per cell: within 10× harmonic (every seed) and above chance (the mean)."""
    mean = frame.groupby(["data", "labeled", "method"], sort=False).agg(
        accuracy=("accuracy", "mean"), seconds=("seconds", "mean"), **{"× harmonic": ("× harmonic", "max")},
        chance=("chance", "mean"),
        note=("note", lambda v: "; ".join(sorted(set(x for x in v if x))))).reset_index()
    mean["10× harmonic"] = np.where(mean["× harmonic"] <= TARGET_RATIO, "yes", "no")
    mean["above chance"] = np.where(mean["accuracy"] > mean["chance"], "yes", "no")
    peer = mean[mean["method"].str.startswith(("LabelSpreading", "scikit-network DiffusionClassifier"))]
    best = peer.groupby(["data", "labeled"])["accuracy"].max().rename("best peer (LS α=0.2, α=0.99, diffusion)")
    mean = mean.join(best, on=["data", "labeled"])
    mean["− best peer"] = mean["accuracy"] - mean["best peer (LS α=0.2, α=0.99, diffusion)"]
    return mean


def targets(mean: pd.DataFrame) -> pd.DataFrame:
    """Per solver, each cell once, in this order: met the issue's target (within 10× harmonic
    and above chance); stopped itself at its time budget on some seed (``SolverTimeLimit``,
    its message); said why not (a warning or an error); stopped by the bench's safety net;
    missed silently (of which: finished within the budget's floor, ``MIN_SECONDS``, yet over
    10× a harmonic solve of a few hundredths of a second)."""
    from solvers._budget import MIN_SECONDS

    solvers = mean[~mean["method"].str.startswith(("harmonic class_mass", "LabelSpreading", "scikit-network"))]
    rows = []
    for method, group in solvers.groupby("method", sort=False):
        met = (group["10× harmonic"] == "yes") & (group["above chance"] == "yes")
        itself = ~met & group["note"].str.contains("stopped itself")
        told = ~met & ~itself & group["note"].str.contains("Warning|failed", regex=True)
        bench = ~met & ~itself & ~told & group["note"].str.contains("stopped by the bench")
        silent = ~met & ~itself & ~told & ~bench
        rows.append({"method": method, "cells": len(group), "met": int(met.sum()),
                     "stopped itself (SolverTimeLimit)": int(itself.sum()),
                     "missed, with the solver's warning or error": int(told.sum()),
                     "stopped by the bench (safety net)": int(bench.sum()),
                     "missed silently": int(silent.sum()),
                     f"of which finished within the {MIN_SECONDS:g} s floor":
                         int((silent & (group["seconds"] <= MIN_SECONDS)).sum()),
                     "over 10× harmonic": int((group["10× harmonic"] == "no").sum()),
                     "at or below chance": int((group["above chance"] == "no").sum())})
    return pd.DataFrame(rows)


def _load_average() -> str:
    """The 1-minute load average (Linux), or "unknown"."""
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "unknown"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench hard_data")
    parser.add_argument("--full", action="store_true", help="generated sets at 50k nodes")
    parser.add_argument("--only", help="comma-separated data set names")
    parser.add_argument("--n", type=int, help="generated sets' size (default 20,000; 50,000 with --full)")
    parser.add_argument("--seeds", type=int, default=3, help="label draws on the real sets (seeds 0..K-1; default 3)")
    parser.add_argument("--solvers", default=",".join(SOLVERS),
                        help="comma-separated solvers of ours to run (default all; the default harmonic always runs, "
                             "the time base, and so do the peers)")
    parser.add_argument("--cap", type=float, default=CAP,
                        help=f"kill a solver after this many seconds, or {KILL_RATIO:g}x its default budget if longer "
                             f"(default {CAP:g})")
    args = parser.parse_args(argv)
    solvers = tuple(args.solvers.split(","))
    unknown = sorted(set(solvers) - set(SOLVERS))
    if unknown:
        parser.error(f"unknown solvers {unknown}; choose from {', '.join(SOLVERS)}")
    n = args.n or (50_000 if args.full else 20_000)
    seeds = tuple(range(args.seeds))
    names = args.only.split(",") if args.only else list(GENERATED) + list(REAL)
    sets = []
    for name in names:
        if name in REAL:
            sets.append((name, *real_set(name)))
        else:
            X, y = generated(name, n)
            sets.append((name, X, y))
    # a run of other seeds or sets writes its own file, not over the full table's
    report_name = "hard_data_full" if args.full else "hard_data"
    report_name += f"_seeds_0-{seeds[-1]}" if args.seeds != 3 else ""
    report_name += f"_{'_'.join(names).replace(' ', '-')}" if args.only else ""  # a file name without spaces
    report_name += f"_{'_'.join(solvers)}" if set(solvers) != set(SOLVERS) else ""
    report = Report(report_name,
                    f"Hard data: every solver and the peers on the same 10-NN graph (generated sets at {n:,} nodes)")
    shown = f"seeds 0-{seeds[-1]}" if len(seeds) > 1 else "seed 0"
    report.note(f"Settings: `python -m bench hard_data {' '.join(argv)}`: generated sets at {n:,} nodes (seed 0), "
                f"real sets with {shown}; 1% and 10% labelled; every solver with its default time budget "
                f"(time_limit='auto'); the bench kills a child still running after max({KILL_RATIO:g}× that "
                f"budget, {args.cap:g} s).")
    started = time.perf_counter()
    load_before = _load_average()
    frame = table(sets, (0.01, 0.1), seeds, args.cap, solvers)
    mean = summary(frame)
    report.table(f"Accuracy on the unlabelled nodes (random labelled sets; means of {shown} on the real sets, seed 0 "
                 "on the generated ones), against the best "
                 "of LabelSpreading α=0.2, α=0.99 and scikit-network's diffusion; × harmonic = the largest over seeds "
                 "of the solver's time over the default harmonic's on the same problem", mean)
    report.table("The issue's target per solver: within 10× the harmonic time with accuracy above chance, or a clear "
                 "message (cells = data × labelled fraction)", targets(mean))
    report.note(f"total wall time {time.perf_counter() - started:.0f} s; machine load average (1 min) "
                f"{load_before} at the start, {_load_average()} at the end (times, harmonic's included, stretch "
                "with it)")
    print(f"written to {report.save()}")
