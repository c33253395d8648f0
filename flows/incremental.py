"""Incremental labelling runs: label only what changed since the last run.

``label_changed(store, dataset, options, request)`` is the whole
incremental path; the flow calls it unless asked for a full run, and falls back to the
full path when it returns None. Stages: ``read_changes`` → ``graph_parameters`` →
``connect_new_nodes`` (store I/O, here) → ``select_region`` → ``region_problem`` (the
arithmetic, ``labelling.regions``) → the flow's one solve path (``flows.solving``: the
mapped ``solve`` task per batch of connected components, as a full run) →
``restrict_to_region``.

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
  entities). They get their k nearest among all nodes (``GraphStore.add_knn_edges``:
  ``similarity.knn_edges_for`` on the features this run read, on both stores: on Neo4j
  exact and 5-10x faster than GDS filtered kNN, graphstore/neo4j_gds.py), weighted with
  the recorded σ; nothing is deleted.
  Not done: existing nodes whose own k nearest would now include a new node do not get
  that edge, and a node whose *features* changed keeps its old relationships (it is
  relabelled, but only a full run rebuilds its edges). Both are what ``--full`` is for.
- Graph parameters: the full path records the spec with the σ it used
  (``record_graph_build``; GraphBuild node per dataset). Without a record, σ is read back
  exactly from the stored Gaussian weights and features
  (``similarity.gaussian_sigma_from_edges``) and recorded then. A requested spec that
  differs from the recorded one (graph, k, metric, weights, σ) means the graph must be
  rebuilt: None (full run). Only kNN graphs are extended; δ-graphs and the label-reading
  graphs (mincut3, δ₀, δ½) always take the full path. A graph rebuilt since the last
  run (its record newer than the one the run kept) is a full run before this module is
  called (``flows.labelling.change_since_last_run``), as a changed solver is.
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

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import scipy.sparse as sp

import similarity
from graphstore import GraphStore, SubGraph
from graphstore.port import OnProgress
from labelling.options import RunOptions
from labelling.problems import ExportedProblem, check_classes, numeric_scaling
from labelling.regions import (
    GRAPH_KEYS,
    USER_EDGE_KEYS,
    ChangeSet,
    IncrementalResult,
    adjacency,
    dataset_classes,
    region_problem,
    region_solver_params,
    restrict_to_region,
    select_region,
)
from similarity.spec import REQUESTED, GraphRequest, GraphSpec
from solvers import LabelProblem, Prediction

from .clock import StageClock
from .direct import task
from .progress import progress, stage_progress
from .solving import solve_by_component
from .tasks import STORE_RETRIES


@task("read-changes", **STORE_RETRIES)
def read_changes(store: GraphStore, dataset: str) -> ChangeSet:
    """The dataset's nodes, features and relationships, with each node's change state."""
    read_at = pd.Timestamp.now(tz="UTC")
    state = store.read_label_state(dataset)
    if not pc.any(state.column("labelled")).as_py():
        # no previous run: the flow runs in full, so skip reading the whole graph (15 s at 1M)
        empty = SubGraph(np.zeros(0, object), np.zeros(0, object), None, np.zeros(0, np.int64),
                         np.zeros(0, np.int64), np.zeros(0))
        return ChangeSet(empty, np.zeros(0, bool), np.zeros(0, bool), np.zeros(0, object), read_at)
    with progress("read changes", None, "nodes") as meter:  # the whole graph: 3.7 s at 60,000 nodes on Neo4j
        own = store.read_subgraph(dataset, with_features=True)
        graph = store.add_user_edges(dataset, own)  # the user's edges the graph build names, if any
        meter.to(graph.n_nodes)
    own_degree = None if graph is own else \
        np.bincount(own.source, minlength=own.n_nodes) + np.bincount(own.target, minlength=own.n_nodes)
    position = pd.Index(state.column("key").to_pylist()).get_indexer(pd.Index(graph.keys))
    if (position < 0).any():
        raise RuntimeError(f"dataset {dataset!r} changed while it was read; run again")
    changed = state.column("changed").to_numpy(zero_copy_only=False).astype(bool)[position]
    labelled = state.column("labelled").to_numpy(zero_copy_only=False).astype(bool)[position]
    predicted = np.asarray(state.column("predicted_label").to_pylist(), dtype=object)[position]
    return ChangeSet(graph, changed, labelled, predicted, read_at, own_degree)


def record_graph_build(store: GraphStore, dataset: str, spec: GraphSpec, request: GraphRequest) -> dict[str, Any]:
    """Record the graph a dataset's similarity relationships were just built with, ``spec``
    with the σ actually used (``BuiltGraph.sigma``), and the options ``request`` asked for
    (what a rebuild asks for again); returns the record written. When σ is unknown (a
    graph recorded before σ was), the next incremental run reads it back from the stored
    weights."""
    build = {**spec.as_record(), REQUESTED: request.asked()}
    build["sigma_source"] = "recorded" if build["sigma"] is not None else None
    store.write_graph_build(dataset, build)
    return build


def _with_scale(recorded: dict[str, Any]) -> dict[str, Any]:
    """A graph build's record with its scaling: one recorded before scaling existed was built unscaled."""
    return {**recorded, "scale": recorded.get("scale") or "none"} if recorded else {}


