"""The graphs of Blum & Chawla (2001) §5.1: Mincut-3 and the 0/1 δ-graphs with the δ₀ / δ½ rules.

They take the features and the given labels (Mincut-3 forces a labelled neighbour, δ₀
depends on which labels a threshold joins), so the Neo4j and embedded stores build
the same edges from the same rows.

Open decisions (notes §7 items 7, 8, 15) and the choices made here:

- Mincut-3: *every* example (labelled ones too, as the paper's "Specifically, each
  example is connected to ...") gets three distinct neighbours: its nearest labelled
  example other than itself, then the two nearest examples other than itself and that
  labelled one ("the two other nearest examples overall"). Edges have weight 1 and the
  graph is symmetrised by union (a reciprocal pair keeps weight 1, not 2 as in
  Thm 3.1). Distance ties are broken by the neighbour search's order. Exact search
  (scikit-learn) unless ``backend`` says otherwise.
- δ-graph: ``w(x, y) = 1`` iff ``d(x, y) < δ`` (strict, Thm 4.1 / §5.1).
- δ₀ ("the maximum δ for which the graph has a cut of value 0"): with several classes,
  the largest δ at which no path joins given labels of two different classes (every
  one-vs-rest cut is 0). It is the smallest single-linkage merge height that puts two
  classes in one cluster, i.e. the smallest cophenetic (minimax-path) distance between
  two differently labelled points; with strict ``<`` that δ itself is the answer. Two
  differently labelled points at distance 0 give δ₀ = 0 and an empty graph.
- δ½ ("the size of the largest connected component is half the number of
  datapoints"): the size only moves in steps, so the smallest δ at which the largest
  component holds at least ``ceil(n/2)`` of the n examples. That is just above the
  single-linkage merge height ``h`` that first creates such a cluster, so the graph
  returned is every pair with ``d <= h`` (δ = the next float above ``h``).
- Both rules read the single-linkage tree (scipy's compiled MST-based ``linkage``), a
  union-find over sorted distances; no δ is tried. They need all pairwise distances
  (``pdist``, O(n²) memory: 10⁴ points take 400 MB, so up to about that size, which
  covers the paper's sets), and the graph is thresholded on those same distances, so δ
  and the edges agree to the bit.
- Metrics: any ``scipy.spatial.distance.pdist`` metric for the δ rules ("euclidean",
  "cityblock", "hamming" for the paper's L0 on categorical codes, ...); Mincut-3
  accepts scikit-learn's neighbour metrics.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.cluster.hierarchy import cophenet, linkage
from scipy.spatial.distance import pdist
from sklearn.neighbors import NearestNeighbors

DELTA_RULES = ("zero", "half")


def _features(X) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError(f"X must be a 2-D feature matrix with at least 2 rows, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X has NaN or infinite features")
    return X


def _neighbours_excluding(X_query, X_index, k, exclude, metric, algorithm):
    """The k nearest index rows of each query row, skipping up to two excluded ids per row."""
    n_ex = exclude.shape[1]
    nn = NearestNeighbors(n_neighbors=min(k + n_ex, X_index.shape[0]), metric=metric, algorithm=algorithm)
    idx = nn.fit(X_index).kneighbors(X_query, return_distance=False)
    keep = np.ones(idx.shape, dtype=bool)
    for e in range(n_ex):  # at most two excluded ids (self, the forced labelled neighbour)
        keep &= idx != exclude[:, e : e + 1]
    # Keep the first k survivors of each row (a stable rank among the kept columns).
    rank = np.cumsum(keep, axis=1)
    keep &= rank <= k
    rows = np.nonzero(keep)[0]
    return rows, idx[keep]


def mincut3_graph(X, labeled, *, metric: str = "euclidean", algorithm: str = "auto") -> sp.csr_matrix:
    """The Mincut-3 graph of Blum & Chawla (2001) §5.1.

    Each example is joined by a weight-1 edge to its nearest labelled example and to the
    two other nearest examples overall, so that no component is left without a label.

    Parameters
    ----------
    X : array, shape (n, d)
    labelled : array of bool, shape (n,)
        Which examples carry a given label (at least 2, so that a labelled example also
        has a labelled neighbour other than itself).
    metric : str, default "euclidean"
        Any scikit-learn neighbour metric ("euclidean", "manhattan", "hamming", ...).
    algorithm : str, default "auto"
        scikit-learn's neighbour search ("auto", "ball_tree", "kd_tree", "brute").

    Returns
    -------
    W : scipy.sparse.csr_matrix, shape (n, n)
        Symmetric 0/1 weights, zero diagonal.

    References
    ----------
    Blum & Chawla (2001), §5.1 "Mincut-3".
    """
    X = _features(X)
    n = X.shape[0]
    labeled = np.asarray(labeled, dtype=bool)
    if labeled.shape != (n,):
        raise ValueError(f"'labeled' must have shape ({n},), got {labeled.shape}")
    if labeled.sum() < 2:
        raise ValueError("Mincut-3 needs at least 2 labelled examples")
    if n < 4:
        raise ValueError("Mincut-3 needs at least 4 examples (3 distinct neighbours each)")
    lab_ids = np.flatnonzero(labeled)
    everyone = np.arange(n)
    # Nearest labelled example other than itself: search the labelled rows, skip self.
    self_in_labeled = np.full(n, -1)
    self_in_labeled[lab_ids] = np.arange(len(lab_ids))
    _, pos = _neighbours_excluding(X, X[lab_ids], 1, self_in_labeled[:, None], metric, algorithm)
    nearest_labeled = lab_ids[pos]
    # Two nearest examples other than itself and that labelled neighbour.
    exclude = np.column_stack([everyone, nearest_labeled])
    rows, cols = _neighbours_excluding(X, X, 2, exclude, metric, algorithm)
    src = np.concatenate([everyone, rows])
    dst = np.concatenate([nearest_labeled, cols])
    A = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    W = A.maximum(A.T).tocsr()
    W.data[:] = 1.0
    return W


def _labels(y, n) -> np.ndarray:
    y = np.asarray(y)
    if y.shape != (n,) or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"y must be an integer array of shape ({n},) with -1 for unlabelled")
    return y.astype(np.int64)


def _pairs_from_condensed(k: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Row i < column j of the pdist (condensed) positions k."""
    k = np.asarray(k, dtype=np.int64)
    # Row i starts at position i*n - i*(i+1)/2; invert that quadratic, then fix rounding.
    i = np.floor((2 * n - 1 - np.sqrt((2.0 * n - 1) ** 2 - 8.0 * k)) / 2).astype(np.int64)
    start = i * n - i * (i + 1) // 2
    too_far = start > k
    i[too_far] -= 1
    start = i * n - i * (i + 1) // 2
    next_start = (i + 1) * n - (i + 1) * (i + 2) // 2
    short = next_start <= k
    i[short] += 1
    start = i * n - i * (i + 1) // 2
    j = k - start + i + 1
    return i, j


