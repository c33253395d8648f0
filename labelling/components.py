"""Connected components of the similarity graph as independent labelling problems.

No edge joins two components, so no label can travel between them: each component is a
problem of its own, and the components can be solved side by side (Prefect maps the
solve task over them; a Dask task runner spreads them over a cluster). Three kinds:

- a component without a given label: nothing reaches it; its nodes get no prediction
  (label -1, confidence 0), as the whole-graph solvers already answer for them;
- a component whose given labels are all of one class: every node gets that class with
  confidence 1 and no label is flagged (the harmonic function is exactly 1 there; a
  two-class solver has nothing to separate), without calling the solver;
- a component with two or more classes: solved by the chosen solver, in *batches*:
  components are packed, largest first, into batches of about ``batch_nodes`` nodes
  (a block-diagonal problem per batch), so that 100,000 small components make a few
  tasks rather than 100,000.

For the harmonic function and the mincut, solving per batch gives exactly the
whole-graph answer (their solutions decompose over components). Solvers that fit global
quantities (SGT's class ratio and spectrum, NMF's β*, LC-SNC's cross-validated λ) fit
them per batch instead; with one component (the usual kNN graph) nothing changes.
Classes are renumbered per batch to those with a given label in it and mapped back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from solvers import LabelProblem, Prediction, graph_components

#: Batches are packed up to about this many nodes.
BATCH_NODES = 50_000
#: What ``merge_predictions`` adds to the prediction's ``info``: the split, not the solver.
PLAN_INFO = ("n_components", "n_batches", "n_unlabeled_components", "n_single_class_nodes")
#: A solver's findings that its labelling is no better than a guess (``solvers.degenerate_text``).
DEGENERATE_INFO = ("degenerate", "no_better_than_majority")


@dataclass(frozen=True, eq=False)
class ComponentPlan:
    """How a problem splits: node positions per solver batch, and the nodes decided
    without a solver.

    Attributes
    ----------
    batches : list of int arrays
        Node positions of each batch (whole components, two or more classes each).
    single_class_nodes : int array
        Nodes of components whose given labels are all of one class ...
    single_class : int array
        ... and that class, per node.
    n_components : int
        Connected components of the graph (isolated nodes included).
    n_unlabeled_components : int
        Components without a given label.
    """

    batches: list[np.ndarray]
    single_class_nodes: np.ndarray
    single_class: np.ndarray
    n_components: int
    n_unlabeled_components: int


def plan_components(problem: LabelProblem, batch_nodes: int = BATCH_NODES) -> ComponentPlan:
    """Split ``problem`` into its connected components and pack them into batches."""
    if batch_nodes < 1:
        raise ValueError(f"batch_nodes must be >= 1, got {batch_nodes}")
    # a LabelProblem's W is symmetric; one search when the graph is one component (at 1M nodes
    # 0.24-0.29 s against 0.89-1.38 s for scipy's directed=False, the same numbering)
    component = graph_components(problem.W, symmetric=True)
    n_components = int(component.max(initial=-1)) + 1
    labeled = problem.labeled
    # labels per (component, class): a sparse count table (duplicates summed on
    # construction), no loop over components
    counts = sp.csr_matrix(
        (np.ones(labeled.sum()), (component[labeled], problem.y[labeled])),
        shape=(n_components, problem.n_classes),
    )
    n_classes_in = np.diff(counts.indptr)
    single = n_classes_in == 1
    multi = np.flatnonzero(n_classes_in >= 2)

    sizes = np.bincount(component, minlength=n_components)[multi]
    order = np.argsort(-sizes, kind="stable")
    start = np.cumsum(sizes[order]) - sizes[order]
    batch_of_component = np.full(n_components, -1)
    # numbered without gaps: a component over two batches long starts beyond the next number
    batch_of_component[multi[order]] = np.unique(start // batch_nodes, return_inverse=True)[1]
    node_batch = batch_of_component[component]
    in_batch = np.flatnonzero(node_batch >= 0)
    in_batch = in_batch[np.argsort(node_batch[in_batch], kind="stable")]
    bounds = np.cumsum(np.bincount(node_batch[in_batch]))[:-1]
    batches = np.split(in_batch, bounds) if len(in_batch) else []
    if len(batches) == 1 and len(batches[0]) == problem.n_nodes:
        batches = [np.arange(problem.n_nodes)]  # keep the node order: batch_problem reuses W

    single_nodes = np.flatnonzero(single[component])
    class_of_component = np.zeros(n_components, dtype=np.int64)
    class_of_component[single] = counts.indices[counts.indptr[:-1][single]]
    return ComponentPlan(
        batches=batches,
        single_class_nodes=single_nodes,
        single_class=class_of_component[component[single_nodes]],
        n_components=int(n_components),
        n_unlabeled_components=int(np.sum(n_classes_in == 0)),
    )


@dataclass(frozen=True, eq=False)
class BatchProblem:
    """One batch's problem, with the positions and global class codes to map it back."""

    problem: LabelProblem
    nodes: np.ndarray
    classes: np.ndarray


