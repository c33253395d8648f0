"""k-nearest-neighbour and δ (radius) similarity graphs from a feature matrix.

The neighbour search is compiled code, never a Python loop over pairs: for small problems
numpy's matrix product (``_brute_force``), scikit-learn's exact search for medium n, faiss's
HNSW index for large n.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from .spec import METRICS, SYMMETRISE, WEIGHTS

# scikit-learn is imported where its search runs: importing it (sklearn.neighbors pulls
# scipy.stats) took 0.5-1.1 s of build-graph's ~3 s on 2,000 rows, whose search takes 0.01 s
# (python -X importtime, bench/cli.py); searches up to BRUTE_FORCE_MAX_PAIRS use numpy.

# Above this many nodes the exact search (O(n²·d)) gives way to faiss HNSW by default.
EXACT_MAX_NODES = 50_000
# faiss HNSW: links per node, build and search beam widths. On isotropic 32-d Gaussian
# blobs (the hard case, bench/knn_build.py --full) M = 32 / 80 / 64 keeps recall@10 at
# 0.954 at 1M points (191 s) where M = 16 / 40 / 32 falls to 0.670 (107 s); on data of
# intrinsic dimension 8 both stay above 0.99. The wider setting still builds 1M entities
# end to end well inside the 15-minute budget (bench/e2e.py), so recall wins.
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 64
#: Exact searches of at most this many query × indexed pairs run in numpy (``_brute_force``)
#: instead of scikit-learn. Measured on 16-64 features (loaded 2-core machine): 2,000 × 2,000
#: numpy 0.05-0.18 s, scikit-learn 0.03-0.04 s; 5,000 × 5,000 numpy 0.3-0.5 s, scikit-learn
#: 0.1-0.2 s; scikit-learn's import adds 0.5-1.1 s to either, so numpy wins up to about 10,000².
BRUTE_FORCE_MAX_PAIRS = 25_000_000
#: Distances computed at once by ``_brute_force`` (32 MB of float64).
BRUTE_FORCE_BLOCK = 4_000_000


#: Ranks within this share of |q|² + max |z|² of the k-th are ties of ``_brute_force``: the
#: matrix product's rounding (its kernel differs between CPUs) is far below it.
TIE_RTOL = 1e-9


def _brute_force(Z: np.ndarray, Q: np.ndarray, k1: int) -> tuple[np.ndarray, np.ndarray]:
    """Distances and indices of the ``k1`` rows of ``Z`` nearest to each row of ``Q``
    (euclidean, nearest first, a tie going to the lower index). Candidates are ranked on
    |z|² - 2 q·z (a matrix product); every candidate within rounding of the k-th rank
    (``TIE_RTOL``) then gets its distance computed from the differences, which is exact
    for equal rows and the same on every machine, and the nearest ``k1`` are kept by that
    distance and index. Ranking on the product alone left the choice among ties at the
    k-th place to the product's rounding, which differs between CPUs' BLAS kernels: on
    weka's vote data (binary features, many ties) 13 of 435 nodes got other neighbours
    here than on the machine the tests were written on. A row's distance to itself is
    exactly 0."""
    sq_z = np.einsum("ij,ij->i", Z, Z)
    dist = np.empty((len(Q), k1))
    idx = np.empty((len(Q), k1), dtype=np.int64)
    block = max(1, BRUTE_FORCE_BLOCK // max(len(Z), 1))
    for start in range(0, len(Q), block):
        q = Q[start:start + block]
        rank = sq_z[None, :] - 2.0 * (q @ Z.T)
        kth = np.partition(rank, k1 - 1, axis=1)[:, k1 - 1:k1]
        slack = TIE_RTOL * (np.einsum("ij,ij->i", q, q)[:, None] + sq_z.max(initial=0.0))
        close = rank <= kth + slack
        m = int(close.sum(axis=1).max())
        near = np.argpartition(rank, m - 1, axis=1)[:, :m] if m < rank.shape[1] else \
            np.broadcast_to(np.arange(rank.shape[1]), rank.shape).copy()
        diff = q[:, None, :] - Z[near]
        exact = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
        exact[~np.take_along_axis(close, near, axis=1)] = np.inf
        order = np.lexsort((near, exact), axis=-1)[:, :k1]
        dist[start:start + block] = np.take_along_axis(exact, order, axis=1)
        idx[start:start + block] = np.take_along_axis(near, order, axis=1)
    return dist, idx


def _exact_search(Z: np.ndarray, Q: np.ndarray, k1: int) -> tuple[np.ndarray, np.ndarray]:
    """``(dist, idx)`` of the ``k1`` rows of ``Z`` nearest to each row of ``Q``: numpy for a
    small search, scikit-learn's for a larger one."""
    if len(Q) * len(Z) <= BRUTE_FORCE_MAX_PAIRS:
        return _brute_force(Z, Q, k1)
    from sklearn.neighbors import NearestNeighbors

    return NearestNeighbors(n_neighbors=k1, metric="euclidean").fit(Z).kneighbors(Q)


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

    ``backend`` is "exact" (numpy or scikit-learn, ``_exact_search``), "hnsw" (faiss, approximate) or "auto"
    (exact up to ``EXACT_MAX_NODES`` rows). Cosine distance is 1 - cos.
    """
    n = X.shape[0]
    if backend == "auto":
        backend = "exact" if n <= EXACT_MAX_NODES else "hnsw"
    Z = _unit_rows(X) if metric == "cosine" else X
    if backend == "exact":
        dist, idx = _exact_search(Z, Z, k + 1)
    elif backend == "hnsw":
        import faiss  # only large graphs need it

        index = faiss.IndexHNSWFlat(Z.shape[1], HNSW_M)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        index.hnsw.efSearch = max(HNSW_EF_SEARCH, 2 * (k + 1))
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


class DegenerateWeightsWarning(UserWarning):
    """The graph's weights carry (almost) no information: the features are all the same,
    or the Gaussian σ is far from the neighbour distances (see ``weights_problem``)."""


def median_kth_distance(dist: np.ndarray) -> float:
    """The default Gaussian σ: the median over nodes of the distance to the k-th nearest
    neighbour, among nodes where it is positive (1.0 when every row is the same).

    Why the median (measured by ``python -m bench sigma``: harmonic solver, 10-NN graph,
    10 labels per class, mean of 5 seeds; "+ outlier" adds one row at 1e6 in every feature):

    ===================  ======  ======  ===========  ===================================
    data                 mean    median  local scale  + outlier: mean / median / local
    ===================  ======  ======  ===========  ===================================
    digits (1797 × 64)   0.9709  0.9711  0.9718       0.9658 / 0.9711 / 0.9718
    classification 3000  0.5214  0.5212  0.5382       0.5301 / 0.5189 / 0.5367
    blobs, 10 scales     0.9929  0.9929  0.9964       0.9946 / 0.9929 / 0.9964
    ===================  ======  ======  ===========  ===================================

    The mean (the rule before) is one far point away from uselessness: on the issue's 40
    points and one at 1e6 every ordinary weight is 1.0000000 with the mean, against a
    median weight of 0.75 (min 0.13) with the median rule, and on digits the outlier
    costs the mean 0.5 points while the median does not move (its breakdown point is half
    the nodes). Flattened weights are not always worse (make_classification with the
    outlier: 0.5301 against 0.5189, on a set where every rule is near 0.52), but they
    are the weights of a different graph than the one asked for.
    The per-node local scale of Zelnik-Manor & Perona (2004), w = exp(-d²/σ_i σ_j) with
    σ_i the distance to the 7th neighbour, is as robust and 0.1 to 1.7 points better on
    these sets, but it needs every node's σ_i stored and read again wherever an edge is
    weighted later (incremental runs give new nodes edges with the recorded σ; GDS
    re-weights its kNN relationships in Cypher): one σ per graph keeps both paths as
    they are. Zero k-th distances (duplicates) are left out, so a dataset with many copies
    of one row still gets the scale of the others.
    """
    kth = dist.max(axis=1) if dist.ndim == 2 else np.asarray(dist)
    kth = kth[kth > 0]
    return float(np.median(kth)) if len(kth) else 1.0


#: A weight above 1 - FLAT (or below FLAT) is as good as 1 (or 0): it says nothing of how near.
FLAT = 1e-3
#: Share of such weights from which the weights are called degenerate.
DEGENERATE_SHARE = 0.9


def weights_problem(weights: np.ndarray, sigma: float | None) -> str | None:
    """Why Gaussian ``weights`` (built with ``sigma``) carry almost no information, or
    None: at least ``DEGENERATE_SHARE`` of them within ``FLAT`` of 1 (σ far above the
    neighbour distances: every edge counts the same) or of 0 (σ far below: the graph
    falls apart). All exactly 1 is said as what it is: every node has the same features."""
    weights = np.asarray(weights, dtype=np.float64)
    if not len(weights) or sigma is None:
        return None
    if np.all(weights == 1.0):
        return "every node has the same features (all distances are 0): the graph carries no information"
    for share, what in ((np.mean(weights > 1.0 - FLAT), "above 0.999 (σ is far larger than the distances"
                                                        " between neighbours: every edge weighs the same)"),
                        (np.mean(weights < FLAT), "below 0.001 (σ is far smaller than the distances"
                                                  " between neighbours: the graph falls apart)")):
        if share >= DEGENERATE_SHARE:
            return f"{share:.0%} of the Gaussian weights (σ = {sigma:.4g}) are {what}"
    return None


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
    # Gaussian: σ defaults to the median distance to the k-th neighbour (median_kth_distance
    # says why; the papers each choose their own, and the solvers that need theirs pass it).
    if sigma is None:
        sigma = median_kth_distance(dist)
    return np.exp(-(dist**2) / (2.0 * sigma**2)), sigma


def _warn_if_degenerate(w: np.ndarray, sigma: float | None) -> None:
    problem = weights_problem(w, sigma)
    if problem is not None:
        warnings.warn(problem, DegenerateWeightsWarning, stacklevel=3)


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
    return_sigma: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
) -> sp.csr_matrix | tuple[sp.csr_matrix, float | None]:
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
        Gaussian bandwidth; default the median distance to the k-th neighbour
        (``median_kth_distance`` gives the measured reasons). When the weights carry almost
        no information (``weights_problem``) a ``DegenerateWeightsWarning`` says why.
    symmetrise : {"max", "mean", "mutual"}
    backend : {"auto", "exact", "hnsw"}
    return_sigma : bool, default False
        Also return the Gaussian σ actually used (the one given, or the one picked from
        the data); None for the other weights. Record it to weight later edges alike
        (``knn_edges_for``).
    on_progress : callable, optional
        Called as ``on_progress(done, n)`` with the nodes whose neighbours are found.

    Returns
    -------
    W : scipy.sparse.csr_matrix, shape (n, n), symmetric, zero diagonal.
    sigma : float or None
        Only with ``return_sigma=True``.
    """
    X = _validate(X, k, metric, weights, symmetrise)
    n = X.shape[0]
    if on_progress is not None:
        on_progress(0, n)
    idx, dist = nearest_neighbors(X, k, metric, backend)
    if on_progress is not None:
        on_progress(n, n)
    rows = np.repeat(np.arange(n), k)
    w, used_sigma = _weights_from(dist, X, rows, idx.ravel(), metric, weights, sigma)
    _warn_if_degenerate(np.ravel(w), used_sigma)
    A = sp.csr_matrix((np.ravel(w), (rows, idx.ravel())), shape=(n, n))
    W = symmetrise_graph(A, symmetrise)
    return (W, used_sigma) if return_sigma else W


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
    from sklearn.neighbors import NearestNeighbors

    D = NearestNeighbors(radius=radius).fit(Z).radius_neighbors_graph(Z, mode="distance")
    D = sp.coo_matrix(D)
    off = D.row != D.col
    rows, cols, dist = D.row[off], D.col[off], D.data[off]
    if metric == "cosine":
        dist = dist**2 / 2.0
    w, _ = _weights_from(dist, X, rows, cols, metric, weights, sigma)
    W = sp.csr_matrix((w, (rows, cols)), shape=(X.shape[0],) * 2)
    return symmetrise_graph(W, "max")


