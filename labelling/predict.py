"""``graphlabel predict``: label records that are not in the store with a run's kept model.

A ``maxmargin`` run keeps its SVM (``labelling.run_model``); its features are the ones the
dataset was ingested with, so the records are read and validated by the same rules as
``ingest`` (``labelling.records.parse_records``: the same ``--key``, ``--features`` and
``--text``), every rejected row with its reason, and nothing is written to the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from graphstore import GraphStore

from .records import parse_records
from .reporting import run_summary
from .run_model import RunModel

#: Columns of ``Predicted.frame``, in order.
PREDICTED_COLUMNS = ("key", "predicted_label", "label_confidence")


@dataclass(frozen=True)
class Predicted:
    """What ``predict_records`` gives: one row per valid record (``PREDICTED_COLUMNS``),
    the rejected rows with reasons (``parse_records``' rejects), and the run used."""

    frame: pd.DataFrame
    rejects: pd.DataFrame
    run_id: str
    dataset: str
    n_classes: int


def run_model(store: GraphStore, run: str) -> tuple[dict, RunModel]:
    """The run (its whole id, or a unique start or end of one) and the model it kept.

    Raises ``NotFound`` for an unknown run, ``ValueError`` for a run that kept no model
    (not a maxmargin run, or not completed) and ``ModelVersionError`` for a model this
    version cannot read: each one line."""
    summary = run_summary(store, run)
    run_id, solver = str(summary["run_id"]), summary["solver"]
    blob = store.read_model(run_id)
    if blob is None:
        if solver != "maxmargin":
            why = f"it is a {solver} run"
        elif (summary.get("metrics") or {}).get("incremental"):
            why = ("it is an incremental run, whose SVM saw the changed region only; the last full maxmargin"
                   " run's model, or label --full, serves")
        else:
            why = f"it is {summary.get('status') or 'not completed'}, without a stored model"
        raise ValueError(f"run {run_id} kept no model ({why}): only a completed --solver maxmargin run can"
                         " predict new records")
    return summary, RunModel.from_bytes(blob)


def predict_records(store: GraphStore, run: str, source: str | Path | pd.DataFrame, *, key: str,
                    features: str | None, text: str | None = None, encoding: str = "utf-8") -> Predicted:
    """Label the records of ``source`` with the model of ``run``.

    The number of features (numeric columns, plus 384 with ``text``) must be the model's;
    otherwise ``ValueError`` says both counts in one line.
    """
    summary, model = run_model(store, run)
    records = parse_records(source, key=key, features=features, text=text, encoding=encoding)
    flat = records.nodes.column("features").combine_chunks()
    width = len(flat.flatten()) // max(records.n_valid, 1)
    if width != model.n_features:
        raise ValueError(f"the records have {width} features each and the model of run {summary['run_id']}"
                         f" takes {model.n_features}: give the --features (and --text) the dataset"
                         f" {summary['dataset']!r} was ingested with")
    X = flat.flatten().to_numpy(zero_copy_only=False).reshape(records.n_valid, width)
    labels = model.predict(X)
    confidence = model.predict_proba(X)[np.arange(len(labels)), labels]
    frame = pd.DataFrame({"key": records.nodes.column("key").to_pylist(),
                          "predicted_label": model.class_names[labels].astype(object),
                          "label_confidence": confidence})
    return Predicted(frame, records.rejects, str(summary["run_id"]), str(summary["dataset"]),
                     len(model.class_names))
