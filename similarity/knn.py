"""k-nearest-neighbour and δ (radius) similarity graphs from a feature matrix.

The neighbour search is compiled code, never a Python loop over pairs: for small problems
numpy's matrix product (``_brute_force``), scikit-learn's exact search for medium n, and
above ``EXACT_MAX_NODES`` an approximate index (``KNN_BACKENDS``; faiss HNSW by default,
``DEFAULT_BACKEND`` says why), searched in chunks of ``KNN_QUERY_CHUNK`` queries so the
memory beyond the index stays bounded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from .findings import say
from .spec import METRICS, SYMMETRISE, WEIGHTS

#: How a search reports its steps: ``on_progress(step, done, total)`` ("kNN index", "kNN
#: search"; the flows show them, similarity never imports them).
Progress = Callable[[str, int, int], None]

# scikit-learn is imported where its search runs: importing it (sklearn.neighbors pulls
# scipy.stats) took 0.5-1.1 s of build-graph's ~3 s on 2,000 rows, whose search takes 0.01 s
# (python -X importtime, bench/cli.py); searches up to BRUTE_FORCE_MAX_PAIRS use numpy.

#: The neighbour searches ``backend=`` accepts (besides "auto"): "exact" (numpy or
#: scikit-learn brute force), "hnsw" (faiss ``IndexHNSWFlat`` over rows laid out by k-means
#: cell, ``_HNSWIndex``), "ivf" (faiss ``IndexIVFFlat``, ``_IVFIndex``), "hnswlib"
#: (``_HnswlibIndex``) and "pynndescent" (``_NNDescentIndex``). The last two are optional
#: packages (the ``dev`` extra), imported only when chosen.
KNN_BACKENDS = ("exact", "hnsw", "ivf", "hnswlib", "pynndescent")
# Above this many nodes the exact search (O(n²·d)) gives way to DEFAULT_BACKEND.
EXACT_MAX_NODES = 50_000
#: What "auto" searches with above ``EXACT_MAX_NODES``: faiss HNSW at HNSW_M / _EF_CONSTRUCTION /
#: _EF_SEARCH = 16 / 20 / 16 over rows stored by k-means cell, the fastest setting measured
#: with recall@10 ≥ 0.95 on the end-to-end data at 10k, 100k and 1M rows.
#: ``python -m bench knn_build --full`` (bench/results/knn_build_full.md, 2 cores, load 2-5,
#: one run each), 10-NN of 1M rows × 32 features, build + search of every row:
#:
#: ==========================================  ==============  ================
#: backend, settings                           e2e: s, recall  blobs: s, recall
#: ==========================================  ==============  ================
#: faiss HNSW 16/20/16, cell layout (default)  27.3, 0.995     62.3, 0.469
#: faiss HNSW 32/80/64, cell layout            70.8, 1.000     203.1, 0.950
#: faiss HNSW 32/80/64, input order (before)   93.1, 1.000     367.2, 0.954
#: faiss IVF-Flat nlist 4√n, nprobe 8          33.3, 0.981     29.4, 0.373
#: hnswlib 16/40/16                            44.7, 0.996     102.2, 0.603
#: pynndescent, 20 neighbours (+ numba JIT)    74.8, 1.000     73.0, 0.816
#: ==========================================  ==============  ================
#:
#: The trade: on the e2e data (8 informative directions mixed into 32, like embeddings of
#: real entities) every backend holds recall > 0.98 and the default is the fastest, 26.0 s on
#: a quiet machine (``python -m bench knn_build --layout --sizes 1000000``); on isotropic
#: 32-d blobs (every direction noise, the hard case) only M = 32 / 80 / 64 keeps 0.95, at
#: 3.3× the default's time there (2.6× on the e2e data), and nothing measured reaches 0.95
#: in 60 s. IVF-Flat builds fastest but its recall on the blobs falls with n (0.74 at 10k,
#: 0.47 at 100k, 0.37 at 1M with nprobe 8): HNSW degrades more gently for the same time.
DEFAULT_BACKEND = "hnsw"
#: Queries searched at once by the approximate backends: the chunk's float32 rows and its
#: (chunk, k + 1) answers are the only memory a search adds to the index (8 MB in, 6 MB
#: out at 32 features, k = 10); each chunk is searched by the library's own threads.
KNN_QUERY_CHUNK = 65_536
#: Seed of every random choice of the approximate backends (samples, k-means, levels).
KNN_SEED = 0

#: "auto"'s approximate search must find at least this share of the exact 10 nearest
#: neighbours, estimated on ``RECALL_SAMPLE`` rows searched exactly (1-2 s at 1M rows); below
#: it the index is built again with ``WIDE_HNSW`` (M, efConstruction, efSearch), the
#: setting that keeps 0.95 on the 1M blobs where the default falls to 0.47, and a
#: ``LowRecallWarning`` says so (and says what was found when even that falls short).
MIN_RECALL = 0.95
RECALL_SAMPLE = 256
WIDE_HNSW = (32, 80, 64)

# faiss HNSW ("hnsw"): links per node, build and search beam widths (DEFAULT_BACKEND says
# why these). Wider settings buy recall on hard data: M = 32 / 80 / 64 (the default before
# the row layout) keeps 0.950 on the 1M blobs where these give 0.469.
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 20
HNSW_EF_SEARCH = 16
#: The HNSW index stores the rows grouped by their nearest of at most this many k-means
#: centroids (``_locality_order``), one cell per ``LAYOUT_ROWS_PER_CELL`` rows (0 cells:
#: input order). Paired at 1M rows with the default settings (``python -m bench knn_build
#: --layout --sizes 1000000``, bench/results/knn_build_layout.md): the search takes 6.5 s
#: against 13.9 s in input order on the e2e data (12.6 against 19.6 on the blobs), the build
#: (k-means included) the same, the recall the same.
LAYOUT_CELLS = 1024
LAYOUT_ROWS_PER_CELL = 1000

# faiss IVF-Flat ("ivf"): nlist = IVF_LISTS_PER_SQRT_N · √n lists from a k-means of
# IVF_TRAIN_PER_LIST sampled rows per list (IVF_KMEANS_ITER iterations), IVF_NPROBE lists
# scanned per query: 8, the fewest measured with recall ≥ 0.95 on the e2e data at every
# size (0.976-0.986; 16 lists: 0.998, 1.2× the time at 1M).
IVF_LISTS_PER_SQRT_N = 4
IVF_TRAIN_PER_LIST = 40
IVF_KMEANS_ITER = 10
IVF_NPROBE = 8

# hnswlib ("hnswlib"): M, ef_construction, ef; ef = 16 keeps recall 0.996 on the e2e data
# at every size (ef = 32: 0.999, 1.16× the time at 1M).
HNSWLIB_M = 16
HNSWLIB_EF_CONSTRUCTION = 40
HNSWLIB_EF = 16

#: pynndescent ("pynndescent"): neighbours per node of its NN-descent graph (its own
#: default is 30); the k + 1 nearest of them are returned. 20: recall 1.000 on the e2e data
#: at every size, where 10 gives 0.997 on it but 0.70 on the 100k blobs (20: 0.94, 30: 0.98).
#: Each new process first compiles its numba kernels: about 29 s (2,000 rows).
PYNNDESCENT_N_NEIGHBORS = 20

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


# Approximate backends. Each index is built over all n rows of Z and answers
# ``search(queries, k1)``: the (dist, idx) of the k1 rows nearest to each row Z[queries]
# (euclidean, nearest first, float64 / int64), queries taken KNN_QUERY_CHUNK at a time.
# The rows enter faiss, hnswlib and pynndescent as float32 (half the memory of X; the
# distances are then float32-exact, ~1e-7 relative).


def _optional(module: str):
    """An optional backend's package, or an ImportError saying how to get it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"backend {module!r} needs the {module} package: pip install {module} "
                          "(graphlabel's dev extra has it)") from err


