"""The harmonic solver: accuracy and noise flags on digits next to scikit-learn's label
propagation and spreading (same labels), and solve time as the graph grows, SuperLU against
AMG-preconditioned CG (same graph, same run).

    python -m bench harmonic          # 10k and 100k nodes
    python -m bench harmonic --full   # also 1M nodes
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
from sklearn.datasets import load_digits, make_blobs
from sklearn.semi_supervised import LabelPropagation, LabelSpreading

from labelling.evaluation import expected_calibration_error, noise_scores
from labelling.sampling import flip_labels, keep_per_class
from similarity import knn_graph
from solvers import LabelProblem, solve

from ._common import Report, median_time


def digits_table(seeds: int) -> pd.DataFrame:
    X, y = load_digits(return_X_y=True)
    W = knn_graph(X, 10)
    rows = []
    for flip in (0.0, 0.1, 0.2):
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            kept = keep_per_class(y, 10, rng)
            noisy, flipped = flip_labels(y, kept, flip, 10, rng)
            given = np.where(kept, noisy, -1)
            hidden = ~kept
            p = solve(LabelProblem(W, given), "harmonic")
            noise = noise_scores(p.noisy[kept], flipped[kept])
            correct = p.labels[hidden] == y[hidden]
            rows.append({"flip": flip, "method": "harmonic (graphlabel)", "accuracy": correct.mean(),
                         "ece": expected_calibration_error(p.confidence[hidden], correct),
                         "noise_precision": noise["precision"], "noise_recall": noise["recall"]})
            for name, model in (("LabelPropagation knn", LabelPropagation(kernel="knn", n_neighbors=10, max_iter=2000)),
                                ("LabelSpreading knn", LabelSpreading(kernel="knn", n_neighbors=10, alpha=0.2))):
                model.fit(X, given)
                proba = model.label_distributions_[hidden]
                correct = model.transduction_[hidden] == y[hidden]
                rows.append({"flip": flip, "method": name, "accuracy": correct.mean(),
                             "ece": expected_calibration_error(proba.max(axis=1), correct),
                             "noise_precision": np.nan, "noise_recall": np.nan})
    frame = pd.DataFrame(rows)
    return frame.groupby(["flip", "method"], as_index=False).mean(numeric_only=True)


def scaling_table(sizes: list[int], noise_up_to: int) -> pd.DataFrame:
    rows = []
    for n in sizes:
        X, y = make_blobs(n, n_features=16, centers=10, cluster_std=4.0, random_state=0)
        W = knn_graph(X, 10)
        rng = np.random.default_rng(0)
        kept = keep_per_class(y, 10, rng)  # a few labels, as in the demo
        problem = LabelProblem(W, np.where(kept, y, -1))
        for solver in ("direct", "amg"):
            if solver == "direct" and n > 30_000:
                continue  # SuperLU's fill-in: 34 s at 30k nodes already, GBs beyond
            seconds, p = median_time(lambda: solve(problem, "harmonic", solver=solver, detect_noise=False), 3)
            with_loo = np.nan
            if n <= noise_up_to:
                with_loo, _ = median_time(lambda: solve(problem, "harmonic", solver=solver), 1)
            rows.append({"nodes": n, "edges": W.nnz // 2, "labels": int(kept.sum()), "solver": solver,
                         "solve_s (median of 3)": seconds, "with noise flags_s": with_loo,
                         "accuracy": float((p.labels[~kept] == y[~kept]).mean())})
    return pd.DataFrame(rows)


def main(argv: list[str]) -> None:
    full = "--full" in argv
    report = Report("harmonic", "harmonic solver")
    report.table("digits, 10 labels per class, flipped fraction of them (mean of 5 seeds)", digits_table(5))
    sizes = [10_000, 30_000, 100_000] + ([1_000_000] if full else [])
    report.table("solve time by graph size (blobs, 16 features, 10-NN, 100 labels; SuperLU vs AMG-CG)",
                 scaling_table(sizes, noise_up_to=100_000 if full else 30_000))
    report.note(f"threads: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    print(f"written to {report.save()}")
