"""The pipeline's stages as Prefect tasks, each doing one thing.

Store I/O tasks declare retries (a database can hiccup); the pure, expensive graph
computation declares a cache on its inputs, so re-running a flow on unchanged features
does not search neighbours again (inside a flow run: Prefect keeps the cache). The
decorator is ``flows.direct.task``: Prefect's options, Prefect imported on first use.
"""

from __future__ import annotations

import time
import warnings
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import scipy.sparse as sp

import similarity
import solvers
from graphlabel import components
from graphlabel.components import ComponentPlan
from graphlabel.problems import ExportedProblem, label_problem, prediction_rows
from graphlabel.records import ParsedRecords
from graphstore import GraphStore, LabelRunRecord, NativeEdges

from .direct import task

def is_transient(error: BaseException | None) -> bool:
    """Errors worth retrying: the store could not be reached or asked to try again
    (network, timeouts, Neo4j's ServiceUnavailable/SessionExpired/TransientError, a Kùzu
    database file locked by another process). Bad input and bugs fail at once."""
    from neo4j.exceptions import ServiceUnavailable, SessionExpired, TransientError

    if isinstance(error, (ConnectionError, TimeoutError, ServiceUnavailable, SessionExpired, TransientError)):
        return True
    return isinstance(error, RuntimeError) and "lock" in str(error).lower() and "file" in str(error).lower()


def _never_cached() -> dict[str, Any]:
    from prefect.cache_policies import NO_CACHE

    return dict(cache_policy=NO_CACHE)


# Store I/O: up to 3 retries after 1, 2 and 4 s (±50% jitter in a flow run) on transient
# errors only; never cached (reads must see the store as it is now, writes must happen),
# which also keeps Prefect from hashing the store argument: a Neo4j store holds the
# driver's locks, and the failed hash logged a 30-line traceback per task on every Neo4j run.
STORE_RETRIES = dict(retry_delays=(1, 2, 4), retry_if=is_transient, prefect_options=_never_cached)
GRAPH_KINDS = ("knn", "delta", "mincut3", "delta0", "delta_half", "sgt", "mutual_knn")


@task("ingest", **STORE_RETRIES)
def ingest_records(store: GraphStore, dataset: str, records: ParsedRecords) -> int:
    """Write the valid records as nodes (upsert by key)."""
    return store.write_nodes(dataset, records.nodes)