def batch_problem(problem: LabelProblem, nodes: np.ndarray) -> BatchProblem:
    """The sub-problem induced by ``nodes``, its classes renumbered to those present."""
    y = problem.y[nodes]
    classes = np.unique(y[y >= 0])
    if len(nodes) == problem.n_nodes and len(classes) == problem.n_classes:
        # the usual case, one connected graph: no copy of W (a second of work at 1M nodes)
        return BatchProblem(problem, nodes, classes)
    local = np.where(y >= 0, np.searchsorted(classes, np.clip(y, 0, None)), -1)
    confidence = problem.label_confidence[nodes] if problem.label_confidence is not None else None
    X = problem.X[nodes] if problem.X is not None else None
    W = problem.W[nodes][:, nodes]
    # the whole problem's labels per class, so that a batch judges a label as the whole graph does
    counts = problem.class_label_counts[classes]
    return BatchProblem(LabelProblem(W, local, confidence, len(classes), X, counts), nodes, classes)


def _of_whole_problem(finding: dict, batch: BatchProblem) -> dict:
    """A batch's finding (``DEGENERATE_INFO``) with its class one of the whole problem, and
    the batch's node count."""
    whole = {**finding, "n_nodes": len(batch.nodes)}
    if "class" in finding:
        whole["class"] = int(batch.classes[finding["class"]])
    return whole


def merge_predictions(problem: LabelProblem, plan: ComponentPlan,
                      solved: list[tuple[BatchProblem, Prediction]], method: str) -> Prediction:
    """One whole-graph Prediction from the batches' predictions and the plan's
    single-class components; the rest (unlabelled components) gets label -1."""
    n, C = problem.n_nodes, problem.n_classes
    labels = np.full(n, -1, dtype=np.int64)
    confidence = np.zeros(n)
    noisy = np.zeros(n, dtype=bool)
    noise_score = np.full(n, np.nan)
    scored = False
    scores = np.zeros((n, C))
    labels[plan.single_class_nodes] = plan.single_class
    confidence[plan.single_class_nodes] = 1.0
    scores[plan.single_class_nodes, plan.single_class] = 1.0
    for batch, prediction in solved:
        found = prediction.labels >= 0
        labels[batch.nodes] = np.where(found, batch.classes[np.clip(prediction.labels, 0, None)], -1)
        confidence[batch.nodes] = prediction.confidence
        noisy[batch.nodes] = prediction.noisy
        if prediction.noise_score is not None:
            noise_score[batch.nodes] = prediction.noise_score
            scored = True
        block = np.zeros((len(batch.nodes), C))
        # on the scale its labels read: a batch's class mass weights are over its own classes
        block[:, batch.classes] = prediction.label_scale_scores[:, : len(batch.classes)]
        scores[batch.nodes] = block
    first = solved[0][1] if solved else None
    info = dict(first.info) if first is not None and len(solved) == 1 else {}
    info.pop("class_mass_weights", None)  # the merged scores are already on that scale
    # each batch's labelling no better than a guess, its class a class of the whole problem
    for key in DEGENERATE_INFO:
        info.pop(key, None)
    info["degenerate_batches"] = [_of_whole_problem(prediction.info[key], batch) for batch, prediction in solved
                                  for key in DEGENERATE_INFO if prediction.info.get(key)]
    # the far outliers a solver attached (harmonic's faint nodes), by node of the whole problem
    faint = [batch.nodes[np.asarray(prediction.info["faint_nodes"], dtype=np.int64)]
             for batch, prediction in solved if len(prediction.info.get("faint_nodes", ()))]
    if faint:
        faint_nodes = np.concatenate(faint)
        info.update(faint_nodes=faint_nodes, n_faint=int(faint_nodes.size))
    info.update(n_components=plan.n_components, n_batches=len(solved),
                n_unlabeled_components=plan.n_unlabeled_components,
                n_single_class_nodes=int(len(plan.single_class_nodes)))
    return Prediction(labels, confidence, noisy, scores, method, dict(first.params) if first else {}, info,
                      noise_score if scored else None)
