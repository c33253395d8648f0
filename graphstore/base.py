"""The store port: what every graph store (embedded Kùzu, production Neo4j) offers the flows.

Data crosses the port in bulk, as Arrow tables and numpy arrays, never row objects:

- nodes in:   pyarrow table ``key: string, features: list<double>, label: string (nullable)``
- edges in:   pyarrow table ``source: string, target: string, weight: double`` (keys; one row
              per undirected pair, the store keeps one relationship per row)
- predictions in: ``key, predicted_label, label_confidence, label_noise, label_run_id,
              label_solver, labelled_at``
- subgraph out: ``SubGraph`` (keys, labels, features, edges as positions into ``keys``)
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa

from .secrets import StoreConnectionError

# Matched with fullmatch: `$` alone would also accept a trailing newline ("base\n").
DATASET_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")

NODE_SCHEMA = pa.schema(
    [("key", pa.string()), ("features", pa.list_(pa.float64())), ("label", pa.string())]
)
EDGE_SCHEMA = pa.schema([("source", pa.string()), ("target", pa.string()), ("weight", pa.float64())])
PREDICTION_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("predicted_label", pa.string()),
        ("label_confidence", pa.float64()),
        ("label_noise", pa.bool_()),
        ("label_run_id", pa.string()),
        ("label_solver", pa.string()),
        ("labelled_at", pa.timestamp("us")),
    ]
)


def check_dataset_name(dataset: str) -> str:
    """Dataset names become part of keys and queries' parameters: keep them plain."""
    if not isinstance(dataset, str) or not DATASET_NAME.fullmatch(dataset):
        raise ValueError(
            f"invalid dataset name {dataset!r}: use 1-64 letters, digits, '_', '.' or '-',"
            " starting with a letter"
        )
    return dataset


@dataclass(frozen=True, eq=False)
class SubGraph:
    """One dataset's nodes and similarity relationships, read from a store.

    ``source``/``target`` are positions into ``keys``; each undirected pair appears once.
    ``labels`` holds the given label strings, ``None`` where a node has none.
    ``features`` is None when not read, or when the nodes' feature lists differ in length;
    ``feature_lengths`` then holds each node's length (see ``mixed_lengths``).
    """

    keys: np.ndarray
    labels: np.ndarray
    features: np.ndarray | None
    source: np.ndarray
    target: np.ndarray
    weight: np.ndarray
    feature_lengths: np.ndarray | None = None

    @property
    def n_nodes(self) -> int:
        return len(self.keys)

    def mixed_lengths(self, dataset: str, shown: int = 5) -> str:
        """What is wrong when the feature lengths differ, naming the nodes: how many nodes
        have each length, and keys of the nodes whose length is not the most common."""
        lengths, counts = np.unique(self.feature_lengths, return_counts=True)
        usual = lengths[np.argmax(counts)]
        odd = self.keys[self.feature_lengths != usual]
        listed = ", ".join(repr(k) for k in odd[:shown]) + (", ..." if len(odd) > shown else "")
        spread = ", ".join(f"{n} of length {length}" for length, n in zip(lengths, counts))
        return (f"dataset {dataset!r} has nodes with features of different lengths: {spread} (not of length"
                f" {usual}: {listed}); ingest those nodes again with {usual} features, or the dataset under a"
                " new name")


#: Life cycle of a run: written "running" when it starts, then "completed" or "failed".
RUN_STATUSES = ("running", "completed", "failed")
#: LabelRun properties stored as JSON text (Neo4j properties cannot hold maps), decoded on reading.
RUN_JSON_COLUMNS = ("parameters", "metrics", "timings", "versions", "process")
#: Columns of ``GraphStore.read_runs``, in order.
RUN_COLUMNS = ("run_id", "dataset", "solver", "status", "started_at", "finished_at", "n_nodes",
               "n_labeled", "n_flagged", "parameters", "metrics", "timings", "versions", "error", "process",
               "heartbeat_at")
#: Columns of the neighbour table of ``GraphStore.explain``, in order.
NEIGHBOUR_COLUMNS = ("key", "weight", "share", "given_label", "predicted_label", "label", "agrees")


