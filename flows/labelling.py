"""The labelling pipeline as Prefect flows: ingest → build edges → export → solve → write back.

Flows take plain, serialisable parameters (a store URI, not a connection), so the same
functions serve the CLI, the tests and a Prefect deployment.
"""

from __future__ import annotations

import os
import signal
import uuid
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from graphstore import (
    GraphStore,
    LabelRunRecord,
    StoreConnectionError,
    StoreLocked,
    StoreNotFound,
    check_dataset_name,
    open_store,
)
from graphstore.processes import this_process
from graphstore.secrets import PASSWORD_ENV, redact
from labelling.components import BATCH_NODES, PLAN_INFO
from labelling.feature_columns import FeatureColumns, FeatureColumnsDiffer, dataset_columns, keep_feature_columns
from labelling.indistinguishable import copy_groups, pool_copies
from labelling.liveness import label_run_holder, mark_interrupted_runs
from labelling.options import RunOptions, run_kind
from labelling.problems import ExportedProblem, NoSuchDataset, NotEnoughLabels, check_classes, prediction_rows
from labelling.provenance import versions
from labelling.record_batches import RecordBatches, parse_record_batches
from labelling.records import (
    COUNTED_CLASSES,
    WRONG_LENGTH,
    NoValidRecords,
    ParsedRecords,
    check_source,
    first_reasons,
    given_label_counts,
    in_input_order,
    label_changes,
    missing_like_labels,
    missing_like_note,
    no_valid_records,
    reject_counts,
    replaced_reviews,
)
from labelling.reporting import headline_text, report_warnings
from labelling.run_metrics import (
    degenerate_note,
    faint_nodes_note,
    hold_out,
    holdout_reliability,
    lone_labels_note,
    run_metrics,
)
from labelling.run_model import keep_run_model
from labelling.wording import counted
from similarity.spec import REQUESTED, GraphRequest
from solvers import GRAPH_ONLY_METHODS, Prediction, SolverOutOfMemory, SolverStopped, SolverTimeLimit
from solvers.problem import DegenerateLabelingWarning

from .clock import StageClock
from .direct import STAGE_RUNS, flow, in_flow_run, run_logger, store_log_in_run
from .incremental import label_changed, options_not_built, record_graph_build
from .progress import progress, stage_progress
from .runners import thread_runner
from .solving import solve_by_component
from .stops import is_stop
from .tasks import build_edges as build_edges_task
from .tasks import count_user_edges, export_problem, ingest_records, record_run, write_predictions

#: Valid rows stored at a time by ``ingest_parsed``: Kùzu's COPY into a table that already
#: has nodes costs more per statement the more it has (1M rows in 100k batches took 11.7 s
#: against 4.2 s at once; 10M in 1M batches 70 s, kuzu 0.11.3), and 1M parsed rows of 32
#: features are ~300 MB waiting. Neo4j takes them in UNWIND batches of its own size.
WRITE_ROWS = 500_000


def ingest_parsed(store: GraphStore, dataset: str, records: ParsedRecords | RecordBatches,
                  rejects_path: Path | None, source: object = None) -> dict:
    """Store the valid records (a batch at a time for ``RecordBatches``, with progress) and
    write the rejected ones, with reasons, to ``rejects_path``. Raises ``NoValidRecords``
    (nothing stored) when no record of ``source`` is valid, and ``FeatureColumnsDiffer``
    (nothing stored) when the records' feature columns are not the dataset's
    (``labelling.feature_columns``, which the first nodes stored record)."""
    parts: list[pd.DataFrame] = []
    stored = 0
    missing_like: Counter[str] = Counter()
    labelled, classes = 0, Counter[str]()
    had_nodes, kept_columns = store.count_nodes(dataset) > 0, False

    def store_nodes(nodes: pa.Table) -> int:
        nonlocal kept_columns
        if not kept_columns:
            keep_feature_columns(store, dataset, records.columns, had_nodes)
            kept_columns = True
        return ingest_records(store, dataset, nodes)

    def tally(nodes: pa.Table) -> None:  # the given labels of the stored records, per class
        nonlocal labelled
        counts = given_label_counts(nodes)
        labelled += sum(counts.values())
        if len(classes) <= COUNTED_CLASSES:
            classes.update(counts)

    if isinstance(records, ParsedRecords):
        stored, parts = store_nodes(records.nodes) if records.n_valid else 0, [records.rejects]
        missing_like.update(missing_like_labels(records.nodes))
        tally(records.nodes)
    else:
        if not records.n_records:  # a header and no row: said alone, without meters of nothing
            raise no_valid_records(records.line_rejects, source)
        parts.append(records.line_rejects)
        pending: list[pa.Table] = []
        # two meters: the rows read and checked, and the nodes stored WRITE_ROWS at a time
        # (out of the valid rows, at most every record: the total is set to the count at the end);
        # the reading ends first, as it does
        valid = records.n_records - len(records.line_rejects)
        with progress("store", valid, "nodes") as written, \
                progress("read and check", records.n_records, "rows") as checked:
            checked.advance(len(records.line_rejects))
            for batch in records:  # parsed a batch at a time
                pending.append(batch.nodes)
                missing_like.update(missing_like_labels(batch.nodes))
                tally(batch.nodes)
                parts.append(batch.rejects)
                checked.advance(batch.n_valid + len(batch.rejects))
                valid -= len(batch.rejects)
                written.total = valid
                if sum(table.num_rows for table in pending) >= WRITE_ROWS:
                    stored += store_nodes(pa.concat_tables(pending))
                    pending = []
                    written.to(stored)
            if sum(table.num_rows for table in pending):
                stored += store_nodes(pa.concat_tables(pending))
                written.to(stored)
    rejected = in_input_order(parts)
    if not stored:
        raise no_valid_records(rejected, source)
    run_logger().info("stored %s nodes in dataset %r, rejected %s rows", f"{stored:,}", dataset,
                      f"{len(rejected):,}")
    counts = reject_counts(rejected)
    # reject_reasons: rejected rows per kind of reason, for run reports (see records.REJECT_KINDS)
    # dataset_nodes: the dataset's nodes after this ingest, so that adding a file to a dataset
    # that already holds other records says so (a newcomer's second try added 1,797 digits to
    # the 1,797 of the first, silently)
    # missing_like_labels: given labels pandas reads as missing (NA, null...), kept as classes
    # labelled, label_classes: the stored records' given labels, and per class (None: more than
    # COUNTED_CLASSES classes); removed_rejects_file: an earlier ingest's, where this one rejected none
    summary = {"dataset": dataset, "stored": stored, "rejected": len(rejected),
               "reject_reasons": counts, "rejects_file": None, "dataset_nodes": store.count_nodes(dataset),
               "missing_like_labels": dict(missing_like), "labelled": labelled,
               "label_classes": dict(classes) if len(classes) <= COUNTED_CLASSES else None,
               "removed_rejects_file": None}
    if missing_like:
        run_logger().warning("%s", missing_like_note(missing_like))
    if len(rejected) and rejects_path is not None:
        rejects_path.parent.mkdir(parents=True, exist_ok=True)
        rejected.to_csv(rejects_path, index=False)
        summary["rejects_file"] = str(rejects_path)
    elif rejects_path is not None and rejects_path.is_file():
        # an earlier ingest's rejects: beside this ingest, they would read as its own (a newcomer's walk)
        rejects_path.unlink()
        summary["removed_rejects_file"] = str(rejects_path)
    if len(rejected):
        # the first reasons, each once and cut short: a duplicate key is every one of its
        # rows' reason, and one row with 13 bad features listed all 13 (seen on wine)
        run_logger().warning(
            "%s of %s records rejected (%s), reasons in the rejects file; first: %s",
            f"{len(rejected):,}", f"{stored + len(rejected):,}",
            ", ".join(f"{kind}: {n:,}" for kind, n in counts.items()), first_reasons(rejected, 5),
        )
    return summary


