"""How far the default harmonic's confidences (or another solver's, ``--solver``) can be
trusted when few labels are given: the share of its wrong predictions that it calls
near-certain, next to LabelSpreading's.

    python -m bench calibration                         # this checkout
    python -m bench calibration --against /tmp/old      # also that checkout (the code before)
    python -m bench calibration --flipped 0.1           # 10% of the given labels flipped
    python -m bench calibration --solver nmf            # another solver, with its defaults

scikit-learn's wine, weka's iris, glass and segment, WDBC and digits; a Gaussian 10-NN graph
(``similarity.knn_graph(X, 10)``) on the z-scored features (digits' pixels as they are,
``_common.real_set``); each node labelled with probability 5% or 10% (at least one label per
class, ``labelling.sampling.random_labels``), 10 draws (seed s: ``default_rng(s)``); all
labels true, or with ``--flipped F`` that share of the given labels flipped to another class
(``labelling.sampling.flip_labels``, the same generator after the draw), the unlabelled
nodes scored against their true class. On the unlabelled nodes: accuracy, mean confidence, ECE (10 equal bins,
``labelling.evaluation``), the share of the wrong predictions at confidence ≥ 0.99, and the
AUROC of confidence for telling right from wrong (a review queue's order). The peer is
scikit-learn's ``LabelSpreading`` (α = 0.2, its default) on the same W, with the largest of
its ``label_distributions_`` as the confidence.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from ._common import Report

SETS = ("wine", "iris", "glass", "segment", "wdbc", "digits")
FRACTIONS = (0.05, 0.1)
SEEDS = 10
SURE = 0.99

# One data set's cells in a fresh interpreter with CODE first on its path (another checkout
# need not have this module, so the runner is a script, not an import of it).
RUNNER = """
import json, sys, warnings
import numpy as np
code, name, fractions, seeds, sure = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
flipped, method = float(sys.argv[6]), sys.argv[7]
sys.path.insert(0, code)
from sklearn.metrics import roc_auc_score
from labelling.evaluation import expected_calibration_error
from labelling.sampling import flip_labels, random_labels
from similarity import knn_graph
from solvers import LabelProblem, solve
if name == "wine":
    from sklearn.datasets import load_wine
    from labelling.datasets import standardise
    X, y = load_wine(return_X_y=True)
    X = standardise(X)
else:
    from labelling.datasets import load, standardise
    X, y, _ = load(name)
    X = X if name == "digits" else standardise(X)
W = knn_graph(X, 10)
rows = []
def scores(method, labels, confidence, hidden, fraction, seed, extra):
    correct = labels[hidden] == y[hidden]
    conf = confidence[hidden]
    wrong = ~correct
    rows.append({"data": name, "labelled": fraction, "seed": seed, "method": method,
                 "accuracy": float(correct.mean()), "mean confidence": float(conf.mean()),
                 "ECE": expected_calibration_error(conf, correct),
                 "wrong at >= sure": float((conf[wrong] >= sure).mean()) if wrong.any() else 0.0,
                 "AUROC": float(roc_auc_score(correct, conf)) if 0 < correct.sum() < len(correct) else float("nan"),
                 **extra})
for fraction in map(float, fractions.split(",")):
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        given = random_labels(y, fraction, rng)
        y_given = np.where(given, flip_labels(y, given, flipped, int(y.max()) + 1, rng)[0], -1)
        hidden = ~given
        # the features only for a solver that reads them (harmonic's runs stay as they were)
        p = solve(LabelProblem(W, y_given, n_classes=int(y.max()) + 1, X=None if method == "harmonic" else X), method)
        scores(method, p.labels, p.confidence, hidden, fraction, seed,
               {"temperature": float(p.info.get("temperature", 1.0)), "given labels": int(given.sum())})
print(json.dumps(rows))
"""

PEER = """
import json, sys, warnings
import numpy as np
name, fractions, seeds, sure = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
flipped = float(sys.argv[5])
from sklearn.metrics import roc_auc_score
from sklearn.semi_supervised import LabelSpreading
from bench.hard_data import _FixedGraph
from bench._common import real_set
from labelling.evaluation import expected_calibration_error
from labelling.sampling import flip_labels, random_labels
from similarity import knn_graph
if name == "wine":
    from sklearn.datasets import load_wine
    from labelling.datasets import standardise
    X, y = load_wine(return_X_y=True)
    X = standardise(X)