class NativeEdges(NamedTuple):
    """What a store's own kNN builder did: the relationships it has afterwards, and the
    Gaussian σ it weighted them with (None for other weights), so the flow records it."""

    n_edges: int
    sigma: float | None


class StoreSetupError(RuntimeError):
    """The store answers but is not set up for what was asked: a plugin missing or too old
    (Neo4j without GDS), a relationship type holding a user's relationships, a graph left
    half built. An expected condition with a message that says what to do, not a bug."""


WRITE_REFUSED = ("this query writes to the store, and queries are read-only unless asked to write"
                 " (graphlabel query --write)")


class WriteRefused(ValueError):
    """A query typed by a user would have written to a store opened for reading (the
    message is ``WRITE_REFUSED``); nothing was changed."""

    def __init__(self, message: str = WRITE_REFUSED) -> None:
        super().__init__(message)


class StoreNotFound(FileNotFoundError):
    """No store where the URI points (a folder that does not exist, or a file): commands
    that read never create one (only ingesting does)."""


class StoreLocked(StoreConnectionError):
    """Another process holds the store (Kùzu lets one process open a database at a time)
    and did not let go within the time allowed."""


class NotFound(LookupError):
    """A run or node the caller named is not in the store (the message names it).

    A LookupError but not a KeyError, whose ``str()`` would print the message in quotes."""


@dataclass(frozen=True)
class LabelRunRecord:
    """What a labelling run writes as its ``LabelRun`` node.

    A run is written up to twice under one ``run_id``: ``status="running"`` when it starts
    (``finished_at`` None), then ``"completed"`` or ``"failed"`` (with ``error``) at the
    end; each write replaces the node's properties.

    Parameters
    ----------
    run_id, dataset, solver : str
    parameters, metrics : dict
        Stored as JSON text.
    timings : dict of str to float
        Seconds per stage.
    started_at : pandas.Timestamp
    finished_at : pandas.Timestamp or None
        None while the run is running.
    n_nodes, n_labeled, n_flagged : int
    status : {"running", "completed", "failed"}, default "completed"
    versions : dict of str to str
        Library versions the run used (``graphlabel.provenance.versions()``).
    error : str or None
        Message of a failed run.
    process : dict
        Where the run runs: ``host``, ``pid`` and the process's start time ``started``
        (seconds since the epoch), so that a run whose process is gone can be told from
        one still running (``graphlabel.liveness``).
    heartbeat_at : pandas.Timestamp or None
        The last time the running run wrote a sign of life (at its start and after each
        stage).
    """

    run_id: str
    dataset: str
    solver: str
    parameters: dict[str, Any]
    metrics: dict[str, Any]
    timings: dict[str, float]
    started_at: pd.Timestamp
    finished_at: pd.Timestamp | None
    n_nodes: int
    n_labeled: int
    n_flagged: int
    status: str = "completed"
    versions: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    process: dict[str, Any] = field(default_factory=dict)
    heartbeat_at: pd.Timestamp | None = None

    def __post_init__(self) -> None:
        if self.status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {RUN_STATUSES}, got {self.status!r}")

    def properties(self) -> dict[str, Any]:
        """The run as the parameters of ``write_run.*.cypher``: dictionaries as JSON text,
        timestamps as naive UTC datetimes (both stores keep them without a zone)."""
        return {
            "run_id": self.run_id,
            "dataset": self.dataset,
            "solver": self.solver,
            "status": self.status,
            "parameters": json.dumps(self.parameters, sort_keys=True, default=str),
            "metrics": json.dumps(self.metrics, sort_keys=True, default=str),
            "timings": json.dumps(self.timings, sort_keys=True),
            "versions": json.dumps(self.versions, sort_keys=True, default=str),
            "error": None if self.error is None else str(self.error),
            "process": json.dumps(self.process, sort_keys=True, default=str),
            "heartbeat_at": naive_utc(self.heartbeat_at),
            "started_at": naive_utc(self.started_at),
            "finished_at": naive_utc(self.finished_at),
            "n_nodes": int(self.n_nodes),
            "n_labeled": int(self.n_labeled),
            "n_flagged": int(self.n_flagged),
        }


