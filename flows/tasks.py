"""The pipeline's stages as Prefect tasks, each doing one thing.

Store I/O tasks declare retries (a database can hiccup); the pure, expensive graph
computation declares a cache on its inputs, so re-running a flow on unchanged features
does not search neighbours again (inside a flow run: Prefect keeps the cache). The
decorator is ``flows.direct.task``: Prefect's options, Prefect imported on first use.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pyarrow as pa

import solvers
from graphstore import BuiltGraph, GraphStore, LabelRunRecord, StoreUnavailable
from graphstore.port import OnProgress
from labelling import components
from labelling.components import ComponentPlan
from labelling.problems import ExportedProblem, graph_scaling, label_problem
from similarity.spec import GraphSpec

from .direct import task


def is_transient(error: BaseException | None) -> bool:
    """Errors worth retrying: the store did not answer or asked to try again (the port's
    ``StoreUnavailable``, which each adapter raises for its driver's transient errors),
    and the network's own. Bad input and bugs fail at once."""
    return isinstance(error, (StoreUnavailable, ConnectionError, TimeoutError))


def _never_cached() -> dict[str, Any]:
    from prefect.cache_policies import NO_CACHE

    return dict(cache_policy=NO_CACHE)


# Store I/O: up to 3 retries 2 s apart (±50% jitter in a flow run) on transient errors
# only; never cached (reads must see the store as it is now, writes must happen), which
# also keeps Prefect from hashing the store argument: a Neo4j store holds the driver's
# locks, and the failed hash logged a 30-line traceback per task on every Neo4j run.
# Equal delays, not a backoff of 1, 2 and 4 s: Prefect's UI shows a list of delays as
# "Retry Delay: NaNs" on every task run's page (tests/test_prefect_ui.py), and the driver
# already backs off inside each try (Neo4jStore.from_uri).
STORE_RETRIES = dict(retry_delays=(2, 2, 2), retry_if=is_transient, prefect_options=_never_cached)


@task("ingest", **STORE_RETRIES)
def ingest_records(store: GraphStore, dataset: str, nodes: pa.Table) -> int:
    """Write valid records (``ParsedRecords.nodes``) as nodes (upsert by key)."""
    return store.write_nodes(dataset, nodes)


@task("build-edges", **STORE_RETRIES)
def build_edges(store: GraphStore, dataset: str, spec: GraphSpec, on_progress: OnProgress | None = None) -> BuiltGraph:
    """Replace the dataset's similarity relationships with the graph ``spec`` describes
    (the store builds it: GDS on Neo4j, ``similarity`` on the embedded store). A graph of
    the user's edges alone (kind ``edges``) builds none: graphlabel's own relationships of
    the dataset are deleted (they are no longer what it is labelled over) and the count is
    of the user's edges. The user's edges themselves are never written. Its steps go to
    ``on_progress`` (``graphstore.port.OnProgress``)."""
    return store.build_edges(dataset, spec, on_progress)


@task("read-user-edges", **STORE_RETRIES)
def count_user_edges(store: GraphStore, dataset: str, spec: GraphSpec) -> int:
    """How many of the user's edges ``spec`` names the dataset has, read and checked
    (``GraphStore.read_user_edges``: bad weights raise); ``ValueError`` when there are none."""
    assert spec.edges_type is not None
    edges = store.read_user_edges(dataset, spec.edges_type, spec.edges_property)
    if not edges.num_rows:
        raise ValueError(f"dataset {dataset!r} has no {spec.edges_type} edges between its nodes: load them"
                         f" (graphlabel ingest-edges FILE --dataset {dataset} --type {spec.edges_type}), or check"
                         " the relationship type's spelling")
    return edges.num_rows


@task("export", **STORE_RETRIES)
def export_problem(store: GraphStore, dataset: str) -> ExportedProblem:
    """Read the graph the dataset is labelled over (``GraphStore.read_graph``: the similarity
    relationships, and the user's edges its graph build names) into a LabelProblem, its
    numeric features scaled as the graph's distances were; stops on missing or one-class
    labels."""
    scaling = graph_scaling(store.read_graph_build(dataset))
    return label_problem(store.read_graph(dataset, with_features=True), dataset, scaling)


@task("plan-components")
def plan_components(problem: solvers.LabelProblem, batch_nodes: int) -> ComponentPlan:
    """Split the graph into connected components, packed into solver batches."""
    return components.plan_components(problem, batch_nodes)


class _StoppedAtWarning(logging.Filter):
    """Lowers to WARNING the line "Finished in state Cancelled(...: the run asked its solves to
    stop)" of a solve task run that its run stopped (``solve_problem``): Prefect's engine logs
    every end but Completed at ERROR, and a run's Logs tab showed a red line for each batch
    stopped beside the batch that failed. Other cancellations keep Prefect's level."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.msg if isinstance(record.msg, str) else ""
        if (record.levelno == logging.ERROR and message.startswith("Finished in state Cancelled(")
                and solvers.SolverStopped.WHY in message):
            record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        return True


_STOPPED_AT_WARNING = _StoppedAtWarning()


def _log_stopped_at_warning() -> None:
    """Log the end of a task run its run stopped at WARNING in this process (``_StoppedAtWarning``;
    a Dask worker's task runs log from the worker). Idempotent."""
    logger = logging.getLogger("prefect.task_runs")
    if _STOPPED_AT_WARNING not in logger.filters:
        logger.addFilter(_STOPPED_AT_WARNING)


@task("solve")
def solve_problem(problem: solvers.LabelProblem, solver: str, params: dict[str, Any]) -> solvers.Prediction:
    """Run one solver on one (batch) problem."""
    from .cluster_stop import stoppable_on_worker
    from .direct import in_flow_run, run_logger

    start = time.perf_counter()
    try:
        with stoppable_on_worker():  # on a Dask worker: the run's stop request is on the scheduler
            prediction = solvers.solve(problem, method=solver, **params)
    except solvers.SolverStopped as stopped:
        if not in_flow_run():
            raise
        # Another batch failed or the run was interrupted: this one did not fail. As a Prefect
        # task run it ends Cancelled, so the UI shows the batch that failed in red and the
        # ones it stopped in grey, with one line each where a raised error logged two, a
        # warning where Prefect logs an error.
        from prefect.states import Cancelled

        _log_stopped_at_warning()
        return Cancelled(message=str(stopped))  # type: ignore[return-value]  # Prefect's run takes a state
    # one line per batch: the progress of a long solve stage
    run_logger().info("solved %s nodes (%s given labels) with %s in %.2f s", f"{problem.n_nodes:,}",
                      f"{int(problem.labeled.sum()):,}", solver, time.perf_counter() - start)
    return prediction


@task("write-predictions", **STORE_RETRIES)
def write_predictions(store: GraphStore, dataset: str, rows: pa.Table) -> int:
    """Set predicted_label, label_confidence, label_noise, label_run_id, label_solver,
    labelled_at and the scores on the nodes of these prediction rows
    (``labelling.problems.prediction_rows``)."""
    return store.write_predictions(dataset, rows)


def _record_run_options() -> dict[str, Any]:
    # named by the status it writes: a run records itself twice ("running" at the start,
    # then "completed" or "failed"), and two task runs both named "record-run" read alike
    return {**_never_cached(), "task_run_name": "record-run: {run.status}"}


@task("record-run", **{**STORE_RETRIES, "prefect_options": _record_run_options})
def record_run(store: GraphStore, run: LabelRunRecord) -> None:
    """Write the run's LabelRun node (idempotent: keyed by run id)."""
    store.write_run(run)
