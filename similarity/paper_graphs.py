"""Graphs two of the papers build themselves, so that a run can use the paper's own graph.

- ``mutual_knn_graph``: Bergamim & Breve (2022), Eq. 6-8 as the authors' code builds it
  (the NMF notes §3.1): Gaussian kNN weights with σ a third of the mean distance to the
  k-th neighbour, mutual kNN, each node's nearest neighbour put back if mutuality
  dropped it, then (W + Wᵀ)/2.
- ``directed_similarities``: the directed cosine kNN similarity matrix that Joachims
  (2003, Sec. 5, eq. 22) turns into the SGT's graph (``solvers.spectral.sgt_graph`` does
  the row scaling and A' + A'ᵀ; similarity does not import the solvers).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .knn import nearest_neighbors


def mutual_knn_graph(X: np.ndarray, k: int, *, rescue: bool = True, backend: str = "auto") -> sp.csr_matrix:
    """Symmetric mutual-kNN Gaussian graph of Bergamim & Breve's code (``rescue=False``: Eq. 8 only)."""
    n = X.shape[0]
    idx, dist = nearest_neighbors(X, k, "euclidean", backend)
    sigma = dist[:, k - 1].mean() / 3.0  # Eq. 7: a third of the mean k-th neighbour distance
    rows = np.repeat(np.arange(n), k)
    J = sp.csr_matrix((np.exp(-dist.ravel() ** 2 / (2 * sigma**2)), (rows, idx.ravel())), shape=(n, n))
    W = J.minimum(J.T).tocsr()
    if rescue:
        nearest = idx[:, 0]
        R = sp.csr_matrix((np.exp(-dist[:, 0] ** 2 / (2 * sigma**2)), (np.arange(n), nearest)), shape=(n, n))
        W = W.maximum(R)  # mutual weights equal J there, so max adds only the dropped links
        W = (W + W.T) / 2.0
    W = sp.csr_matrix(W)
    W.eliminate_zeros()
    return W


def directed_similarities(X: np.ndarray, k: int, *, backend: str = "auto") -> sp.csr_matrix:
    """Row i: cos(x_i, x_j) for the k nearest neighbours j of i by cosine distance (not symmetric)."""
    n = X.shape[0]
    idx, dist = nearest_neighbors(np.asarray(X, dtype=np.float64), k, "cosine", backend)
    rows = np.repeat(np.arange(n), k)
    return sp.csr_matrix((1.0 - dist.ravel(), (rows, idx.ravel())), shape=(n, n))