def options_not_built(requested: dict[str, Any], recorded: dict[str, Any] | None) -> list[str]:
    """The graph options given (``GraphRequest.given``) that the recorded build (None: none
    recorded) was made with other values of, in words: an incremental run cannot extend such a
    graph, and a full run without a rebuild uses it as built."""
    if not recorded:
        return []
    built = _with_scale(recorded)
    differ = [f"{name} {requested[name]!r} was asked for and the graph was built with {built[name]!r}"
              for name in (*GRAPH_KEYS, "scale")
              if requested.get(name) is not None and built.get(name) not in (None, requested[name])]
    sigma = requested.get("sigma")
    if sigma is not None and built.get("sigma") is not None and not np.isclose(sigma, built["sigma"], rtol=1e-9):
        differ.append(f"sigma {sigma:g} was asked for and the graph was built with {built['sigma']:g}")
    return differ


def graph_parameters(store: GraphStore, dataset: str, request: GraphRequest,
                     changes: ChangeSet, reasons: list[str] | None = None) -> GraphSpec | None:
    """The graph edges are added with: the recorded build, checked against the options the
    caller gave (``request``); σ read back from the stored Gaussian weights (and recorded)
    when it was not recorded. None when the graph cannot be extended (not kNN, other
    parameters requested, or Gaussian weights whose σ cannot be recovered): the flow then
    runs in full, and ``reasons`` gets which (it said "not a kNN graph, or built with other
    parameters than {...}" whichever it was)."""
    why = reasons if reasons is not None else []
    requested = request.given()
    recorded = store.read_graph_build(dataset)
    if not_built := options_not_built(requested, recorded):
        why.append(not_built[0])
        return None  # built with other parameters: rebuild
    build = _with_scale(recorded or {})
    build.update({name: requested[name] for name in (*GRAPH_KEYS, "scale") if requested.get(name) is not None})
    if "graph" in requested and recorded is not None \
            and any(recorded.get(name) != requested.get(name) for name in USER_EDGE_KEYS):
        why.append("other user edges (or none) were asked for than the graph was built with")
        return None  # other user edges, or none, asked for: rebuild
    build.setdefault("graph", "knn")
    if build["graph"] != "knn" or build.get("k") is None:
        why.append(f"the graph is {build['graph']!r}, and only a kNN graph is extended to changed nodes")
        return None
    build["metric"] = build.get("metric") or "euclidean"
    build["weights"] = build.get("weights") or "gaussian"
    wanted_sigma = requested.get("sigma")
    if build["weights"] == "gaussian" and build.get("sigma") is None:
        graph = changes.graph
        sigma = wanted_sigma
        if sigma is None and graph.features is not None and len(graph.weight):
            sigma = similarity.gaussian_sigma_from_edges(graph.features, graph.source, graph.target,
                                                         graph.weight, build["metric"])
        if sigma is None:
            why.append("the σ of the graph's Gaussian weights was not recorded and cannot be read back")
            return None
        build["sigma"] = float(sigma)
        build["sigma_source"] = "given" if wanted_sigma is not None else "read back from the stored weights"
        store.write_graph_build(dataset, {k: v for k, v in build.items() if k != "built_at"})
    return GraphSpec.from_record(build)


