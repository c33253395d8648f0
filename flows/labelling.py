"""The labelling pipeline as Prefect flows: ingest → build edges → export → solve → write back.

Flows take plain, serialisable parameters (a store URI, not a connection), so the same
functions serve the CLI, the tests and a Prefect deployment.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from prefect import flow, get_run_logger, unmapped
from prefect.runtime import flow_run

from graphlabel.components import BATCH_NODES, PLAN_INFO, batch_problem, merge_predictions
from graphlabel.problems import ExportedProblem
from graphlabel.provenance import versions
from graphlabel.records import ParsedRecords, parse_records
from graphlabel.run_metrics import hold_out, holdout_reliability, run_metrics
from graphstore import GraphStore, LabelRunRecord, check_dataset_name, open_store
from graphstore.secrets import PASSWORD_ENV, redact
from solvers import Prediction

from .artifacts import publish_artifacts, publish_ingest_report
from .incremental import label_changed, record_graph_build
from .tasks import (
    GRAPH_KINDS,
    StageClock,
    export_problem,
    ingest_records,
    native_knn_edges,
    plan_components,
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
    if graph in ("sgt", "mutual_knn"):  # the papers fix their own metric and weights
        return {"graph": graph, "k": k}
    raise ValueError(f"graph must be one of {GRAPH_KINDS}, got {graph!r}")


def ingest_parsed(store: GraphStore, dataset: str, records: ParsedRecords, rejects_path: Path | None) -> dict:
    """Store the valid records and write the rejected ones (with reasons) to ``rejects_path``."""
    stored = ingest_records(store, dataset, records)
    # reject_reasons: rejected rows per kind of reason, for run reports (see records.REJECT_KINDS)
    summary = {"dataset": dataset, "stored": stored, "rejected": len(records.rejects),
               "reject_reasons": records.reject_counts, "rejects_file": None}
    if len(records.rejects) and rejects_path is not None:
        rejects_path.parent.mkdir(parents=True, exist_ok=True)
        records.rejects.to_csv(rejects_path, index=False)
        summary["rejects_file"] = str(rejects_path)
    if len(records.rejects):
        get_run_logger().warning(
            "%d of %d records rejected (%s): %s", len(records.rejects), stored + len(records.rejects),
            ", ".join(f"{kind}: {n}" for kind, n in records.reject_counts.items()),
            "; ".join(records.rejects["reason"].head(5)),
        )
    return summary


@flow(name="ingest-records")
def ingest_flow(source: str, dataset: str, key: str, features: str, label: str | None = None,
                store_uri: str | None = None, rejects_path: str | None = None,
                classes: list[str] | None = None) -> dict:
    """Ingest a CSV/Parquet file: valid rows become nodes, rejected rows go to the rejects file.

    ``classes`` lists the allowed labels (None: any); see ``graphlabel.records.parse_records``.
    Returns ``dataset``, ``stored``, ``rejected``, ``reject_reasons`` (rejected rows per kind
    of reason) and ``rejects_file``."""
    check_dataset_name(dataset)
    records = parse_records(source, key=key, features=features, label=label, classes=classes)
    rejects = Path(rejects_path) if rejects_path else Path(f"{dataset}.rejects.csv")
    with open_store(store_uri) as store:
        summary = ingest_parsed(store, dataset, records, rejects)
    publish_ingest_report(summary)
    return summary


def build_edges(store: GraphStore, dataset: str, spec: dict[str, Any], clock: StageClock) -> int:
    """The build-edges stage: the database's own kNN where it has one (``store.native_knn``,
    e.g. Neo4j with ``edge_builder="gds"``), the local builder otherwise."""
    if store.native_knn and spec["graph"] == "knn":
        n_edges = clock("build_edges", native_knn_edges, store, dataset,
                        {k: v for k, v in spec.items() if k != "graph"})
        record_graph_build(store, dataset, spec)  # σ is read back from the weights when needed
        return n_edges
    keys, features, labels = clock("read_features", read_features, store, dataset)
    W, sigma = clock("build_edges", similarity_graph, features, labels, spec)
    n_edges = clock("write_edges", write_edges, store, dataset, keys, W)
    # what incremental runs need to give new entities edges weighted like these
    record_graph_build(store, dataset, spec, sigma)
    return n_edges


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


#: Solvers that must see the whole graph at once: maxmargin fits one classifier on the
#: features of every node and labels the nodes without edges from it.
WHOLE_GRAPH_SOLVERS = ("maxmargin", "auto")  # auto: one choice per run, not one per batch


def solve_by_component(exported: ExportedProblem, solver: str, params: dict[str, Any],
                       split: bool = True, batch_nodes: int = BATCH_NODES) -> Prediction:
    """The solve stage: one mapped ``solve`` task per batch of connected components (see
    ``graphlabel.components``), run by the flow's task runner (threads by default, a Dask
    cluster with ``DaskTaskRunner``), merged into one whole-graph prediction."""
    problem = exported.problem
    if not split or solver in WHOLE_GRAPH_SOLVERS:
        return solve_problem(problem, solver, params)
    plan = plan_components(problem, batch_nodes)
    parts = [batch_problem(problem, nodes) for nodes in plan.batches]
    predictions = solve_problem.map([part.problem for part in parts], unmapped(solver), unmapped(params)).result()
    return merge_predictions(problem, plan, list(zip(parts, predictions)), solver)


def _scalars(info: dict[str, Any]) -> dict[str, Any]:
    """The JSON-friendly scalars of a solver's metadata (arrays and models stay out of the run node)."""
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in info.items()
            if isinstance(v, (int, float, str, bool, np.generic))}