def _single_linkage(X, metric):
    D = pdist(X, metric=metric)
    return D, linkage(D, method="single")


def _delta_from(Z, n, rule, y) -> tuple[float, bool]:
    """(threshold, inclusive): the δ-graph is d < threshold, or d <= threshold if inclusive."""
    if rule == "half":
        reaches_half = np.flatnonzero(Z[:, 3] >= np.ceil(n / 2))
        return float(Z[reaches_half[0], 2]), True
    labeled = np.flatnonzero(y >= 0)
    if len(np.unique(y[labeled])) < 2:
        raise ValueError("the δ₀ rule needs given labels of at least two classes")
    coph = cophenet(Z)  # minimax-path distance of every pair, condensed like D
    a, b = np.meshgrid(labeled, labeled, indexing="ij")
    differ = (a < b) & (y[a] != y[b])
    a, b = a[differ], b[differ]
    k = n * a - a * (a + 1) // 2 + (b - a - 1)
    return float(coph[k].min()), False


def delta_rule(X, rule: str = "half", y=None, *, metric: str = "euclidean") -> float:
    """δ chosen by the rule δ₀ (``"zero"``) or δ½ (``"half"``) of §5.1, for ``d < δ``.

    Parameters
    ----------
    X : array, shape (n, d)
    rule : {"half", "zero"}
    y : array of int, shape (n,), optional
        Given labels (-1 unlabelled); required by ``"zero"``.
    metric : str, default "euclidean"
        A ``scipy.spatial.distance.pdist`` metric.

    Returns
    -------
    delta : float
        The 0/1 δ-graph is every pair with ``d(x, y) < delta``.
    """
    X = _features(X)
    if rule not in DELTA_RULES:
        raise ValueError(f"rule must be one of {DELTA_RULES}, got {rule!r}")
    y = _labels(y, X.shape[0]) if rule == "zero" else None
    _, Z = _single_linkage(X, metric)
    threshold, inclusive = _delta_from(Z, X.shape[0], rule, y)
    return float(np.nextafter(threshold, np.inf)) if inclusive else threshold


def delta_rule_graph(X, rule: str = "half", y=None, *, metric: str = "euclidean") -> sp.csr_matrix:
    """The 0/1 δ-graph of Blum & Chawla (2001) §5.1 with δ from the δ₀ or δ½ rule.

    Parameters
    ----------
    X : array, shape (n, d)
    rule : {"half", "zero"}
        ``"half"``: smallest δ whose largest component holds half the examples;
        ``"zero"``: largest δ at which no path joins two differently labelled examples.
    y : array of int, shape (n,), optional
        Given labels (-1 unlabelled); required by ``"zero"``.
    metric : str, default "euclidean"
        A ``scipy.spatial.distance.pdist`` metric.

    Returns
    -------
    W : scipy.sparse.csr_matrix, shape (n, n)
        ``W[x, y] = 1`` iff ``d(x, y) < δ`` (x ≠ y); ``delta_rule`` gives the δ.

    References
    ----------
    Blum & Chawla (2001), §4 Thm 4.1 (the δ-graph) and §5.1 (Mincut-δ₀, Mincut-δ½).
    """
    X = _features(X)
    if rule not in DELTA_RULES:
        raise ValueError(f"rule must be one of {DELTA_RULES}, got {rule!r}")
    n = X.shape[0]
    y = _labels(y, n) if rule == "zero" else None
    D, Z = _single_linkage(X, metric)
    threshold, inclusive = _delta_from(Z, n, rule, y)
    k = np.flatnonzero(threshold >= D if inclusive else threshold > D)
    i, j = _pairs_from_condensed(k, n)
    A = sp.csr_matrix((np.ones(len(k)), (i, j)), shape=(n, n))
    return (A + A.T).tocsr()