def unseen_categories(changes: ChangeSet, spec: GraphSpec) -> str | None:
    """Why the graph must be rebuilt when a changed node holds a categorical value the
    graph's vocabulary lacks (None when none does): its one-hot would have no column, and
    measuring it as "unlike everything" would silently misplace it. The run falls back to
    a full one, whose rebuild (``build_graph``: the flow's default; the CLI's
    ``--rebuild-graph``) fits the vocabulary again; the node is kept, not dropped (without
    a rebuild it has no relationships, and the run's note says so)."""
    graph = changes.graph
    if graph.categories is None or spec.encoding is None or not spec.encoding.vocabulary:
        return None
    changed = np.flatnonzero(changes.changed)
    unseen = spec.encoding.unseen(graph.categories[changed])
    if not unseen:
        return None
    rows = sorted({row for row, _, _ in unseen})
    listed = ", ".join(f"{graph.keys[changed[row]]!r} (column {column}: {value!r})"
                       for row, column, value in unseen[:5])
    return (f"{len(rows)} changed node{'s' * (len(rows) != 1)} hold categorical values the graph was not built"
            f" with: {listed}{', ...' if len(unseen) > 5 else ''}; only a rebuilt graph measures them (label"
            " --rebuild-graph; a flow run with build_graph, the default, rebuilds)")


@task("add-edges", **STORE_RETRIES)
def connect_new_nodes(store: GraphStore, dataset: str, changes: ChangeSet, spec: GraphSpec,
                      on_progress: OnProgress | None = None) -> tuple[ChangeSet, np.ndarray, int]:
    """Give the new nodes edges to their k nearest among all nodes, without rebuilding
    (``GraphStore.add_knn_edges``, its steps to ``on_progress``). Returns the change set
    with the new edges in its graph, a mask of the nodes at either end of an added edge,
    and the number added."""
    graph = changes.graph
    new = changes.new
    touched = np.zeros(graph.n_nodes, dtype=bool)
    if not new.any() or graph.n_nodes <= int(spec.k or 0):
        return changes, touched, 0
    edges = store.add_knn_edges(dataset, graph, np.flatnonzero(new), spec, on_progress)
    position = pd.Index(graph.keys)
    src = position.get_indexer(pd.Index(edges.column("source").to_pylist()))
    dst = position.get_indexer(pd.Index(edges.column("target").to_pylist()))
    if (src < 0).any() or (dst < 0).any():
        raise RuntimeError(f"dataset {dataset!r} changed while it was labelled; run again")
    weight = edges.column("weight").to_numpy(zero_copy_only=False).astype(np.float64)
    touched[src] = True
    touched[dst] = True
    # replace keeps the subgraph's other fields (categories, label confidence) as read
    extended = replace(graph, source=np.concatenate([graph.source, src]), target=np.concatenate([graph.target, dst]),
                       weight=np.concatenate([graph.weight, weight]))
    own_degree = None if changes.own_degree is None else \
        changes.own_degree + np.bincount(src, minlength=graph.n_nodes) + np.bincount(dst, minlength=graph.n_nodes)
    return ChangeSet(extended, changes.changed, changes.labelled, changes.predicted, changes.read_at,
                     own_degree), touched, \
        len(src)


def _nothing_changed(changes: ChangeSet, classes: np.ndarray, solver: str, n_changed: int, n_new: int,
                     n_added: int, spec: GraphSpec) -> IncrementalResult:
    n_classes = max(len(classes), 1)
    empty = ExportedProblem(LabelProblem(sp.csr_matrix((0, 0)), np.zeros(0, np.int64), n_classes=n_classes),
                            np.zeros(0, object), classes)
    none = Prediction(np.zeros(0, np.int64), np.zeros(0), np.zeros(0, bool), np.zeros((0, n_classes)), solver)
    return IncrementalResult(np.zeros(0, object), empty, none, empty, changes.graph.n_nodes, n_changed,
                             n_new, n_added, 0, 0, spec.as_record(), changes.read_at, {})