def _failed(store: GraphStore, run: LabelRunRecord, error: BaseException, clock: StageClock) -> None:
    """Mark the run failed (best effort: the store may be what failed). The message is
    redacted: a store URI or password in an exception never reaches the run node."""
    message = redact(f"{type(error).__name__}: {error}", os.environ.get(PASSWORD_ENV))[:2000]
    try:
        store.write_run(replace(run, status="failed", error=message, timings=dict(clock.seconds),
                                finished_at=pd.Timestamp.now(tz="UTC")))
    except Exception as store_error:  # noqa: BLE001 - the original error is the one to raise
        get_run_logger().error("could not mark run %s failed: %s", run.run_id, redact(store_error))


@flow(name="label-dataset")
def labelling_flow(dataset: str, store_uri: str | None = None, solver: str = "harmonic",
                   solver_params: dict[str, Any] | None = None, build_graph: bool = True,
                   graph: str = "knn", k: int = 10, metric: str = "euclidean", weights: str = "gaussian",
                   delta: float | None = None, sigma: float | None = None,
                   split_components: bool = True, batch_nodes: int = BATCH_NODES, full: bool = False,
                   hops: int = 2, holdout_fraction: float = 0.0, holdout_seed: int = 0,
                   keep_runs: int | None = None, publish: bool = True) -> dict:
    """Label the nodes of ``dataset`` and record the run.

    Full run (``full=True``): (re)build the similarity graph when ``build_graph``, export
    it, hide a ``holdout_fraction`` of the given labels to score the run on, solve (per
    batch of connected components when ``split_components``), write every node's
    prediction (a run with a holdout is always full). Incremental run (``full=False``, the default): label only what changed since the nodes
    were last labelled (``flows.incremental.label_changed``: new entities get edges to the
    existing graph, the region around the changes is solved with its boundary fixed);
    falls back to a full run when there is no previous run or the graph must be rebuilt.

    The ``LabelRun`` node is written ``running`` first, then ``completed`` with metrics,
    timings and versions, or ``failed`` with the (redacted) error; a half-written run is
    never marked completed. Every write is keyed by node and run id, so re-running a
    failed run converges to the result of one clean run. With ``publish``, the run's
    metrics table, report and plot become Prefect artifacts; ``keep_runs`` prunes the
    dataset's older LabelRun nodes (``GraphStore.prune_runs``). Returns the run's summary.
    """
    check_dataset_name(dataset)
    # a scored run needs every label in play: it is a full run
    full = full or bool(holdout_fraction)
    solver_params = dict(solver_params or {})
    spec = graph_spec(graph, k, metric, weights, delta, sigma)
    run_id = str(flow_run.id or uuid.uuid4())
    clock = StageClock()
    parameters = {"solver_params": _scalars(solver_params), "requested_solver_params": _scalars(solver_params),
                  "graph": graph, "k": k, "metric": metric,
                  "weights": weights, "delta": delta, "build_graph": build_graph, "full": full,
                  "holdout_fraction": holdout_fraction, "split_components": split_components}
    with open_store(store_uri) as store:
        run = LabelRunRecord(run_id=run_id, dataset=dataset, solver=solver, parameters=parameters, metrics={},
                             timings={}, started_at=pd.Timestamp.now(tz="UTC"), finished_at=None, n_nodes=0,
                             n_labeled=0, n_flagged=0, status="running",
                             versions=versions(store=store.dialect, solver=solver))
        record_run(store, run)
        try:
            outcome = _label(store, dataset, solver, solver_params, spec, clock, run_id, build_graph=build_graph,
                             full=full, hops=hops, split=split_components, batch_nodes=batch_nodes,
                             holdout_fraction=holdout_fraction, holdout_seed=holdout_seed)
        except BaseException as error:
            _failed(store, run, error, clock)
            raise
        exported, prediction, holdout, extra = outcome
        # the component split's counts under their own names, the solver's metadata as solver_*
        plan = {name: prediction.info.get(name) for name in PLAN_INFO}
        metrics = {**run_metrics(exported, prediction, holdout), **extra,
                   "n_components": plan["n_components"], "n_solver_batches": plan["n_batches"],
                   "n_unlabeled_components": plan["n_unlabeled_components"],
                   "n_single_class_nodes": plan["n_single_class_nodes"],
                   **{f"solver_{k}": v for k, v in _scalars(prediction.info).items() if k not in PLAN_INFO},
                   **auto_metrics(prediction)}
        run = replace(run, status="completed", metrics=metrics, timings=dict(clock.seconds),
                      parameters={**parameters, "solver_params": _scalars(prediction.params)},
                      finished_at=pd.Timestamp.now(tz="UTC"), n_nodes=exported.problem.n_nodes,
                      n_labeled=int(exported.problem.labeled.sum()), n_flagged=int(prediction.noisy.sum()))
        clock("record_run", record_run, store, run)
        if keep_runs is not None:
            store.prune_runs(dataset, keep_runs)
    artifacts = {}
    if publish:
        reliability = holdout_reliability(prediction, holdout) if holdout is not None and len(holdout.nodes) else None
        artifacts = publish_artifacts(run, reliability)
    return {
        "run_id": run_id, "dataset": dataset, "solver": solver, "n_nodes": run.n_nodes,
        "n_labeled": run.n_labeled, "n_flagged": run.n_flagged, "n_edges": extra.get("n_edges_built"),
        "metrics": metrics, "timings": dict(clock.seconds), "run": run, "artifacts": artifacts,
    }


