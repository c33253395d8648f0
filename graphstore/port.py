"""The store port: what every graph store (embedded Kùzu, production Neo4j) offers the
flows. Every method is the same promise on every store (tests/test_store_contract.py runs
one set of checks on each); what crosses it is described in ``graphstore.schemas``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from similarity.encoding import FeatureEncoding
from similarity.spec import GraphSpec

from .errors import NotFound
from .runs import LabelRunRecord
from .schemas import SubGraph, edge_table, edge_table_from_pairs

#: How a store reports the steps of a long operation (``GraphStore.build_edges``):
#: ``(stage, done, total, unit)``, ``total`` None when not known beforehand. The flows show
#: it (``flows.progress.StageProgress``); the store never imports them.
OnProgress = Callable[[str, int, int | None, str], None]


def no_progress(stage: str, done: int, total: int | None, unit: str) -> None:
    return None


@dataclass(frozen=True)
class UserEdgesWritten:
    """What ``write_user_edges`` did: the edges ``stored``, and the ``changed_nodes`` it
    marked changed (the ends of the edges that differ from the type's edges before)."""

    stored: int
    changed_nodes: int


@dataclass(frozen=True)
class BuiltGraph:
    """What building a dataset's similarity relationships did: the relationships it has
    afterwards (directed, as written), the Gaussian σ of their weights (None for other
    weights), warnings for the run (weights that carry no information), and the scaler
    and categorical vocabulary the distances were measured with (``similarity.encoding``),
    recorded for incremental runs."""

    n_edges: int
    sigma: float | None
    warnings: tuple[str, ...] = ()
    encoding: FeatureEncoding | None = None


class GraphStore(ABC):
    """The operations the flows need from a graph database."""

    dialect: str = ""
    #: Whether ``write_user_edges`` stores the user's edges (``ingest-edges``); a store
    #: whose users keep their own relationships (Neo4j) refuses, and says so up front.
    loads_user_edges: bool = True

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
    def read_subgraph(self, dataset: str, with_features: bool = True, with_edges: bool = True) -> SubGraph:
        """Read the dataset's nodes, given labels, features and relationships (none with
        ``with_edges=False``: a graph build reads only what it builds from)."""

    @abstractmethod
    def feature_lengths(self, dataset: str) -> dict[int, int]:
        """Feature-list length → number of the dataset's nodes with that length (one entry
        when the dataset is sound, none when it has no nodes), most common first. Ingest
        rejects rows of another length than the dataset's."""

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

    @abstractmethod
    def interrupt_run(self, run_id: str, seen: Any, error: str) -> bool:
        """Mark the run ``failed`` with ``error`` (its ``finished_at`` the last sign of life
        ``seen``), only if it is still ``running`` with that last sign of life: a run that
        wrote again, or finished, in the meantime is left alone. Returns whether it was
        marked."""

    @abstractmethod
    def prune_runs(self, dataset: str, keep_last: int) -> int:
        """Retention: delete the dataset's ``LabelRun`` nodes older than its ``keep_last``
        newest completed runs (see ``runs_to_prune``), never a "running" run nor the run a
        node's ``label_run_id`` points to. Returns how many were deleted."""

    @abstractmethod
    def node_features(self, dataset: str, key: str) -> np.ndarray | None:
        """One node's feature vector (float64), or None when the node has no features.

        Raises
        ------
        NotFound
            No node with that key in the dataset.
        """

    @abstractmethod
    def write_model(self, run_id: str, model: bytes) -> None:
        """Keep the run's fitted model (``labelling.run_model.RunModel.to_bytes``: arrays
        and parameters, no pickle) with its ``LabelRun``, replacing one written before.
        Where it lives is the store's choice: Neo4j a byte-array property of the run node,
        the embedded store a file next to its database (each adapter says why). Pruning a
        run removes its model."""

    @abstractmethod
    def read_model(self, run_id: str) -> bytes | None:
        """The model ``write_model`` kept for the run, or None (no such run, or a run
        that kept none)."""

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
            ``label_noise``, ``label_noise_score``, ``label_run_id``, ``label_solver``,
            ``labelled_at``, ``label_accepted`` (the given label a reviewer vouched for),
            ``dataset``, ``degree`` (sum of the weights to the neighbours),
            ``n_neighbours``, ``class_shares``: class → share of the degree going to
            neighbours of that class (given label, else predicted), largest first, and
            ``score_shares``: the same with each unlabelled neighbour's weight spread by
            its ``label_scores`` (``graphstore.explain.explanation``).
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
        that writes raises ``WriteRefused`` and changes nothing. A statement the store
        refuses raises ``QueryFailed`` with the store's message.
        """

    @abstractmethod
    def count_nodes(self, dataset: str) -> int:
        """How many nodes the dataset has."""

    @abstractmethod
    def dataset_names(self) -> list[str]:
        """The datasets that have nodes, in order (on Neo4j without a dataset property,
        none: every node of the label is in any dataset)."""

    def unknown_dataset(self, dataset: str) -> NotFound:
        """The error for a dataset no node belongs to (a typo, or not ingested yet), which
        names the datasets the store holds."""
        return NotFound.dataset(dataset, self.dataset_names())

    # -- similarity relationships ---------------------------------------------------------

    @abstractmethod
    def has_edges(self, dataset: str) -> bool:
        """Whether any similarity relationship joins two of the dataset's nodes (on Neo4j, any
        of the configured type: a user's own too), found without reading the graph."""

    def check_edge_builder(self, spec: GraphSpec, dataset: str | None = None) -> None:
        """Raise ``StoreSetupError`` when this store cannot build ``spec`` as configured
        (Neo4j's GDS builder without the plugin), or, given ``dataset``, cannot replace its
        relationships (Neo4j: a relationship type holding a user's own); the flows ask
        before they write anything. The local builder (this default) always can."""
        return None

    def build_edges(self, dataset: str, spec: GraphSpec, on_progress: OnProgress | None = None) -> BuiltGraph:
        """Replace the dataset's similarity relationships with the graph ``spec`` describes,
        reporting its steps to ``on_progress`` (``OnProgress``).

        This default builds it here (``similarity.build_graph`` on the features read from
        the store, then ``replace_edges``); a database with a builder of its own (Neo4j
        GDS) overrides it. Raises ``NotFound`` (``unknown_dataset``) when the dataset has
        no nodes, ``ValueError`` naming the nodes when their features have different
        lengths. A spec of the user's edges alone (kind
        ``edges``) builds nothing: graphlabel's own relationships of the dataset are
        deleted and the count is of the user's edges, which are never written.
        """
        if spec.similarity_kind is None:
            # the user's edges alone (graphstore/user_edges.py): graphlabel builds nothing,
            # and its own relationships of the dataset go (they are no longer labelled over)
            assert spec.edges_type is not None
            n_user = self.read_user_edges(dataset, spec.edges_type, spec.edges_property).num_rows  # checked first
            self.replace_edges(dataset, edge_table_from_pairs(np.zeros(0, object), np.zeros(0, np.int64),
                                                              np.zeros(0, np.int64), np.zeros(0)))
            return BuiltGraph(n_user, None)
        import similarity  # scikit-learn loads with it: only when a graph is built

        report = on_progress or no_progress
        report("read features", 0, None, "nodes")
        graph = self.read_subgraph(dataset, with_features=True, with_edges=False)
        if graph.n_nodes == 0:
            raise self.unknown_dataset(dataset)
        if graph.features is None:
            raise ValueError(graph.mixed_lengths(dataset))
        report("read features", graph.n_nodes, None, "nodes")
        encoding = FeatureEncoding.fit(graph.features, graph.categories, spec.scale)
        # low recall, weights that say nothing: said to the run, in its words
        with similarity.collected_findings() as findings:
            W, sigma = similarity.build_graph(graph.features, graph.labels,
                                              spec.with_encoding(encoding), categories=graph.categories,
                                              on_progress=lambda step, done, total: report(step, done, total, "nodes"))
        said = [f"the similarity graph of {dataset!r}: {finding}" for finding in findings]
        edges = edge_table(graph.keys, W)
        del W, graph  # the relationships are written from the edge table alone
        report("write relationships", 0, None, "relationships")
        written = self.replace_edges(dataset, edges)
        report("write relationships", written, None, "relationships")
        return BuiltGraph(written, sigma, tuple(said), encoding)

    def add_knn_edges(self, dataset: str, graph: SubGraph, new: np.ndarray, spec: GraphSpec,
                      on_progress: OnProgress | None = None) -> pa.Table:
        """Relationships from the nodes at positions ``new`` of ``graph`` (the dataset as
        just read, features included) to their ``spec.k`` nearest among all its nodes,
        weighted as ``spec`` says (Gaussian with ``spec.sigma``, the recorded σ), measured
        on the features as ``spec.encoding`` (the recorded scaler and vocabulary, not
        refitted) encodes them, added next to the existing ones (incremental runs: nothing
        is deleted). Steps ``kNN search`` and ``write relationships`` go to
        ``on_progress``. Returns the added edges (``EDGE_SCHEMA``, by key).

        Found here (``similarity.knn_edges_for``: exact below ``EXACT_MAX_PAIRS``) on the
        features already read, on every store, then written with ``add_edges``.
        """
        import similarity

        if graph.features is None:
            raise ValueError(graph.mixed_lengths(dataset))
        report = on_progress or no_progress
        new = np.asarray(new)
        k, metric, weights = spec.knn
        encoding = spec.encoding or FeatureEncoding()
        report("kNN search", 0, len(new), "nodes")
        X = encoding.transform(graph.features, graph.categories)
        source, target, weight = similarity.knn_edges_for(X[new], X, new, k, metric, weights, spec.sigma)
        report("kNN search", len(new), len(new), "nodes")
        edges = edge_table_from_pairs(graph.keys, source, target, weight)
        report("write relationships", 0, edges.num_rows, "relationships")
        self.add_edges(dataset, edges)
        report("write relationships", edges.num_rows, edges.num_rows, "relationships")
        return edges

    # -- the user's own edges (graphstore/user_edges.py) -----------------------------------

    @abstractmethod
    def read_user_edges(self, dataset: str, edge_type: str, weight_property: str | None = None) -> pa.Table:
        """The user's edges of type ``edge_type`` between the dataset's nodes, by key
        (``EDGE_SCHEMA``, one row per relationship as stored, self loops left out), each
        weighing its ``weight_property`` (1 when None). Reads only.

        Raises
        ------
        ValueError
            Some weights are missing, not numbers, NaN, infinite or negative
            (``user_edges.checked_weights`` names them); ``edge_type`` is graphlabel's own
            relationship type; or the store cannot hold ``weight_property``.
        """

    @abstractmethod
    def write_user_edges(self, dataset: str, edge_type: str, edges: pa.Table) -> UserEdgesWritten:
        """Replace the dataset's user edges of type ``edge_type`` with ``edges``
        (``EDGE_SCHEMA``, by key; weight null for "no weight"), for ``graphlabel
        ingest-edges``, and mark the nodes at either end of an edge added, removed or
        reweighted changed (``user_edges.changed_endpoints``), as an ingest marks a node
        whose features changed: the next incremental run relabels the region around them.
        ``ValueError`` before anything changes when an endpoint is not a node of the
        dataset. A store whose users keep their edges themselves (Neo4j) raises
        ``StoreSetupError`` saying so."""

    def read_graph(self, dataset: str, with_features: bool = True) -> SubGraph:
        """The graph the dataset is labelled over: ``read_subgraph`` (graphlabel's own
        similarity relationships), with the user's edges the dataset's ``GraphBuild``
        record names (``GraphSpec.edges_type``) in their place or added to them
        (``user_edges.with_user_edges``). The flows export and solve this graph."""
        return self.add_user_edges(dataset, self.read_subgraph(dataset, with_features=with_features))

    def add_user_edges(self, dataset: str, graph: SubGraph) -> SubGraph:
        """``graph`` (the dataset's ``read_subgraph``) with the user's edges its
        ``GraphBuild`` record names; ``graph`` itself when it names none."""
        from .user_edges import with_user_edges

        build = self.read_graph_build(dataset)
        if not build or not build.get("edges_type"):
            return graph
        spec = GraphSpec.from_record(build)
        assert spec.edges_type is not None  # read from the record just above
        return with_user_edges(graph, self.read_user_edges(dataset, spec.edges_type, spec.edges_property), spec)

    # -- incremental runs (see graphstore/changes.py) ------------------------------------

    @abstractmethod
    def add_edges(self, dataset: str, edges: pa.Table) -> int:
        """Write these similarity relationships next to the existing ones (nothing is
        deleted; a relationship already there is updated, so a retried call does not
        double it); returns the count written."""

    @abstractmethod
    def read_predictions(self, dataset: str) -> pa.Table:
        """Every node's latest prediction, ``READ_PREDICTION_SCHEMA`` (``key``,
        ``predicted_label``, ``label_confidence``, ``label_noise``, ``label_noise_score``;
        nulls where a node was never labelled), in no particular order."""

    @abstractmethod
    def read_label_state(self, dataset: str) -> pa.Table:
        """Per node (``changes.LABEL_STATE_SCHEMA``): ``key``; ``changed``: never labelled,
        or features / given label changed after it was (``labelled_at`` older than
        ``updated_at``); ``labelled``: ``labelled_at`` is set; ``predicted_label``."""

    @abstractmethod
    def write_graph_build(self, dataset: str, spec: dict[str, Any]) -> None:
        """Record the parameters the dataset's similarity relationships were built with
        (graph, k, metric, weights, sigma, ...), replacing the previous record."""

    @abstractmethod
    def read_graph_build(self, dataset: str) -> dict[str, Any] | None:
        """The parameters recorded by ``write_graph_build`` (with ``built_at``), or None."""

    @abstractmethod
    def write_feature_columns(self, dataset: str, columns: dict[str, Any]) -> None:
        """Record the columns the dataset's features come from, by name
        (``labelling.feature_columns.FeatureColumns.as_record``), replacing the previous
        record; ``drop_dataset`` deletes it."""

    @abstractmethod
    def read_feature_columns(self, dataset: str) -> dict[str, Any] | None:
        """What ``write_feature_columns`` recorded, or None."""

    # -- outputs and review (issue 17) ---------------------------------------------------

    @abstractmethod
    def read_export(self, dataset: str) -> pa.Table:
        """Every node's given label and latest prediction, ``schemas.EXPORT_SCHEMA``
        (``label_scores`` in the class order of the node's run, ``LabelRun.classes``), in
        no particular order; no rows when the dataset has no node."""

    @abstractmethod
    def given_label_counts(self, dataset: str) -> dict[str, int]:
        """The dataset's distinct given labels and the nodes that give each."""

    @abstractmethod
    def reviewed_labels(self, dataset: str) -> dict[str, str]:
        """The given labels a reviewer vouched for (``record_decision``'s ``label_accepted``)
        that the nodes still give, by node key."""

    def given_classes(self, dataset: str) -> list[str]:
        """The dataset's distinct given labels, sorted."""
        return sorted(self.given_label_counts(dataset))

    @abstractmethod
    def record_decision(self, dataset: str, key: str, decision: str, label: str | None, reviewer: str,
                        decided_at: pd.Timestamp, decision_id: str) -> dict[str, Any]:
        """Write a review decision on node ``key`` (``LabelDecision`` linked to it by
        ``REVIEWS``) and apply it, in one transaction.

        Parameters
        ----------
        decision : {"accept", "correct"}
            ``accept`` keeps the given label; ``correct`` makes ``label`` the given label
            and marks the node changed (``updated_at`` = ``decided_at``), so the next
            incremental run relabels around it. Either way the given label after it is
            recorded as vouched for (``label_accepted``).
        label : str or None
            The new given label (``correct``); ignored for ``accept``.
        reviewer : str
        decided_at : pandas.Timestamp
        decision_id : str
            Unique id of the decision (a retried write cannot record it twice).

        Returns
        -------
        dict
            ``previous_label`` and ``label`` (the given label before and after).

        Raises
        ------
        NotFound
            No node with that key in the dataset.
        """

    @abstractmethod
    def drop_dataset(self, dataset: str) -> dict[str, int]:
        """Delete the dataset's nodes, similarity relationships, ``LabelRun`` nodes,
        ``GraphBuild`` record and review decisions; other datasets are untouched. Returns
        what there was before: ``nodes``, ``runs``, ``decisions``."""

    def dataset_lease(self, dataset: str, holder: str) -> AbstractContextManager[None]:
        """Hold ``dataset`` for a ``with`` block against every other run that changes its
        graph (a build; a labelling run, which may rebuild it or add edges): such a run waits
        until the block ends, for up to ``$GRAPHLABEL_LOCK_TIMEOUT`` (default 60 s), then
        raises ``StoreLocked`` naming ``holder`` (e.g. ``label run ID``). This default holds
        nothing: an embedded store is opened by one process at a time (``KuzuStore``), so no
        two runs meet in it; Neo4j serves many (``graphstore.neo4j_lease``)."""
        return nullcontext()

    #: Whether ``dataset_lease`` holds anything (Neo4j), so that ``lease_holder`` tells a
    #: run that holds its dataset from one that died (``labelling.liveness``).
    has_leases: bool = False

    def lease_holder(self, dataset: str) -> str | None:
        """What holds ``dataset``'s lease now (the ``holder`` given to ``dataset_lease``),
        None when nothing does: no lease, or one whose time ran out. This default: None, a
        store without leases."""
        return None

    def close(self) -> None:
        """Release the connection (this default: a store that holds none)."""
        return None

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
