"""What crosses the store port: the Arrow schemas of nodes, edges and predictions, the
``SubGraph`` that comes out, and the checks on names and limits every adapter applies.

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
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute below

if TYPE_CHECKING:
    # imported where used (edge_table): query, report and explain never build a graph, and
    # scipy.sparse cost them 0.09-0.15 s of their ~1 s (python -X importtime, bench/cli.py)
    import scipy.sparse as sp

# Matched with fullmatch: `$` alone would also accept a trailing newline ("base\n").
DATASET_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")

NODE_SCHEMA = pa.schema(
    [("key", pa.string()), ("features", pa.list_(pa.float64())), ("label", pa.string())]
)
#: Optional node columns (issue 17): ``categories``, the categorical features as text, one
#: per ``--categorical`` column in the order given; ``label_confidence``, the trust in the
#: given label (in [0, 1]; null where none was given, read as 1). Stored on the node as
#: ``categories`` and ``given_label_confidence`` (``label_confidence`` there is the
#: prediction's). A table without them writes nulls.
NODE_OPTIONAL_FIELDS = (pa.field("categories", pa.list_(pa.string())), pa.field("label_confidence", pa.float64()))
#: What the stores write: NODE_SCHEMA and the optional columns.
STORED_NODE_SCHEMA = pa.schema([*NODE_SCHEMA, *NODE_OPTIONAL_FIELDS])
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


#: What a reviewer may decide about a given label (``GraphStore.record_decision``).
DECISIONS = ("accept", "correct")


def check_decision(decision: Any, label: Any) -> None:
    """A review decision and its label: ``correct`` needs a non-empty label."""
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {DECISIONS}, got {decision!r}")
    if decision == "correct" and (not isinstance(label, str) or not label.strip()):
        raise ValueError(f"a correction needs a non-empty label, got {label!r}")


def check_limit(value: Any, name: str, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``; anything else (bools, floats, strings) is refused."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


@dataclass(frozen=True, eq=False)
class SubGraph:
    """One dataset's nodes and similarity relationships, read from a store.

    ``source``/``target`` are positions into ``keys``; each undirected pair appears once
    (with the larger weight where a store holds a relationship each way), and no node is
    its own neighbour (``one_row_per_pair``).
    ``labels`` holds the given label strings, ``None`` where a node has none.
    ``features`` is None when not read, or when the nodes' feature lists differ in length;
    ``feature_lengths`` then holds each node's length (see ``mixed_lengths``).
    ``categories`` (n, c) object array of the categorical features (None when the dataset
    has none); ``label_confidence`` (n,) the trust in each given label (1 where none was
    given; None when no node has one).
    """

    keys: np.ndarray
    labels: np.ndarray
    features: np.ndarray | None
    source: np.ndarray
    target: np.ndarray
    weight: np.ndarray
    feature_lengths: np.ndarray | None = None
    categories: np.ndarray | None = None
    label_confidence: np.ndarray | None = None

    @property
    def n_nodes(self) -> int:
        return len(self.keys)

    def mixed_lengths(self, dataset: str, shown: int = 5) -> str:
        """What is wrong when the feature lengths differ, naming the nodes: how many nodes
        have each length, and keys of the nodes whose length is not the most common."""
        lengths, counts = np.unique(np.asarray(self.feature_lengths), return_counts=True)
        usual = lengths[np.argmax(counts)]
        odd = self.keys[self.feature_lengths != usual]
        listed = ", ".join(repr(k) for k in odd[:shown]) + (", ..." if len(odd) > shown else "")
        spread = ", ".join(f"{n} of length {length}" for length, n in zip(lengths, counts))
        return (f"dataset {dataset!r} has nodes with features of different lengths: {spread} (not of length"
                f" {usual}: {listed}); ingest those nodes again with {usual} features, or the dataset under a"
                " new name")


#: What ``GraphStore.read_predictions`` returns.
READ_PREDICTION_SCHEMA = pa.schema([("key", pa.string()), ("predicted_label", pa.string()),
                                    ("label_confidence", pa.float64()), ("label_noise", pa.bool_()),
                                    ("label_noise_score", pa.float64())])

#: Per-class scores written per node (issue 17): ``label_scores`` one value per class in
#: the order of the node's run's classes (``LabelRun.classes``), normalised as
#: ``labelling.scores.readable_scores`` says; the best other class and the margin to it.
SCORE_FIELDS = (pa.field("label_scores", pa.list_(pa.float64())), pa.field("label_runner_up", pa.string()),
                pa.field("label_margin", pa.float64()))
#: Prediction columns a writer may leave out (written as null).
OPTIONAL_COLUMNS = ("label_noise_score", *(f.name for f in SCORE_FIELDS))
#: Node columns a writer may leave out (written as null).
NODE_OPTIONAL_COLUMNS = tuple(field.name for field in NODE_OPTIONAL_FIELDS)
#: What the stores write: PREDICTION_SCHEMA, the optional noise score after label_noise and
#: the optional per-class scores at the end.
WRITTEN_PREDICTION_SCHEMA = PREDICTION_SCHEMA.insert(PREDICTION_SCHEMA.get_field_index("label_noise") + 1,
                                                     pa.field("label_noise_score", pa.float64()))
for _field in SCORE_FIELDS:
    WRITTEN_PREDICTION_SCHEMA = WRITTEN_PREDICTION_SCHEMA.append(_field)

#: What ``GraphStore.read_export`` returns: per node its key, given label and the latest
#: prediction's columns (``label_scores`` in the order of ``label_run_id``'s run's classes);
#: ``label_accepted`` is the given label a reviewer vouched for (accepted or corrected to).
EXPORT_SCHEMA = pa.schema([
    ("key", pa.string()), ("given_label", pa.string()), ("predicted_label", pa.string()),
    ("label_confidence", pa.float64()), *SCORE_FIELDS, ("label_noise", pa.bool_()),
    ("label_noise_score", pa.float64()), ("label_run_id", pa.string()), ("label_solver", pa.string()),
    ("labelled_at", pa.timestamp("us")), ("label_accepted", pa.string())])


def conform_table(table: pa.Table, schema: pa.Schema, what: str,
                  optional: tuple[str, ...] = OPTIONAL_COLUMNS) -> pa.Table:
    """The table's columns of ``schema``, in its order and types; names what is missing
    (an ``optional`` column that is missing becomes nulls)."""
    for name in optional:
        if name in schema.names and name not in table.column_names:
            table = table.append_column(name, pa.nulls(table.num_rows, schema.field(name).type))
    missing = [name for name in schema.names if name not in table.column_names]
    if missing:
        raise ValueError(f"{what} table lacks columns {missing}")
    return table.select(schema.names).cast(schema)


def check_endpoints(dataset: str, edges: pa.Table, keys: pa.Array | pa.ChunkedArray | list[str]) -> None:
    """Raise ``ValueError`` naming the keys of ``edges`` (``EDGE_SCHEMA``) that are not in
    ``keys``, the dataset's node keys: the stores check before they delete or write
    anything (Kùzu's COPY would fail half way, Neo4j's MATCH would drop the row)."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    elif not isinstance(keys, pa.Array):
        keys = pa.array(list(keys), pa.string())
    ends = pa.chunked_array(edges.column("source").chunks + edges.column("target").chunks, pa.string())
    known = pa.compute.is_in(ends, value_set=keys.cast(pa.string()))
    if pa.compute.all(known).as_py() is not False:
        return
    unknown = pa.compute.unique(ends.filter(pa.compute.invert(known))).to_pylist()
    listed = ", ".join(repr(key) for key in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
    raise ValueError(f"{len(unknown)} keys of the relationships are not nodes of dataset {dataset!r}: {listed}"
                     " (ingest those nodes first); nothing was written")


def _positions(values: pa.ChunkedArray, key_set: pa.Array) -> np.ndarray:
    """Position of each value in ``key_set``, -1 where it is absent."""
    found = pa.compute.index_in(values, value_set=key_set)
    return found.fill_null(-1).to_numpy().astype(np.int64)


def one_row_per_pair(graph: SubGraph) -> SubGraph:
    """Keep one edge per unordered pair (the larger weight) and drop self loops.

    A store may hold a pair's relationship each way (GDS kNN writes one per direction in
    which it found the pair; an incremental run's new nodes that are each other's
    neighbours get both): the solvers symmetrise with the larger weight, and so does this.
    When there is nothing to merge (the local builder writes one relationship per pair)
    the graph comes back as it is, after one sort of the pair codes (about 50 ms for 1M
    relationships, against 0.3 s for the merge itself)."""
    n = max(graph.n_nodes, 1)
    lo = np.minimum(graph.source, graph.target).astype(np.int64)
    hi = np.maximum(graph.source, graph.target).astype(np.int64)
    code = lo * n + hi
    loops = lo == hi
    if not loops.any():
        ordered = np.sort(code)
        if not (ordered[1:] == ordered[:-1]).any():
            return graph
    code, weight = code[~loops], graph.weight[~loops]
    order = np.argsort(code, kind="stable")
    code = code[order]
    first = np.ones(len(code), dtype=bool)
    first[1:] = code[1:] != code[:-1]
    starts = np.flatnonzero(first)
    weight = np.maximum.reduceat(weight[order], starts) if len(starts) else weight[:0]
    return replace(graph, source=code[starts] // n, target=code[starts] % n, weight=weight)


def subgraph_from_tables(nodes: pa.Table, edges: pa.Table) -> SubGraph:
    """Assemble a SubGraph from a node table (key, label, features) and an edge table
    (source, target, weight) given by key; edges to nodes outside the table are dropped,
    and each pair is kept once (``one_row_per_pair``)."""
    features = lengths = None
    if "features" in nodes.column_names and nodes.num_rows:
        flat = nodes.column("features").combine_chunks()
        lengths = pa.compute.list_value_length(flat).fill_null(0).to_numpy(zero_copy_only=False)
        if lengths.min() == lengths.max():
            features, lengths = flat.flatten().to_numpy(zero_copy_only=False).reshape(nodes.num_rows, -1), None
    # Arrow's hash lookup, in C over the key strings: no Python object per relationship.
    key_set = nodes.column("key").combine_chunks()
    return subgraph_from_positions(nodes, _positions(edges.column("source"), key_set),
                                   _positions(edges.column("target"), key_set), edges.column("weight"),
                                   features, lengths)


def subgraph_from_positions(nodes: pa.Table, source: np.ndarray, target: np.ndarray,
                            weight: pa.ChunkedArray | np.ndarray, features: np.ndarray | None = None,
                            feature_lengths: np.ndarray | None = None) -> SubGraph:
    """Assemble a SubGraph from a node table (key, label and the optional columns) and
    edges as row positions into it (-1 for an end outside it: such an edge is dropped);
    each pair is kept once (``one_row_per_pair``). ``features`` (n, d) or, when the
    nodes' lengths differ, ``feature_lengths`` (n,) as ``SubGraph`` holds them."""
    keys = nodes.column("key").to_numpy(zero_copy_only=False).astype(object)
    labels = nodes.column("label").to_numpy(zero_copy_only=False).astype(object)
    weight = (weight.to_numpy(zero_copy_only=False) if isinstance(weight, pa.ChunkedArray | pa.Array)
              else np.asarray(weight)).astype(np.float64, copy=False)
    inside = (source >= 0) & (target >= 0)
    categories, confidence = optional_node_columns(nodes)
    return one_row_per_pair(SubGraph(keys, labels, features, source[inside], target[inside], weight[inside],
                                     feature_lengths, categories, confidence))


def optional_node_columns(nodes: pa.Table) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The ``categories`` (n, c) and ``label_confidence`` (n,) of a node table: None when
    the table has no such column or no node has a value (the dataset has none)."""
    categories = None
    if "categories" in nodes.column_names and nodes.num_rows:
        lists = nodes.column("categories").combine_chunks()
        if lists.null_count < len(lists):
            lengths = pa.compute.list_value_length(lists).fill_null(0).to_numpy(zero_copy_only=False)
            if lengths.max() == 0:
                return None, _confidence(nodes)
            if lengths.min() != lengths.max():
                raise ValueError(f"nodes have different numbers of categorical features ({lengths.min()} to"
                                 f" {lengths.max()}): ingest them again with the same --categorical columns")
            flat = lists.flatten().to_numpy(zero_copy_only=False).astype(object)
            categories = flat.reshape(len(lists), -1)
    return categories, _confidence(nodes)


def _confidence(nodes: pa.Table) -> np.ndarray | None:
    if "label_confidence" not in nodes.column_names or not nodes.num_rows:
        return None
    column = nodes.column("label_confidence").combine_chunks()
    if column.null_count == len(column):
        return None
    return column.fill_null(1.0).to_numpy(zero_copy_only=False).astype(np.float64)


def edge_table_from_pairs(keys: np.ndarray | pa.Array, source: np.ndarray, target: np.ndarray,
                          weight: np.ndarray) -> pa.Table:
    """An ``EDGE_SCHEMA`` table from positions into ``keys``. Arrow's ``take`` gathers the
    key strings in C; indexing an object array and ``.tolist()`` made one Python string per
    endpoint (14M of them for a 1M-node 10-NN graph)."""
    names = keys if isinstance(keys, pa.Array) else pa.array(np.asarray(keys, dtype=object), pa.string())
    return pa.table({
        "source": names.take(pa.array(source, pa.int64())),
        "target": names.take(pa.array(target, pa.int64())),
        "weight": pa.array(np.asarray(weight, dtype=np.float64)),
    }).cast(EDGE_SCHEMA)


def edge_table(keys: np.ndarray | pa.Array, W: sp.spmatrix) -> pa.Table:
    """One row per undirected pair of the symmetric graph ``W`` (its upper triangle)."""
    import scipy.sparse as sp

    upper = sp.triu(W, k=1).tocoo()
    return edge_table_from_pairs(keys, upper.row, upper.col, upper.data)
