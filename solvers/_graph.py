"""Small sparse-graph helpers shared by the solvers (vectorised, no loops over nodes)."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, connected_components

from .problem import DegenerateLabelingWarning

# A labelling is degenerate when one class takes at least this share of the unlabelled nodes a
# label reaches while holding less than this share of the given labels.
DEGENERATE_SHARE = 0.95
# ... among at least this many such nodes: with fewer, one node of another class already puts
# a share below 95%, so the test would mean "all of them" (a handful of nodes says nothing).
DEGENERATE_MIN_NODES = round(1 / (1 - DEGENERATE_SHARE))


def graph_components(W: sp.spmatrix, symmetric: bool = False) -> np.ndarray:
    """Each node's connected component (W's edges read in both directions), numbered in the
    order of each component's first node, as ``scipy.sparse.csgraph.connected_components(W,
    directed=False)`` numbers them.

    A breadth-first search from node 0 first: when it reaches every node the graph is one
    component (kNN graphs mostly are; a search along W's own edges that reaches every node
    also does so along both directions). Otherwise scipy's components: of a ``symmetric`` W
    (a ``LabelProblem``'s) its strongly connected ones, found on W itself, where
    ``directed=False`` first builds Wᵀ; else ``directed=False``.

    Measured (the 10-NN graphs of ``bench/solver_scale.py``; scipy 1.17): at 1M nodes (17M
    stored edges) the search took 0.24-0.29 s, the strong components 0.73-0.80 s and
    ``directed=False`` 0.89-1.38 s; at 100k 6.9-9 ms, 25 ms and 42-48 ms (the search's time
    is wasted when it stops short).
    """
    W = sp.csr_matrix(W)
    n = W.shape[0]
    if n == 0 or breadth_first_order(W, 0, directed=True, return_predecessors=False).size == n:
        return np.zeros(n, dtype=np.int32)
    if not symmetric:
        return connected_components(W, directed=False)[1]
    component = connected_components(W, directed=True, connection="strong")[1]
    # renumbered by first node (scipy's strong numbering is its own)
    _, first, inverse = np.unique(component, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int32)
    rank[np.argsort(first)] = np.arange(first.size, dtype=np.int32)
    return rank[inverse]


def unreachable(W: sp.spmatrix, labeled: np.ndarray) -> np.ndarray:
    """Mask of nodes whose connected component holds no labelled node."""
    comp = graph_components(W)
    has_label = np.zeros(comp.max() + 1, dtype=bool)
    has_label[comp[labeled]] = True
    return ~has_label[comp]


def laplacian(W: sp.spmatrix) -> sp.csr_matrix:
    """Combinatorial Laplacian L = D - W."""
    d = np.asarray(W.sum(axis=1)).ravel()
    return (sp.diags(d) - W).tocsr()


def one_hot(y: np.ndarray, n_classes: int) -> np.ndarray:
    """n×C indicator of the given labels (rows of unlabelled nodes are 0)."""
    Y = np.zeros((len(y), n_classes))
    lab = y >= 0
    Y[np.flatnonzero(lab), y[lab]] = 1.0
    return Y


def finish_labels(scores: np.ndarray, confidence: np.ndarray, no_label: np.ndarray):
    """Arg-max labels with the contract's rule: no reachable label → label -1, confidence 0."""
    return finished(np.argmax(scores, axis=1), confidence, no_label)


def finished(labels: np.ndarray, confidence: np.ndarray, no_label: np.ndarray):
    """``labels`` (a copy) with the contract's rule, as ``finish_labels`` gives them."""
    labels = np.array(labels, dtype=np.int64)
    labels[no_label] = -1
    confidence = np.clip(confidence, 0.0, 1.0)
    confidence[no_label] = 0.0
    return labels, confidence


def predict_flagged(labels: np.ndarray, confidence: np.ndarray, noisy: np.ndarray, labeled: np.ndarray,
                    held_out: np.ndarray) -> None:
    """In place: each flagged given label's node takes the arg-max of its held-out class
    distribution (``held_out``: one row per given label, in node order, from a model or a
    field that left the label out) and its value as the confidence, as every solver predicts
    a node whose label it doubts (``labelling/scores.py``)."""
    rows = held_out[noisy[labeled]]
    labels[noisy] = np.argmax(rows, axis=1)
    confidence[noisy] = np.max(rows, axis=1)


def margin_scores(P: np.ndarray, given: np.ndarray) -> np.ndarray:
    """Per row: the largest entry of another column minus the entry of the ``given`` column.

    The noise score of a given label from its held-out class distribution P (one row per
    label): the margin by which the best other class beats the given one, in [-1, 1] for
    probabilities (cleanlab's ``normalized_margin`` with the sign flipped, so that higher
    means more doubtful)."""
    rows = np.arange(len(given))
    other = np.array(P, dtype=np.float64, copy=True)
    own = other[rows, given].copy()
    other[rows, given] = -np.inf
    return other.max(axis=1) - own


def per_label(n: int, labeled: np.ndarray, values: np.ndarray) -> np.ndarray:
    """An (n,) array holding ``values`` at the labelled nodes and NaN elsewhere."""
    out = np.full(n, np.nan)
    out[labeled] = values
    return out


def one_class_takes_all(labels: np.ndarray, y: np.ndarray, n_classes: int) -> dict | None:
    """The class that takes at least ``DEGENERATE_SHARE`` of the labelled-reachable unlabelled
    nodes (of at least ``DEGENERATE_MIN_NODES``) though it holds less than that share of the
    given labels, with both shares; None when the labelling is not degenerate."""
    unlabeled = (y < 0) & (labels >= 0)
    given = y >= 0
    if unlabeled.sum() < DEGENERATE_MIN_NODES or not given.any():
        return None
    share = np.bincount(labels[unlabeled], minlength=n_classes) / unlabeled.sum()
    given_share = np.bincount(y[given], minlength=n_classes) / given.sum()
    c = int(np.argmax(share))
    if share[c] < DEGENERATE_SHARE or given_share[c] >= DEGENERATE_SHARE:
        return None
    return {"class": c, "share": float(share[c]), "given_share": float(given_share[c])}


def warn_degenerate(method: str, found: dict, reason: str) -> None:
    """One ``DegenerateLabelingWarning`` for a labelling ``one_class_takes_all`` or
    ``no_better_than_majority`` found. The ``reason`` (why, and what to change) is kept in
    ``found`` (the solver's ``info``), so that a caller that knows the classes' names says
    the same (``degenerate_text``): a run's report and log, which the warning does not reach."""
    found["reason"] = reason
    warnings.warn(degenerate_text(method, found), DegenerateLabelingWarning, stacklevel=3)


def degenerate_text(method: str, found: dict, class_name: str | None = None) -> str:
    """The words of a labelling no better than a guess: ``found`` is a solver's
    ``info["degenerate"]`` (``one_class_takes_all``) or ``info["no_better_than_majority"]``
    after its warning, its class named ``class_name`` where the caller knows the names."""
    if "held_out_accuracy" in found:
        return (f"{method}: held out one at a time, {found['held_out_accuracy']:.1%} of the {found['n_labels']} "
                f"given labels come back, no more than the {found['majority_share']:.1%} of guessing their largest "
                "class: on this graph and these labels the labelling is no better than that guess. "
                + found.get("reason", ""))
    named = found["class"] if class_name is None else repr(class_name)
    return (f"{method}: class {named} takes {found['share']:.1%} of the unlabelled nodes with "
            f"{found['given_share']:.1%} of the given labels, a labelling no better than guessing that class. "
            + found.get("reason", ""))


def no_better_than_majority(noise_score: np.ndarray, y: np.ndarray) -> dict | None:
    """The given labels' own held-out check says the labelling is no better than a guess.

    ``noise_score`` is a solver's per-label held-out margin (``margin_scores``: the best
    other class minus the given one, NaN off the given labels): a label whose class wins
    (score < 0) is predicted right without it. Only labels of classes with at least two
    given labels count (a class's only label cannot come back when held out). Returns the
    held-out accuracy and the majority share of those labels when the accuracy is at most
    that share, else None (also when the labels that count hold fewer than two classes:
    with a single label of every other class there is nothing to hold out)."""
    given = (y >= 0) & np.isfinite(noise_score)
    counts = np.bincount(y[given], minlength=max(int(y.max()) + 1, 1))
    usable = given & (counts[np.maximum(y, 0)] >= 2)
    if len(np.unique(y[usable])) < 2:  # one class or none to check: its majority share is 1
        return None
    accuracy = float(np.mean(noise_score[usable] < 0))
    majority = float(np.bincount(y[usable]).max() / usable.sum())
    if accuracy > majority:
        return None
    return {"held_out_accuracy": accuracy, "majority_share": majority, "n_labels": int(usable.sum())}