def run_name_from_parameters(what: str):
    """A flow run name from the run's parameters: ``wine · harmonic · full``, ``wine · ingest``."""
    def name() -> str:
        from prefect.runtime import flow_run

        parameters = flow_run.parameters
        if what == "label":
            kind = run_kind(parameters.get("full", False), parameters.get("holdout_fraction", 0.0))
            # whether a run asked to be incremental is one is known only once it has read the
            # store (a dataset's first run relabels every node): ``_name_the_run`` adds it then
            named = f"{parameters['dataset']} · {parameters.get('solver', 'harmonic')}"
            return named if kind == "incremental" else f"{named} · {kind}"
        if what == "build-graph":
            k = f" k={parameters['k']}" if parameters.get("graph", "knn") == "knn" else ""
            return f"{parameters['dataset']} · {parameters.get('graph', 'knn')} graph{k}"
        return f"{parameters.get('dataset', 'digits')} · {what}"

    return name


#: Errors that are the data's fault: a run's log says them in one line (``flows.direct.Flow``).
#: ``StoreLocked`` is one too: another run or a person's query held an embedded store
#: for longer than the lock timeout, an operating condition whose message says what to do.
#: ``FeatureColumnsDiffer``: a file whose feature columns are not the dataset's.
#: ``SolverTimeLimit`` too: a slow solver stopped itself at its time budget and says what to do;
#: and ``SolverStopped``: a batch the run stopped after a Ctrl-C or another batch's failure;
#: ``SolverOutOfMemory``: a solve whose arrays would not fit, refused before they were made;
#: ``StoreConnectionError`` and ``StoreNotFound``: a store that cannot be opened (Neo4j down,
#: a wrong password, no such folder), whose message names the store and what to check (a
#: served run on a Neo4j that was down logged two tracebacks, a newcomer's walk).
DATA_ERRORS = (NotEnoughLabels, NoValidRecords, FeatureColumnsDiffer, StoreLocked, SolverTimeLimit, SolverStopped,
               SolverOutOfMemory, StoreConnectionError, StoreNotFound)


@flow("ingest-records", flow_run_name=run_name_from_parameters("ingest"), data_errors=DATA_ERRORS)
def ingest_flow(source: str, dataset: str, key: str, features: str | None, label: str | None = None,
                store_uri: str | None = None, rejects_path: str | None = None,
                classes: list[str] | None = None, encoding: str = "utf-8", text: str | None = None,
                categorical: str | None = None, label_confidence: str | None = None) -> dict:
    """Ingest a CSV/Parquet file: valid rows become nodes, rejected rows go to the rejects file.

    ``classes`` lists the allowed labels (None: any), ``encoding`` is a CSV/TSV file's,
    ``text`` a column embedded into the features (``labelling.text_embedding``; the
    ``graphlabel[text]`` extra), ``categorical`` the categorical feature columns,
    ``label_confidence`` the column of trust in the given labels; see
    ``labelling.records.parse_records``. The file is parsed and stored ``BATCH_ROWS`` rows
    at a time (``labelling.record_batches``: the same nodes and rejects as parsing it
    whole); a failure half way leaves the batches before it stored, and ingesting the file
    again converges (nodes are upserted by key).
    Returns ``dataset``, ``stored``, ``rejected``, ``reject_reasons`` (rejected rows per kind
    of reason), ``rejects_file``, and what the file did to the dataset's given labels
    (``labelling.records.label_changes`` and ``replaced_reviews``)."""
    check_dataset_name(dataset)
    check_source(source)  # before the store is created
    rejects = Path(rejects_path) if rejects_path else Path(f"{dataset}.rejects.csv")
    with open_store(store_uri, create=True) as store:
        # rows must have the length the dataset's nodes already have (the most common one,
        # should an older store hold several): a mixed dataset cannot be labelled
        # and the columns it was ingested with, by name (labelling.feature_columns)
        stored = store.feature_lengths(dataset)
        # the dataset's given labels before, so that a class this file brings with one label (a
        # misspelt 'clas_0', a '1' among names) and labels it removes (the file ingested again
        # without --label) are said at ingest, not after a run
        before = store.given_label_counts(dataset) if stored else {}
        reviewed = store.reviewed_labels(dataset) if stored else {}  # and those a reviewer vouched for
        records = parse_record_batches(source, key=key, features=features, label=label, classes=classes,
                                       encoding=encoding, expected_dim=next(iter(stored), None), text=text,
                                       categorical=categorical, label_confidence=label_confidence,
                                       recorded=dataset_columns(store, dataset) if stored else None)
        try:
            summary = ingest_parsed(store, dataset, records, rejects, source)
        except NoValidRecords as error:
            if stored and WRONG_LENGTH in reject_counts(error.rejects):  # the way out, beside the reason
                length, nodes = next(iter(stored.items()))
                raise NoValidRecords(
                    f"{error}; the dataset's {counted(nodes, 'node')} have {length} features each: ingest the same"
                    f" columns, or start it over with graphlabel drop-dataset --dataset {dataset}",
                    error.rejects) from None
            raise
        summary.update(label_changes(before, store.given_label_counts(dataset)),
                       replaced_reviews=replaced_reviews(reviewed, store.reviewed_labels(dataset) if reviewed else {}))
    if in_flow_run():  # a run without a server has no UI to show it in
        from .artifacts import publish_ingest_report

        publish_ingest_report(summary)
    return summary