def naive_utc(timestamp) -> Any:
    """A timestamp (pandas, datetime, or the Neo4j driver's DateTime) as a naive
    ``datetime`` in UTC; None stays None."""
    if hasattr(timestamp, "to_native"):  # neo4j.time.DateTime / LocalDateTime
        timestamp = timestamp.to_native()
    if timestamp is None or pd.isna(timestamp):
        return None
    timestamp = pd.Timestamp(timestamp)
    if timestamp.tzinfo is not None:
        timestamp = timestamp.tz_convert("UTC").tz_localize(None)
    return timestamp.to_pydatetime()


def _decode_json(value: Any) -> dict[str, Any]:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return {}  # a run written before the column existed
    return json.loads(value) if isinstance(value, (str, bytes)) else dict(value)


def runs_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """``read_runs``' frame from rows of LabelRun properties: ``RUN_COLUMNS`` in order, JSON
    columns decoded to dicts ({} where absent), timestamps as naive pandas Timestamps, a
    missing status read as "completed" (runs written before statuses existed)."""
    rows = [dict(row) for row in rows]
    frame = pd.DataFrame({name: [row.get(name) for row in rows] for name in RUN_COLUMNS})
    for name in RUN_JSON_COLUMNS:
        frame[name] = [_decode_json(value) for value in frame[name]]
    for name in ("started_at", "finished_at", "heartbeat_at"):
        frame[name] = pd.to_datetime([naive_utc(value) for value in frame[name]])
    frame["status"] = frame["status"].where(frame["status"].notna(), "completed")
    frame["error"] = frame["error"].astype(object).where(frame["error"].notna(), None)
    for name in ("n_nodes", "n_labeled", "n_flagged"):
        frame[name] = pd.array(frame[name], dtype="Int64")
    return frame


def run_record(row: Mapping[str, Any]) -> LabelRunRecord:
    """A ``LabelRunRecord`` from one row of ``read_runs``' frame."""
    def timestamp(value):
        return None if value is None or pd.isna(value) else pd.Timestamp(value)

    def count(value) -> int:
        return 0 if value is None or pd.isna(value) else int(value)

    return LabelRunRecord(
        run_id=row["run_id"], dataset=row["dataset"], solver=row["solver"], parameters=dict(row["parameters"]),
        metrics=dict(row["metrics"]), timings=dict(row["timings"]), started_at=timestamp(row["started_at"]),
        finished_at=timestamp(row["finished_at"]), n_nodes=count(row["n_nodes"]), n_labeled=count(row["n_labeled"]),
        n_flagged=count(row["n_flagged"]), status=row["status"], versions=dict(row["versions"]), error=row["error"],
        process=dict(row["process"]), heartbeat_at=timestamp(row["heartbeat_at"]))


def check_status(status: Any) -> str | None:
    if status is not None and status not in RUN_STATUSES:
        raise ValueError(f"run status must be one of {RUN_STATUSES}, got {status!r}")
    return status


