"""Feature scaling before the kNN graph (``similarity.encoding``, issue 17): none,
standard (the default) and robust, on scikit-learn's bundled data sets, and the
categorical weka ``vote.arff`` with one-hot kNN against Blum & Chawla's mincut-3 on the
information-gain-weighted Hamming distance.

    python -m bench scaling

Harmonic solver (its default noise flags), a Gaussian 10-NN graph (``build_graph`` with
the spec's defaults but ``scale``), 10 given labels per class, all of them true; accuracy
on the other nodes and the given labels flagged as noisy, mean of 5 seeds (seed s draws
the labels with ``numpy.random.default_rng(s)``). Every flag here is a false alarm.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine

from labelling.datasets import DATA_DIR
from labelling.sampling import keep_per_class
from similarity.build import build_graph
from similarity.spec import GraphSpec
from solvers import LabelProblem, solve

from ._common import Report

SEEDS = 5
VOTE = DATA_DIR / "weka" / "vote.arff"  # GRAPHLABEL_DATA's, as every loader's


def run(X: np.ndarray, y: np.ndarray, spec: GraphSpec, solver: str, categories=None) -> tuple[float, float]:
    accuracies, flagged = [], []
    for seed in range(SEEDS):
        kept = keep_per_class(y, 10, np.random.default_rng(seed))
        given = np.where(kept, y, -1)
        labels = np.array([str(v) if k else None for v, k in zip(y, kept)], dtype=object)
        W, _ = build_graph(X, labels, spec, categories=categories)
        p = solve(LabelProblem(W, given), solver)
        accuracies.append(float(np.mean(p.labels[~kept] == y[~kept])))
        flagged.append(float(p.noisy[kept].sum()))
    return float(np.mean(accuracies)), float(np.mean(flagged))


def vote() -> tuple[np.ndarray, np.ndarray]:
    from scipy.io import arff

    data, _ = arff.loadarff(VOTE)
    frame = pd.DataFrame(data).apply(lambda column: column.str.decode("utf-8"))
    y = pd.factorize(frame.pop("Class"), sort=True)[0]
    return frame.to_numpy(dtype=object), y


def main(argv: list[str]) -> None:
    report = Report("scaling", "Feature scaling and categorical columns before the similarity graph")
    rows = []
    for name, loader in (("wine (178 × 13)", load_wine), ("breast cancer (569 × 30)", load_breast_cancer),
                         ("iris (150 × 4)", load_iris), ("digits (1797 × 64)", load_digits)):
        X, y = loader(return_X_y=True)
        for scale in ("none", "standard", "robust"):
            accuracy, flagged = run(X, y, GraphSpec(scale=scale), "harmonic")
            rows.append({"data": name, "scale": scale, "accuracy": accuracy,
                         "true labels flagged (of 10 per class)": flagged})
    report.table(f"harmonic, Gaussian 10-NN, 10 true labels per class (mean of {SEEDS} seeds)", pd.DataFrame(rows))
    if VOTE.exists():
        categories, y = vote()
        rows = []
        for graph, metric, solver in (("knn", "euclidean", "harmonic"), ("mincut3", "hamming", "mincut"),
                                      ("delta_half", "hamming", "mincut")):
            spec = GraphSpec.from_options(graph, metric=metric)
            accuracy, flagged = run(np.zeros((len(y), 0)), y, spec, solver, categories=categories)
            rows.append({"graph": graph, "metric": metric, "solver": solver, "accuracy": accuracy,
                         "true labels flagged (of 20)": flagged})
        report.table(f"weka vote.arff (435 × 16 categorical), 10 true labels per party (mean of {SEEDS} seeds)",
                     pd.DataFrame(rows))
    else:
        report.note(f"{VOTE} is missing (`make data` fetches it): the categorical table is left out")
    report.save()