def _float32_rows(Z: np.ndarray, rows) -> np.ndarray:
    """``Z[rows]`` as a C-contiguous float32 block (a chunk, so the float64 gather stays bounded)."""
    return np.ascontiguousarray(Z[rows], dtype=np.float32)


def _float32_copy(Z: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """All rows of Z (in ``order`` if given) as one float32 array, converted a chunk at a
    time so no float64 copy of Z is made."""
    out = np.empty(Z.shape, dtype=np.float32)
    for start in range(0, len(Z), KNN_QUERY_CHUNK):
        rows = slice(start, start + KNN_QUERY_CHUNK)
        out[rows] = Z[rows] if order is None else Z[order[rows]]
    return out


def _query_chunks(keys: np.ndarray):
    """Chunks of query numbers in ascending ``keys`` (a query's cell or stored position):
    consecutive queries then walk the same part of the index while it is in the CPU caches."""
    by_key = np.argsort(keys, kind="stable")
    for start in range(0, len(by_key), KNN_QUERY_CHUNK):
        yield by_key[start:start + KNN_QUERY_CHUNK]


def _sqrt_dist(sq: np.ndarray) -> np.ndarray:
    return np.sqrt(np.maximum(sq, 0.0)).astype(np.float64)


def _kmeans(sample: np.ndarray, cells: int, iterations: int):
    """faiss's k-means of ``sample`` (float32) into ``cells`` centroids, seeded; its index
    assigns rows to their nearest centroid."""
    import faiss

    kmeans = faiss.Kmeans(sample.shape[1], cells, niter=iterations, seed=KNN_SEED, verbose=False)
    kmeans.train(sample)
    return kmeans


def _locality_order(Z: np.ndarray) -> np.ndarray:
    """A permutation of the rows of Z grouping them by their nearest k-means centroid
    (``LAYOUT_CELLS`` at most, one per ``LAYOUT_ROWS_PER_CELL`` rows, trained on 64 rows per
    cell): rows near each other in space become near each other in memory."""
    n = len(Z)
    cells = int(min(LAYOUT_CELLS, n // LAYOUT_ROWS_PER_CELL))
    if cells < 2:
        return np.arange(n)
    rng = np.random.default_rng(KNN_SEED)
    sample = _float32_rows(Z, np.sort(rng.choice(n, min(n, 64 * cells), replace=False)))
    index = _kmeans(sample, cells, 10).index
    cell = np.concatenate([index.search(_float32_rows(Z, slice(s, s + KNN_QUERY_CHUNK)), 1)[1].ravel()
                           for s in range(0, n, KNN_QUERY_CHUNK)])
    return np.argsort(cell, kind="stable")


class _HNSWIndex:
    """faiss ``IndexHNSWFlat`` (``m`` links per node, build beam ``ef_construction``) over
    the rows of Z stored in ``_locality_order``.

    Why the layout: faiss inserts rows in a random order whatever their positions (its
    graph does not depend on them), but a graph walk reads the rows of the nodes it visits;
    stored by k-means cell, a node's neighbours sit in nearby memory, and queries taken in
    stored order walk the same region one after another: the search of 1M rows takes half
    the time (``LAYOUT_CELLS`` gives the numbers).
    """

    def __init__(self, Z: np.ndarray, m: int | None = None, ef_construction: int | None = None) -> None:
        import faiss

        self.order = _locality_order(Z)
        self.position = np.empty_like(self.order)
        self.position[self.order] = np.arange(len(self.order))
        self.index = faiss.IndexHNSWFlat(Z.shape[1], m or HNSW_M)
        self.index.hnsw.efConstruction = ef_construction or HNSW_EF_CONSTRUCTION
        # One add of all rows (a transient float32 copy, freed on return): faiss randomises
        # the insertion order within one add only, and an index grown chunk by chunk of the
        # cell-sorted rows would link each region to the earlier ones alone.
        self.index.add(_float32_copy(Z, self.order))
        storage: Any = faiss.downcast_index(self.index.storage)  # an IndexFlatL2, whose rows get_xb reads
        # the index's own float32 rows: the queries are read from there, not copied again
        self.rows = faiss.rev_swig_ptr(storage.get_xb(), Z.shape[0] * Z.shape[1]).reshape(Z.shape)

    def search(self, queries: np.ndarray, k1: int, ef_search: int | None = None,
               on_progress: Progress | None = None) -> tuple[np.ndarray, np.ndarray]:
        self.index.hnsw.efSearch = max(ef_search or HNSW_EF_SEARCH, k1)
        dist = np.empty((len(queries), k1))
        idx = np.empty((len(queries), k1), dtype=np.int64)
        stored = self.position[queries]
        done = 0
        for chunk in _query_chunks(stored):
            sq, found = self.index.search(self.rows[stored[chunk]], k1)
            dist[chunk] = _sqrt_dist(sq)
            idx[chunk] = np.where(found >= 0, self.order[found], -1)
            done += len(chunk)
            if on_progress is not None:
                on_progress("kNN search", done, len(queries))
        return dist, idx


class _IVFIndex:
    """faiss ``IndexIVFFlat``: ``nlist`` (default ``IVF_LISTS_PER_SQRT_N`` · √n) k-means
    lists trained on a sample; a query scans the rows of its ``nprobe`` nearest lists.
    Queries are searched grouped by their own list, so consecutive ones scan the same lists."""

    def __init__(self, Z: np.ndarray, nlist: int | None = None) -> None:
        import faiss

        n, d = Z.shape
        # at least 39 training rows per list, below which faiss's k-means warns
        nlist = nlist or int(round(IVF_LISTS_PER_SQRT_N * np.sqrt(n)))
        self.nlist = int(max(1, min(nlist, n // 39)))
        rng = np.random.default_rng(KNN_SEED)
        sample = _float32_rows(Z, np.sort(rng.choice(n, min(n, IVF_TRAIN_PER_LIST * self.nlist), replace=False)))
        self.quantizer = faiss.IndexFlatL2(d)
        self.index = faiss.IndexIVFFlat(self.quantizer, d, self.nlist)
        self.index.cp.niter = IVF_KMEANS_ITER
        self.index.cp.seed = KNN_SEED
        self.index.train(sample)
        self.Z = Z
        self.cell = np.empty(n, dtype=np.int64)
        for start in range(0, n, KNN_QUERY_CHUNK):
            block = _float32_rows(Z, slice(start, start + KNN_QUERY_CHUNK))
            self.cell[start:start + len(block)] = self.quantizer.search(block, 1)[1].ravel()
            self.index.add(block)

    def search(self, queries: np.ndarray, k1: int, nprobe: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        self.index.nprobe = min(nprobe or IVF_NPROBE, self.nlist)
        dist = np.empty((len(queries), k1))
        idx = np.empty((len(queries), k1), dtype=np.int64)
        for chunk in _query_chunks(self.cell[queries]):
            sq, found = self.index.search(_float32_rows(self.Z, queries[chunk]), k1)
            dist[chunk], idx[chunk] = _sqrt_dist(sq), found
        return dist, idx


class _HnswlibIndex:
    """hnswlib's HNSW (``m``, ``ef_construction``), rows inserted in a seeded random order:
    hnswlib inserts in the order given and stores rows in that order, and on rows sorted by
    cell (or by class, as many tables are) its graph links each region only to earlier ones:
    in a trial at 1M rows of the e2e data inserted by k-means cell (M = 16, ef_construction
    = 20, ef = 16) recall@10 fell to 0.68, where faiss, which shuffles, kept 0.996."""

    def __init__(self, Z: np.ndarray, m: int | None = None, ef_construction: int | None = None) -> None:
        hnswlib = _optional("hnswlib")
        n, d = Z.shape
        self.Z = Z
        self.index = hnswlib.Index(space="l2", dim=d)
        self.index.init_index(max_elements=n, M=m or HNSWLIB_M,
                              ef_construction=ef_construction or HNSWLIB_EF_CONSTRUCTION, random_seed=KNN_SEED)
        shuffled = np.random.default_rng(KNN_SEED).permutation(n)
        for start in range(0, n, KNN_QUERY_CHUNK):
            rows = shuffled[start:start + KNN_QUERY_CHUNK]
            self.index.add_items(_float32_rows(Z, rows), rows, num_threads=-1)

    def search(self, queries: np.ndarray, k1: int, ef: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        self.index.set_ef(max(ef or HNSWLIB_EF, k1))
        dist = np.empty((len(queries), k1))
        idx = np.empty((len(queries), k1), dtype=np.int64)
        for start in range(0, len(queries), KNN_QUERY_CHUNK):
            chunk = slice(start, start + KNN_QUERY_CHUNK)
            found, sq = self.index.knn_query(_float32_rows(self.Z, queries[chunk]), k1, num_threads=-1)
            dist[chunk], idx[chunk] = _sqrt_dist(sq), found
        return dist, idx


class _NNDescentIndex:
    """pynndescent's NN-descent graph of all rows (``n_neighbors`` per node): the kNN graph
    itself, not an index queried afterwards, so ``search`` reads its rows. It needs one
    float32 copy of all rows and compiles its numba kernels in each new process."""

    def __init__(self, Z: np.ndarray, n_neighbors: int | None = None) -> None:
        NNDescent = _optional("pynndescent").NNDescent
        self.n_neighbors = n_neighbors or PYNNDESCENT_N_NEIGHBORS
        graph = NNDescent(_float32_copy(Z), n_neighbors=min(self.n_neighbors, len(Z) - 1) + 1,
                          random_state=KNN_SEED, compressed=True)
        self.idx, self.dist = graph.neighbor_graph

    def search(self, queries: np.ndarray, k1: int) -> tuple[np.ndarray, np.ndarray]:
        if k1 > self.idx.shape[1]:
            raise ValueError(f"pynndescent was built with {self.idx.shape[1] - 1} neighbours per node, not {k1 - 1}")
        return self.dist[queries, :k1].astype(np.float64), self.idx[queries, :k1].astype(np.int64)


#: The approximate backends' index classes, by ``KNN_BACKENDS`` name.
INDEXES = {"hnsw": _HNSWIndex, "ivf": _IVFIndex, "hnswlib": _HnswlibIndex, "pynndescent": _NNDescentIndex}


def _resolve_backend(backend: str, exact: bool) -> str:
    if backend == "auto":
        return "exact" if exact else DEFAULT_BACKEND
    if backend not in KNN_BACKENDS:
        raise ValueError(f"backend must be 'auto' or one of {KNN_BACKENDS}, got {backend!r}")
    return backend


class LowRecallWarning(UserWarning):
    """The approximate neighbour search found fewer of the exact nearest neighbours than
    ``MIN_RECALL`` with its default settings (and was rebuilt wider), or even after."""


def sampled_recall(Z: np.ndarray, idx: np.ndarray, k1: int, sample: int = RECALL_SAMPLE) -> float:
    """Share of the exact ``k1`` nearest rows (itself included) of ``sample`` seeded random
    rows of Z that ``idx`` (each row's answer) holds."""
    rng = np.random.default_rng(KNN_SEED)
    rows = np.sort(rng.choice(len(Z), min(sample, len(Z)), replace=False))
    exact = _brute_force(Z, Z[rows], k1)[1]
    return float(np.mean([len(np.intersect1d(a, b)) for a, b in zip(exact, idx[rows])]) / k1)


def _search(Z: np.ndarray, queries: np.ndarray, k1: int, backend: str,
            on_progress: Progress | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(dist, idx)`` of the ``k1`` rows of Z nearest to each row Z[queries], by ``backend``
    (not "auto"). A query an approximate index answers with fewer than k1 rows (faiss marks
    the gaps -1: an IVF query whose lists hold fewer rows) is searched again exactly."""
    report = on_progress or _silent
    if backend == "exact":
        report("kNN search", 0, len(queries))
        found = _exact_search(Z, Z[queries], k1)
        report("kNN search", len(queries), len(queries))
        return found
    # NN-descent's graph must hold k1 - 1 neighbours besides the row itself
    settings = {"n_neighbors": max(PYNNDESCENT_N_NEIGHBORS, k1 - 1)} if backend == "pynndescent" else {}
    report("kNN index", 0, len(Z))
    index = INDEXES[backend](Z, **settings)
    report("kNN index", len(Z), len(Z))
    if backend == "hnsw":
        dist, idx = index.search(queries, k1, on_progress=report)
    else:
        report("kNN search", 0, len(queries))
        dist, idx = index.search(queries, k1)
        report("kNN search", len(queries), len(queries))
    return _fill_short(Z, queries, k1, dist, idx)


def _fill_short(Z, queries, k1, dist, idx):
    short = (idx < 0).any(axis=1)
    if short.any():
        dist[short], idx[short] = _exact_search(Z, Z[queries[short]], k1)
    return dist, idx


def _default_search(Z: np.ndarray, k1: int, on_progress: Progress | None = None) -> tuple[np.ndarray, np.ndarray]:
    """"auto"'s approximate search of every row: ``DEFAULT_BACKEND``, then the recall on a
    sample (``MIN_RECALL`` says what is done below it)."""
    rows = np.arange(len(Z))
    dist, idx = _search(Z, rows, k1, DEFAULT_BACKEND, on_progress)
    recall = sampled_recall(Z, idx, k1)
    if recall >= MIN_RECALL:
        return dist, idx
    m, ef_construction, ef_search = WIDE_HNSW
    report = on_progress or _silent
    report("kNN index (wider)", 0, len(Z))
    index = _HNSWIndex(Z, m, ef_construction)
    report("kNN index (wider)", len(Z), len(Z))
    dist, idx = _fill_short(Z, rows, k1, *index.search(rows, k1, ef_search,
                                                       on_progress=lambda _, done, n: report("kNN search (wider)",
                                                                                             done, n)))
    wider = sampled_recall(Z, idx, k1)
    found = (f"the nearest-neighbour search found {recall:.1%} of the exact {k1 - 1} nearest neighbours (on"
             f" {min(RECALL_SAMPLE, len(Z))} sampled rows) with its fast settings (HNSW M={HNSW_M}, efConstruction="
             f"{HNSW_EF_CONSTRUCTION}, efSearch={HNSW_EF_SEARCH}); rebuilt with M={m}, efConstruction="
             f"{ef_construction}, efSearch={ef_search}: {wider:.1%}")
    if wider < MIN_RECALL:
        found += f", still below {MIN_RECALL:.0%}: features of high intrinsic dimension; an exact search" \
                 " (backend 'exact') finds them all at n² cost"
    say(LowRecallWarning(found), stacklevel=3)
    return dist, idx


def _silent(step: str, done: int, total: int) -> None:
    return None


def _drop_self(idx: np.ndarray, dist: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each query row's k nearest without itself: its own column (the first, unless ties
    with duplicates moved it) goes, or the farthest when the search did not return it."""
    keep = idx != rows[:, None]
    keep[keep.all(axis=1), -1] = False
    return idx[keep].reshape(len(rows), k), dist[keep].reshape(len(rows), k)


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


def nearest_neighbors(X: np.ndarray, k: int, metric: str = "euclidean", backend: str = "auto",
                      on_progress: Progress | None = None):
    """Indices and distances of each row's k nearest other rows, shape (n, k) each.

    ``backend`` is one of ``KNN_BACKENDS`` ("exact": numpy or scikit-learn,
    ``_exact_search``; the others approximate, ``INDEXES``) or "auto": exact up to
    ``EXACT_MAX_NODES`` rows, ``DEFAULT_BACKEND`` above with its recall checked on a sample
    (``MIN_RECALL``). Cosine distance is 1 - cos. ``on_progress(step, done, total)`` hears of
    the index build and of the search, a chunk of queries at a time.
    """
    n = X.shape[0]
    auto = backend == "auto" and n > EXACT_MAX_NODES
    backend = _resolve_backend(backend, n <= EXACT_MAX_NODES)
    Z = _unit_rows(X) if metric == "cosine" else X
    rows = np.arange(n)
    dist, idx = _default_search(Z, k + 1, on_progress) if auto else _search(Z, rows, k + 1, backend, on_progress)
    idx, dist = _drop_self(idx, dist, rows, k)
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
    return shares_problem(float(np.mean(weights > 1.0 - FLAT)), float(np.mean(weights < FLAT)),
                          bool(np.all(weights == 1.0)), sigma)


def shares_problem(near_one: float, near_zero: float, all_one: bool, sigma: float) -> str | None:
    """``weights_problem`` from the shares of the weights within ``FLAT`` of 1 and of 0 and
    whether every one is exactly 1: what a store that holds the weights counts where they
    are (Neo4j, cypher/gds_weight_shares.neo4j.cypher)."""
    if all_one:
        return "every node has the same features (all distances are 0): the graph carries no information"
    for share, what in ((near_one, "above 0.999 (σ is far larger than the distances"
                                   " between neighbours: every edge weighs the same)"),
                        (near_zero, "below 0.001 (σ is far smaller than the distances"
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
        say(DegenerateWeightsWarning(problem), stacklevel=3)


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
    on_progress: Progress | None = None,
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
    backend : {"auto", "exact", "hnsw", "ivf", "hnswlib", "pynndescent"}
        The neighbour search (``nearest_neighbors``); "auto": exact up to
        ``EXACT_MAX_NODES`` rows, ``DEFAULT_BACKEND`` above.
    return_sigma : bool, default False
        Also return the Gaussian σ actually used (the one given, or the one picked from
        the data); None for the other weights. Record it to weight later edges alike
        (``knn_edges_for``).
    on_progress : callable, optional
        Called as ``on_progress(step, done, total)`` by the search (``nearest_neighbors``).

    Returns
    -------
    W : scipy.sparse.csr_matrix, shape (n, n), symmetric, zero diagonal.
    sigma : float or None
        Only with ``return_sigma=True``.
    """
    X = _validate(X, k, metric, weights, symmetrise)
    n = X.shape[0]
    idx, dist = nearest_neighbors(X, k, metric, backend, on_progress)
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

    With ``weights="binary"`` this is the 0/1 δ-graph of Blum & Chawla (2001). Gaussian
    weights that carry no information warn as ``knn_graph``'s do (``weights_problem``).
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
    w, used_sigma = _weights_from(dist, X, rows, cols, metric, weights, sigma)
    _warn_if_degenerate(w, used_sigma)
    W = sp.csr_matrix((w, (rows, cols)), shape=(X.shape[0],) * 2)
    return symmetrise_graph(W, "max")


# Incremental graphs: edges for a few new nodes, weighted as the existing graph was.

#: ``knn_edges_for``'s "auto" backend searches exactly while n_new × n_all stays below this
#: (brute force costs that many distances; an approximate index would first have to index all nodes).
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
    backend : {"auto", "exact", "hnsw", "ivf", "hnswlib", "pynndescent"}
        "exact": numpy or scikit-learn brute force over all nodes for the m queries; the
        others (``KNN_BACKENDS``) build their approximate index of all nodes and search the
        m queries in it; "auto": exact while m·n ≤ ``EXACT_MAX_PAIRS`` (or n ≤
        ``EXACT_MAX_NODES``), else ``DEFAULT_BACKEND``.

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
    backend = _resolve_backend(backend, n <= EXACT_MAX_NODES or m * n <= EXACT_MAX_PAIRS)
    Z = _unit_rows(all_X) if metric == "cosine" else all_X
    dist, idx = _search(Z, positions, k + 1, backend)
    idx, dist = _drop_self(idx, dist, positions, k)  # as in nearest_neighbors
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
