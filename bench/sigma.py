"""The default Gaussian σ of kNN graphs: the mean distance to the k-th neighbour (the rule
before issue 14), its median (the rule now, ``similarity.knn.median_kth_distance``), and
Zelnik-Manor & Perona's per-node local scale, on clean data and with one far outlier.

    python -m bench sigma

Harmonic solver (``detect_noise=False``: the flags do not change the labels' argmax), a
10-NN graph, 10 given labels per class, accuracy on the other nodes, mean of 5 seeds. The
outlier is one extra row at 1e6 in every feature, never labelled and not scored. The
issue's case is scored by the weights themselves: 40 points in two blobs and one at 1e6.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.datasets import load_digits, make_blobs, make_classification

from labelling.sampling import keep_per_class
from similarity.knn import median_kth_distance, nearest_neighbors, symmetrise_graph
from solvers import LabelProblem, solve

from ._common import Report

K = 10
LOCAL_NEIGHBOUR = 7  # Zelnik-Manor & Perona (2004): σ_i = distance to the 7th neighbour


def graph(X: np.ndarray, rule: str) -> tuple[sp.csr_matrix, np.ndarray]:
    """The symmetrised 10-NN graph weighted by ``rule``, and its directed weights."""
    n = len(X)
    idx, dist = nearest_neighbors(X, K)
    rows, cols, d = np.repeat(np.arange(n), K), idx.ravel(), dist.ravel()
    if rule == "local":
        scale = np.maximum(dist[:, LOCAL_NEIGHBOUR - 1], 1e-12)
        w = np.exp(-d**2 / (scale[rows] * scale[cols]))
    else:
        sigma = float(np.mean(dist[:, -1])) if rule == "mean" else median_kth_distance(dist)
        w = np.exp(-d**2 / (2 * sigma**2))
    return symmetrise_graph(sp.csr_matrix((w, (rows, cols)), shape=(n, n))), w


def accuracy(X: np.ndarray, y: np.ndarray, rule: str, outlier: bool, seeds: int = 5) -> float:
    if outlier:
        X, y = np.vstack([X, np.full((1, X.shape[1]), 1e6)]), np.append(y, -1)
    W, _ = graph(X, rule)
    scores = []
    for seed in range(seeds):
        kept = keep_per_class(np.where(y < 0, 0, y), 10, np.random.default_rng(seed)) & (y >= 0)
        p = solve(LabelProblem(W, np.where(kept, y, -1)), "harmonic", detect_noise=False)
        scored = ~kept & (y >= 0)
        scores.append(float(np.mean(p.labels[scored] == y[scored])))
    return float(np.mean(scores))


def datasets() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    digits = load_digits(return_X_y=True)
    classification = make_classification(3000, n_features=32, n_informative=8, n_classes=10,
                                         n_clusters_per_class=1, random_state=0)
    blobs = make_blobs(3000, n_features=16, centers=10, cluster_std=[1, 2, 3, 4, 5] * 2, random_state=0)
    return {"digits (1797 × 64)": digits, "make_classification (3000 × 32, 10 classes)": classification,
            "make_blobs (3000 × 16, 10 blobs, std 1 to 5)": blobs}


def issue_case() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    X[:20] += 3.0
    X = np.vstack([X, [[1e6, 1e6]]])
    rows = []
    for rule in ("mean", "median", "local"):
        _, w = graph(X, rule)
        ordinary = w[: 40 * K]  # the edges from the 40 ordinary points
        rows.append({"rule": rule, "median weight": float(np.median(ordinary)), "min weight": float(ordinary.min()),
                     "share above 0.999": float(np.mean(ordinary > 0.999))})
    return pd.DataFrame(rows)


def main(argv: list[str]) -> None:
    report = Report("sigma", "Gaussian σ: mean, median or local scale of the k-th neighbour distance")
    rows = []
    for name, (X, y) in datasets().items():
        for rule in ("mean", "median", "local"):
            rows.append({"data": name, "σ rule": rule, "accuracy": accuracy(X, y, rule, False),
                         "accuracy with one outlier at 1e6": accuracy(X, y, rule, True)})
    report.table("harmonic accuracy, 10-NN graph, 10 labels per class (mean of 5 seeds)", pd.DataFrame(rows),
                 floatfmt=".4f")
    report.table("the issue's case: 40 points in two blobs and one at 1e6, weights of the 400 ordinary edges",
                 issue_case(), floatfmt=".7f")
    report.save()
