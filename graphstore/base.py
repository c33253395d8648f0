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

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

DATASET_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")

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
    if not isinstance(dataset, str) or not DATASET_NAME.match(dataset):
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
    """

    keys: np.ndarray
    labels: np.ndarray
    features: np.ndarray | None
    source: np.ndarray
    target: np.ndarray
    weight: np.ndarray

    @property
    def n_nodes(self) -> int:
        return len(self.keys)


@dataclass(frozen=True)
class LabelRunRecord:
    """What a labelling run writes as its ``LabelRun`` node."""

    run_id: str
    dataset: str
    solver: str
    parameters: dict[str, Any]
    metrics: dict[str, Any]
    timings: dict[str, float]
    started_at: pd.Timestamp
    finished_at: pd.Timestamp
    n_nodes: int
    n_labeled: int
    n_flagged: int


def conform_table(table: pa.Table, schema: pa.Schema, what: str) -> pa.Table:
    """The table's columns of ``schema``, in its order and types; names what is missing."""
    missing = [name for name in schema.names if name not in table.column_names]
    if missing:
        raise ValueError(f"{what} table lacks columns {missing}")
    return table.select(schema.names).cast(schema)


def subgraph_from_tables(nodes: pa.Table, edges: pa.Table) -> SubGraph:
    """Assemble a SubGraph from a node table (key, label, features) and an edge table
    (source, target, weight) given by key; edges to nodes outside the table are dropped."""
    keys = np.asarray(nodes.column("key").to_pylist(), dtype=object)
    labels = np.asarray(nodes.column("label").to_pylist(), dtype=object)
    features = None
    if "features" in nodes.column_names and nodes.num_rows:
        flat = nodes.column("features").combine_chunks()
        lengths = pa.compute.list_value_length(flat).to_numpy(zero_copy_only=False)
        if len(set(lengths.tolist())) == 1:
            features = flat.flatten().to_numpy(zero_copy_only=False).reshape(len(keys), -1)
    index = pd.Index(keys)
    src = index.get_indexer(edges.column("source").to_pandas())
    dst = index.get_indexer(edges.column("target").to_pandas())
    weight = edges.column("weight").to_numpy(zero_copy_only=False).astype(np.float64)
    inside = (src >= 0) & (dst >= 0)
    return SubGraph(keys, labels, features, src[inside], dst[inside], weight[inside])


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

    @abstractmethod
    def write_predictions(self, dataset: str, predictions: pa.Table) -> int:
        """Set the prediction properties on the nodes, matched by key."""

    @abstractmethod
    def write_run(self, run: LabelRunRecord) -> None:
        """Create (or replace) the run's ``LabelRun`` node."""

    @abstractmethod
    def query(self, cypher: str, parameters: dict[str, Any] | None = None) -> pd.DataFrame:
        """Run a read query typed by a user and return its rows."""

    def build_knn_edges(self, dataset: str, **spec: Any) -> int:
        """Build kNN relationships inside the database (stores with ``native_knn``, e.g.
        Neo4j GDS); returns the relationship count. The others leave the graph to the
        flow's local builder and ``replace_edges``."""
        raise NotImplementedError(f"{type(self).__name__} has no native kNN builder")

    def close(self) -> None:
        """Release the connection."""

    def __enter__(self) -> "GraphStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