@contextmanager
def _dataset_held(store: GraphStore, dataset: str, holder: str) -> Iterator[None]:
    """Hold the dataset for the block (on Neo4j one run at a time changes a dataset's graph:
    ``graphstore.neo4j_lease``); the wait for another run, if any, is said in this run's log."""
    with ExitStack() as held:
        with store_log_in_run():
            held.enter_context(store.dataset_lease(dataset, holder))
        yield


#: The key of a ``GraphBuild`` record written before a build, and replaced when it finishes.
UNFINISHED = "unfinished"


def build_edges(store: GraphStore, dataset: str, request: GraphRequest, clock: StageClock) -> tuple[int, list[str]]:
    """The build-edges stage: the store builds ``request.spec()`` (GDS on Neo4j,
    ``similarity`` on the embedded store) with k capped at n - 1, and the graph is recorded
    with the σ it used, for incremental runs, and with the options asked for, for the next
    rebuild (``GraphRequest.over``). Returns the relationship count and warnings (k capped;
    weights that carry no information)."""
    n_nodes = store.count_nodes(dataset)
    if n_nodes == 0:
        raise store.unknown_dataset(dataset)
    spec, notes = request.spec().capped(n_nodes, dataset)
    if spec.edges_type is not None:
        with clock("read_user_edges"):  # checked before graphlabel's own graph is replaced
            n_user = count_user_edges(store, dataset, spec)
        notes.append(f"labelling over {n_user:,} of the user's {spec.edges_type} relationships"
                     + ("" if spec.similarity_kind is None else f" added to the {spec.kind} graph"))
    # recorded unfinished first: a build killed or failed half way may have deleted the old
    # relationships, and the next run must rebuild, not label incrementally over what is left;
    # a store that cannot build the spec (GDS missing, a user's relationship type) says so
    # before that write
    store.check_edge_builder(spec, dataset)
    store.write_graph_build(dataset, {**spec.as_record(), REQUESTED: request.asked(), UNFINISHED: True})
    with clock("build_edges"), stage_progress() as steps:
        built = build_edges_task(store, dataset, spec, steps)
    spec = spec.with_sigma(built.sigma).with_encoding(built.encoding)
    record_graph_build(store, dataset, spec, request)
    run_logger().info("built the %s graph of %r: %s edges (%s%s)", spec.kind, dataset, f"{built.n_edges:,}",
                      spec.describe(), "" if built.sigma is None else f", sigma={built.sigma:.4g}")
    return built.n_edges, [*notes, *built.warnings]


#: Prediction rows a write-predictions task writes: each is a step of the write-back's
#: progress (1M nodes took 15-20 s to write on the embedded store).
WRITE_BACK_ROWS = 200_000


def write_back(store: GraphStore, dataset: str, exported: ExportedProblem, prediction: Prediction, run_id: str,
               labelled_at: pd.Timestamp) -> int:
    """The write-back stage: every node's prediction written, ``WRITE_BACK_ROWS`` at a
    time with progress; returns how many nodes were written."""
    n, written = exported.problem.n_nodes, 0
    with progress("write back", n, "nodes") as meter:
        for start in range(0, n, WRITE_BACK_ROWS):  # a loop over slices of rows, built one at a time
            nodes = slice(start, start + WRITE_BACK_ROWS)
            written += write_predictions(store, dataset, prediction_rows(exported, prediction, run_id,
                                                                         labelled_at, nodes))
            meter.to(min(start + WRITE_BACK_ROWS, n))
    return written


def _warn(notes: list[str]) -> list[str]:
    """Log each warning on the run (the Prefect UI shows them); returns them."""
    logger = run_logger()
    for note in notes:
        logger.warning(note)
    return notes


@flow("build-similarity-graph", flow_run_name=run_name_from_parameters("build-graph"), data_errors=DATA_ERRORS)
def build_graph_flow(dataset: str, store_uri: str | None = None, graph: str = "knn", k: int = 10,
                     metric: str = "euclidean", weights: str = "gaussian", delta: float | None = None,
                     sigma: float | None = None, edges_weight: float | None = None,
                     scale: str | None = None, search: str | None = None) -> dict:
    """Build (or rebuild) the dataset's similarity relationships; ``scale`` (default
    "standard") scales the numeric features first (``similarity.encoding``); ``search``
    (default "auto") picks how a kNN graph's neighbours are found
    (``similarity.spec.SEARCHES``); with the
    user's edges in ``graph`` (``edges:TYPE``, ``knn+edges:TYPE``), check those and record
    them as the graph to label over (graphstore/user_edges.py)."""
    check_dataset_name(dataset)
    request = GraphRequest(graph, k, metric, weights, delta, sigma, edges_weight=edges_weight, scale=scale,
                           search=search)
    clock = StageClock()
    with open_store(store_uri) as store, _dataset_held(store, dataset, "build-graph"):
        edges, notes = build_edges(store, dataset, request, clock)
    return {"dataset": dataset, "edges": edges, "spec": request.spec(), "timings": clock.seconds,
            "warnings": _warn(notes)}


def _scalars(info: dict[str, Any]) -> dict[str, Any]:
    """The JSON-friendly scalars of a solver's metadata (arrays and models stay out of the run node)."""
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in info.items()
            if isinstance(v, (int, float, str, bool, np.generic))}


def _flow_run_id() -> str | None:
    """The Prefect flow run's id inside a run (the run id is then the UI's), else None."""
    if not in_flow_run():
        return None
    from prefect.runtime import flow_run

    return flow_run.id


def _heartbeat(store: GraphStore, run: LabelRunRecord, clock: StageClock) -> None:
    """The running run's sign of life after a stage, with the stage times so far (best
    effort: a store that cannot take it fails the next stage anyway)."""
    try:
        store.write_run(replace(run, timings=dict(clock.seconds), heartbeat_at=pd.Timestamp.now(tz="UTC")))
    except Exception as error:  # noqa: BLE001 - the run's own stages say what is wrong
        run_logger().warning("could not write the heartbeat of run %s: %s", run.run_id, redact(error))


