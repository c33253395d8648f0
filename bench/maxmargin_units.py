"""maxmargin's SVM on the features in the graph's units (``labelling.problems.numeric_scaling``)
against the features as stored, through the flows on the embedded store, as a user runs it:

    python -m bench maxmargin_units --against /tmp/old   # also that checkout (the code before)

scikit-learn's wine and WDBC ingested as they come (wine's columns span 0.1 to 1,000), 80%
ingested with 6 given labels per class, the default 10-NN graph (standard scaling),
``label --solver maxmargin --full`` with its defaults, then ``predict`` of the other 20%.
Accuracy on the stored nodes without a label and on the predicted records; mean of 5 draws
(seed s shuffles and draws the labels with ``numpy.random.default_rng(s)``). The peer is
scikit-learn's ``SVC`` (its defaults: rbf, gamma='scale') fitted on the given labels only,
after ``StandardScaler``: what a user without graphlabel would run.
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

SEEDS = 5
PER_CLASS = 6

# One data set's runs in a fresh interpreter with CODE first on its path (another checkout
# need not have this module, so the runner is a script, not an import of it).
RUNNER = """
import json, sys, tempfile
import numpy as np, pandas as pd
code, name, seeds, per_class = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, code)
from sklearn import datasets
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from flows.labelling import ingest_flow, labelling_flow
from graphstore import open_store
from labelling.predict import predict_records
X, y = getattr(datasets, name)(return_X_y=True)
rows = []
for seed in range(seeds):
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    X_, y_ = X[order], y[order].astype(str)
    n_fit = int(0.8 * len(y))
    given = np.zeros(len(y), bool)
    for c in np.unique(y_[:n_fit]):
        given[rng.choice(np.flatnonzero(y_[:n_fit] == c), per_class, replace=False)] = True
    frame = pd.DataFrame(X_, columns=[f"f{i:02d}" for i in range(X.shape[1])])
    frame.insert(0, "id", [f"r{i}" for i in range(len(y))])
    frame["label"] = np.where(given, y_, None)
    folder = tempfile.mkdtemp()
    frame.iloc[:n_fit].to_csv(f"{folder}/fit.csv", index=False)
    store = f"{folder}/store"
    ingest_flow(source=f"{folder}/fit.csv", dataset="d", key="id", features="f*", label="label",
                store_uri=store, rejects_path=f"{folder}/rejects.csv")
    run = labelling_flow(dataset="d", store_uri=store, solver="maxmargin", full=True, publish=False)
    hidden = ~given[:n_fit]
    with open_store(store) as opened:
        written = opened.read_predictions("d").to_pandas().set_index("key")["predicted_label"]
        stored = float((written.loc[frame["id"].iloc[:n_fit][hidden]].to_numpy() == y_[:n_fit][hidden]).mean())
        new = frame.iloc[n_fit:].drop(columns="label")
        predicted = predict_records(opened, run["run_id"], new, key="id", features="f*").frame
    svc = make_pipeline(StandardScaler(), SVC()).fit(X_[given], y_[given])
    rows.append({"seed": seed, "stored": stored,
                 "predicted": float((predicted["predicted_label"].to_numpy() == y_[n_fit:]).mean()),
                 "svc stored": float((svc.predict(X_[:n_fit][hidden]) == y_[:n_fit][hidden]).mean()),
                 "svc predicted": float((svc.predict(X_[n_fit:]) == y_[n_fit:]).mean())})
print(json.dumps(rows))
"""


def run(code: Path, name: str) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(code), "PREFECT_LOGGING_LEVEL": "ERROR"}
    out = subprocess.run([sys.executable, "-c", RUNNER, str(code), name, str(SEEDS), str(PER_CLASS)], env=env,
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench maxmargin_units")
    parser.add_argument("--against", type=Path, help="another checkout of graphlabel: its maxmargin runs too")
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent.parent
    codes = [("this checkout", here)] + ([("--against", args.against.resolve())] if args.against else [])
    rows = []
    for name in ("load_wine", "load_breast_cancer"):
        for code_name, code in codes:
            for row in run(code, name):
                rows.append({"data": name.removeprefix("load_"), "code": code_name, **row})
            print(f"  {name} ({code_name}) done", flush=True)
    frame = pd.DataFrame(rows)
    table = frame.groupby(["data", "code"], sort=False)[["stored", "predicted", "svc stored", "svc predicted"]] \
        .mean().reset_index().rename(columns={
            "stored": "maxmargin, stored nodes without a label", "predicted": "maxmargin, predict (20% held out)",
            "svc stored": "SVC on the labels, stored", "svc predicted": "SVC on the labels, predict"})
    report = Report("maxmargin_units", "maxmargin's SVM in the graph's units, through the flows")
    report.table(f"Accuracy, mean of {SEEDS} draws, {PER_CLASS} given labels per class; the code: this checkout"
                 + (", and --against (another checkout, the code before)" if args.against else ""), table)
    report.table("Every draw", frame)
    print(f"written to {report.save()}")
