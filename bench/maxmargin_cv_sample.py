"""maxmargin's cross-fitting sample (``cv_sample``): flags and calibration against the size
of the induced-label sample each fold's SVM trains on.

    python -m bench maxmargin_cv_sample                # both tables (about 7 min on 2 cores)
    python -m bench maxmargin_cv_sample --skip-large   # the real sets only (about 2 min)

1. The noise-flag benchmark's draws (``bench/noise_flags.py``: digits and segment with 10
   labels per class, WDBC with 28, 0 / 10 / 20% flipped, seeds 100-104, ``knn_graph(X, 10)``,
   segment and WDBC z-scored), maxmargin with its defaults but ``cv_sample``: None (every
   induced label), 2,000 (the default; of these sets only segment, about 2,240 unlabelled
   nodes, is sampled), 1,000 and 500 (a quarter of digits' and segment's unlabelled nodes),
   and 500 without the sample weights (``_sample_induced``'s weights replaced by the
   caller's): flags (F1, precision, recall against the flips, share of the clean labels
   flagged, average precision of ``noise_score`` per draw) and ``predict_proba`` on the
   hidden labels (ECE of the predicted label's probability, log-loss of the true label's),
   and the fitted temperature.
2. Where the default sample binds: 10k nodes of overlapping classes (scikit-learn
   ``make_classification``: 32-d, 16 informative, 10 classes, class_sep 1.5), 30 labels per
   class, 10% of them flipped, five draws (data seed d, labels seed 100 + d), the same
   columns plus the average precision of ``noise_score`` and the seconds of one solve.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from labelling.evaluation import expected_calibration_error, noise_scores
from labelling.sampling import flip_labels, keep_per_class
from similarity import knn_graph
from solvers import LabelProblem, solve

from ._common import Report, real_set

SMALL = ((None, True), (2000, True), (1000, True), (500, True), (500, False))
LARGE = ((None, True), (4000, True), (2000, True), (1000, True), (500, True), (2000, False))


def _run(problem: LabelProblem, y: np.ndarray, kept: np.ndarray, flipped: np.ndarray, sample: int | None,
         weighted: bool) -> dict:
    """One maxmargin solve with ``cv_sample=sample``; ``weighted=False`` drops the sample weights."""
    import solvers.maxmargin as maxmargin_module

    drawn = maxmargin_module._sample_induced

    def unweighted(train, y_, weight, size, rng):
        return drawn(train, y_, weight, size, rng)[0], weight

    maxmargin_module._sample_induced = drawn if weighted else unweighted  # type: ignore[assignment]
    try:
        start = time.perf_counter()
        p = solve(problem, "maxmargin", cv_sample=sample)
        seconds = time.perf_counter() - start
    finally:
        maxmargin_module._sample_induced = drawn  # type: ignore[assignment]
    from sklearn.metrics import average_precision_score

    flags = noise_scores(p.noisy[kept], flipped[kept])
    hidden = ~kept
    confidence = p.scores[hidden, p.labels[hidden]]
    flip = bool(flipped.any())
    return {"cv_sample": "all" if sample is None else f"{sample}{'' if weighted else ' unweighted'}",
            "f1": flags["f1"] if flip else np.nan, "precision": flags["precision"] if flip else np.nan,
            "recall": flags["recall"] if flip else np.nan,
            "clean flagged": float(p.noisy[kept & ~flipped].mean()),
            "average precision": average_precision_score(flipped[kept], p.noise_score[kept]) if flip else np.nan,
            "ECE": expected_calibration_error(confidence, p.labels[hidden] == y[hidden]),
            "log-loss": float(-np.mean(np.log(np.clip(p.scores[hidden, y[hidden]], 1e-12, None)))),
            "temperature": p.info["temperature"], "seconds": seconds}


def small_table() -> pd.DataFrame:
    rows = []
    for name, per_class in (("digits", 10), ("segment", 10), ("wdbc", 28)):
        X, y = real_set(name)
        W = knn_graph(X, 10)
        C = int(y.max()) + 1
        for flip in (0.0, 0.1, 0.2):
            for seed in range(100, 105):
                rng = np.random.default_rng(seed)
                kept = keep_per_class(y, per_class, rng)
                noisy, flipped = flip_labels(y, kept, flip, C, rng)
                problem = LabelProblem(W, np.where(kept, noisy, -1), X=X)
                rows += [{"data": name, "flipped": flip, **_run(problem, y, kept, flipped, s, w)} for s, w in SMALL]
        print(f"  {name} done", flush=True)
    return pd.DataFrame(rows).groupby(["data", "flipped", "cv_sample"], as_index=False, sort=False).mean()


def large_table(draws: int = 5) -> pd.DataFrame:
    from sklearn.datasets import make_classification

    rows = []
    for seed in range(draws):
        X, y = make_classification(n_samples=10_000, n_features=32, n_informative=16, n_redundant=0, n_classes=10,
                                   n_clusters_per_class=1, class_sep=1.5, random_state=seed)
        W = knn_graph(X, 10)
        rng = np.random.default_rng(100 + seed)
        kept = keep_per_class(y, 30, rng)
        noisy, flipped = flip_labels(y, kept, 0.1, 10, rng)
        problem = LabelProblem(W, np.where(kept, noisy, -1), X=X)
        rows += [_run(problem, y, kept, flipped, s, w) for s, w in LARGE]
        print(f"  draw {seed} done", flush=True)
    return pd.DataFrame(rows).groupby("cv_sample", as_index=False, sort=False).mean()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench maxmargin_cv_sample")
    parser.add_argument("--skip-large", action="store_true", help="leave out the 10k-node table")
    args = parser.parse_args(argv)
    report = Report("maxmargin_cv_sample", "maxmargin: flags and calibration against the folds' induced-label sample")
    report.table("Noise-flag benchmark draws (seeds 100-104), means; ECE and log-loss on the hidden labels",
                 small_table())
    if not args.skip_large:
        report.table("10k nodes of overlapping classes, 30 labels per class, 10% flipped, means of 5 draws",
                     large_table())
    print(f"written to {report.save()}")