@task("read-features", **STORE_RETRIES)
def read_features(store: GraphStore, dataset: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Node keys, feature matrix and given labels (None where absent) of a dataset."""
    graph = store.read_subgraph(dataset, with_features=True)
    if graph.n_nodes == 0:
        raise ValueError(f"dataset {dataset!r} has no nodes: ingest records first")
    if graph.features is None:
        raise ValueError(graph.mixed_lengths(dataset))
    return graph.keys, graph.features, graph.labels


def _cached_on_inputs() -> dict[str, Any]:
    from prefect.cache_policies import INPUTS, TASK_SOURCE

    return dict(cache_policy=INPUTS + TASK_SOURCE, cache_expiration=timedelta(days=7), persist_result=True)


@task("similarity-graph", prefect_options=_cached_on_inputs)
def similarity_graph(features: np.ndarray, labels: np.ndarray,
                     spec: dict[str, Any]) -> tuple[sp.csr_matrix, float | None]:
    """Symmetric weighted graph from the features: kNN, δ, or one of Blum & Chawla's graphs
    that also read the given labels (Mincut-3, δ₀, δ½; see `similarity`); with the Gaussian
    σ a kNN graph used (None for the others), which incremental runs reuse."""
    spec = dict(spec)
    kind = spec.pop("graph", "knn")
    given = pd.Series(labels, dtype=object)
    codes = np.full(len(given), -1)
    codes[given.notna().to_numpy()] = pd.factorize(given.dropna())[0]
    if kind == "knn":
        with warnings.catch_warnings():  # the flow reports it (similarity.weights_problem), once
            warnings.simplefilter("ignore", similarity.DegenerateWeightsWarning)
            return similarity.knn_graph(features, **spec, return_sigma=True)
    if kind == "delta":
        return similarity.delta_graph(features, **spec), None
    if kind == "mincut3":
        return similarity.mincut3_graph(features, codes >= 0, metric=spec.get("metric", "euclidean")), None
    if kind in ("delta0", "delta_half"):
        rule = "zero" if kind == "delta0" else "half"
        return similarity.delta_rule_graph(features, rule, codes, metric=spec.get("metric", "euclidean")), None
    if kind == "sgt":  # Joachims (2003) eq. 22 on the directed cosine kNN similarities
        from solvers.spectral import sgt_graph

        return sgt_graph(similarity.directed_similarities(features, spec["k"]), spec["k"]), None
    if kind == "mutual_knn":  # Bergamim & Breve (2022) Eq. 6-8, as the authors' code builds it
        return similarity.mutual_knn_graph(features, spec["k"]), None
    raise ValueError(f"graph must be one of {GRAPH_KINDS}, got {kind!r}")


def edge_table(keys: np.ndarray, W: sp.spmatrix) -> pa.Table:
    """One row per undirected pair (the upper triangle of W)."""
    upper = sp.triu(W, k=1).tocoo()
    # Arrow's take gathers the key strings in C; indexing the object array and .tolist()
    # made one Python string per endpoint (14M of them for a 1M-node 10-NN graph).
    names = keys if isinstance(keys, pa.Array) else pa.array(np.asarray(keys, dtype=object), pa.string())
    return pa.table(
        {
            "source": names.take(pa.array(upper.row, pa.int64())),
            "target": names.take(pa.array(upper.col, pa.int64())),
            "weight": pa.array(upper.data.astype(np.float64)),
        }
    )


@task("write-edges", **STORE_RETRIES)
def write_edges(store: GraphStore, dataset: str, keys: np.ndarray, W: sp.spmatrix) -> int:
    """Replace the dataset's similarity relationships with the graph's edges."""
    return store.replace_edges(dataset, edge_table(keys, W))


@task("native-knn", **STORE_RETRIES)
def native_knn_edges(store: GraphStore, dataset: str, spec: dict[str, Any]) -> NativeEdges:
    """Let the database build the kNN relationships itself where it can (Neo4j GDS)."""
    return store.build_knn_edges(dataset, **spec)


@task("export", **STORE_RETRIES)
def export_problem(store: GraphStore, dataset: str) -> ExportedProblem:
    """Read the dataset's subgraph into a LabelProblem; stops on missing or one-class labels."""
    return label_problem(store.read_subgraph(dataset, with_features=True), dataset)


@task("plan-components")
def plan_components(problem: solvers.LabelProblem, batch_nodes: int) -> ComponentPlan:
    """Split the graph into connected components, packed into solver batches."""
    return components.plan_components(problem, batch_nodes)


@task("solve")
def solve_problem(problem: solvers.LabelProblem, solver: str, params: dict[str, Any]) -> solvers.Prediction:
    """Run one solver on one (batch) problem."""
    from .direct import run_logger

    start = time.perf_counter()
    prediction = solvers.solve(problem, method=solver, **params)
    # one line per batch: the progress of a long solve stage
    run_logger().info("solved %d nodes (%d given labels) with %s in %.2f s", problem.n_nodes,
                      int(problem.labeled.sum()), solver, time.perf_counter() - start)
    return prediction


@task("write-predictions", **STORE_RETRIES)
def write_predictions(
    store: GraphStore, dataset: str, exported: ExportedProblem, prediction: solvers.Prediction,
    run_id: str, labelled_at: pd.Timestamp,
) -> int:
    """Set predicted_label, label_confidence, label_noise, label_run_id, label_solver and
    labelled_at on every node of the dataset."""
    return store.write_predictions(dataset, prediction_rows(exported, prediction, run_id, labelled_at))


@task("record-run", **STORE_RETRIES)
def record_run(store: GraphStore, run: LabelRunRecord) -> None:
    """Write the run's LabelRun node (idempotent: keyed by run id)."""
    store.write_run(run)


class StageClock:
    """Wall time of each stage, in the order the flow ran them; ``after_stage(stage)`` is
    called when a stage has run (the labelling flow writes its run's heartbeat there)."""

    def __init__(self, after_stage=None) -> None:
        self.seconds: dict[str, float] = {}
        self.after_stage = after_stage

    def __call__(self, stage: str, fn, *args, **kwargs):
        start = time.perf_counter()
        try:
            result = fn(*args, **kwargs)
        finally:
            self.seconds[stage] = round(self.seconds.get(stage, 0.0) + time.perf_counter() - start, 4)
        if self.after_stage is not None:
            self.after_stage(stage)
        return result