#: A failed run's error as its LabelRun keeps it: enough for a traceback's last lines, not a
#: whole dump of the data an exception may quote.
MAX_ERROR_CHARS = 2000


#: A run stopped by Ctrl-C as its record says it (the exception's own text is empty).
INTERRUPTED = "interrupted (Ctrl-C, or SIGINT from another process)"
#: ... and ended by a signal in a flow run: Prefect raises ``TerminationSignal`` for a SIGTERM
#: (serve stopping, a cancel from the Prefect UI), whose text is empty: the run's report said
#: "failed: TerminationSignal" alone (a walk through the UI).
STOPPED = "stopped by {signal} (graphlabel serve stopping, or the run cancelled from the Prefect UI)"


#: A solver's time-limit advice as a run's record gives it. The solver's own is in the Python
#: API's words (``method='harmonic'``, ``time_limit=None``) and the command line gives its flags,
#: but a record is read by whoever looks at the run (``graphlabel report``, the Prefect UI, a
#: Cypher query) whatever started it: the CLI, a schedule's TOML or Python.
TIME_LIMIT_ADVICE = ("Use the harmonic solver, or give the solver parameter time_limit more seconds "
                     "(\"none\" for no limit).")


def _error_text(error: BaseException) -> str:
    """A failed run's error as its record and report keep it: redacted (a store URI or
    password in an exception never reaches them) and cut to ``MAX_ERROR_CHARS``."""
    if isinstance(error, KeyboardInterrupt):
        return INTERRUPTED
    if is_stop(error):
        number = getattr(error, "signal", None)
        try:
            name = signal.Signals(number).name if isinstance(number, int) else type(error).__name__
        except ValueError:  # a number that is no signal: the stop named by its type
            name = type(error).__name__
        return STOPPED.format(signal=name)
    if isinstance(error, SolverTimeLimit):
        text = f"{type(error).__name__}: {error.what} {TIME_LIMIT_ADVICE}"
    else:
        text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return redact(text, os.environ.get(PASSWORD_ENV))[:MAX_ERROR_CHARS]


def _failed(store: GraphStore, run: LabelRunRecord, error: BaseException, clock: StageClock) -> LabelRunRecord:
    """Mark the run failed (best effort: the store may be what failed) and return the failed
    record. The message is redacted: a store URI or password in an exception never reaches
    the run node."""
    message = _error_text(error)
    failed = replace(run, status="failed", error=message, timings=dict(clock.seconds),
                     finished_at=pd.Timestamp.now(tz="UTC"))
    try:
        store.write_run(failed)
    except Exception as store_error:  # noqa: BLE001 - the original error is the one to raise
        run_logger().error("could not mark run %s failed: %s", run.run_id, redact(store_error))
    return failed


def _quiet_reported_warnings() -> None:
    """In a deployment's run (``graphlabel serve``'s, or the Prefect UI's Run), which Prefect
    runs in a process of its own, leave out Python's warning of a labelling no better than a
    guess: the run says it (``labelling.run_metrics.degenerate_note``), and serve's output
    showed it twice, the second time as Python prints it, with the file, line and source
    that raised it. The labelling flow called in a notebook or a script keeps the warning;
    the CLI leaves it out itself. A run without a server is no deployment's, and imports no
    Prefect for the question (``flows.direct``)."""
    if not in_flow_run():
        return
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    if context is not None and context.flow_run is not None and context.flow_run.deployment_id is not None:
        warnings.filterwarnings("ignore", category=DegenerateLabelingWarning)


def _warm_publishing() -> None:
    """Import what publishing needs (matplotlib's figure and its PNG backend: 0.4 to 0.9 s
    cold) in a background thread while the run labels, so the artifacts cost their drawing
    and three API calls at the end (bench/cli.py --with-server). Not pyplot: its import
    records the warnings of every thread for a while (``flows.artifacts.plot_png``)."""
    import importlib
    import threading

    def warm() -> None:
        for module in ("flows.artifacts", "matplotlib.figure", "matplotlib.backends.backend_agg"):
            importlib.import_module(module)

    threading.Thread(target=warm, name="graphlabel-warm-publishing", daemon=True).start()


def _publish(run: LabelRunRecord, reliability, stages: list[tuple[str, str]]) -> dict[str, str]:
    """Publish the run's artifacts (inside a flow run; a run without a server has no UI)."""
    if not in_flow_run():
        return {}
    import time

    from .artifacts import publish_artifacts

    start = time.perf_counter()
    ids = publish_artifacts(run, reliability, list(stages))
    run_logger().info("published the run's report, numbers and plot in %.2f s", time.perf_counter() - start)
    return ids


def _publish_unopened(run_id: str, dataset: str, solver: str, parameters: dict[str, Any],
                      error: BaseException) -> None:
    """The failed report of a run that could not open its store (locked, down) or take its
    dataset (another run held it): the run is not in the store, so the report artifact is
    its only record."""
    now = pd.Timestamp.now(tz="UTC")
    message = _error_text(error)
    run = LabelRunRecord(run_id=run_id, dataset=dataset, solver=solver, parameters=parameters, metrics={},
                         timings={}, started_at=now, finished_at=now, n_nodes=0, n_labeled=0, n_flagged=0,
                         status="failed", versions=versions(solver=solver), error=message)
    try:
        _publish(run, None, [])
    except Exception as publish_error:  # noqa: BLE001 - the run's error is the one to raise
        run_logger().error("could not publish the failed run's report: %s", redact(publish_error))


@flow("label-dataset", flow_run_name=run_name_from_parameters("label"), data_errors=DATA_ERRORS,
      task_runner=thread_runner)
