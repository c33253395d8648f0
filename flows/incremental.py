"""Incremental labelling runs: label only what changed since the last run.

``label_changed(store, dataset, solver, solver_params, spec, hops)`` is the whole
incremental path; the flow calls it unless asked for a full run, and falls back to the
full path when it returns None. Each stage is a plain function the flow can wrap as a
Prefect task: ``read_changes`` → ``graph_parameters`` → ``connect_new_nodes`` →
``select_region`` → ``region_problem`` → ``solve_region`` → ``restrict_to_region``.

Decisions the issue leaves open, and what this module does
----------------------------------------------------------
- What changed: ``write_nodes`` keeps a content hash of each node's features and given
  label and moves its ``updated_at`` only when the hash differs (graphstore/changes.py),
  so re-ingesting an unchanged file changes nothing. A node changed since the last run
  when it was never labelled (``labelled_at`` null: new entities) or ``updated_at`` is
  later than its ``labelled_at`` (new features or a new, changed or removed given label).
  The comparison is per node, so it does not depend on which run was "the last
  successful one": nodes a crashed run did not reach still compare as changed. No node
  ever labelled means no previous run: None (full run).
- Which nodes get edges: the changed nodes with no similarity relationship at all (new
  entities). They get their k nearest among all nodes (``similarity.knn_edges_for``
  locally, GDS filtered kNN on Neo4j), weighted with the recorded σ; nothing is deleted.
  Not done: existing nodes whose own k nearest would now include a new node do not get
  that edge, and a node whose *features* changed keeps its old relationships (it is
  relabelled, but only a full run rebuilds its edges). Both are what ``--full`` is for.
- Graph parameters: the full path records the spec with the σ it used
  (``record_graph_build``; GraphBuild node per dataset). Without a record, σ is read back
  exactly from the stored Gaussian weights and features
  (``similarity.gaussian_sigma_from_edges``) and recorded then. A requested spec that
  differs from the recorded one (graph, k, metric, weights, σ) means the graph must be
  rebuilt: None (full run). Only kNN graphs are extended; δ-graphs and the label-reading
  graphs (mincut3, δ₀, δ½) always take the full path.
- Region: the changed nodes plus everything within ``hops`` hops of them (repeated sparse
  products, no loop over nodes), and the nodes at the other end of an added edge (their
  neighbourhood changed; they are one hop from a new node, so this matters for
  ``hops=0`` only). A node next to the region that has neither a previous prediction nor
  a given label (it was unreachable) is taken into the region too. On kNN graphs the
  hop neighbourhoods grow fast: 5% new entities and 2 hops reach 95% of the digits and
  all of 100k 32-d blobs (bench/incremental.py), so the saving is then in the graph
  (no kNN search over all nodes, no rewrite of every relationship), not in the solve.
- Boundary: the nodes outside the region adjacent to it. Their previous predicted label
  (their given label if they have no prediction) is fixed, and they are collapsed into
  one anchor node per class: region node i gets an edge to anchor c of weight Σ W_ib over
  the boundary nodes b predicted c. For the harmonic solution this is the same linear
  system as clamping each boundary node (f_i = (Σ_j W_ij f_j + Σ_c A_ic e_c) / d_i), with
  C labels instead of |boundary| (so leave-one-out noise detection costs C extra solves,
  not one per boundary node); for min-cut, merging nodes clamped to the same side does
  not change the cut. Exactness: the Dirichlet problem on the region equals the full
  harmonic solution on it when the fixed boundary values equal the full solution's
  values there. Only the boundary's *labels* are stored, so the boundary is clamped to
  the one-hot of its previous label, not to its previous score vector: an approximation
  even when the boundary did not change (argmax agreement with a full run is what
  tests/test_incremental.py and bench/incremental.py measure), and more of one where the
  change reaches beyond ``hops``. Other solvers see the anchors as heavy labelled nodes
  (an approximation of their own objectives); ``maxmargin`` gets, as an anchor's
  features, the mean features of its boundary nodes.
- What is written: the region's nodes only (their given labels' noise flags included);
  the anchors and boundary nodes are never written back, so they get no noise flags.
- Timestamps: the flow writes ``labelled_at`` after solving; a node ingested while a run
  is solving gets an ``updated_at`` earlier than that ``labelled_at`` and is missed by
  the next incremental run. ``IncrementalResult.read_at`` (when the state was read) is
  the safe ``labelled_at``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

import similarity
import solvers
from graphlabel.problems import ExportedProblem
from graphstore import GraphStore
from graphstore.base import EDGE_SCHEMA, SubGraph
from solvers import LabelProblem, Prediction

#: The spec entries a recorded graph build must match for edges to be added to it.
GRAPH_KEYS = ("graph", "k", "metric", "weights")


@dataclass(frozen=True, eq=False)
class ChangeSet:
    """The dataset as stored, with what changed since each node was last labelled.

    ``graph`` holds every node (features included) and relationship; the arrays below
    are aligned with ``graph.keys``.
    """

    graph: SubGraph
    changed: np.ndarray      # bool: never labelled, or updated after labelled_at
    labelled: np.ndarray     # bool: labelled_at is set
    predicted: np.ndarray    # object: the previous predicted label, None where absent
    read_at: pd.Timestamp

    @property
    def new(self) -> np.ndarray:
        """Changed nodes without any similarity relationship (they get edges)."""
        degree = np.bincount(self.graph.source, minlength=self.graph.n_nodes) + \
            np.bincount(self.graph.target, minlength=self.graph.n_nodes)
        return self.changed & (degree == 0)


@dataclass(frozen=True, eq=False)
class IncrementalResult:
    """What an incremental run computed, for the flow to write back.

    ``exported`` and ``prediction`` cover the region only, in the order of ``keys``:
    ``prediction_rows(result.exported, result.prediction, run_id, labelled_at)`` gives the
    rows to write. ``problem`` is what was solved: the region followed by one anchor node
    per boundary class (``n_region`` rows, then the anchors).
    """

    keys: np.ndarray
    exported: ExportedProblem
    prediction: Prediction
    problem: ExportedProblem
    n_nodes: int
    n_changed: int
    n_new: int
    n_edges_added: int
    n_region: int
    n_boundary: int
    graph_build: dict[str, Any]
    read_at: pd.Timestamp
    timings: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """JSON-friendly counts for the run's metrics."""
        return {"incremental": True, "n_nodes": self.n_nodes, "n_changed": self.n_changed,
                "n_new": self.n_new, "n_edges_added": self.n_edges_added, "n_region": self.n_region,
                "n_boundary": self.n_boundary, "sigma": self.graph_build.get("sigma")}


