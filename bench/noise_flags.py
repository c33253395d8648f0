"""Noise flags: how good every solver's flags are next to cleanlab, how many clean labels
they flag, and what they cost at scale next to the same solve without them.

    python -m bench noise_flags          # quality tables, cost at 100k nodes / 1,000 labels
    python -m bench noise_flags --full   # also 1M nodes / 10,000 labels

Quality: digits and segment (10 labels per class) and WDBC (28 per class, about 10%),
labels flipped uniformly to another class (``labelling.sampling.flip_labels``) at 0, 10%
and 20%, seeds 100-104 (the solvers' thresholds were chosen on seeds 0-9, so these are
fresh draws). Graph: ``similarity.knn_graph(X, 10)`` on the raw digits pixels and on
z-scored segment / WDBC features. Every solver runs with its defaults, except: lcsnc
without features (its graph confidence: no random forest) and with 6 random draws of c
instead of its full grid (50 s a run on digits otherwise); spectral with the graph's
spectrum computed once per data set and passed in (the spectrum does not depend on the
labels; its seconds column is the per-label-set cost). The peer is
``cleanlab.filter.find_label_issues`` (its defaults) on out-of-fold probabilities of a
logistic regression trained on the given labels only (``cross_val_predict``, stratified
folds, as many as the smallest class allows up to 5): it sees the features of the labelled
points, not the graph. Precision, recall and F1 are against the flipped labels; the
false-flag rate is the share of the unflipped given labels that are flagged.

Cost: the harmonic solver on the 10-NN graphs of ``bench/knn_build.py``'s 32-d blobs (1%
labelled, 10% of the labels flipped), flags off against flags on (the default: local
leave-one-out estimate, then a warm-started re-solve without the flagged labels), and the
exact leave-one-out (one solve per label) at 10k only; mincut's flags (its neighbours'
vote) against none, at α = 0.1, no randomized cuts. Medians of 3 (1 at 1M).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from labelling.datasets import load, standardise
from labelling.evaluation import noise_scores
from labelling.sampling import flip_labels, keep_per_class
from similarity import knn_graph
from solvers import LabelProblem, solve

from ._common import Report, median_time

SEEDS = range(100, 105)
DATASETS = (("digits", 10), ("segment", 10), ("wdbc", 28))
SOLVERS = (
    ("harmonic", {}, "loo='local' (default)"),
    ("harmonic", {"loo": "exact"}, "loo='exact'"),
    ("mincut", {}, "defaults (neighbour vote)"),
    ("lcsnc", {"n_iter": 6}, "graph confidence, 6 random (c) draws"),
    ("spectral", {}, "defaults (d=80, fit margin)"),
    ("maxmargin", {}, "defaults (cv=5 cross-fit)"),
    ("nmf", {}, "defaults (cavity margin)"),
)


def cleanlab_flags(X: np.ndarray, y_given: np.ndarray) -> np.ndarray:
    """cleanlab's find_label_issues on out-of-fold logistic-regression probabilities."""
    from cleanlab.filter import find_label_issues
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    lab = np.flatnonzero(y_given >= 0)
    y_l = y_given[lab]
    folds = min(5, int(np.bincount(y_l).min()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        proba = cross_val_predict(LogisticRegression(max_iter=2000), X[lab], y_l, method="predict_proba",
                                  cv=StratifiedKFold(folds, shuffle=True, random_state=0))
        issues = find_label_issues(y_l, proba)
    flags = np.zeros(len(y_given), dtype=bool)
    flags[lab[issues]] = True
    return flags


def quality_table(methods: set[str] | None = None, data: set[str] | None = None,
                  flips: tuple[float, ...] = (0.0, 0.1, 0.2)) -> pd.DataFrame:
    rows = []
    for name, per_class in DATASETS:
        if data is not None and name not in data:
            continue
        X, y, _ = load(name)
        if name != "digits":
            X = standardise(X)
        W = knn_graph(X, 10)
        C = int(y.max()) + 1
        from solvers.spectral import graph_spectrum

        extra = {}
        if methods is None or "spectral" in methods:  # one spectrum per graph, as a flow would keep it
            extra["spectral"] = {"spectrum": graph_spectrum(W, min(80, len(y) - 2))}
        for flip in flips:
            for seed in SEEDS:
                rng = np.random.default_rng(seed)
                kept = keep_per_class(y, per_class, rng)
                noisy, flipped = flip_labels(y, kept, flip, C, rng)
                y_given = np.where(kept, noisy, -1)
                runs = [(f"{m} ({shown})", lambda m=m, p=p: solve(
                    LabelProblem(W, y_given, X=X if m == "maxmargin" else None), m, **p, **extra.get(m, {})).noisy)
                    for m, p, shown in SOLVERS if methods is None or m in methods]
                if methods is None or "cleanlab" in methods:
                    runs.append(("cleanlab find_label_issues (LR, out of fold)", lambda: cleanlab_flags(X, y_given)))
                for label, run in runs:
                    start = time.perf_counter()
                    flags = run()
                    seconds = time.perf_counter() - start
                    scores = noise_scores(flags[kept], flipped[kept])
                    clean = kept & ~flipped
                    rows.append({"data": name, "flipped": flip, "method": label, "seed": seed,
                                 "precision": scores["precision"] if flip else np.nan,
                                 "recall": scores["recall"] if flip else np.nan,
                                 "f1": scores["f1"] if flip else np.nan,
                                 "false-flag rate": float(flags[clean].mean()), "seconds": seconds})
            print(f"  {name} {flip:.0%} flipped done", flush=True)
    frame = pd.DataFrame(rows)
    return frame.groupby(["data", "flipped", "method"], as_index=False, sort=False).mean(numeric_only=True).drop(
        columns="seed")


def cost_table(sizes: list[int]) -> pd.DataFrame:
    from .knn_build import N_CLASSES, K, blobs

    rows = []
    for n in sizes:
        X, y = blobs(n)
        W = knn_graph(X, K)
        rng = np.random.default_rng(0)
        kept = keep_per_class(y, max(1, round(0.01 * n / N_CLASSES)), rng)
        noisy, flipped = flip_labels(y, kept, 0.1, N_CLASSES, rng)
        problem = LabelProblem(W, np.where(kept, noisy, -1), n_classes=N_CLASSES)
        repeats = 1 if n >= 1_000_000 else 3
        runs = [("harmonic", "no flags (detect_noise=False)", {"detect_noise": False}),
                ("harmonic", "flags, defaults (loo='local', drop and re-solve)", {})]
        if n <= 10_000:
            runs.append(("harmonic", "flags, loo='exact' (one solve per label)", {"loo": "exact"}))
        runs += [("mincut", "no flags (noise='none')", {"alpha": 0.1, "n_cuts": 0, "noise": "none"}),
                 ("mincut", "flags, defaults (neighbour vote)", {"alpha": 0.1, "n_cuts": 0})]
        base = {}
        for method, label, params in runs:
            seconds, p = median_time(lambda: solve(problem, method, **params), repeats)
            base.setdefault(method, seconds)
            scores = noise_scores(p.noisy[kept], flipped[kept])
            rows.append({"nodes": n, "labels": int(kept.sum()), "solver": method, "run": label,
                         "seconds": seconds, "× no flags": seconds / base[method],
                         "flag precision": scores["precision"], "flag recall": scores["recall"],
                         "accuracy": float(np.mean(p.labels[~kept] == y[~kept])),
                         "CG iterations": p.info.get("cg_iterations", np.nan)})
            print(f"  {n:,} {method} {label}: {seconds:.2f} s", flush=True)
    return pd.DataFrame(rows)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench noise_flags")
    parser.add_argument("--full", action="store_true", help="add 1M nodes / 10,000 labels to the cost table")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-cost", action="store_true")
    parser.add_argument("--methods", help="comma-separated solvers (and 'cleanlab') for the quality table")
    parser.add_argument("--data", help="comma-separated data sets for the quality table (digits, segment, wdbc)")
    parser.add_argument("--flips", default="0,0.1,0.2", help="comma-separated flipped shares (default 0,0.1,0.2)")
    args = parser.parse_args(argv)
    methods = set(args.methods.split(",")) if args.methods else None
    data = set(args.data.split(",")) if args.data else None
    flips = tuple(float(f) for f in args.flips.split(","))
    name = "noise_flags_full" if args.full else "noise_flags"
    name += "_" + "_".join(sorted(data)) if data else ""
    report = Report(name + ("_" + "_".join(sorted(methods)) if methods else ""),
                    "Noise flags: every solver against cleanlab, false flags on clean labels, cost at scale")
    if not args.skip_quality:
        report.table("Flags against the flipped labels (means over seeds 100-104); false-flag rate = flagged share "
                     "of the unflipped given labels", quality_table(methods, data, flips))
    sizes = [10_000, 100_000] + ([1_000_000] if args.full else [])
    if not args.skip_cost:
        report.table("Cost of the flags: the same solve without them, 1% labelled, 10% of the labels flipped "
                     "(medians of 3; 1 run at 1M)", cost_table(sizes))
    print(f"written to {report.save()}")