def labelling_flow(dataset: str, store_uri: str | None = None, solver: str = "harmonic",
                   solver_params: dict[str, Any] | None = None, build_graph: bool = True,
                   graph: str | None = None, k: int | None = None, metric: str | None = None,
                   weights: str | None = None, delta: float | None = None, sigma: float | None = None,
                   split_components: bool = True, batch_nodes: int = BATCH_NODES, full: bool = False,
                   hops: int = 2, holdout_fraction: float = 0.0, holdout_seed: int = 0,
                   keep_runs: int | None = None, publish: bool = True, edges_weight: float | None = None,
                   scale: str | None = None, search: str | None = None) -> dict:
    """Label the nodes of ``dataset`` and record the run.

    The parameters are flat on purpose: they are what Prefect records for the run, shows
    and edits one field at a time in its UI, and what a schedule's TOML job names. They
    become a ``RunOptions`` and a ``GraphRequest`` here, validated once; every stage below
    takes those two objects.

    Full run (``full=True``): (re)build the similarity graph when ``build_graph``, export
    it, hide a ``holdout_fraction`` of the given labels to score the run on, solve (per
    batch of connected components when ``split_components``), write every node's
    prediction (a run with a holdout is always full). Incremental run (``full=False``, the
    default): label only what changed since the nodes
    were last labelled (``flows.incremental.label_changed``: new entities get edges to the
    existing graph, the region around the changes is solved with its boundary fixed);
    falls back to a full run when there is no previous run, the graph must be rebuilt, or
    the solver, its parameters or the graph changed since the last completed run
    (``change_since_last_run``), and records why (``full_run_reason``).

    ``graph`` may name the user's edges (``edges:TYPE[:WEIGHT]`` alone, or
    ``knn+edges:TYPE[:WEIGHT]`` added with factor ``edges_weight`` to a kNN graph;
    similarity/spec.py): they are read, never written (graphstore/user_edges.py).

    Graph parameters (``graph``, ``k``, ``metric``, ``weights``, ``delta``, ``sigma``,
    ``scale``) left
    None mean "the graph as it was built" (the dataset's ``GraphBuild`` record) for an
    incremental run, and the defaults (kNN, k = 10, Euclidean, Gaussian) when the graph is
    (re)built; the run records the parameters of the graph it used, read from the record.

    The ``LabelRun`` node is written ``running`` first, then ``completed`` with metrics,
    timings and versions, or ``failed`` with the (redacted) error; a half-written run is
    never marked completed. Every write is keyed by node and run id, so re-running a
    failed run converges to the result of one clean run. With ``publish``, the run's
    metrics table, report and plot become Prefect artifacts; ``keep_runs`` prunes the
    dataset's older LabelRun nodes (``GraphStore.prune_runs``).

    Parameters
    ----------
    dataset : str
        The dataset whose nodes are labelled.
    store_uri : str or None
        The store: a folder (embedded Kùzu) or a neo4j:// or bolt:// URI; None: $GRAPHLABEL_STORE, else .graphlabel.
    solver : str
        harmonic, mincut, lcsnc, spectral, maxmargin, nmf, or auto (picked by cross-validation).
    solver_params : dict or None
        The solver's own parameters, e.g. {"gamma_g": 0.1} (each solver's docstring lists them).
    build_graph : bool
        Rebuild the similarity graph first (a full run; an incremental run keeps the graph it has).
    graph : str or None
        knn, delta, mincut3, delta0, delta_half, sgt or mutual_knn, the user's edges:TYPE[:WEIGHT], or
        KIND+edges:TYPE[:WEIGHT] (both added); None: the graph as built (knn when rebuilt).
    k : int or None
        Neighbours per node (knn, sgt, mutual_knn); None: as built, 10 when rebuilt.
    metric : str or None
        euclidean or cosine; None: as built.
    weights : str or None
        gaussian, cosine or binary edge weights; None: as built.
    delta : float or None
        Distance threshold of a delta graph.
    sigma : float or None
        Gaussian bandwidth; None: the median distance to the k-th neighbour.
    split_components : bool
        Solve connected components in separate batches (tasks).
    batch_nodes : int
        Nodes per solver batch at most (small components are grouped up to this size).
    full : bool
        Relabel every node; false: only what changed since the last run (its first run is full).
    hops : int
        How far around a change an incremental run relabels.
    holdout_fraction : float
        Share of the given labels hidden to score the run (0: none); a run with a holdout is full.
    holdout_seed : int
        Seed of the holdout draw.
    keep_runs : int or None
        Keep this many completed LabelRun records of the dataset, deleting older ones; None keeps all.
    publish : bool
        Publish the run's report, metrics and reliability plot as Prefect artifacts.
    edges_weight : float or None
        Factor of the user's edges in a KIND+edges graph (default 1).
    scale : str or None
        standard, robust or none: how numeric features are scaled before distances; None: as built
        (standard when rebuilt).
    search : str or None
        How a rebuilt kNN graph's neighbours are found: auto (exact up to 50k nodes, then faiss HNSW
        with a recall check), exact, hnsw, ivf, hnswlib or pynndescent; None: auto.

    Returns
    -------
    dict
        The run's summary: run_id, counts, metrics, timings, the LabelRun record, artifacts, warnings.
    """
    check_dataset_name(dataset)
    _quiet_reported_warnings()
    # validated here, once; every stage below takes these two objects
    options = RunOptions(solver, dict(solver_params or {}), build_graph, full, hops, split_components,
                         batch_nodes, holdout_fraction, holdout_seed)
    request = GraphRequest(graph, k, metric, weights, delta, sigma, edges_weight=edges_weight, scale=scale,
                           search=search)
    solver_params = options.solver_params
    run_id = str(_flow_run_id() or uuid.uuid4())
    parameters = {"solver_params": _scalars(solver_params), "requested_solver_params": _scalars(solver_params),
                  "graph": graph, "k": k, "metric": metric,
                  "weights": weights, "delta": delta, "edges_weight": edges_weight, "scale": scale, "search": search,
                  "build_graph": build_graph, "full": options.full,
                  "holdout_fraction": holdout_fraction, "split_components": split_components}
    try:
        with store_log_in_run():
            opened = open_store(store_uri)
    except (StoreConnectionError, StoreNotFound) as error:
        if publish:  # no LabelRun can be written, but the dataset's latest report must say it failed
            _publish_unopened(run_id, dataset, solver, parameters, error)
        raise
    with opened as store, ExitStack() as held:
        try:
            held.enter_context(_dataset_held(store, dataset, label_run_holder(run_id)))
        except StoreLocked as error:
            if publish:
                _publish_unopened(run_id, dataset, solver, parameters, error)
            raise
        if store.count_nodes(dataset) == 0:  # a misspelt name leaves no failed run or artifacts behind
            raise NoSuchDataset(str(store.unknown_dataset(dataset)))
        if build_graph:
            store.check_edge_builder(request.spec())  # e.g. GDS missing: say so before writing anything
        interrupted = mark_interrupted_runs(store, dataset)  # runs whose process is gone (labelling.liveness)
        if interrupted:
            run_logger().warning("marked %d earlier run(s) of %r interrupted (their process is gone): %s",
                                 len(interrupted), dataset, ", ".join(interrupted))
        started = pd.Timestamp.now(tz="UTC")
        run = LabelRunRecord(run_id=run_id, dataset=dataset, solver=solver, parameters=parameters, metrics={},
                             timings={}, started_at=started, finished_at=None, n_nodes=0,
                             n_labeled=0, n_flagged=0, status="running",
                             versions=versions(store=store.dialect, solver=solver), process=this_process(),
                             heartbeat_at=started)
        clock = StageClock(after_stage=lambda stage: _heartbeat(store, run, clock))
        record_run(store, run)
        if publish and in_flow_run():
            _warm_publishing()
        stages: list[tuple[str, str]] = []
        token = STAGE_RUNS.set(stages)
        try:
            outcome = _label(store, dataset, options, request, clock, run_id)
        except BaseException as error:
            failed = _failed(store, run, error, clock)
            if publish:
                try:  # the latest report must say the run failed, not show the last success
                    _publish(failed, None, stages)
                except Exception as publish_error:  # noqa: BLE001 - the run's error is the one to raise
                    run_logger().error("could not publish the failed run's report: %s", redact(publish_error))
            raise
        finally:
            STAGE_RUNS.reset(token)
        exported, prediction, holdout, extra, notes = outcome
        # the component split's counts under their own names, the solver's metadata as solver_*
        plan = {name: prediction.info.get(name) for name in PLAN_INFO}
        used = graph_used(store, dataset)
        notes += (degenerate_note(exported, prediction) + unreached_note(exported, prediction, used)
                  + lone_labels_note(exported, prediction)
                  + faint_nodes_note(exported, prediction))
        metrics = {**run_metrics(exported, prediction, holdout), **extra,
                   "n_components": plan["n_components"], "n_solver_batches": plan["n_batches"],
                   "n_unlabeled_components": plan["n_unlabeled_components"],
                   "n_single_class_nodes": plan["n_single_class_nodes"],
                   **{f"solver_{k}": v for k, v in _scalars(prediction.info).items() if k not in PLAN_INFO},
                   **auto_metrics(prediction)}
        # maxmargin's SVM, for `graphlabel predict` and `explain`; not an incremental run's,
        # which is fit on the changed region and its class anchors only
        if prediction.info.get("model") is not None and not metrics.get("incremental"):
            with clock("keep_model"):
                columns = FeatureColumns.from_record(store.read_feature_columns(dataset))
                metrics["model_support_vectors"] = keep_run_model(store, run_id, exported, prediction, columns)
        metrics["run_warnings"] = list(notes)  # for the report, beside the numbers they qualify
        run = replace(run, status="completed", metrics=metrics, timings=dict(clock.seconds),
                      parameters={**parameters, **used,
                                  "solver_params": _scalars(prediction.params)},
                      finished_at=pd.Timestamp.now(tz="UTC"), n_nodes=exported.problem.n_nodes,
                      n_labeled=int(exported.problem.labeled.sum()), n_flagged=int(prediction.noisy.sum()),
                      classes=[str(name) for name in exported.classes])
        with clock("record_run"):
            record_run(store, run)
        if keep_runs is not None:
            store.prune_runs(dataset, keep_runs)
    run_logger().info("%s", headline_text(run))
    # the flow's notes, which the record keeps, and the numbers a reader may trust more than
    # they bear (an accuracy on 3 held-out labels): the report's warnings, so the CLI prints
    # what the report shows; logged before the report (its log read them after "published
    # the run's report")
    said = _warn(report_warnings(run))
    artifacts = {}
    if publish:
        reliability = holdout_reliability(prediction, holdout) if holdout is not None and len(holdout.nodes) else None
        artifacts = _publish(run, reliability, stages)
    return {
        "run_id": run_id, "dataset": dataset, "solver": solver, "n_nodes": run.n_nodes,
        "n_labeled": run.n_labeled, "n_flagged": run.n_flagged, "n_edges": extra.get("n_edges_built"),
        "metrics": metrics, "timings": dict(clock.seconds), "run": run, "artifacts": artifacts,
        "warnings": said,
    }