# Incremental graphs: edges for a few new nodes, weighted as the existing graph was.

#: ``knn_edges_for``'s "auto" backend searches exactly while n_new × n_all stays below this
#: (brute force costs that many distances; an HNSW index would first have to index all nodes).
EXACT_MAX_PAIRS = 2_000_000_000


def knn_edges_for(
    new_X,
    all_X,
    new_positions,
    k: int = 10,
    metric: str = "euclidean",
    weights: str = "gaussian",
    sigma: float | None = None,
    *,
    backend: str = "auto",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The new nodes' k nearest among all nodes (itself excluded), as weighted pairs.

    What ``knn_graph`` gives those nodes, without searching the neighbours of the others:
    each new node's k nearest rows of ``all_X`` (which holds the new rows too, at
    ``new_positions``), weighted with ``weights`` and the Gaussian ``sigma`` the existing
    graph was built with. Pairs two new nodes found each way are kept once (larger
    weight, as ``symmetrise="max"`` keeps them). Edges *from* existing nodes whose k
    nearest would now include a new node are not added (that would need their own search).

    Parameters
    ----------
    new_X : array, shape (m, d)
        The new nodes' features, equal to ``all_X[new_positions]``.
    all_X : array, shape (n, d)
        Every node's features, new ones included.
    new_positions : array of int, shape (m,)
        Rows of ``all_X`` holding the new nodes.
    k : int
    metric : {"euclidean", "cosine"}
    weights : {"gaussian", "cosine", "binary"}
    sigma : float
        Gaussian bandwidth (required with ``weights="gaussian"``): the σ the existing
        graph used (``knn_graph(..., return_sigma=True)``), so old and new edges weigh alike.
    backend : {"auto", "exact", "hnsw"}
        "exact": numpy or scikit-learn brute force over all nodes for the m queries; "hnsw": faiss
        HNSW index of all nodes (approximate); "auto": exact while m·n ≤ ``EXACT_MAX_PAIRS``.

    Returns
    -------
    source, target : arrays of int
        Positions into ``all_X``; ``source`` is a new node.
    weight : array of float
    """
    all_X = _validate(all_X, k, metric, weights, "max")
    n = all_X.shape[0]
    positions = np.asarray(new_positions, dtype=np.int64).ravel()
    new_X = np.asarray(new_X, dtype=np.float64)
    if new_X.ndim != 2 or new_X.shape != (len(positions), all_X.shape[1]):
        raise ValueError(f"new_X must have shape ({len(positions)}, {all_X.shape[1]}), got {new_X.shape}")
    if len(positions) and (positions.min() < 0 or positions.max() >= n):
        raise ValueError(f"new_positions must lie in 0..{n - 1}")
    if len(np.unique(positions)) != len(positions):
        raise ValueError("new_positions has duplicates")
    if not np.array_equal(new_X, all_X[positions]):
        raise ValueError("new_X must equal all_X[new_positions]")
    if weights == "gaussian" and (sigma is None or not sigma > 0):
        raise ValueError("weights='gaussian' needs the sigma the existing graph was built with")
    m = len(positions)
    if m == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    if backend == "auto":
        backend = "exact" if n <= EXACT_MAX_NODES or m * n <= EXACT_MAX_PAIRS else "hnsw"
    Z = _unit_rows(all_X) if metric == "cosine" else all_X
    if backend == "exact":
        dist, idx = _exact_search(Z, Z[positions], k + 1)
    elif backend == "hnsw":
        import faiss

        index = faiss.IndexHNSWFlat(Z.shape[1], HNSW_M)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        index.hnsw.efSearch = max(HNSW_EF_SEARCH, 2 * (k + 1))
        index.add(np.ascontiguousarray(Z, dtype=np.float32))
        sq, idx = index.search(np.ascontiguousarray(Z[positions], dtype=np.float32), k + 1)
        dist = np.sqrt(np.maximum(sq, 0.0)).astype(np.float64)
    else:
        raise ValueError(f"backend must be 'auto', 'exact' or 'hnsw', got {backend!r}")
    # the self match, as in nearest_neighbors (the farthest goes when ties hide it)
    keep = idx != positions[:, None]
    keep[keep.all(axis=1), -1] = False
    idx, dist = idx[keep].reshape(m, k), dist[keep].reshape(m, k)
    if metric == "cosine":
        dist = dist**2 / 2.0
    source, target = np.repeat(positions, k), idx.ravel()
    w, _ = _weights_from(dist.ravel(), all_X, source, target, metric, weights, sigma)
    # one row per unordered pair: the larger weight, keeping its orientation
    lo, hi = np.minimum(source, target), np.maximum(source, target)
    order = np.lexsort((-w, hi, lo))
    first = np.ones(len(order), dtype=bool)
    first[1:] = (lo[order][1:] != lo[order][:-1]) | (hi[order][1:] != hi[order][:-1])
    chosen = np.sort(order[first])
    return source[chosen], target[chosen], np.asarray(w, dtype=np.float64)[chosen]


def gaussian_sigma_from_edges(X, source, target, weight, metric: str = "euclidean",
                              max_edges: int = 10_000, rtol: float = 1e-6) -> float | None:
    """The σ of Gaussian weights w = exp(-d²/2σ²) read back from stored edges and features.

    For a graph built before its σ was recorded: σ = d / √(-2 ln w) on up to ``max_edges``
    edges with 0 < w < 1 (evenly spaced, so the answer is deterministic). Returns their
    median when they agree to ``rtol`` (the weights are Gaussian in ``metric``), else None
    (other weights, e.g. a GDS similarity score, or mixed bandwidths).
    """
    X = np.asarray(X, dtype=np.float64)
    source, target = np.asarray(source), np.asarray(target)
    weight = np.asarray(weight, dtype=np.float64)
    usable = np.flatnonzero((weight > 1e-300) & (weight < 1.0 - 1e-9))
    if len(usable) == 0:
        return None
    usable = usable[np.unique(np.linspace(0, len(usable) - 1, min(max_edges, len(usable))).astype(np.int64))]
    a, b = X[source[usable]], X[target[usable]]
    if metric == "cosine":
        Za, Zb = _unit_rows(a), _unit_rows(b)
        d = 1.0 - np.einsum("ij,ij->i", Za, Zb)
    else:
        d = np.linalg.norm(a - b, axis=1)
    sigmas = d / np.sqrt(-2.0 * np.log(weight[usable]))
    sigma = float(np.median(sigmas))
    if not sigma > 0 or np.max(np.abs(sigmas - sigma)) > rtol * sigma:
        return None
    return sigma
