"""What each solver predicts at the nodes whose given label it flags as noisy: how many of
those predictions are the flagged (doubted) label itself, how many are the node's true
class, and their mean confidence.

    python -m bench flagged_predictions                 # label seed 0
    python -m bench flagged_predictions --seeds 0-4

Settings: scikit-learn's digits as loaded, ``knn_graph(X, 10)``, 10 given labels per class
(``keep_per_class``), 10% of them flipped (``flip_labels``), every solver with its defaults
(``lcsnc`` and ``auto`` left out: hundreds of harmonic runs each). A flagged label's node
should be predicted as its held-out class (``labelling/scores.py``): the doubted label
predicted back at high confidence tells a reader nothing the flag did not.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from labelling.sampling import flip_labels, keep_per_class
from similarity import knn_graph
from solvers import LabelProblem, solve

from ._common import Report, real_set, seed_range

SOLVERS = ("harmonic", "nmf", "mincut", "spectral", "maxmargin")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench flagged_predictions")
    parser.add_argument("--seeds", type=seed_range, default=range(1), help="label draws, e.g. 0-4 (default 0)")
    args = parser.parse_args(argv)
    X, y = real_set("digits")
    W = knn_graph(X, 10)
    rows = []
    for seed in args.seeds:
        rng = np.random.default_rng(seed)
        kept = keep_per_class(y, 10, rng)
        noisy_y, _ = flip_labels(y, kept, 0.1, 10, rng)
        given = np.where(kept, noisy_y, -1)
        problem = LabelProblem(W, given, X=X)
        for method in SOLVERS:
            prediction = solve(problem, method)
            flagged = prediction.noisy
            rows.append({"solver": method, "seed": seed, "flagged": int(flagged.sum()),
                         "predicted = the flagged label": int((prediction.labels[flagged] == given[flagged]).sum()),
                         "predicted = true class": int((prediction.labels[flagged] == y[flagged]).sum()),
                         "mean confidence": float(prediction.confidence[flagged].mean()) if flagged.any() else None})
    frame = pd.DataFrame(rows)
    seeds = f"{args.seeds.start}-{args.seeds.stop - 1}"
    report = Report("flagged_predictions" if len(args.seeds) == 1 and args.seeds.start == 0
                    else f"flagged_predictions_seeds_{seeds}", "The predictions at flagged given labels")
    report.note(f"Settings: `python -m bench flagged_predictions {' '.join(argv)}`; digits, 10-NN, 10 given labels"
                " per class, 10% flipped, label seeds " + seeds + ", every solver's defaults.")
    report.table("Per solver, summed over the seeds (mean confidence: mean of the seeds')",
                 frame.groupby("solver", sort=False).agg({
                     "flagged": "sum", "predicted = the flagged label": "sum", "predicted = true class": "sum",
                     "mean confidence": "mean"}).reset_index())
    report.save()