# -- stages -------------------------------------------------------------------------------


def read_changes(store: GraphStore, dataset: str) -> ChangeSet:
    """The dataset's nodes, features and relationships, with each node's change state."""
    read_at = pd.Timestamp.now(tz="UTC")
    state = store.read_label_state(dataset)
    if not pc.any(state.column("labelled")).as_py():
        # no previous run: the flow runs in full, so skip reading the whole graph (15 s at 1M)
        empty = SubGraph(np.zeros(0, object), np.zeros(0, object), None, np.zeros(0, np.int64),
                         np.zeros(0, np.int64), np.zeros(0))
        return ChangeSet(empty, np.zeros(0, bool), np.zeros(0, bool), np.zeros(0, object), read_at)
    graph = store.read_subgraph(dataset, with_features=True)
    position = pd.Index(state.column("key").to_pylist()).get_indexer(pd.Index(graph.keys))
    if (position < 0).any():
        raise RuntimeError(f"dataset {dataset!r} changed while it was read; run again")
    changed = state.column("changed").to_numpy(zero_copy_only=False).astype(bool)[position]
    labelled = state.column("labelled").to_numpy(zero_copy_only=False).astype(bool)[position]
    predicted = np.asarray(state.column("predicted_label").to_pylist(), dtype=object)[position]
    return ChangeSet(graph, changed, labelled, predicted, read_at)


def record_graph_build(store: GraphStore, dataset: str, spec: dict[str, Any],
                       sigma: float | None = None) -> dict[str, Any]:
    """Record the parameters a dataset's similarity relationships were just built with.

    For the full path, after building edges: ``spec`` as the flow's ``graph_spec`` gives it,
    ``sigma`` the Gaussian σ actually used (``similarity.knn_graph(..., return_sigma=True)``,
    or the store's ``NativeEdges.sigma``); when σ is unknown (a graph recorded before σ
    was), it is read back from the stored weights on the next incremental run. Returns the
    record written.
    """
    build = {name: spec.get(name) for name in (*GRAPH_KEYS, "symmetrise")}
    build["graph"] = build["graph"] or "knn"
    build["symmetrise"] = build["symmetrise"] or "max"
    build["sigma"] = float(sigma) if sigma is not None else spec.get("sigma")
    build["sigma_source"] = "recorded" if build["sigma"] is not None else None
    store.write_graph_build(dataset, build)
    return build


