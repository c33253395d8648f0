"""kNN relationships built inside Neo4j by the Graph Data Science plugin (GDS 2.13).

``build_knn`` replaces a dataset's similarity relationships with ``gds.knn.write`` on a
Cypher projection of its nodes' features; ``Neo4jStore.build_knn_edges`` calls it.
Incremental runs add the new nodes' relationships with the port's exact search over the
features the run has already read (``GraphStore.add_knn_edges``), not with GDS filtered
kNN: at 60,000 nodes, the filtered call (``gds.knn.filtered.write``, with the projection
of every node it needs) took 14.1 s for 100 new nodes and found 77% of their 10 nearest,
against 1.4 s and all of them (2,000 new: 14.8 s and 97% against 2.7 s; ``python -m
bench neo4j_incremental --against CHECKOUT``, bench/results/neo4j_incremental.md).

Decisions, and why
------------------
- GDS is called through Cypher files (``cypher/gds_*.neo4j.cypher``) on the store's own
  driver, not through the ``graphdatascience`` client. The client checks connectivity
  before every call with up to 600 retries a second apart (``Neo4jQueryRunner.
  ConnectivityRetriesConfig`` in graphdatascience 2.2), so a dead server held a build for
  ten minutes; with the driver, the store's bounded retry time applies
  (``Neo4jStore.from_uri``). The calls are then Cypher in files like every other query,
  values as parameters, and the client (and its pins) is not a dependency.
- Projection, kNN and drop run in auto-commit transactions (``Neo4jStore._autocommit``):
  they change GDS's in-memory catalog and write in GDS's own transactions, so a driver
  retry of a managed transaction would project twice or write twice. A failed build
  fails the store task, whose Prefect retries rerun the whole build.
- Ownership: every relationship graphlabel writes carries the edge marker property
  (``Neo4jGraphConfig.edge_marker``); GDS writes its similarity score into it. Deletion,
  δ pruning and reweighting touch marked relationships only. A build into a relationship
  type that already holds unmarked relationships between the dataset's nodes (a user's
  own) is refused before anything is deleted: they would be mixed into the graph.
- Weights: the score lands in the marker first and ``weight`` is set afterwards, in
  batches of nodes, from the features with the GDS similarity functions (exact, not
  inverted from kNN's score). A build that stops between the two leaves marked
  relationships without a weight: ``read_subgraph`` refuses such a graph (the next build
  deletes them), instead of reading them as weight 1.
- Batches: deleting, pruning and reweighting go by batches of node keys (about
  ``batch_size`` relationships each, one managed transaction per batch), so each batch
  costs its own relationships; a ``LIMIT`` loop over the dataset would scan the emptied
  nodes again on every batch, quadratic in the dataset.
- Version: GDS 2.13 is the line for Neo4j 5.26 and the one the live suite runs; the
  projection's ``targetNodeProperties: null`` is what older lines lack or spell
  otherwise. ``MIN_GDS_VERSION`` is checked before anything is deleted; so is the
  plugin's presence.
- Determinism: GDS accepts ``randomSeed`` only with ``concurrency=1``; a seed, or
  ``deterministic=True`` (seed 0 unless given), sets both.
- Scaling and categorical columns (``similarity.encoding``): the fitted numbers go into
  the projection query as parameters (``(x - center) / width`` and one indicator per
  vocabulary entry, gds_project.neo4j.cypher), so GDS measures the encoded vectors and
  no scaled copy of the features is written to the nodes (a second property to keep in
  step with every ingest). The weights follow from GDS's scores (gds_set_weights), which
  are then scores of the encoded vectors too. The fit reads the dataset's features once
  through ``read_subgraph`` (the same numpy fit as the local builder, so both stores
  record the same numbers); incremental runs reuse the recorded numbers.
- δ-graph on GDS: kNN (``topK=k`` caps the neighbours per node), then the relationships
  longer than δ are deleted, measured exactly. It is the δ-graph truncated to each node's
  k nearest; the exact δ-graph is the local builder's (``similarity.delta_graph``).
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import numpy as np

from similarity.encoding import FeatureEncoding
from similarity.knn import FLAT, shares_problem

from .errors import StoreSetupError
from .neo4j_config import Neo4jGraphConfig
from .port import BuiltGraph, OnProgress, no_progress
from .schemas import SubGraph

MIN_GDS_VERSION = (2, 13, 0)
KNN_METRICS = {"euclidean": "EUCLIDEAN", "cosine": "COSINE"}
KNN_WEIGHTS = ("gaussian", "cosine", "binary", "similarity")
READ = "r"


class Neo4jSession(Protocol):
    """What the GDS calls need of the store that passes itself in (``Neo4jStore``): its
    configuration, its queries by name (read, or in auto-commit transactions for GDS) and
    the reads and batched writes around a build. Declared here so that this module imports
    nothing of the store and the store's module alone imports this one."""

    config: Neo4jGraphConfig
    gds_version: tuple[int, ...] | None

    def _single(self, name: str, parameters: dict[str, Any], routing: str = ...) -> Any: ...

    def _autocommit(self, name: str, parameters: dict[str, Any]) -> dict[str, Any] | None: ...

    def sum_batches(self, name: str, keys: list[str], per_node: int, parameters: dict[str, Any],
                    column: str, on_batch: Callable[[int], None] | None = None) -> int: ...

    def node_keys(self, dataset: str) -> list[str]: ...

    def unknown_dataset(self, dataset: str) -> Exception: ...

    def check_edges_owned(self, dataset: str) -> None: ...

    def delete_own_edges(self, dataset: str, keys: list[str] | None = None, per_node: int = 10,
                         on_batch: Callable[[int], None] | None = None) -> int: ...

    def feature_lengths(self, dataset: str) -> dict[int, int]: ...

    def read_subgraph(self, dataset: str, with_features: bool = True, with_edges: bool = True) -> SubGraph: ...