def check_limit(value: Any, name: str, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``; anything else (bools, floats, strings) is refused."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def runs_to_prune(runs: pd.DataFrame, keep_last: int) -> list[str]:
    """Run ids that retention removes: the dataset's runs older than its ``keep_last``
    newest completed ones.

    ``runs`` has columns ``run_id``, ``status``, ``started_at`` (one dataset). Runs are
    ordered newest first by ``started_at`` (missing ones count as oldest), then by run id.
    Kept: the ``keep_last`` newest completed runs, every run newer than the oldest of those
    (a failed run from last night stays next to the runs around it), and every "running"
    run. The stores also keep the run the nodes' ``label_run_id`` points to, checked in
    the deleting transaction.
    """
    keep_last = check_limit(keep_last, "keep_last", minimum=0)
    if runs.empty:
        return []
    status = runs["status"].where(runs["status"].notna(), "completed")
    started = pd.to_datetime(runs["started_at"])
    ordered = (pd.DataFrame({"run_id": runs["run_id"].astype(str), "status": status,
                             "missing": started.isna(), "started": started})
               .sort_values(["missing", "started", "run_id"], ascending=[True, False, False],
                            kind="stable")
               .reset_index(drop=True))
    completed = ordered.index[ordered["status"] == "completed"]
    if len(completed) <= keep_last:
        return []
    # everything after the keep_last-th newest completed run (position `boundary`) goes
    boundary = completed[keep_last - 1] if keep_last else -1
    beyond = ordered.iloc[boundary + 1:]
    return beyond.loc[beyond["status"] != "running", "run_id"].tolist()


def explanation(node: Mapping[str, Any] | None, neighbours: Iterable[Mapping[str, Any]], dataset: str,
                key: str) -> tuple[dict[str, Any], pd.DataFrame]:
    """``explain``'s result from the rows of ``explain_node`` and ``explain_neighbours``.

    ``node["neighbours"]`` lists ``{key, label, weight}`` for every neighbour (label: the
    given one, else the predicted one; an entry with a null key stands for "no
    neighbour"); it becomes ``degree`` (the sum of the weights), ``n_neighbours`` and
    ``class_shares``: class → its neighbours' weight / degree, largest first, ``None``
    for neighbours with neither label.
    """
    if node is None:
        raise NotFound(f"no node with key {key!r} in dataset {dataset!r}")
    node = dict(node)
    entries = [dict(e) for e in node.pop("neighbours", None) or [] if e and e.get("key") is not None]
    per_class: dict[Any, float] = {}
    for entry in entries:
        per_class[entry["label"]] = per_class.get(entry["label"], 0.0) + float(entry["weight"] or 0.0)
    degree = float(sum(per_class.values()))
    shares = sorted(((label, weight / degree if degree > 0 else 0.0) for label, weight in per_class.items()),
                    key=lambda item: (-item[1], str(item[0])))
    labelled_at = naive_utc(node.get("labelled_at"))
    node["labelled_at"] = None if labelled_at is None else pd.Timestamp(labelled_at)
    node.update(dataset=dataset, degree=degree, n_neighbours=len(entries), class_shares=dict(shares))
    frame = pd.DataFrame([dict(row) for row in neighbours], columns=[c for c in NEIGHBOUR_COLUMNS
                                                                       if c not in ("share", "agrees")])
    frame["weight"] = frame["weight"].astype(float)
    frame["share"] = frame["weight"] / degree if degree > 0 else 0.0
    predicted = node.get("predicted_label")
    frame["agrees"] = [label is not None and label == predicted for label in frame["label"]]
    for name in ("given_label", "predicted_label", "label"):
        frame[name] = frame[name].astype(object).where(frame[name].notna(), None)
    return node, frame[list(NEIGHBOUR_COLUMNS)]


#: Prediction columns a writer may leave out (written as null).
OPTIONAL_COLUMNS = ("label_noise_score",)
#: What the stores write: PREDICTION_SCHEMA and the optional noise score after label_noise.
WRITTEN_PREDICTION_SCHEMA = PREDICTION_SCHEMA.insert(PREDICTION_SCHEMA.get_field_index("label_noise") + 1,
                                                     pa.field("label_noise_score", pa.float64()))


def conform_table(table: pa.Table, schema: pa.Schema, what: str) -> pa.Table:
    """The table's columns of ``schema``, in its order and types; names what is missing
    (an ``OPTIONAL_COLUMNS`` column that is missing becomes nulls)."""
    for name in OPTIONAL_COLUMNS:
        if name in schema.names and name not in table.column_names:
            table = table.append_column(name, pa.nulls(table.num_rows, schema.field(name).type))
    missing = [name for name in schema.names if name not in table.column_names]
    if missing:
        raise ValueError(f"{what} table lacks columns {missing}")
    return table.select(schema.names).cast(schema)


def _positions(values: pa.ChunkedArray, key_set: pa.Array) -> np.ndarray:
    """Position of each value in ``key_set``, -1 where it is absent."""
    found = pa.compute.index_in(values, value_set=key_set)
    return found.fill_null(-1).to_numpy().astype(np.int64)


def subgraph_from_tables(nodes: pa.Table, edges: pa.Table) -> SubGraph:
    """Assemble a SubGraph from a node table (key, label, features) and an edge table
    (source, target, weight) given by key; edges to nodes outside the table are dropped."""
    keys = nodes.column("key").to_numpy(zero_copy_only=False).astype(object)
    labels = nodes.column("label").to_numpy(zero_copy_only=False).astype(object)
    features = lengths = None
    if "features" in nodes.column_names and nodes.num_rows:
        flat = nodes.column("features").combine_chunks()
        lengths = pa.compute.list_value_length(flat).fill_null(0).to_numpy(zero_copy_only=False)
        if lengths.min() == lengths.max():
            features, lengths = flat.flatten().to_numpy(zero_copy_only=False).reshape(len(keys), -1), None
    # Arrow's hash lookup, in C over the key strings: no Python object per relationship.
    key_set = nodes.column("key").combine_chunks()
    src = _positions(edges.column("source"), key_set)
    dst = _positions(edges.column("target"), key_set)
    weight = edges.column("weight").to_numpy(zero_copy_only=False).astype(np.float64)
    inside = (src >= 0) & (dst >= 0)
    return SubGraph(keys, labels, features, src[inside], dst[inside], weight[inside], lengths)


class GraphStore(ABC):
    """The operations the flows need from a graph database."""

    dialect: str = ""
    #: True where the database builds kNN relationships itself (``build_knn_edges``).
    native_knn: bool = False

    @abstractmethod
    def ensure_schema(self) -> None:
        """Create tables / constraints if they do not exist (idempotent)."""

    @abstractmethod
    def write_nodes(self, dataset: str, nodes: pa.Table) -> int:
        """Upsert nodes by key; returns how many rows were written."""

    @abstractmethod
    def replace_edges(self, dataset: str, edges: pa.Table) -> int:
        """Delete the dataset's similarity relationships and write these; returns the count."""

    @abstractmethod
    def read_subgraph(self, dataset: str, with_features: bool = True) -> SubGraph:
        """Read the dataset's nodes, given labels, features and relationships."""

    def feature_lengths(self, dataset: str) -> dict[int, int]:
        """Feature-list length → number of the dataset's nodes with that length (one entry
        when the dataset is sound, none when it has no nodes), most common first. Ingest
        rejects rows of another length than the dataset's."""
        raise NotImplementedError(f"{type(self).__name__} does not report feature lengths")

    @abstractmethod
    def write_predictions(self, dataset: str, predictions: pa.Table) -> int:
        """Set the prediction properties on the nodes, matched by key."""

    @abstractmethod
    def write_run(self, run: LabelRunRecord) -> None:
        """Create (or replace) the run's ``LabelRun`` node."""

    @abstractmethod
    def read_runs(self, dataset: str | None = None, run_id: str | None = None,
                  limit: int = 20, status: str | None = None) -> pd.DataFrame:
        """The ``LabelRun`` nodes, newest first (by ``started_at``).

        Parameters
        ----------
        dataset : str, optional
            Only this dataset's runs.
        run_id : str, optional
            Only this run.
        limit : int, default 20
            At most this many rows.
        status : {"running", "completed", "failed"}, optional
            Only runs in this state.

        Returns
        -------
        pandas.DataFrame
            Columns ``RUN_COLUMNS``; ``parameters``, ``metrics``, ``timings`` and
            ``versions`` decoded to dicts; no rows when nothing matches.
        """

    def interrupt_run(self, run_id: str, seen: Any, error: str) -> bool:
        """Mark the run ``failed`` with ``error`` (its ``finished_at`` the last sign of life
        ``seen``), only if it is still ``running`` with that last sign of life: a run that
        wrote again, or finished, in the meantime is left alone. Returns whether it was
        marked."""
        raise NotImplementedError(f"{type(self).__name__} cannot mark interrupted runs")

    @abstractmethod
    def prune_runs(self, dataset: str, keep_last: int) -> int:
        """Retention: delete the dataset's ``LabelRun`` nodes older than its ``keep_last``
        newest completed runs (see ``runs_to_prune``), never a "running" run nor the run a
        node's ``label_run_id`` points to. Returns how many were deleted."""

    @abstractmethod
    def explain(self, dataset: str, key: str, limit: int = 10) -> tuple[dict[str, Any], pd.DataFrame]:
        """Why node ``key`` got its label, from the stored similarity relationships.

        Parameters
        ----------
        dataset, key : str
        limit : int, default 10
            Neighbours listed (strongest first); the class shares use all of them.

        Returns
        -------
        node : dict
            ``key``, ``given_label``, ``predicted_label``, ``label_confidence``,
            ``label_noise``, ``label_run_id``, ``label_solver``, ``labelled_at``,
            ``dataset``, ``degree`` (sum of the weights to the neighbours),
            ``n_neighbours`` and ``class_shares``: class → share of the degree going to
            neighbours of that class (given label, else predicted), largest first.
        neighbours : pandas.DataFrame
            ``NEIGHBOUR_COLUMNS``: the neighbour's key, the weight (the larger one where a
            pair has a relationship each way, as the solvers read it), its share of the
            degree, given and predicted label, ``label`` (given, else predicted) and
            whether that label agrees with the node's prediction.

        Raises
        ------
        NotFound
            No node with that key in the dataset.
        """

    @abstractmethod
    def query(self, cypher: str, parameters: dict[str, Any] | None = None, *, write: bool = False) -> pd.DataFrame:
        """Run one statement typed by a user and return its rows.

        The statement is checked first (``queries.user_statement``: one statement, every
        ``$parameter`` given a value). It runs read-only unless ``write``: a statement
        that writes raises ``WriteRefused`` and changes nothing.
        """

    def check_edge_builder(self, graph: str) -> None:
        """Raise ``StoreSetupError`` when this store cannot build a graph of kind ``graph``
        as configured (Neo4j's GDS builder without the plugin); the flows ask before they
        write anything. Stores that leave graphs to the flow's local builder can always."""

    def build_knn_edges(self, dataset: str, **spec: Any) -> NativeEdges:
        """Build kNN relationships inside the database (stores with ``native_knn``, e.g.
        Neo4j GDS); returns the relationship count and the σ used. The others leave the graph to the
        flow's local builder and ``replace_edges``."""
        raise NotImplementedError(f"{type(self).__name__} has no native kNN builder")

    # -- incremental runs (see graphstore/changes.py) ------------------------------------

    def add_edges(self, dataset: str, edges: pa.Table) -> int:
        """Write these similarity relationships next to the existing ones (nothing is
        deleted; a relationship already there is updated, so a retried call does not
        double it); returns the count written."""
        raise NotImplementedError(f"{type(self).__name__} cannot add edges")

    def build_knn_edges_for(self, dataset: str, keys, **spec: Any) -> int:
        """Native kNN for some nodes only (``native_knn`` stores: GDS filtered kNN): the
        relationships from the nodes ``keys`` to their k nearest among all the dataset's
        nodes, added without deleting any; ``spec`` as ``build_knn_edges`` with the
        recorded σ. Returns the relationships written."""
        raise NotImplementedError(f"{type(self).__name__} has no native kNN builder")

    def read_label_state(self, dataset: str) -> pa.Table:
        """Per node (``changes.LABEL_STATE_SCHEMA``): ``key``; ``changed``: never labelled,
        or features / given label changed after it was (``labelled_at`` older than
        ``updated_at``); ``labelled``: ``labelled_at`` is set; ``predicted_label``."""
        raise NotImplementedError(f"{type(self).__name__} does not track changes")

    def write_graph_build(self, dataset: str, spec: dict[str, Any]) -> None:
        """Record the parameters the dataset's similarity relationships were built with
        (graph, k, metric, weights, sigma, ...), replacing the previous record."""
        raise NotImplementedError(f"{type(self).__name__} does not record graph builds")

    def read_graph_build(self, dataset: str) -> dict[str, Any] | None:
        """The parameters recorded by ``write_graph_build`` (with ``built_at``), or None."""
        raise NotImplementedError(f"{type(self).__name__} does not record graph builds")

    def close(self) -> None:
        """Release the connection."""

    def __enter__(self) -> "GraphStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