def graph_parameters(store: GraphStore, dataset: str, spec: dict[str, Any] | None,
                     changes: ChangeSet) -> dict[str, Any] | None:
    """The parameters edges are added with: the recorded build, checked against ``spec``;
    σ read back from the stored Gaussian weights (and recorded) when it was not recorded.
    None when the graph cannot be extended (not kNN, other parameters requested, or
    Gaussian weights whose σ cannot be recovered): the flow then runs in full."""
    spec = dict(spec or {})
    try:
        recorded = store.read_graph_build(dataset)
    except NotImplementedError:
        recorded = None
    build = dict(recorded or {})
    for name in GRAPH_KEYS:
        wanted = spec.get(name)
        if wanted is None:
            continue
        if recorded is not None and recorded.get(name) not in (None, wanted):
            return None  # built with other parameters: rebuild
        build[name] = wanted
    build.setdefault("graph", "knn")
    if build["graph"] != "knn" or build.get("k") is None:
        return None
    build.setdefault("metric", "euclidean")
    build.setdefault("weights", "gaussian")
    wanted_sigma = spec.get("sigma")
    if wanted_sigma is not None and build.get("sigma") is not None \
            and not np.isclose(wanted_sigma, build["sigma"], rtol=1e-9):
        return None
    if build["weights"] == "gaussian" and build.get("sigma") is None:
        graph = changes.graph
        sigma = wanted_sigma
        if sigma is None and graph.features is not None and len(graph.weight):
            sigma = similarity.gaussian_sigma_from_edges(graph.features, graph.source, graph.target,
                                                         graph.weight, build["metric"])
        if sigma is None:
            return None
        build["sigma"] = float(sigma)
        build["sigma_source"] = "given" if wanted_sigma is not None else "read back from the stored weights"
        try:
            store.write_graph_build(dataset, {k: v for k, v in build.items() if k != "built_at"})
        except NotImplementedError:
            pass
    return build


def connect_new_nodes(store: GraphStore, dataset: str, changes: ChangeSet,
                      build: dict[str, Any]) -> tuple[ChangeSet, np.ndarray, int]:
    """Give the new nodes edges to their k nearest among all nodes, without rebuilding.

    Locally: ``similarity.knn_edges_for`` then ``store.add_edges``; on stores with native
    kNN (Neo4j GDS): ``store.build_knn_edges_for`` (filtered kNN), then the relationships
    are read again. Returns the change set with the new edges in its graph, a mask of the
    nodes at either end of an added edge, and the number of edges added.
    """
    graph = changes.graph
    new = changes.new
    touched = np.zeros(graph.n_nodes, dtype=bool)
    if not new.any() or graph.n_nodes <= int(build["k"]):
        return changes, touched, 0
    positions = np.flatnonzero(new)
    if store.native_knn:
        store.build_knn_edges_for(dataset, graph.keys[positions], k=int(build["k"]), metric=build["metric"],
                                  weights=build["weights"], sigma=build.get("sigma"))
        fresh = store.read_subgraph(dataset, with_features=True)
        order = pd.Index(fresh.keys).get_indexer(pd.Index(graph.keys))
        if (order < 0).any() or fresh.n_nodes != graph.n_nodes:
            raise RuntimeError(f"dataset {dataset!r} changed while it was labelled; run again")
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        source, target, weight = inverse[fresh.source], inverse[fresh.target], fresh.weight
        added = new[source] | new[target]  # the new nodes had no relationship before
    else:
        if graph.features is None:
            raise ValueError(f"dataset {dataset!r} has nodes with features of different lengths")
        src, dst, w = similarity.knn_edges_for(graph.features[positions], graph.features, positions,
                                               int(build["k"]), build["metric"], build["weights"],
                                               build.get("sigma"))
        names = pa.array(graph.keys, pa.string())  # Arrow gathers the keys: no object per edge
        store.add_edges(dataset, pa.table({
            "source": names.take(pa.array(src, pa.int64())),
            "target": names.take(pa.array(dst, pa.int64())),
            "weight": pa.array(w, pa.float64())}).cast(EDGE_SCHEMA))
        source = np.concatenate([graph.source, src])
        target = np.concatenate([graph.target, dst])
        weight = np.concatenate([graph.weight, w])
        added = np.zeros(len(source), dtype=bool)
        added[len(graph.source):] = True
    touched[source[added]] = True
    touched[target[added]] = True
    extended = replace(graph, source=source, target=target, weight=weight)
    changes = ChangeSet(extended, changes.changed, changes.labelled, changes.predicted, changes.read_at)
    return changes, touched, int(added.sum())


