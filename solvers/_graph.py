"""Small sparse-graph helpers shared by the solvers (vectorised, no loops over nodes)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components


def unreachable(W: sp.spmatrix, labeled: np.ndarray) -> np.ndarray:
    """Mask of nodes whose connected component holds no labeled node."""
    _, comp = connected_components(W, directed=False)
    has_label = np.zeros(comp.max() + 1, dtype=bool)
    has_label[comp[labeled]] = True
    return ~has_label[comp]


def laplacian(W: sp.spmatrix) -> sp.csr_matrix:
    """Combinatorial Laplacian L = D - W."""
    d = np.asarray(W.sum(axis=1)).ravel()
    return (sp.diags(d) - W).tocsr()


def one_hot(y: np.ndarray, n_classes: int) -> np.ndarray:
    """n×C indicator of the given labels (rows of unlabeled nodes are 0)."""
    Y = np.zeros((len(y), n_classes))
    lab = y >= 0
    Y[np.flatnonzero(lab), y[lab]] = 1.0
    return Y


def finish_labels(scores: np.ndarray, confidence: np.ndarray, no_label: np.ndarray):
    """Arg-max labels with the contract's rule: no reachable label → label -1, confidence 0."""
    labels = np.argmax(scores, axis=1).astype(np.int64)
    labels[no_label] = -1
    confidence = np.clip(confidence, 0.0, 1.0)
    confidence[no_label] = 0.0
    return labels, confidence


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
    """An (n,) array holding ``values`` at the labeled nodes and NaN elsewhere."""
    out = np.full(n, np.nan)
    out[labeled] = values
    return out
