"""``graphlabel predict``: label records that are not in the store with a run's kept model.

A ``maxmargin`` run keeps its SVM (``labelling.run_model``); its features are the ones the
dataset was ingested with, so the records are read and validated by the same rules as
``ingest`` (``labelling.records.parse_records``: the same ``--key``, ``--features``,
``--categorical`` and ``--text``), every rejected row with its reason, and nothing is
written to the store. Categorical columns are one-hot encoded with the run's own
vocabulary (``RunModel.vocabulary``); a record holding a value outside it is rejected
(``unseen category``), since the model has no column for it.

The columns are matched by name when the model keeps them (``RunModel.feature_columns``):
without ``--features``, ``--text`` and ``--categorical`` the model's own columns are read;
with them, the same columns in another order are read in the model's order, and other
columns are refused in one line (``labelling.feature_columns``). A model without them (kept
before they were recorded) is held to the count of features only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from graphstore import GraphStore

from .feature_columns import RecordedColumns
from .records import UNSEEN_CATEGORY, NoValidRecords, ParsedRecords, first_reasons, parse_records
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


#: How many of a dataset's newest completed runs ``newest_model_run`` looks through.
MODEL_RUNS_SEARCHED = 1000


def newest_model_run(store: GraphStore, dataset: str) -> str:
    """The id of ``dataset``'s newest completed run that kept a model (a full ``maxmargin``
    run), for ``predict --dataset``. ``ValueError`` in one line when it has none, saying
    which run would keep one."""
    runs = store.read_runs(dataset=dataset, limit=MODEL_RUNS_SEARCHED, status="completed")
    kept = [row.run_id for row in runs.itertuples() if (row.metrics or {}).get("model_support_vectors")]
    if runs.empty and not store.count_nodes(dataset):  # a typo: no run to keep a model would help
        raise store.unknown_dataset(dataset)
    if not kept:
        raise ValueError(f"dataset {dataset!r} has no completed maxmargin run with a kept model among its newest"
                         f" {MODEL_RUNS_SEARCHED} runs: graphlabel label --dataset {dataset} --solver maxmargin"
                         " --full keeps one")
    return str(kept[0])


def predict_records(store: GraphStore, run: str, source: str | Path | pd.DataFrame, *, key: str,
                    features: str | list[str] | None, text: str | None = None, encoding: str = "utf-8",
                    categorical: str | list[str] | None = None, label: str | None = None) -> Predicted:
    """Label the records of ``source`` with the model of ``run``.

    ``features``, ``text`` and ``categorical`` default to the model's own columns (all three
    None) when it keeps their names; given, they must be those columns, in any order
    (``FeatureColumnsDiffer`` otherwise). A model without names holds them to its counts:
    the numeric features (numeric columns, plus 384 with ``text``) and the categorical
    columns must be as many as the model's; otherwise ``ValueError`` says both counts in
    one line. ``label`` names the file's label column, if it has one, so that the globs
    of ``features`` and ``categorical`` leave it out as ``ingest``'s do (its values are
    not used).
    """
    summary, model = run_model(store, run)
    recorded, named = model.feature_columns, (features, text, categorical) != (None, None, None)
    if recorded is not None and not named:  # the model's own columns
        features, text, categorical = list(recorded.numeric) or None, recorded.text, list(recorded.categorical) or None
    matched = None if recorded is None else RecordedColumns(
        recorded, f"run {summary['run_id']}'s model was fitted on",
        "leave --features, --text and --categorical out to read the model's columns by name; rename the file's"
        " columns that differ, and name a label column in --label (a glob such as '*' leaves it out)")
    records = parse_records(source, key=key, features=features, text=text, encoding=encoding,
                            categorical=categorical, label=label, recorded=matched)
    records, onehot = _known_categories(records, model)
    flat = records.nodes.column("features").combine_chunks()
    width = len(flat.flatten()) // max(records.n_valid, 1)
    if width != model.n_numeric:
        raise ValueError(f"the records have {width} numeric features each and the model of run {summary['run_id']}"
                         f" takes {model.n_numeric}: give the --features (and --text) the dataset"
                         f" {summary['dataset']!r} was ingested with (and --label, which a glob such as '*' leaves"
                         " out)")
    X = flat.flatten().to_numpy(zero_copy_only=False).reshape(records.n_valid, width)
    labels, probabilities = model.predict_with_proba(model.encode(X, onehot))
    confidence = probabilities[np.arange(len(labels)), labels]
    frame = pd.DataFrame({"key": records.nodes.column("key").to_pylist(),
                          "predicted_label": model.class_names[labels].astype(object),
                          "label_confidence": confidence})
    return Predicted(frame, records.rejects, str(summary["run_id"]), str(summary["dataset"]),
                     len(model.class_names))


def _known_categories(records: ParsedRecords, model: RunModel) -> tuple[ParsedRecords, np.ndarray | None]:
    """The records whose categorical values the model knows, and the one-hot of those
    values in the model's vocabulary (None without categorical columns); a record with an
    unseen value joins the rejects with its reason."""
    n_columns = len(model.vocabulary)
    stored = "categories" in records.nodes.column_names
    given = (len(records.nodes.column("categories")[0]) if records.n_valid else n_columns) if stored else 0
    if given != n_columns:
        raise ValueError(f"the records have {given} categorical columns and the run's model takes {n_columns}:"
                         " give the --categorical columns the dataset was ingested with, in the same order"
                         " (and --label, which a glob such as '*' leaves out)")
    if not n_columns:
        return records, None
    from similarity.encoding import FeatureEncoding

    flat = records.nodes.column("categories").combine_chunks().flatten()
    categories = np.asarray(flat.to_pylist(), dtype=object).reshape(records.n_valid, n_columns)
    encoding = FeatureEncoding(vocabulary=model.vocabulary)
    unseen = encoding.unseen(categories)
    if not unseen:
        return records, encoding.transform(None, categories)
    reasons: dict[int, list[str]] = {}
    for i, j, value in unseen:  # a loop over the rejected values, not the records
        reasons.setdefault(i, []).append(f"{records.categorical[j]} holds {value!r}, a value the run's model"
                                         " was not fitted with")
    bad = np.array(sorted(reasons))
    keep = np.setdiff1d(np.arange(records.n_valid), bad)
    keys = records.nodes.column("key").to_pylist()
    rows = records.rows if records.rows is not None else np.arange(records.n_valid)
    rejected = pd.DataFrame({"row": rows[bad], "key": [keys[i] for i in bad.tolist()], "kind": UNSEEN_CATEGORY,
                             "reason": ["; ".join(reasons[i]) for i in bad.tolist()]})
    rejects = pd.concat([records.rejects, rejected], ignore_index=True).sort_values("row", kind="stable")
    if not len(keep):
        raise NoValidRecords(f"none of the {len(rejects)} records can be predicted; first reasons: "
                             f"{first_reasons(rejects)}", rejects.reset_index(drop=True))
    kept = ParsedRecords(records.nodes.take(pa.array(keep)), rejects.reset_index(drop=True), rows[keep],
                         records.columns)
    return kept, encoding.transform(None, categories[keep])