def adjacency(graph: SubGraph) -> sp.csr_matrix:
    """W_ij = max(w(i→j), w(j→i)), as ``graphlabel.problems.label_problem`` reads it."""
    n = graph.n_nodes
    A = sp.csr_matrix((graph.weight, (graph.source, graph.target)), shape=(n, n))
    W = A.maximum(A.T).tocsr()
    W.setdiag(0)
    W.eliminate_zeros()
    return W


def select_region(W: sp.spmatrix, seeds: np.ndarray, hops: int = 2, fixed: np.ndarray | None = None,
                  include: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The region (``seeds`` and everything within ``hops`` hops, plus ``include``) and its
    boundary (nodes outside it adjacent to it), as boolean masks; breadth-first by sparse
    products.

    ``fixed`` marks the nodes that can serve as boundary (they have a label to fix); a
    node next to the region without one is taken into the region, repeatedly."""
    if hops < 0:
        raise ValueError(f"hops must be >= 0, got {hops}")
    A = sp.csr_matrix(W, dtype=np.float64)
    A.data = np.ones_like(A.data)
    region = np.asarray(seeds, dtype=bool).copy()
    frontier = region.copy()
    for _ in range(hops):  # a loop over hops, each one sparse product
        reached = (A @ frontier.astype(np.float64)) > 0
        frontier = reached & ~region
        if not frontier.any():
            break
        region |= frontier
    if include is not None:
        region |= np.asarray(include, dtype=bool)
    while True:
        boundary = ((A @ region.astype(np.float64)) > 0) & ~region
        if fixed is None:
            return region, boundary
        loose = boundary & ~fixed
        if not loose.any():
            return region, boundary
        region |= loose


def region_problem(changes: ChangeSet, W: sp.csr_matrix, region: np.ndarray, boundary: np.ndarray,
                   classes: np.ndarray) -> ExportedProblem:
    """The LabelProblem on the region plus one anchor node per class of the boundary.

    Region nodes keep their given labels; anchor c (key ``None``) carries class c and
    the summed weights from each region node to the boundary nodes fixed at c (their
    previous prediction, else their given label). ``classes`` are the dataset's class
    names in sorted order (indices into them are the solver's classes)."""
    graph = changes.graph
    r = np.flatnonzero(region)
    b = np.flatnonzero(boundary)
    n_classes = len(classes)
    given = pd.Series(graph.labels, dtype=object)
    fixed_label = pd.Series(changes.predicted, dtype=object).where(
        pd.Series(changes.predicted, dtype=object).notna(), given)
    b_class = np.searchsorted(classes, fixed_label.iloc[b].to_numpy().astype(str)) if len(b) else \
        np.zeros(0, np.int64)
    # region × boundary weights summed per class: W_rb @ one_hot(class of b)
    onehot = sp.csr_matrix((np.ones(len(b)), (np.arange(len(b)), b_class)), shape=(len(b), n_classes))
    A = (W[r][:, b] @ onehot).tocsc()
    present = np.flatnonzero(np.asarray(A.sum(axis=0)).ravel() > 0)
    A = A[:, present]
    m = len(present)
    W_rr = W[r][:, r]
    W_sub = sp.bmat([[W_rr, A], [A.T, None]], format="csr") if m else sp.csr_matrix(W_rr)
    y = np.full(len(r) + m, -1, dtype=np.int64)
    has_label = given.iloc[r].notna().to_numpy()
    y[:len(r)][has_label] = np.searchsorted(classes, given.iloc[r][has_label].to_numpy().astype(str))
    y[len(r):] = present
    X = None
    if graph.features is not None:
        X_b = graph.features[b]
        anchor_X = np.vstack([X_b[b_class == c].mean(axis=0) for c in present]) if m else \
            np.zeros((0, graph.features.shape[1]))
        X = np.vstack([graph.features[r], anchor_X])
    keys = np.concatenate([graph.keys[r], np.full(m, None, dtype=object)])
    return ExportedProblem(LabelProblem(W_sub, y, n_classes=n_classes, X=X), keys, classes)


def solve_region(problem: ExportedProblem, solver: str, params: dict[str, Any]) -> Prediction:
    return solvers.solve(problem.problem, method=solver, **params)


def restrict_to_region(problem: ExportedProblem, prediction: Prediction,
                       n_region: int) -> tuple[ExportedProblem, Prediction]:
    """The first ``n_region`` rows (the region's nodes) of the solved problem and its
    prediction, as ``prediction_rows`` takes them; the solver's array metadata (which
    speaks of the anchors too) is left out of ``info``."""
    idx = np.arange(n_region)
    sub = problem.problem
    X = sub.X[:n_region] if sub.X is not None else None
    region_problem_ = LabelProblem(sub.W[idx][:, idx], sub.y[:n_region], n_classes=sub.n_classes, X=X)
    exported = ExportedProblem(region_problem_, problem.keys[:n_region], problem.classes)
    info = {k: v for k, v in prediction.info.items() if np.isscalar(v)}
    restricted = Prediction(prediction.labels[:n_region].copy(), prediction.confidence[:n_region].copy(),
                            prediction.noisy[:n_region].copy(), prediction.scores[:n_region],
                            prediction.method, dict(prediction.params), info,
                            None if prediction.noise_score is None else prediction.noise_score[:n_region].copy())
    return exported, restricted


def dataset_classes(changes: ChangeSet, boundary: np.ndarray) -> np.ndarray:
    """Class names in sorted order: every given label of the dataset and every previous
    prediction of the boundary."""
    names = pd.Series(changes.graph.labels, dtype=object).dropna()
    fixed = pd.Series(changes.predicted[boundary], dtype=object).dropna()
    return np.array(sorted(set(names.astype(str)) | set(fixed.astype(str))), dtype=object)


# -- the whole incremental path ----------------------------------------------------------


def label_changed(store: GraphStore, dataset: str, solver: str = "harmonic",
                  solver_params: dict[str, Any] | None = None, spec: dict[str, Any] | None = None,
                  hops: int = 2, reasons: list[str] | None = None) -> IncrementalResult | None:
    """Label what changed since the last run, on the region it reaches.

    Parameters
    ----------
    store : GraphStore
    dataset : str
    solver : str
        A ``solvers.METHODS`` name.
    solver_params : dict, optional
    spec : dict, optional
        The graph the flow would build (``flows.labelling.graph_spec``); compared with
        the recorded build. None: use the recorded build as it is.
    hops : int, default 2
        How far around the changed nodes the labels are recomputed.
    reasons : list, optional
        Where to append, when the result is None, why the run must be full (for the
        run's record and log).

    Returns
    -------
    IncrementalResult or None
        None when the flow must run in full: no node was ever labelled (no previous
        run), the graph is not a kNN graph or was built with other parameters, or the
        region's fixed labels span fewer than two classes. A result with ``n_region == 0``
        when nothing changed (nothing to write).
    """
    timings: dict[str, float] = {}

    def timed(stage, fn, *args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            timings[stage] = round(timings.get(stage, 0.0) + time.perf_counter() - start, 4)

    why = reasons if reasons is not None else []
    changes = timed("read_changes", read_changes, store, dataset)
    if not changes.labelled.any():
        why.append("no node was labelled before (first run)")
        return None
    build = timed("graph_parameters", graph_parameters, store, dataset, spec, changes)
    if build is None:
        why.append(f"the graph cannot be extended: not a kNN graph, or built with other parameters than"
                   f" {({k: v for k, v in (spec or {}).items() if v is not None})}")
        return None
    n_changed = int(changes.changed.sum())
    n_new = int(changes.new.sum())
    changes, touched, n_added = timed("add_edges", connect_new_nodes, store, dataset, changes, build)
    W = timed("adjacency", adjacency, changes.graph)
    has_fixed = pd.Series(changes.predicted, dtype=object).notna().to_numpy() | \
        pd.Series(changes.graph.labels, dtype=object).notna().to_numpy()
    region, boundary = timed("select_region", select_region, W, changes.changed, hops, has_fixed, touched)
    classes = dataset_classes(changes, boundary)
    if not region.any():
        empty = ExportedProblem(LabelProblem(sp.csr_matrix((0, 0)), np.zeros(0, np.int64),
                                             n_classes=max(len(classes), 1)), np.zeros(0, object), classes)
        none = Prediction(np.zeros(0, np.int64), np.zeros(0), np.zeros(0, bool),
                          np.zeros((0, max(len(classes), 1))), solver)
        return IncrementalResult(np.zeros(0, object), empty, none, empty, changes.graph.n_nodes, n_changed,
                                 n_new, n_added, 0, 0, build, changes.read_at, timings)
    problem = timed("export", region_problem, changes, W, region, boundary, classes)
    if len(set(problem.problem.y[problem.problem.labeled].tolist())) < 2:
        why.append("the changed region and its boundary hold fewer than two classes")
        return None
    prediction = timed("solve", solve_region, problem, solver, dict(solver_params or {}))
    n_region = int(region.sum())
    exported, restricted = timed("restrict", restrict_to_region, problem, prediction, n_region)
    return IncrementalResult(exported.keys, exported, restricted, problem, changes.graph.n_nodes, n_changed,
                             n_new, n_added, n_region, int(boundary.sum()), build, changes.read_at, timings)
