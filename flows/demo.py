"""`graphlabel demo`: the handwritten digits scikit-learn ships, 10 labels kept per class and
10% of those flipped on purpose, labelled end to end in the store and scored against the
labels that were hidden."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.datasets import load_digits

from graphstore import LabelRunRecord, open_store
from labelling.evaluation import noise_scores
from labelling.records import parse_records
from labelling.sampling import flip_labels, keep_per_class

from .clock import StageClock
from .direct import flow, subflow
from .labelling import ingest_parsed, labelling_flow
from .tasks import record_run

DATASET = "digits"
#: How many of the least confident predictions the demo shows.
N_SHOWN = 10


def digits_records(per_class: int, flip_fraction: float, seed: int):
    """The digits as records with most labels hidden and some flipped; returns the records,
    the true labels, the mask of kept labels and the mask of flipped ones."""
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(seed)
    kept = keep_per_class(y, per_class, rng)
    noisy, flipped = flip_labels(y, kept, flip_fraction, 10, rng)
    frame = pd.DataFrame(X, columns=[f"pixel_{i:02d}" for i in range(X.shape[1])])
    frame.insert(0, "key", [f"digit-{i:04d}" for i in range(len(y))])
    frame.insert(1, "label", pd.Series(noisy.astype(str), dtype=object).where(kept, None))
    return frame, y.astype(str), kept, flipped


def score_run(store, truth: pd.Series, kept: pd.Series, flipped: pd.Series, given: pd.Series) -> dict:
    """Score what the store now holds (the written node properties, read through the port,
    so in the store's own names: not in-memory results), and pick the least confident
    predictions for a person to look at first."""
    written = store.read_predictions(DATASET).to_pandas().set_index("key").loc[truth.index]
    hidden = ~kept
    accuracy = float((written["predicted_label"][hidden] == truth[hidden]).mean())
    noise = noise_scores(written["label_noise"][kept].fillna(False).astype(bool), flipped[kept])
    shown = written.assign(given_label=given, true_label=truth).sort_values(["label_confidence"], kind="stable")
    columns = ["given_label", "predicted_label", "label_confidence", "label_noise", "true_label"]
    least_confident = shown.head(N_SHOWN)[columns].reset_index().to_dict("records")
    return {"accuracy_hidden": accuracy, "n_hidden": int(hidden.sum()), "noise": noise,
            "least_confident": least_confident}


@flow("graphlabel-demo", flow_run_name="digits · {solver} · demo")
def demo_flow(store_uri: str | None = None, per_class: int = 10, flip_fraction: float = 0.1,
              seed: int = 0, k: int = 10, solver: str = "harmonic") -> dict:
    """Ingest the digits, build the kNN graph, label, write back, and score against the truth."""
    frame, truth, kept, flipped = digits_records(per_class, flip_fraction, seed)
    clock = StageClock()
    records = parse_records(frame, key="key", features="pixel_*", label="label")
    with open_store(store_uri, create=True) as store, clock("ingest"):
        ingest_parsed(store, DATASET, records, None)
    # digits' 64 pixels share one unit (ink, 0-16): scaling them would magnify the nearly
    # blank border pixels (harmonic 10-NN, 10 labels per class: accuracy 0.979 unscaled,
    # 0.956 standard; README "Feature scaling")
    summary = subflow(labelling_flow, DATASET, store_uri=store_uri, solver=solver, k=k, full=True, scale="none")
    index = pd.Index(frame["key"])
    with open_store(store_uri) as store:
        scores = score_run(store, pd.Series(truth, index=index), pd.Series(kept, index=index),
                           pd.Series(flipped, index=index), pd.Series(frame["label"].to_numpy(), index=index))
        run: LabelRunRecord = summary["run"]
        metrics = {**run.metrics, "accuracy_hidden": scores["accuracy_hidden"],
                   "noise_precision": scores["noise"]["precision"], "noise_recall": scores["noise"]["recall"]}
        timings = {**clock.seconds, **summary["timings"]}
        record_run(store, LabelRunRecord(**{**run.__dict__, "metrics": metrics, "timings": timings}))
    return {**summary, **scores, "timings": timings, "n_given": int(kept.sum()),
            "n_flipped": int(flipped.sum())}