def label_changed(store: GraphStore, dataset: str, options: RunOptions, request: GraphRequest | None = None,
                  reasons: list[str] | None = None,
                  on_extending: Callable[[], None] | None = None) -> IncrementalResult | None:
    """Label what changed since the last run, on the region it reaches.

    Parameters
    ----------
    store : GraphStore
    dataset : str
    options : RunOptions
        The solver and its parameters, and ``hops``: how far around the changed nodes the
        labels are recomputed.
    request : GraphRequest, optional
        The graph options the caller gave (none given: as recorded), compared with the
        recorded build.
    reasons : list, optional
        Where to append, when the result is None, why the run must be full (for the
        run's record and log).
    on_extending : callable, optional
        Called once the graph is known to extend, before the new nodes' edges are added:
        from there the run is incremental unless its region holds fewer than two classes
        (the flow names its run there, not after the write-back).

    Returns
    -------
    IncrementalResult or None
        None when the flow must run in full: no node was ever labelled (no previous
        run), the graph is not a kNN graph or was built with other parameters, or the
        region's fixed labels span fewer than two classes. A result with ``n_region == 0``
        when nothing changed (nothing to write).

    Raises
    ------
    NotEnoughLabels
        The dataset's given labels hold fewer than two classes, as a full run would say.
    """
    clock = StageClock()
    why = reasons if reasons is not None else []
    with clock("read_changes"):
        changes = read_changes(store, dataset)
    if not changes.labelled.any():  # nothing read but the label state: the full run checks the labels
        why.append("no node was labelled before (first run)")
        return None
    # a full run's first check, on the labels just read: given labels all removed (the file
    # ingested again without --label) or left in one class are not relabelled from the nodes'
    # old predictions, which then stand in for the missing classes
    check_classes(dataset, pd.unique(pd.Series(changes.graph.labels, dtype=object).dropna().astype(str)))
    request = request or GraphRequest()
    with clock("graph_parameters"):
        not_extended: list[str] = []
        spec = graph_parameters(store, dataset, request, changes, not_extended)
    if spec is None:
        why.append(f"the graph cannot be extended: {'; '.join(not_extended)}")
        return None
    unseen = unseen_categories(changes, spec)
    if unseen:
        why.append(unseen)
        return None
    n_changed = int(changes.changed.sum())
    n_new = int(changes.new.sum())
    if on_extending is not None:
        on_extending()
    with clock("add_edges"), stage_progress() as steps:
        changes, touched, n_added = connect_new_nodes(store, dataset, changes, spec, steps)
    with clock("select_region"):
        W = adjacency(changes.graph)
        has_fixed = pd.Series(changes.predicted, dtype=object).notna().to_numpy() | \
            pd.Series(changes.graph.labels, dtype=object).notna().to_numpy()
        region, boundary = select_region(W, changes.changed, options.hops, has_fixed, touched)
    classes = dataset_classes(changes, boundary)
    if not region.any():
        return _nothing_changed(changes, classes, options.solver, n_changed, n_new, n_added, spec)
    with clock("export"):
        problem = region_problem(changes, W, region, boundary, classes, numeric_scaling(spec.encoding))
    if len(set(problem.problem.y[problem.problem.labeled].tolist())) < 2:
        why.append("the changed region and its boundary hold fewer than two classes")
        return None
    # no class masses refitted on a small region (labelling/regions.py, REGION_SOLVER_PARAMS)
    region_options = replace(options, solver_params=region_solver_params(options.solver, options.solver_params,
                                                                         float(region.mean())))
    # the full run's solve path: batches of connected components
    with clock("solve"), progress(f"solve ({options.solver})", problem.problem.n_nodes, "nodes"):
        prediction = solve_by_component(problem, region_options)
    n_region = int(region.sum())
    exported, restricted = restrict_to_region(problem, prediction, n_region)
    return IncrementalResult(exported.keys, exported, restricted, problem, changes.graph.n_nodes, n_changed,
                             n_new, n_added, n_region, int(boundary.sum()), spec.as_record(), changes.read_at,
                             dict(clock.seconds))