else:
    X, y = real_set(name)
W = knn_graph(X, 10)
ids = np.arange(W.shape[0], dtype=float)[:, None]
rows = []
for fraction in map(float, fractions.split(",")):
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        given = random_labels(y, fraction, rng)
        y_given = np.where(given, flip_labels(y, given, flipped, int(y.max()) + 1, rng)[0], -1)
        hidden = ~given
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = LabelSpreading(kernel=_FixedGraph(W), alpha=0.2, max_iter=30).fit(ids, y_given)
        P = np.nan_to_num(model.label_distributions_)
        labels, conf = model.transduction_[hidden], P.max(axis=1)[hidden]
        correct = labels == y[hidden]
        wrong = ~correct
        rows.append({"data": name, "labelled": fraction, "seed": seed, "method": "LabelSpreading α=0.2",
                     "accuracy": float(correct.mean()), "mean confidence": float(conf.mean()),
                     "ECE": expected_calibration_error(conf, correct),
                     "wrong at >= sure": float((conf[wrong] >= sure).mean()) if wrong.any() else 0.0,
                     "AUROC": float(roc_auc_score(correct, conf)) if 0 < correct.sum() < len(correct)
                     else float("nan"), "given labels": int(given.sum())})
print(json.dumps(rows))
"""


def _run(arguments: list[str], code: Path | None) -> list[dict]:
    # this checkout's weka files for every checkout's runs (labelling/datasets.py reads GRAPHLABEL_DATA)
    data = {"GRAPHLABEL_DATA": os.environ.get("GRAPHLABEL_DATA", str(Path(__file__).resolve().parent.parent / ".data"))}
    env = {**os.environ, **data, **({"PYTHONPATH": str(code)} if code is not None else {})}
    out = subprocess.run([sys.executable, "-c", *arguments], env=env, check=True, capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parent.parent)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench calibration")
    parser.add_argument("--against", type=Path, help="another checkout of graphlabel: its solver runs too")
    parser.add_argument("--solver", default="harmonic",
                        help="the solver measured, with its defaults (default: harmonic)")
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument("--only", help="comma-separated data sets (default: all)")
    parser.add_argument("--flipped", type=float, default=0.0,
                        help="the share of the given labels flipped to another class (default: 0)")
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent.parent
    codes = [("this checkout", here)] + ([("--against", args.against.resolve())] if args.against else [])
    fractions = ",".join(map(str, FRACTIONS))
    rows = []
    for name in args.only.split(",") if args.only else SETS:
        for code_name, code in codes:
            arguments = [RUNNER, str(code), name, fractions, str(args.seeds), str(SURE), str(args.flipped), args.solver]
            for row in _run(arguments, code):
                rows.append({**row, "method": f"{args.solver} ({code_name})"})
        rows += _run([PEER, name, fractions, str(args.seeds), str(SURE), str(args.flipped)], None)
        print(f"  {name} done", flush=True)
    frame = pd.DataFrame(rows)
    columns = ["accuracy", "mean confidence", "ECE", "wrong at >= sure", "AUROC"]
    table = frame.groupby(["data", "labelled", "method"], sort=False)[columns].mean().reset_index()
    table = table.rename(columns={"wrong at >= sure": f"wrong predictions at confidence ≥ {SURE}"})
    # one results file per setting: the clean run's stays beside the flipped ones
    results, flips = ("calibration", "") if args.flipped == 0 else (
        f"calibration_flipped_{round(100 * args.flipped)}", f", {args.flipped:.0%} of the given labels flipped")
    results += "" if args.solver == "harmonic" else f"_{args.solver}"
    report = Report(results, f"Confidence with few labels{flips}: {args.solver}'s defaults against LabelSpreading")
    report.table(f"Unlabelled nodes, mean of {args.seeds} draws; the code: this checkout"
                 + (", and --against (another checkout, the code before)" if args.against else ""), table)
    overall = frame.groupby("method", sort=False)[columns].mean().reset_index()
    report.table("Over every data set and fraction", overall)
    report.table("Every draw", frame)
    print(f"written to {report.save()}")