def graph_used(store: GraphStore, dataset: str) -> dict[str, Any]:
    """The parameters of the dataset's similarity graph as its ``GraphBuild`` record has
    them (what the run used, not the flow's defaults); empty when nothing was recorded."""
    build = store.read_graph_build(dataset)
    if not build:
        return {}
    used = {name: build.get(name) for name in ("graph", "k", "metric", "weights", "sigma")}
    if build.get("edges_type"):  # the user's edges labelled over (graphstore/user_edges.py)
        used.update({name: build.get(name) for name in ("edges_type", "edges_property", "edges_weight")})
    used["scale"] = build.get("scale") or "none"  # a graph recorded before scaling existed was unscaled
    used["graph_built_at"] = None if build.get("built_at") is None else str(build["built_at"])
    return used


def unreached_note(exported: ExportedProblem, prediction: Prediction, used: dict[str, Any]) -> list[str]:
    """A warning when some labelled nodes got no prediction (no given label reaches them),
    saying how many have no relationship at all and what gives them one (``used``: the
    graph's record, ``graph_used``)."""
    unreached = prediction.labels < 0
    if not unreached.any():
        return []
    n, u = len(unreached), int(unreached.sum())
    note = f"{u:,} of {n:,} nodes ({u / n:.1%}) got no prediction: no given label reaches them"
    isolated = int((unreached & (np.diff(exported.problem.W.indptr) == 0)).sum())
    if isolated and used.get("graph") == "edges":
        # the user's edges alone: a node outside them was not "ingested after the build"
        kind = used.get("edges_type")
        note += (f"; {isolated:,} have none of the user's {kind} relationships, the graph's only ones: --graph"
                 f" knn+edges:{kind} adds a kNN graph of the features")
    elif isolated:
        note += (f"; {isolated:,} have no similarity relationship (ingested after the last graph build?): label"
                 " --rebuild-graph, or an inductive solver (--solver maxmargin)")
    return [note]


def _copy_groups(store: GraphStore, dataset: str, exported: ExportedProblem) -> tuple[int, np.ndarray] | None:
    """The kNN graph's k and its groups of more than k + 1 copies of one feature vector
    (labelling.indistinguishable), found while the problem has its features; None where
    there is nothing to pool (only kNN graphs pick neighbours among ties)."""
    built = store.read_graph_build(dataset)
    problem = exported.problem
    if not built or built.get("graph") != "knn" or built.get("k") is None or problem.X is None:
        return None
    k = int(built["k"])
    return k, copy_groups(problem.X, problem.W, k)


