"""The labelling pipeline as Prefect flows: ingest → build edges → export → solve → write back.

Flows take plain, serialisable parameters (a store URI, not a connection), so the same
functions serve the CLI, the tests and a Prefect deployment.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from graphlabel.records import ParsedRecords, parse_records
from graphstore import GraphStore, LabelRunRecord, check_dataset_name, open_store

from .tasks import (
    GRAPH_KINDS,
    StageClock,
    export_problem,
    ingest_records,
    native_knn_edges,
    read_features,
    record_run,
    similarity_graph,
    solve_problem,
    write_edges,
    write_predictions,
)


def graph_spec(graph: str = "knn", k: int = 10, metric: str = "euclidean", weights: str = "gaussian",
               delta: float | None = None, sigma: float | None = None) -> dict[str, Any]:
    """The similarity-graph parameters as the `similarity_graph` task takes them."""
    if graph == "knn":
        return {"graph": "knn", "k": k, "metric": metric, "weights": weights, "sigma": sigma}
    if graph == "delta":
        if delta is None:
            raise ValueError("a δ-graph needs --delta")
        return {"graph": "delta", "delta": delta, "metric": metric,
                "weights": "binary" if weights == "gaussian" and sigma is None else weights, "sigma": sigma}
    if graph in ("mincut3", "delta0", "delta_half"):
        return {"graph": graph, "metric": metric}
    raise ValueError(f"graph must be one of {GRAPH_KINDS}, got {graph!r}")


def ingest_parsed(store: GraphStore, dataset: str, records: ParsedRecords, rejects_path: Path | None) -> dict:
    """Store the valid records and write the rejected ones (with reasons) to ``rejects_path``."""
    stored = ingest_records(store, dataset, records)
    summary = {"dataset": dataset, "stored": stored, "rejected": len(records.rejects), "rejects_file": None}
    if len(records.rejects) and rejects_path is not None:
        rejects_path.parent.mkdir(parents=True, exist_ok=True)
        records.rejects.to_csv(rejects_path, index=False)
        summary["rejects_file"] = str(rejects_path)
    if len(records.rejects):
        get_run_logger().warning(
            "%d of %d records rejected: %s", len(records.rejects), stored + len(records.rejects),
            "; ".join(records.rejects["reason"].head(5)),
        )
    return summary


@flow(name="ingest-records")
def ingest_flow(source: str, dataset: str, key: str, features: str, label: str | None = None,
                store_uri: str | None = None, rejects_path: str | None = None) -> dict:
    """Ingest a CSV/Parquet file: valid rows become nodes, rejected rows go to the rejects file."""
    check_dataset_name(dataset)
    records = parse_records(source, key=key, features=features, label=label)
    rejects = Path(rejects_path) if rejects_path else Path(f"{dataset}.rejects.csv")
    with open_store(store_uri) as store:
        return ingest_parsed(store, dataset, records, rejects)


def build_edges(store: GraphStore, dataset: str, spec: dict[str, Any], clock: StageClock) -> int:
    """The build-edges stage: the database's own kNN where it has one (``store.native_knn``,
    e.g. Neo4j with ``edge_builder="gds"``), the local builder otherwise."""
    if store.native_knn and spec["graph"] == "knn":
        return clock("build_edges", native_knn_edges, store, dataset,
                     {k: v for k, v in spec.items() if k != "graph"})
    keys, features, labels = clock("read_features", read_features, store, dataset)
    W = clock("build_edges", similarity_graph, features, labels, spec)
    return clock("write_edges", write_edges, store, dataset, keys, W)


@flow(name="build-similarity-graph")
def build_graph_flow(dataset: str, store_uri: str | None = None, graph: str = "knn", k: int = 10,
                     metric: str = "euclidean", weights: str = "gaussian", delta: float | None = None,
                     sigma: float | None = None) -> dict:
    """Build (or rebuild) the dataset's similarity relationships."""
    check_dataset_name(dataset)
    spec = graph_spec(graph, k, metric, weights, delta, sigma)
    clock = StageClock()
    with open_store(store_uri) as store:
        edges = build_edges(store, dataset, spec, clock)
    return {"dataset": dataset, "edges": edges, "spec": spec, "timings": clock.seconds}


def _scalars(info: dict[str, Any]) -> dict[str, Any]:
    """The JSON-friendly scalars of a solver's metadata (arrays and models stay out of the run node)."""
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in info.items()
            if isinstance(v, (int, float, str, bool, np.generic))}


@flow(name="label-dataset")
def labelling_flow(dataset: str, store_uri: str | None = None, solver: str = "harmonic",
                   solver_params: dict[str, Any] | None = None, build_graph: bool = True,
                   graph: str = "knn", k: int = 10, metric: str = "euclidean", weights: str = "gaussian",
                   delta: float | None = None, sigma: float | None = None) -> dict:
    """Label every node of ``dataset``: (re)build the similarity graph, export it, solve,
    write predictions and a LabelRun node. Returns the run's summary."""
    check_dataset_name(dataset)
    solver_params = dict(solver_params or {})
    run_id = str(flow_run.id or uuid.uuid4())
    started = pd.Timestamp.now(tz="UTC")
    clock = StageClock()
    with open_store(store_uri) as store:
        n_edges = None
        if build_graph:
            n_edges = build_edges(store, dataset, graph_spec(graph, k, metric, weights, delta, sigma), clock)
        exported = clock("export", export_problem, store, dataset)
        prediction = clock("solve", solve_problem, exported, solver, solver_params)
        labelled_at = pd.Timestamp.now(tz="UTC")
        clock("write_back", write_predictions, store, dataset, exported, prediction, run_id, labelled_at)
        problem = exported.problem
        metrics = {
            "n_edges": int(problem.W.nnz // 2),
            "n_unreachable": int(np.sum(prediction.labels < 0)),
            # entities ingested after the last graph build; only an inductive solver
            # (maxmargin) labels them, from their features
            "n_without_edges": int(np.sum(np.diff(problem.W.indptr) == 0)),
            "mean_confidence": float(prediction.confidence.mean()),
            "class_counts": {str(exported.classes[c]): int(n) for c, n in
                             zip(*np.unique(prediction.labels[prediction.labels >= 0], return_counts=True))},
            **{f"solver_{k}": v for k, v in _scalars(prediction.info).items()},
        }
        run = LabelRunRecord(
            run_id=run_id, dataset=dataset, solver=solver,
            parameters={"solver_params": _scalars(prediction.params), "graph": graph, "k": k,
                        "metric": metric, "weights": weights, "delta": delta, "build_graph": build_graph},
            metrics=metrics, timings=dict(clock.seconds), started_at=started,
            finished_at=pd.Timestamp.now(tz="UTC"), n_nodes=problem.n_nodes,
            n_labeled=int(problem.labeled.sum()), n_flagged=int(prediction.noisy.sum()),
        )
        clock("record_run", record_run, store, run)
    return {
        "run_id": run_id, "dataset": dataset, "solver": solver, "n_nodes": run.n_nodes,
        "n_labeled": run.n_labeled, "n_flagged": run.n_flagged, "n_edges": n_edges,
        "metrics": metrics, "timings": dict(clock.seconds), "run": run,
    }