def gds_version(store: Neo4jSession) -> tuple[int, ...]:
    """The server's GDS version; ``StoreSetupError`` when the plugin is missing or older
    than ``MIN_GDS_VERSION``. Asked once per store."""
    if store.gds_version is None:
        from neo4j.exceptions import ClientError

        try:
            record = store._single("gds_version", {}, READ)
        except ClientError as exc:
            if "gds.version" not in str(exc):
                raise
            raise StoreSetupError(
                "the Graph Data Science (GDS) plugin is not installed on this Neo4j server: graphlabel"
                " builds kNN graphs with GDS 2.13 (`make neo4j-up` starts a server with it; docker compose"
                " sets NEO4J_PLUGINS), or set GRAPHLABEL_NEO4J_EDGE_BUILDER=local to build them locally"
            ) from None
        version = tuple(int(part) for part in re.findall(r"\d+", str(record["version"]))[:3])
        if version < MIN_GDS_VERSION:
            raise StoreSetupError(f"GDS {'.'.join(map(str, version))} is too old: graphlabel needs GDS >="
                                  f" {'.'.join(map(str, MIN_GDS_VERSION))} (2.13 for Neo4j 5.26)")
        store.gds_version = version
    return store.gds_version


def check_knn_spec(k: Any, metric: str, weights: str) -> None:
    """The kNN parameters both GDS builders take, checked before any query is built."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if metric not in KNN_METRICS:
        raise ValueError(f"metric must be one of {tuple(KNN_METRICS)}, got {metric!r}")
    if weights not in KNN_WEIGHTS:
        raise ValueError(f"weights must be one of {KNN_WEIGHTS}, got {weights!r}")
    if weights == "cosine" and metric != "cosine":
        raise ValueError("weights='cosine' needs metric='cosine' with the GDS builder")


def knn_config(store: Neo4jSession, k: int, metric: str, *, seed: int | None = None,
               deterministic: bool = False, concurrency: int | None = None,
               **optional: float | int | None) -> dict[str, Any]:
    """The ``gds.knn.write`` configuration map: topK, the features property and
    its metric, where to write (the relationship type and the edge marker), and the
    optional settings given (camelCase names, GDS's defaults otherwise)."""
    if concurrency is not None and concurrency < 1:
        raise ValueError(f"concurrency must be positive, got {concurrency}")
    if deterministic and seed is None:
        seed = 0
    if seed is not None:
        if concurrency not in (None, 1):
            raise ValueError("GDS accepts randomSeed only with concurrency=1")
        concurrency = 1
    config: dict[str, Any] = {
        "topK": int(k),
        # the projected property is always "features" (gds_project.neo4j.cypher)
        "nodeProperties": {"features": KNN_METRICS[metric]},
        "writeRelationshipType": store.config.relationship,
        "writeProperty": store.config.edge_marker,
    }
    if seed is not None:
        config["randomSeed"] = int(seed)
    if concurrency is not None:
        config["concurrency"] = int(concurrency)
    names = {"similarity_cutoff": "similarityCutoff", "sample_rate": "sampleRate",
             "delta_threshold": "deltaThreshold", "max_iterations": "maxIterations"}
    for name, value in optional.items():
        if value is not None:
            config[names[name]] = value
    return config


def encoding_parameters(encoding: FeatureEncoding | None) -> dict[str, Any]:
    """The projection's parameters for ``encoding`` (None: the features as stored)."""
    encoding = encoding or FeatureEncoding()
    columns, values = encoding.onehot_pairs()
    return {"center": list(encoding.center), "width": list(encoding.width), "onehot_columns": columns,
            "onehot_values": values}


@contextmanager
def projection(store: Neo4jSession, query: str, dataset: str, **parameters: Any) -> Iterator[str]:
    """Project the dataset into GDS's catalog under a fresh name; dropped on leaving,
    also when what ran inside failed (a drop that fails then does not hide that error)."""
    name = f"graphlabel_{dataset}_{uuid.uuid4().hex[:12]}"
    store._autocommit(query, {"graph_name": name, "dataset": dataset, **parameters})
    try:
        yield name
    except BaseException:
        # the server may be what failed: the error to raise is the one above
        with contextlib.suppress(Exception):
            store._autocommit("gds_drop", {"graph_name": name})
        raise
    store._autocommit("gds_drop", {"graph_name": name})


def check_features(store: Neo4jSession, dataset: str, keys: list[str]) -> None:
    """``NotFound`` (the store's ``unknown_dataset``) when the dataset has no nodes,
    ``ValueError`` when nodes have no features or features of different lengths: the
    port's promise (the local builder's checks). GDS
    would fail on an empty projection ("graph does not exist") and, with features of
    different lengths, build a graph over a part of them without a word."""
    if not keys:
        raise store.unknown_dataset(dataset)
    lengths = store.feature_lengths(dataset)
    if len(lengths) != 1 or sum(lengths.values()) != len(keys):
        raise ValueError(store.read_subgraph(dataset).mixed_lengths(dataset))


def build_knn(store: Neo4jSession, dataset: str, *, k: int, metric: str, weights: str,
              sigma: float | None, delta: float | None, knn_options: dict[str, Any],
              encoding: FeatureEncoding | None = None, on_progress: OnProgress | None = None) -> BuiltGraph:
    """Replace the dataset's similarity relationships with GDS kNN ones (see the module
    docstring); returns the relationships it has afterwards (directed, as written) and the
    Gaussian σ of their weights (None unless ``weights="gaussian"``).

    ``on_progress`` hears its stages: "delete relationships", "prune relationships" (δ)
    and "set weights" batch by batch of nodes; "GDS projection" and "GDS kNN" (one server
    call each, so begun and ended: their length is not known beforehand). A 60,000-node
    build took 37 s with none of them shown. GDS's own progress (``gds.listProgress``) says
    too little to show: kNN's share is of ``maxIterations`` (it read 9% at 60,000 nodes when
    kNN converged, after 12 of 100), and the write is a job without the call's ``jobId``."""
    report = on_progress or no_progress
    gds_version(store)  # before anything is deleted
    keys = store.node_keys(dataset)
    check_features(store, dataset, keys)
    store.check_edges_owned(dataset)
    n = len(keys)
    store.delete_own_edges(dataset, keys, per_node=k,
                           on_batch=lambda done: report("delete relationships", done, n, "nodes"))
    config = knn_config(store, k, metric, **knn_options)
    report("GDS projection", 0, None, "nodes")
    with projection(store, "gds_project", dataset, **encoding_parameters(encoding)) as graph_name:
        report("GDS projection", n, None, "nodes")
        report("GDS kNN", 0, None, "relationships")
        result = store._autocommit("gds_knn_write", {"graph_name": graph_name, "config": config})
    written = int(result["written"]) if result else 0
    report("GDS kNN", written, None, "relationships")
    if delta is not None:
        written -= store.sum_batches("gds_prune_edges", keys, k, {"dataset": dataset, "metric": metric,
                                                                  "max_distance": float(delta)}, "deleted",
                                     lambda done: report("prune relationships", done, n, "nodes"))
    if weights == "gaussian" and sigma is None:
        record = store._single("gds_edge_scale", {"dataset": dataset, "metric": metric}, READ)
        sigma = float(record["sigma"]) if record is not None and record["sigma"] else 1.0
    store.sum_batches("gds_set_weights", keys, k, {
        "dataset": dataset, "metric": metric, "weights": weights,
        "sigma": float(sigma) if sigma is not None and sigma > 0 else 1.0}, "weighted",
        lambda done: report("set weights", done, n, "nodes"))
    said = weights_said(store, dataset, sigma) if weights == "gaussian" and sigma is not None else ()
    return BuiltGraph(written, float(sigma) if weights == "gaussian" and sigma is not None else None, said,
                      encoding=encoding)


def weights_said(store: Neo4jSession, dataset: str, sigma: float) -> tuple[str, ...]:
    """What the run is told when the Gaussian weights just set say nothing (σ far from the
    distances, or every node the same), counted on the server; the local builder's words."""
    record = store._single("gds_weight_shares", {"dataset": dataset, "flat": FLAT}, READ)
    if record is None or not record["n"]:
        return ()
    n = int(record["n"])
    problem = shares_problem(record["near_one"] / n, record["near_zero"] / n, record["lowest"] == 1.0, float(sigma))
    return (f"the similarity graph of {dataset!r}: {problem}",) if problem else ()