def auto_metrics(prediction: Prediction) -> dict[str, Any]:
    """``--solver auto``'s choice and every candidate's cross-validated score, for the run's
    metrics (and so its report and provenance)."""
    record = prediction.info.get("auto")
    if not record:
        return {}
    return {"auto_chosen": record["chosen"], "auto_folds": record["folds"],
            "auto_budget_harmonic_runs": record["budget_harmonic_runs"],
            "auto_scores": {c["name"]: (round(c["score"], 4) if c["score"] is not None else c["status"])
                            for c in record["candidates"]}}


def solver_change(store: GraphStore, dataset: str, run_id: str, solver: str,
                  solver_params: dict[str, Any]) -> str | None:
    """Why this run must relabel every node: its solver or solver parameters differ from
    the dataset's last completed run (an incremental run would keep the old solver's
    labels outside the changed region). None when they are the same or there is no run."""
    runs = store.read_runs(dataset=dataset, limit=20)
    runs = runs[(runs["status"] == "completed") & (runs["run_id"] != run_id)]
    if runs.empty:
        return None
    last = runs.iloc[0]
    if last["solver"] != solver:
        return f"the solver changed ({last['solver']} → {solver}): every node is relabelled"
    before = (last["parameters"] or {}).get("requested_solver_params")
    if before is not None and before != _scalars(solver_params):
        return f"the solver parameters changed ({before} → {_scalars(solver_params)}): every node is relabelled"
    return None


def _label(store: GraphStore, dataset: str, solver: str, solver_params: dict[str, Any], spec: dict[str, Any],
           clock: StageClock, run_id: str, *, build_graph: bool, full: bool, hops: int, split: bool,
           batch_nodes: int, holdout_fraction: float, holdout_seed: int):
    """The run's stages; returns the exported problem, the prediction, the holdout and
    extra metrics. Only the nodes of the exported problem are written back."""
    reason = None if full else solver_change(store, dataset, run_id, solver, solver_params)
    if not full and reason is None:
        changed = clock("incremental", label_changed, store, dataset, solver, solver_params, spec, hops)
        if changed is not None:
            if len(changed.keys):
                clock("write_back", write_predictions, store, dataset, changed.exported, changed.prediction,
                      run_id, changed.read_at)
            return changed.exported, changed.prediction, None, {**changed.summary(), **{
                f"incremental_{stage}_seconds": seconds for stage, seconds in changed.timings.items()}}
    # labelled_at is when the data was read, not when the answer was written: an entity
    # ingested while the graph was built or the solver ran is then newer than its label,
    # and the next incremental run picks it up
    read_at = pd.Timestamp.now(tz="UTC")
    extra: dict[str, Any] = {"incremental": False}
    if reason is not None:
        extra["full_run_reason"] = reason
    if build_graph:
        extra["n_edges_built"] = build_edges(store, dataset, spec, clock)
    exported = clock("export", export_problem, store, dataset)
    holdout = None
    if holdout_fraction:
        exported, holdout = hold_out(exported, holdout_fraction, holdout_seed)
    prediction = clock("solve", solve_by_component, exported, solver, solver_params, split, batch_nodes)
    clock("write_back", write_predictions, store, dataset, exported, prediction, run_id, read_at)
    return exported, prediction, holdout, extra
