"""How often ``explain``'s two neighbour votes point at the node's own prediction:

    python -m bench explain_vote

Per data set (weka's credit-g with its nominal attributes one-hot as ``labelling.datasets``
encodes them, scikit-learn's digits and WDBC), 5% of the nodes carry a given label (seed 0),
10% of those flipped to another class at random (the noise ``review`` is for), the rest
none. The command line does what a person does, on a fresh embedded
store: ``graphlabel ingest``, then ``graphlabel label`` with its defaults (a 10-NN graph,
harmonic with noise flags). Then ``GraphStore.explain`` for every node, and the count of
nodes whose vote's top class is not their predicted label: the vote by labels (a
neighbour's given label, else its predicted one, whole) and by scores (an unlabelled
neighbour's weight spread by its ``label_scores``), over the unlabelled nodes and over the
flagged given labels (whose prediction is their leave-one-out class). A vote is an
explanation of the label, so the fewer such nodes the better; no peer: this compares the
two ways of counting on the same run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ._common import Report

DATASETS = ("credit-g", "digits", "wdbc")
SHARE_GIVEN, SHARE_FLIPPED, SEED = 0.05, 0.10, 0


def _graphlabel(*args: str) -> None:
    """The console script of this interpreter's environment, as a person runs it."""
    command = [str(Path(sys.executable).parent / "graphlabel"), *args, "--quiet"]
    subprocess.run(command, check=True, capture_output=True, text=True, env={**os.environ, "PREFECT_API_URL": ""})


def _top(shares: dict) -> object:
    return next(iter(shares), None)


def _one(name: str, folder: Path) -> dict:
    from graphstore import open_store
    from labelling.datasets import load

    X, y, classes = load(name)
    rng = np.random.default_rng(SEED)
    frame = pd.DataFrame(X, columns=[f"x{j:03d}" for j in range(X.shape[1])])
    frame.insert(0, "id", [f"n{i:05d}" for i in range(len(y))])
    given = np.flatnonzero(rng.random(len(y)) < SHARE_GIVEN)
    flipped = rng.choice(given, int(round(SHARE_FLIPPED * len(given))), replace=False)
    labels = y.copy()
    labels[flipped] = (y[flipped] + rng.integers(1, len(classes), len(flipped))) % len(classes)
    frame["label"] = None
    frame.loc[given, "label"] = classes[labels[given]].astype(str)
    csv, store = folder / f"{name}.csv", str(folder / f"{name}.store")
    frame.to_csv(csv, index=False)
    _graphlabel("ingest", str(csv), "--dataset", "d", "--key", "id", "--features", "x*", "--label", "label",
                "--store", store)
    _graphlabel("label", "--dataset", "d", "--store", store)
    counts = {"labels: unlabelled": 0, "scores: unlabelled": 0, "labels: flagged": 0, "scores: flagged": 0}
    n_unlabelled = n_flagged = 0
    with open_store(store) as opened:
        for key in frame["id"]:  # one explain per node, as a person would ask it
            node, _ = opened.explain("d", key)
            predicted, flagged = node["predicted_label"], bool(node.get("label_noise"))
            if node["given_label"] is None:
                n_unlabelled += 1
                group = "unlabelled"
            elif flagged:
                n_flagged += 1
                group = "flagged"
            else:
                continue
            counts[f"labels: {group}"] += _top(node["class_shares"]) != predicted
            counts[f"scores: {group}"] += _top(node["score_shares"]) != predicted
    return {"data": name, "nodes": len(y), "given labels": int(frame["label"].notna().sum()),
            "unlabelled": n_unlabelled, "top class by labels ≠ prediction": counts["labels: unlabelled"],
            "by scores ≠ prediction": counts["scores: unlabelled"], "flagged": n_flagged,
            "flagged: by labels ≠ prediction": counts["labels: flagged"],
            "flagged: by scores ≠ prediction": counts["scores: flagged"]}


def main(argv: list[str]) -> None:
    report = Report("explain_vote", "explain's neighbour votes against the node's prediction")
    with tempfile.TemporaryDirectory() as folder:
        rows = [_one(name, Path(folder)) for name in DATASETS]
    report.table(f"nodes whose vote's top class is not their prediction ({SHARE_GIVEN:.0%} of the nodes"
                 f" labelled at random, {SHARE_FLIPPED:.0%} of those flipped, seed {SEED}; graphlabel label's"
                 " defaults on the embedded store)",
                 pd.DataFrame(rows), floatfmt=".0f")
    report.save()
