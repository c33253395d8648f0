"""`graphlabel predict`'s model on many new rows: the stored max-margin model (numpy,
``labelling.run_model.RunModel.predict_with_proba``) against libsvm's own evaluation of the
same SVM (scikit-learn's ``SVC.predict``, C: the labels alone, from one evaluation of the
kernel), in the same run.

    python -m bench predict_rows                        # 20k and 200k rows, 3 rounds
    python -m bench predict_rows --rows 1000000 --rounds 1
    python -m bench predict_rows --against /tmp/old   # also that checkout's RunModel

Model: ``solve(problem, "maxmargin")``'s fitted model on 5,000 points of ``make_blobs`` (16-d,
5 centres, cluster_std 4, seed 0), 2% of them labelled (seed 0), a 10-NN graph with the
paper's bandwidth; new rows: further points of the same blobs (the blobs are drawn once, 5,000 +
the largest ``--rows`` points, so the model depends on it). Each call runs in a fresh
process (``_common.peak_memory_call``): wall time inside it and peak resident memory above
the process with the model and the rows loaded. The rounds alternate graphlabel and libsvm;
the ratio is each round's graphlabel time over the same round's libsvm time (median). With
``--against``, another checkout's ``RunModel`` runs in each round too (its ``predict_with_proba``,
or ``predict`` then ``predict_proba`` where it has none).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
from pathlib import Path

import numpy as np
import pandas as pd

from ._common import Report, peak_memory_call

FIT_ROWS = 5000


def _graphlabel(blob: bytes, X: np.ndarray, code: str | None = None) -> str:
    """In a fresh process: the stored model of ``blob`` (from ``code``'s checkout when given)."""
    import sys

    if code is not None:  # nothing of the project is imported yet in this process
        sys.path.insert(0, code)
    from labelling.run_model import RunModel

    model = RunModel.from_bytes(blob)
    if hasattr(model, "predict_with_proba"):
        labels, _ = model.predict_with_proba(X)
    else:  # a checkout before it
        labels, _ = model.predict(X), model.predict_proba(X)
    return hashlib.md5(labels.astype(np.int64).tobytes()).hexdigest()


def _libsvm(svm, X: np.ndarray) -> str:
    # labels only, one kernel evaluation in C: less than graphlabel's labels and probabilities
    return hashlib.md5(svm.predict(X).astype(np.int64).tobytes()).hexdigest()


def _model(n_new: int):
    from sklearn.datasets import make_blobs

    from labelling.run_model import RunModel
    from similarity import knn_graph
    from solvers import LabelProblem
    from solvers.maxmargin import MaxMarginGraphCut, paper_bandwidth

    X, y = make_blobs(FIT_ROWS + n_new, n_features=16, centers=5, cluster_std=4.0, random_state=0)
    fit = X[:FIT_ROWS]
    given = np.where(np.random.default_rng(0).random(FIT_ROWS) < 0.02, y[:FIT_ROWS], -1)
    W = knn_graph(fit, 10, weights="gaussian", sigma=paper_bandwidth(fit))
    fitted = MaxMarginGraphCut().fit(LabelProblem(W, given, n_classes=5, X=fit))
    model = RunModel.from_fitted(fitted, np.arange(FIT_ROWS).astype(str), np.arange(5).astype(str))
    return model, fitted.svm_, X[FIT_ROWS:]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench predict_rows")
    parser.add_argument("--rows", type=lambda s: [int(v) for v in s.split(",")], default=[20_000, 200_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", type=Path, help="another checkout of graphlabel: its RunModel runs too")
    args = parser.parse_args(argv)
    report = Report("predict_rows", "graphlabel predict's stored model against libsvm on new rows")
    load_start = os.getloadavg()[0]
    model, svm, X_all = _model(max(args.rows))
    blob = model.to_bytes()
    rows = []
    for n in args.rows:
        X = X_all[:n]
        for r in range(args.rounds):
            for name, fn, call in (("graphlabel RunModel.predict_with_proba", _graphlabel, (blob, X)),
                                   ("libsvm SVC.predict, labels only (peer)", _libsvm, (svm, X)),
                                   *([("graphlabel --against", _graphlabel, (blob, X, str(args.against.resolve())))]
                                     if args.against else [])):
                seconds, peak, digest = peak_memory_call(fn, *call)
                rows.append({"rows": n, "round": r, "run": name, "seconds": seconds, "peak MiB": peak,
                             "labels md5": digest[:10]})
    frame = pd.DataFrame(rows)
    runs = frame.pivot_table(index=["rows", "round"], columns="run", values="seconds")
    peer = "libsvm SVC.predict, labels only (peer)"
    summary = []
    for n, group in frame.groupby("rows", sort=False):
        for name, part in group.groupby("run", sort=False):
            summary.append({"rows": n, "run": name, "seconds (median)": part["seconds"].median(),
                            "peak MiB (max)": part["peak MiB"].max(),
                            "× libsvm (same round, median)": statistics.median(
                                (runs.loc[n][name] / runs.loc[n][peer]).tolist()),
                            "same labels as libsvm": part["labels md5"].nunique() == 1
                            and set(part["labels md5"]) == set(group["labels md5"])})
    report.table(f"Medians of {args.rounds} rounds; model: {len(model.support_keys)} support vectors, rbf kernel, "
                 "16 features, 5 classes", pd.DataFrame(summary))
    report.table("Every run", frame)
    report.note(f"load average (1 min) {load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, on"
                f" {os.cpu_count()} cores; each call a fresh process, its imports before the clock.")
    report.save()