def _pool_copies(exported: ExportedProblem, prediction: Prediction, copies: tuple[int, np.ndarray] | None,
                 notes: list[str]) -> Prediction:
    """Copies of one feature vector beyond k + 1 get one answer (``_copy_groups``)."""
    if copies is None:
        return prediction
    pooled = pool_copies(exported, prediction, *copies)
    if pooled.message:
        notes.append(pooled.message)
    return pooled.prediction


def auto_metrics(prediction: Prediction) -> dict[str, Any]:
    """``--solver auto``'s choice and every candidate's cross-validated score, for the run's
    metrics (and so its report and provenance)."""
    record = prediction.info.get("auto")
    if not record:
        return {}
    return {"auto_chosen": record["chosen"], "auto_folds": record["folds"], "auto_scoring": record["scoring"],
            "auto_budget_harmonic_runs": record["budget_harmonic_runs"],
            # why the default was kept without a comparison (one label in a class, no time)
            **({"auto_reason": record["reason"]} if record.get("reason") else {}),
            "auto_scores": {c["name"]: (round(c["score"], 4) if c["score"] is not None else c["status"])
                            for c in record["candidates"]}}


def change_since_last_run(store: GraphStore, dataset: str, run_id: str, solver: str,
                          solver_params: dict[str, Any]) -> str | None:
    """Why this run must relabel every node: the dataset's last completed run held out given
    labels (``--holdout``), its solver or solver parameters differ from this run's, or the
    similarity graph was rebuilt since that run (``build-graph``: its ``GraphBuild`` record
    is newer than the one the run recorded; a reload of the user's edges marks the ends of
    the edges that changed instead, ``GraphStore.write_user_edges``). An incremental run
    would keep the old labels outside the changed region, computed with another solver or
    on another graph. None when nothing of these changed, or there is no completed run."""
    runs = store.read_runs(dataset=dataset, limit=20)
    runs = runs[(runs["status"] == "completed") & (runs["run_id"] != run_id)]
    if runs.empty:
        return None
    last = runs.iloc[0]
    if last["solver"] != solver:
        return f"the solver changed ({last['solver']} → {solver}): every node is relabelled"
    parameters = last["parameters"] or {}
    held_out = parameters.get("holdout_fraction") or 0.0
    if held_out:  # its predictions came from fewer labels, and its held-out labels were never judged
        return (f"the last run held out {held_out:.0%} of the given labels to score itself: every node is "
                "relabelled with all of them")
    before = parameters.get("requested_solver_params")
    if before is not None and before != _scalars(solver_params):
        return f"the solver parameters changed ({before} → {_scalars(solver_params)}): every node is relabelled"
    built_before = parameters.get("graph_built_at")  # absent from runs recorded before it was kept
    graph = graph_used(store, dataset) if built_before is not None else {}
    if graph.get("graph_built_at") not in (None, built_before):
        changed = [f"{name} {_shown(parameters.get(name))} → {_shown(graph.get(name))}"
                   for name in GRAPH_DESCRIBED if parameters.get(name) != graph.get(name)]
        return (f"the similarity graph was rebuilt since the last run ({', '.join(changed) or 'same parameters'}):"
                " every node is relabelled")
    return None


# the graph parameters a rebuild's reason names when they changed (graph_used records them)
GRAPH_DESCRIBED = ("graph", "k", "metric", "weights", "sigma", "scale", "edges_type", "edges_weight")


def _shown(value: Any) -> str:
    if value is None:  # "edges_type None → CO" read as Python, not as a sentence (a files walk)
        return "none"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _name_the_run(kind: str) -> None:
    """The flow run's name and tags say whether a run asked to be incremental is one
    (``kind`` "incremental") or fell back to a full one ("full"; the log line after says why),
    from here on, the lines it logs included: it was named "incremental" from the start, and
    its log said so above a "full run" line while the runs list showed it as full (a
    newcomer's walk). Named incremental once its graph extends (``label_changed``'s
    ``on_extending``), not after its write-back (a UI walk: six of its eight task runs
    had no kind), it is renamed full if it falls back; full is final. Cosmetic: a failure
    to rename is a warning, never the run's end."""
    if not in_flow_run():
        return
    from prefect import get_client
    from prefect.context import FlowRunContext, TagsContext

    context = FlowRunContext.get()
    if context is None or context.flow_run is None or context.flow_run.name.endswith((" · full", f" · {kind}")):
        return  # a full run stays full
    run = context.flow_run
    # named incremental once its graph extends, a run can still fall back to full
    name = f"{run.name.removesuffix(' · incremental')} · {kind}"
    tags = [*(tag for tag in run.tags if tag not in ("full", "incremental")), kind]
    try:
        with get_client(sync_client=True) as client:
            client.update_flow_run(run.id, name=name, tags=tags)
    except Exception as error:  # noqa: BLE001 - the run's name is not worth the run
        run_logger().warning("could not name the flow run %r %s: %s", run.name, kind, error)
        return
    run.name, run.tags = name, tags  # the run's logger reads them from here
    # the task runs from here on take their tags from the tags context, set before the run
    # knew its kind: the report's task run showed "incremental" on a full run's artifact page
    # (the run's own set: flows.direct.Flow)
    current = TagsContext.get().current_tags
    current.difference_update({"full", "incremental"})
    current.add(kind)


def _build_missing(store: GraphStore, dataset: str, recipe: GraphRequest, clock: StageClock) -> tuple[int, list[str]]:
    """Build the graph of a dataset that has no relationship (a dataset without one would
    get no prediction but on its given labels), as `label --rebuild-graph` would, saying so."""
    spec = recipe.spec()
    store.check_edge_builder(spec)
    n_edges, built = build_edges(store, dataset, recipe, clock)
    return n_edges, [f"dataset {dataset!r} had no similarity relationships: built them first ({spec.describe()};"
                     f" graphlabel build-graph --dataset {dataset} builds them with other parameters)", *built]


#: A full run's reason when it was asked for, as its record says it to whoever reads it (the
#: command line names the one flag it was given instead).
FULL_RUN_ASKED = "asked for (--full, --rebuild-graph, a schedule job's full = true, or the demo)"


