"""Noise flags: how good every solver's flags are next to cleanlab, how many clean labels
they flag, and what they cost at scale next to the same solve without them.

    python -m bench noise_flags          # quality tables, cost at 100k nodes / 1,000 labels
    python -m bench noise_flags --full   # also 1M nodes / 10,000 labels
    python -m bench noise_flags --skip-quality --cost-methods maxmargin --cost-sizes 10000
                                         # one solver's cost rows at one size (minutes)

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
exact leave-one-out (one solve per label) at 10k only; mincut's flags (the default: its
neighbours' vote and the harmonic leave-one-out; and the vote alone) against none, at
α = 0.1, no randomized cuts; maxmargin at 10k only, its flags (cv=5 cross-fitting, which
also calibrates) against cv=0. Medians of 3 (1 at 1M).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from labelling.evaluation import noise_scores
from labelling.sampling import flip_labels, keep_per_class
from similarity import knn_graph
from solvers import LabelProblem, solve

from ._common import Report, median_time, real_set, seed_range

SEEDS = range(100, 105)
DATASETS = (("digits", 10), ("segment", 10), ("wdbc", 28))
SOLVERS = (
    ("harmonic", {}, "loo='local' (default)"),
    ("harmonic", {"loo": "exact"}, "loo='exact'"),
    ("mincut", {}, "defaults (cavity vote and harmonic leave-one-out)"),
    ("mincut", {"noise": "cavity"}, "noise='cavity' (neighbour vote alone)"),
    ("lcsnc", {"n_iter": 6}, "graph confidence, 6 random (c) draws"),
    ("spectral", {}, "defaults (d=80, fit margin)"),
    ("maxmargin", {}, "defaults (cv=5 cross-fit, SVM and graph leave-one-out)"),
    ("maxmargin", {"noise": "svm"}, "noise='svm' (cross-fitted and final SVM)"),
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
                  flips: tuple[float, ...] = (0.0, 0.1, 0.2), seeds=SEEDS,
                  per_label: list | None = None) -> pd.DataFrame:
    """Means over ``seeds`` of each method's flags; ``per_label`` (a list) receives one row per
    given label (data, flipped share, method, seed, noise_score, flipped) for ``ranking_tables``."""
    rows = []
    for name, per_class in DATASETS:
        if data is not None and name not in data:
            continue
        X, y = real_set(name)
        W = knn_graph(X, 10)
        C = int(y.max()) + 1
        from solvers.spectral import graph_spectrum

        extra = {}
        if methods is None or "spectral" in methods:  # one spectrum per graph, as a flow would keep it
            extra["spectral"] = {"spectrum": graph_spectrum(W, min(80, len(y) - 2))}
        for flip in flips:
            for seed in seeds:
                rng = np.random.default_rng(seed)
                kept = keep_per_class(y, per_class, rng)
                noisy, flipped = flip_labels(y, kept, flip, C, rng)
                y_given = np.where(kept, noisy, -1)
                runs = [(f"{m} ({shown})", lambda m=m, p=p: solve(
                    LabelProblem(W, y_given, X=X if m == "maxmargin" else None), m, **p, **extra.get(m, {})))
                    for m, p, shown in SOLVERS if methods is None or m in methods]
                if methods is None or "cleanlab" in methods:
                    runs.append(("cleanlab find_label_issues (LR, out of fold)", lambda: cleanlab_flags(X, y_given)))
                for label, run in runs:
                    start = time.perf_counter()
                    result = run()
                    seconds = time.perf_counter() - start
                    flags = result if isinstance(result, np.ndarray) else result.noisy
                    if per_label is not None and not isinstance(result, np.ndarray) and result.noise_score is not None:
                        per_label.append(pd.DataFrame({
                            "data": name, "flipped": flip, "method": label, "seed": seed,
                            "noise_score": np.nan_to_num(result.noise_score[kept], nan=-1.0),
                            "is_flipped": flipped[kept]}))
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


def _recall_at_precision(score: np.ndarray, truth: np.ndarray, precision: float) -> float:
    """The largest recall of a threshold on ``score`` whose precision is at least ``precision``
    (thresholds only between distinct scores: tied labels are flagged together)."""
    order = np.argsort(-score, kind="stable")
    hit = truth[order]
    caught = np.cumsum(hit)
    cut = np.r_[score[order][1:] != score[order][:-1], True]
    ok = cut & (caught >= precision * np.arange(1, len(hit) + 1))
    return float(caught[ok].max() / hit.sum()) if ok.any() and hit.sum() else 0.0


def ranking_tables(per_label: list, thresholds: tuple[float, ...]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """How well each method's ``noise_score`` ranks the flipped labels (labels of all seeds
    pooled: average precision, recall at precision 0.95), and a threshold sweep: per-seed mean
    F1 on every flipped set and flagged share of the clean sets, their mean and maximum."""
    from sklearn.metrics import average_precision_score

    labels = pd.concat(per_label, ignore_index=True)
    ranking = []
    for (data, flip, method), part in labels.groupby(["data", "flipped", "method"], sort=False):
        if flip == 0:
            continue
        score, truth = part["noise_score"].to_numpy(), part["is_flipped"].to_numpy()
        ranking.append({"data": data, "flipped": flip, "method": method, "labels": len(part),
                        "flipped labels": int(truth.sum()), "average precision": average_precision_score(truth, score),
                        "recall at precision 0.95": _recall_at_precision(score, truth, 0.95)})
    sweep = []
    for method, part in labels.groupby("method", sort=False):
        for threshold in thresholds:
            row: dict = {"method": method, "threshold": threshold}
            f1s, clean_rates = [], []
            for (data, flip), case in part.groupby(["data", "flipped"], sort=False):
                flagged = case["noise_score"].to_numpy() >= threshold
                truth = case["is_flipped"].to_numpy()
                if flip == 0:
                    rate = float(pd.Series(flagged).groupby(case["seed"].to_numpy()).mean().mean())
                    row[f"{data} clean, flagged"] = rate
                    clean_rates.append(rate)
                    continue
                per_seed = [noise_scores(flagged[case["seed"].to_numpy() == s], truth[case["seed"].to_numpy() == s])
                            for s in np.unique(case["seed"])]
                row[f"{data} {flip:.0%} F1"] = float(np.mean([r["f1"] for r in per_seed]))
                f1s.append(row[f"{data} {flip:.0%} F1"])
            row["mean F1"] = float(np.mean(f1s)) if f1s else np.nan
            row["max clean flagged"] = max(clean_rates) if clean_rates else np.nan
            sweep.append(row)
    return pd.DataFrame(ranking), pd.DataFrame(sweep)


def cost_table(sizes: list[int], methods: set[str] | None = None) -> pd.DataFrame:
    """Seconds of each solver's flags against the same solve without them; ``methods`` keeps
    only those solvers' rows (None: all)."""
    from .knn_build import N_CLASSES, K, blobs

    rows = []
    for n in sizes:
        X, y = blobs(n)
        W = knn_graph(X, K)
        rng = np.random.default_rng(0)
        kept = keep_per_class(y, max(1, round(0.01 * n / N_CLASSES)), rng)
        noisy, flipped = flip_labels(y, kept, 0.1, N_CLASSES, rng)
        problem = LabelProblem(W, np.where(kept, noisy, -1), n_classes=N_CLASSES, X=X)
        repeats = 1 if n >= 1_000_000 else 3
        runs = [("harmonic", "no flags (detect_noise=False)", {"detect_noise": False}),
                ("harmonic", "flags, defaults (loo='local', drop and re-solve)", {})]
        if n <= 10_000:
            runs.append(("harmonic", "flags, loo='exact' (one solve per label)", {"loo": "exact"}))
        runs += [("mincut", "no flags (noise='none')", {"alpha": 0.1, "n_cuts": 0, "noise": "none"}),
                 ("mincut", "flags, defaults (cavity and harmonic leave-one-out)", {"alpha": 0.1, "n_cuts": 0}),
                 ("mincut", "flags, noise='cavity' (neighbour vote alone)", {"alpha": 0.1, "n_cuts": 0,
                                                                             "noise": "cavity"})]
        if n <= 10_000:  # libsvm on every induced label: minutes at 100k
            runs += [("maxmargin", "no flags (cv=0)", {"cv": 0}),
                     ("maxmargin", "flags, defaults (cv=5, SVM and graph leave-one-out)", {}),
                     ("maxmargin", "flags, noise='svm' (cv=5)", {"noise": "svm"})]
        runs = [run for run in runs if methods is None or run[0] in methods]
        if not runs:
            continue
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
    parser.add_argument("--seeds", default="100-104",
                        help="first-last seeds of the label draws (default 100-104; the thresholds were chosen on 0-4)")
    parser.add_argument("--ranking", action="store_true",
                        help="add the noise scores' ranking (average precision, recall at precision 0.95) and a "
                             "threshold sweep to the quality table")
    parser.add_argument("--thresholds", default="0.2,0.25,0.3,0.35,0.4,0.5,0.6,0.7,0.8,0.9,0.95",
                        help="comma-separated thresholds of the sweep (with --ranking)")
    parser.add_argument("--cost-methods",
                        help="comma-separated solvers (harmonic, mincut, maxmargin) for the cost table (default all)")
    parser.add_argument("--cost-sizes", help="comma-separated node counts of the cost table (default 10000,100000)")
    parser.add_argument("--out", help="results file name (bench/results/OUT.md); default from the options")
    args = parser.parse_args(argv)
    seeds = seed_range(args.seeds)
    methods = set(args.methods.split(",")) if args.methods else None
    data = set(args.data.split(",")) if args.data else None
    flips = tuple(float(f) for f in args.flips.split(","))
    name = "noise_flags_full" if args.full else "noise_flags"
    name += "_" + "_".join(sorted(data)) if data else ""
    name += f"_seeds{seeds.start}-{seeds.stop - 1}" if seeds != SEEDS else ""
    report = Report(args.out or name + ("_" + "_".join(sorted(methods)) if methods else ""),
                    "Noise flags: every solver against cleanlab, false flags on clean labels, cost at scale")
    if not args.skip_quality:
        per_label: list | None = [] if args.ranking else None
        report.table(f"Flags against the flipped labels (means over seeds {seeds.start}-{seeds.stop - 1}); "
                     "false-flag rate = flagged share of the unflipped given labels",
                     quality_table(methods, data, flips, seeds, per_label))
        if per_label:
            ranking, sweep = ranking_tables(per_label, tuple(float(t) for t in args.thresholds.split(",")))
            report.table("Ranking by noise_score (the labels of all seeds pooled)", ranking)
            report.table("Threshold sweep on noise_score: per-seed mean F1 on the flipped sets, flagged share of "
                         "the clean sets (nothing flipped)", sweep)
    sizes = [10_000, 100_000] + ([1_000_000] if args.full else [])
    if args.cost_sizes:
        sizes = [int(size) for size in args.cost_sizes.split(",")]
    if not args.skip_cost:
        cost_methods = set(args.cost_methods.split(",")) if args.cost_methods else None
        report.table("Cost of the flags: the same solve without them, 1% labelled, 10% of the labels flipped "
                     "(medians of 3; 1 run at 1M)", cost_table(sizes, cost_methods))
    print(f"written to {report.save()}")
