"""Incremental labelling runs (flows/incremental.py) against full runs, through the embedded
store (real Kùzu), stage by stage.

    python -m bench incremental          # digits, and 100k blobs
    python -m bench incremental --full   # also 300k blobs; 3 repeats everywhere
    python -m bench incremental --repeats 3   # digits and 100k blobs, 3 repeats

Protocol, per dataset: hold out 5% of the entities (random), ingest the other 95% and
label them with a full run (kNN graph built locally, k = 10, Gaussian weights, its σ
recorded); then ingest the 5% and run ``label_changed`` (new entities get edges to the
existing graph, the changed region is relabelled, its predictions written back). The
reference is a full run on all 100% in a store of its own: every stage of the full path
(read features, kNN graph, replace the relationships, export, solve, write back), timed
the same way. Ingest is the same for both paths and not counted.

- agreement: share of the new entities whose incremental label equals the full run's.
- speed ratio: full-run seconds / incremental-run seconds (sums of the stages; median of
  the repeats, each incremental repeat on a fresh copy of the 95% store).
- hops: the region is the changed nodes plus ``hops`` hops around them (the nodes an
  added edge reaches are always in it, so for new entities hops = 0 is hops = 1); hops = 2
  is the flow's default. The region's size is what the solve costs.
- The machine is shared: timings on 2 cores under other load vary by up to 2x between runs.

Data: scikit-learn's digits (1797 × 64, 10 labels per class); ``make_blobs`` with 10
centres in 32 dimensions (``cluster_std=7``, seed 0, as bench/knn_build.py), 1% of the
points labelled. The harmonic solver; on the blobs without leave-one-out noise flags
(``detect_noise=False``: 1,000 labels would cost 1,000 extra solves), on both paths.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from sklearn.datasets import load_digits, make_blobs

import similarity
import solvers
from flows.incremental import label_changed, record_graph_build
from graphstore import open_store
from graphstore.schemas import NODE_SCHEMA, edge_table
from labelling.options import RunOptions
from labelling.problems import label_problem, prediction_rows
from labelling.sampling import keep_per_class
from similarity.spec import GraphRequest, GraphSpec

from ._common import Report

DATASET = "bench"
K = 10
SPEC = GraphSpec(k=K)


def datasets(full: bool):
    X, y = load_digits(return_X_y=True)
    kept = keep_per_class(y, 10, np.random.default_rng(0))
    yield "digits", X, y, kept, {}
    for n in ((100_000, 300_000) if full else (100_000,)):
        X, y = make_blobs(n, n_features=32, centers=10, cluster_std=7.0, random_state=0)
        kept = np.random.default_rng(0).random(n) < 0.01
        yield f"blobs {n // 1000}k", X, y, kept, {"detect_noise": False}


def node_table(keys, X, labels) -> pa.Table:
    flat = pa.array(np.ascontiguousarray(X, dtype=np.float64).ravel())
    offsets = pa.array(np.arange(len(keys) + 1, dtype=np.int32) * X.shape[1])
    return pa.table({"key": pa.array(keys, pa.string()), "features": pa.ListArray.from_arrays(offsets, flat),
                     "label": pa.array(labels, pa.string())}).cast(NODE_SCHEMA)


def full_run(store, params: dict) -> tuple[dict[str, float], dict[str, str]]:
    """The full path, stage by stage; returns the stage seconds and key → predicted label."""
    t: dict[str, float] = {}

    def stage(name, fn, *args, **kwargs):
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        t[name] = time.perf_counter() - start
        return out

    graph = stage("read_features", store.read_subgraph, DATASET, True)
    W, sigma = stage("knn_graph", similarity.knn_graph, graph.features, K, return_sigma=True)
    stage("write_edges", store.replace_edges, DATASET, edge_table(graph.keys, W))
    record_graph_build(store, DATASET, SPEC.with_sigma(sigma))
    exported = stage("export", lambda: label_problem(store.read_subgraph(DATASET, True), DATASET))
    prediction = stage("solve", solvers.solve, exported.problem, "harmonic", **params)
    rows = prediction_rows(exported, prediction, "full", pd.Timestamp.now(tz="UTC"))
    stage("write_back", store.write_predictions, DATASET, rows)
    return t, labels_of(exported, prediction)


def labels_of(exported, prediction) -> dict[str, str]:
    names = np.where(prediction.labels >= 0, exported.classes[np.clip(prediction.labels, 0, None)], None)
    return dict(zip(exported.keys.tolist(), names.tolist()))


def incremental_run(store, params: dict, hops: int):
    start = time.perf_counter()
    result = label_changed(store, DATASET, RunOptions(solver_params=params, hops=hops), GraphRequest("knn", K))
    total = time.perf_counter() - start
    t = dict(result.timings)
    t["other"] = total - sum(t.values())
    start = time.perf_counter()
    store.write_predictions(DATASET, prediction_rows(result.exported, result.prediction, "incremental",
                                                     result.read_at))
    t["write_back"] = time.perf_counter() - start
    return t, labels_of(result.exported, result.prediction), result


def run_dataset(name, X, y, kept, params, repeats: int, hops_list, tmp: Path):
    n = len(y)
    keys = np.array([f"e{i}" for i in range(n)], dtype=object)
    labels = np.where(kept, y.astype(str), None)
    rng = np.random.default_rng(1)
    new = np.zeros(n, dtype=bool)
    new[rng.choice(n, size=int(round(0.05 * n)), replace=False)] = True
    everything, old_part, new_part = (node_table(keys[m].tolist(), X[m], labels[m].tolist())
                                      for m in (np.ones(n, bool), ~new, new))
    # reference: full runs on 100%
    full_times = []
    with open_store(str(tmp / f"{name}-full"), create=True) as store:
        store.write_nodes(DATASET, everything)
        for _ in range(repeats):
            times, reference = full_run(store, params)
            full_times.append(times)
    # the 95% store after its full run, then copies of it with the 5% ingested
    base = tmp / f"{name}-95"
    with open_store(str(base), create=True) as store:
        store.write_nodes(DATASET, old_part)
        full_run(store, params)
    rows, stage_rows = [], []
    new_keys = keys[new]
    truth = dict(zip(keys.tolist(), y.astype(str).tolist()))
    full_total = statistics.median(sum(t.values()) for t in full_times)
    full_stages = {k: statistics.median(t[k] for t in full_times) for k in full_times[0]}
    for hops in hops_list:
        inc_times, result, got = [], None, None
        for _ in range(repeats):
            copy = tmp / f"{name}-inc"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(base, copy)
            with open_store(str(copy), create=True) as store:
                start = time.perf_counter()
                store.write_nodes(DATASET, new_part)
                ingest = time.perf_counter() - start
                times, got, result = incremental_run(store, params, hops)
                inc_times.append(times)
        inc_total = statistics.median(sum(t.values()) for t in inc_times)
        agree = np.array([got[k] == reference[k] for k in new_keys])
        rows.append({
            "dataset": name, "nodes": n, "new": int(new.sum()), "hops": hops,
            "region": result.n_region, "boundary": result.n_boundary, "edges added": result.n_edges_added,
            "agreement": agree.mean(), "differ": int((~agree).sum()),
            "acc. new (incr.)": np.mean([got[k] == truth[k] for k in new_keys]),
            "acc. new (full)": np.mean([reference[k] == truth[k] for k in new_keys]),
            "full s": full_total, "incremental s": inc_total, "speed ratio": full_total / inc_total,
            "ingest 5% s": ingest,
        })
        if hops == 2:
            inc_stages = {k: statistics.median(t.get(k, 0.0) for t in inc_times) for k in inc_times[0]}
            for k, v in full_stages.items():
                stage_rows.append({"dataset": name, "path": "full (100%)", "stage": k, "seconds": v})
            for k, v in inc_stages.items():
                stage_rows.append({"dataset": name, "path": "incremental (+5%)", "stage": k, "seconds": v})
    return rows, stage_rows


def main(argv: list[str]) -> None:
    full = "--full" in argv
    repeats = int(argv[argv.index("--repeats") + 1]) if "--repeats" in argv else (3 if full else 1)
    report = Report("incremental" if not full else "incremental_full",
                    "incremental runs against full runs (harmonic, Kùzu store, k = 10)")
    rows, stages = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name, X, y, kept, params in datasets(full):
            dataset_repeats = 3 if name == "digits" else repeats
            r, s = run_dataset(name, X, y, kept, params, dataset_repeats, (1, 2), Path(tmp))
            rows += r
            stages += s
            report.note(f"{name}: done ({dataset_repeats} repeat(s) per path)")
    report.table("Agreement on the new 5% and speed (seconds: sums of the stages, ingest excluded;"
                 " medians of the repeats)", pd.DataFrame(rows))
    report.table("Stages at hops = 2 (seconds, medians)", pd.DataFrame(stages))
    print(f"written to {report.save()}")
