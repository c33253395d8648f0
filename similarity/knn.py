"""k-nearest-neighbour and δ (radius) similarity graphs from a feature matrix.

The neighbour search is a compiled library's, never a Python loop over pairs:
scikit-learn's exact search for small and medium n, faiss's HNSW index for large n.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors

METRICS = ("euclidean", "cosine")
WEIGHTS = ("gaussian", "cosine", "binary")
SYMMETRISE = ("max", "mean", "mutual")
# Above this many nodes the exact search (O(n²·d)) gives way to faiss HNSW by default.
EXACT_MAX_NODES = 50_000


def _validate(X, k, metric, weights, symmetrise) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D feature matrix, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X has NaN or infinite features")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS}, got {weights!r}")
    if symmetrise not in SYMMETRISE:
        raise ValueError(f"symmetrise must be one of {SYMMETRISE}, got {symmetrise!r}")
    if k is not None and not (1 <= k < X.shape[0]):
        raise ValueError(f"k must lie in 1..{X.shape[0] - 1}, got {k}")
    return X


def _unit_rows(X: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return X / np.where(norms > 0, norms, 1.0)


def nearest_neighbors(X: np.ndarray, k: int, metric: str = "euclidean", backend: str = "auto"):
    """Indices and distances of each row's k nearest other rows, shape (n, k) each.

    ``backend`` is "exact" (scikit-learn), "hnsw" (faiss, approximate) or "auto"
    (exact up to ``EXACT_MAX_NODES`` rows). Cosine distance is 1 - cos.
    """
    n = X.shape[0]
    if backend == "auto":
        backend = "exact" if n <= EXACT_MAX_NODES else "hnsw"
    Z = _unit_rows(X) if metric == "cosine" else X
    if backend == "exact":
        nn = NearestNeighbors(n_neighbors=k + 1, metric="euclidean").fit(Z)
        dist, idx = nn.kneighbors(Z)
    elif backend == "hnsw":
        import faiss  # only large graphs need it

        index = faiss.IndexHNSWFlat(Z.shape[1], 32)
        index.hnsw.efConstruction = 80
        index.hnsw.efSearch = max(64, 2 * (k + 1))
        Zf = np.ascontiguousarray(Z, dtype=np.float32)
        index.add(Zf)
        sq, idx = index.search(Zf, k + 1)
        dist = np.sqrt(np.maximum(sq, 0.0)).astype(np.float64)
    else:
        raise ValueError(f"backend must be 'auto', 'exact' or 'hnsw', got {backend!r}")
    # Drop each row's self match (the first column, but ties with duplicates may move it).
    self_hit = idx == np.arange(n)[:, None]
    keep = ~self_hit
    has_self = self_hit.any(axis=1)
    keep[~has_self, -1] = False  # no self match found: drop the farthest instead
    idx = idx[keep].reshape(n, k)
    dist = dist[keep].reshape(n, k)
    if metric == "cosine":
        dist = dist**2 / 2.0  # |u - v|² = 2 - 2cos for unit vectors
    return idx, dist


def _weights_from(dist: np.ndarray, X: np.ndarray, rows, cols, metric, weights, sigma):
    if weights == "binary":
        return np.ones_like(dist), None
    if weights == "cosine":
        if metric == "cosine":
            cos = 1.0 - dist
        else:
            Z = _unit_rows(X)
            cos = np.einsum("ij,ij->i", Z[rows], Z[cols])
        return np.clip(cos, 0.0, None), None
    # Gaussian: σ defaults to the mean distance to the k-th neighbour, a scale every
    # dataset has (the papers each choose their own; the solvers that need theirs pass it).
    if sigma is None:
        sigma = float(np.mean(dist.max(axis=1))) if dist.ndim == 2 else float(np.mean(dist))
        sigma = sigma if sigma > 0 else 1.0
    return np.exp(-(dist**2) / (2.0 * sigma**2)), sigma


def symmetrise_graph(A: sp.spmatrix, how: str = "max") -> sp.csr_matrix:
    """Make a directed kNN graph undirected: ``max`` (union), ``mean`` or ``mutual`` (both ways)."""
    A = sp.csr_matrix(A)
    if how == "max":
        S = A.maximum(A.T)
    elif how == "mean":
        S = (A + A.T) / 2.0
    elif how == "mutual":
        S = A.minimum(A.T)
    else:
        raise ValueError(f"symmetrise must be one of {SYMMETRISE}, got {how!r}")
    S = sp.csr_matrix(S)
    S.eliminate_zeros()
    return S


def knn_graph(
    X,
    k: int = 10,
    *,
    metric: str = "euclidean",
    weights: str = "gaussian",
    sigma: float | None = None,
    symmetrise: str = "max",
    backend: str = "auto",
) -> sp.csr_matrix:
    """Symmetric weighted k-nearest-neighbour graph.

    Parameters
    ----------
    X : array, shape (n, d)
    k : int
        Neighbours per node before symmetrisation.
    metric : {"euclidean", "cosine"}
    weights : {"gaussian", "cosine", "binary"}
        ``gaussian``: exp(-d²/2σ²); ``cosine``: max(cos, 0); ``binary``: 1.
    sigma : float, optional
        Gaussian bandwidth; default the mean distance to the k-th neighbour.
    symmetrise : {"max", "mean", "mutual"}
    backend : {"auto", "exact", "hnsw"}

    Returns
    -------
    W : scipy.sparse.csr_matrix, shape (n, n), symmetric, zero diagonal.
    """
    X = _validate(X, k, metric, weights, symmetrise)
    n = X.shape[0]
    idx, dist = nearest_neighbors(X, k, metric, backend)
    rows = np.repeat(np.arange(n), k)
    w, _ = _weights_from(dist, X, rows, idx.ravel(), metric, weights, sigma)
    A = sp.csr_matrix((np.ravel(w), (rows, idx.ravel())), shape=(n, n))
    return symmetrise_graph(A, symmetrise)


def delta_graph(
    X,
    delta: float,
    *,
    metric: str = "euclidean",
    weights: str = "binary",
    sigma: float | None = None,
) -> sp.csr_matrix:
    """All pairs closer than ``delta`` (scikit-learn's radius search), symmetric.

    With ``weights="binary"`` this is the 0/1 δ-graph of Blum & Chawla (2001).
    """
    X = _validate(X, None, metric, weights, "max")
    if not delta > 0:
        raise ValueError(f"delta must be positive, got {delta}")
    Z = _unit_rows(X) if metric == "cosine" else X
    radius = np.sqrt(2.0 * delta) if metric == "cosine" else delta
    D = NearestNeighbors(radius=radius).fit(Z).radius_neighbors_graph(Z, mode="distance")
    D = sp.coo_matrix(D)
    off = D.row != D.col
    rows, cols, dist = D.row[off], D.col[off], D.data[off]
    if metric == "cosine":
        dist = dist**2 / 2.0
    w, _ = _weights_from(dist, X, rows, cols, metric, weights, sigma)
    W = sp.csr_matrix((w, (rows, cols)), shape=(X.shape[0],) * 2)
    return symmetrise_graph(W, "max")