def _label(store: GraphStore, dataset: str, options: RunOptions, request: GraphRequest, clock: StageClock,
           run_id: str):
    """The run's stages; returns the exported problem, the prediction, the holdout and
    extra metrics. Only the nodes of the exported problem are written back. A rebuild
    makes ``recipe.spec()``, ``request`` over the options the last build was asked for
    (``GraphRequest.over``); an incremental run compares ``request`` with the recorded
    build."""
    notes: list[str] = []
    solver = options.solver
    recorded = store.read_graph_build(dataset)
    # a build the record says started and never finished (killed, or failed half way) may
    # have left the relationships partly deleted or partly written: built again
    rebuild = options.build_graph or bool((recorded or {}).get(UNFINISHED))
    # a build makes the same recipe again, but for the options given; an incremental run
    # checks the given options alone against the graph as built (a recorded k of 20 capped
    # at 9 for a small dataset is no reason to rebuild), and makes no recipe it will not use
    recipe = request.over(recorded) if rebuild else request
    spec = recipe.spec()
    reason: str | None
    if rebuild and not options.build_graph:
        reason = (f"the last build of the similarity graph of {dataset!r} did not finish (interrupted or failed):"
                  f" it is built again ({spec.describe()}; build-graph --dataset {dataset} builds it with other"
                  " parameters) and every node relabelled")
    elif options.full:
        reason = "a run scored on a holdout is always full" if options.holdout_fraction else FULL_RUN_ASKED
    else:
        reason = change_since_last_run(store, dataset, run_id, solver, options.solver_params)
    if not options.full and reason is None:
        reasons: list[str] = []
        with clock("incremental"):
            changed = label_changed(store, dataset, options, request, reasons=reasons,
                                    on_extending=lambda: _name_the_run("incremental"))
        if changed is None:  # not an incremental run after all: a full run's report showed "incremental"
            clock.rename("incremental", "check_changes")
        reason = "; ".join(reasons) or None
        if changed is not None:
            clock.split("incremental", changed.timings)  # where an incremental run's time went
            prediction = changed.prediction
            if len(changed.keys):
                prediction = _pool_copies(changed.exported, prediction,
                                          _copy_groups(store, dataset, changed.exported), notes)
                with clock("write_back"):
                    write_back(store, dataset, changed.exported, prediction, run_id, changed.read_at)
            # the solve's own line counts the region and its class anchors: say how the two meet
            # (a UI walk read "solved 101 nodes" beside "99 nodes relabelled with 59 fixed")
            anchors = changed.problem.problem.n_nodes - changed.n_region
            solved = f" (solved with {counted(anchors, 'class anchor')} standing for them)" if anchors else ""
            run_logger().info("incremental run: %s (%s new), %s added, %s relabelled with %s fixed around them%s",
                              counted(changed.n_changed, "changed node"), f"{changed.n_new:,}",
                              counted(changed.n_edges_added, "edge"), counted(changed.n_region, "node"),
                              f"{changed.n_boundary:,}", solved)
            # its stages' seconds are the run's timings (split above), not metrics again
            return changed.exported, prediction, None, changed.summary(), notes
    # labelled_at is when the data was read, not when the answer was written: an entity
    # ingested while the graph was built or the solver ran is then newer than its label,
    # and the next incremental run picks it up
    read_at = pd.Timestamp.now(tz="UTC")
    extra: dict[str, Any] = {"incremental": False, "full_run_reason": reason}
    if not options.full:
        _name_the_run("full")
    run_logger().info("full run: %s", reason)
    # never built and no relationship at all: built before the export, which would read
    # every node to find none (11.6 s at 100k on Neo4j)
    missing = not rebuild and recorded is None and not store.has_edges(dataset)
    if not rebuild and (not_built := options_not_built(request.given(), recorded)):
        # said, as a run that seemed to take --k 5 used the 10-NN graph silently (a newcomer's walk)
        notes.append(f"the similarity graph is used as it was built: {'; '.join(not_built)}"
                     " (label --rebuild-graph, or build-graph, builds it with the options given)")
    if rebuild or missing:  # a build can take minutes: said first when the labels cannot be learnt from
        check_classes(dataset, store.given_classes(dataset))
    if rebuild:
        extra["n_edges_built"], built = build_edges(store, dataset, recipe, clock)
        notes += built
    elif missing:
        extra["n_edges_built"], built = _build_missing(store, dataset, request.over(recorded), clock)
        notes += built
    with clock("export"), progress("export", None, "nodes") as meter:
        exported = export_problem(store, dataset)
        meter.to(exported.problem.n_nodes)
    if not (rebuild or missing) and exported.problem.W.nnz == 0:  # a recorded build left none
        extra["n_edges_built"], built = _build_missing(store, dataset, request.over(recorded), clock)
        notes += built
        with clock("export"):
            exported = export_problem(store, dataset)
    run_logger().info("exported %s nodes, %s edges, %s given labels in %d classes",
                      f"{exported.problem.n_nodes:,}", f"{exported.problem.W.nnz // 2:,}",
                      f"{int(exported.problem.labeled.sum()):,}", exported.problem.n_classes)
    holdout = None
    if options.holdout_fraction:
        exported, holdout = hold_out(exported, options.holdout_fraction, options.holdout_seed)
        run_logger().info("held out %s of the given labels to score the run", f"{len(holdout.nodes):,}")
        if not len(holdout.nodes):  # asked to score itself, the run would end without a score or a word
            notes.append("held out none of the given labels: every class has a single one, which it keeps, so the"
                         " run has no accuracy to report")
    copies = _copy_groups(store, dataset, exported)
    if solver in GRAPH_ONLY_METHODS:  # nothing after this reads the features: let them go
        exported = replace(exported, problem=exported.problem.without_features())
    with clock("solve"), progress(f"solve ({solver})", exported.problem.n_nodes, "nodes"):
        prediction = solve_by_component(exported, options)
    run_logger().info("solved with %s: %s labelled, %s flagged as noisy", solver,
                      counted(int((prediction.labels >= 0).sum()), "node"),
                      counted(int(prediction.noisy.sum()), "given label"))
    prediction = _pool_copies(exported, prediction, copies, notes)
    with clock("write_back"):
        written = write_back(store, dataset, exported, prediction, run_id, read_at)
    run_logger().info("wrote %s predictions", f"{written:,}")
    return exported, prediction, holdout, extra, notes
