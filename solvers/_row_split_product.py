"""``K @ X`` for a CSR matrix K and a dense block X, with K's rows split over threads.

Why: the block CG of ``harmonic`` spends a third to a half of its solve in this product
(``harmonic``'s module docstring), and scipy's ``K @ X`` runs on one core. scipy's kernel for
it (``csr_matvecs``, C++) releases the GIL, so threads that each run it on their own range of
K's rows, writing their own rows of the result, run in parallel with nothing shared but what
they read. Each row is summed by the same kernel in the same order as ``K @ X``: the result
is bit for bit the same, so iterations, labels and flags do not depend on the thread count.

Measured (the 100k-node 10-NN graph of ``bench/solver_scale.py``, float32, 10 columns, a
quiet 2-core machine, medians of 31): 5.7 ms with ``K @ X`` and 3.0 ms on two threads; on a
20,000-node slice of it (68k edges) 271 against 178 µs, on 5,000 nodes (4k edges) 14
against 70 µs: a hand-off to a thread costs some 60 µs, hence ``MIN_WORK``.

Why not a library: none in the lock has a threaded sparse-dense product (scipy's is serial;
PyTorch's is an extra of the text features only; numba's ``prange`` kernel measured 1.3× at
1M and compiled for 7 s on first use, ``harmonic``'s docstring). Why scipy's private
``scipy.sparse._sparsetools.csr_matvecs``: the public product allocates its own output, and
a row range of K as a public ``csr_matrix`` would give blocks to stack, one more pass over the
result. The kernel is the one scipy's own ``K @ X`` calls (``_compressed._matmul_multivector``,
scipy 1.17, pinned by the lock); ``tests/test_row_split_product.py`` fails if it changes.

Threads: ``OMP_NUM_THREADS`` when set (the convention of the numerical libraries, which Dask's
workers set to 1), else the CPUs this process may run on, at most ``MAX_THREADS``.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from scipy.sparse import _sparsetools

__all__ = ["RowSplitProduct", "product_threads"]

#: Edges × columns below which one thread does the product (a hand-off costs more).
MIN_WORK = 500_000
#: The product reads memory more than it computes: more threads than this add little.
MAX_THREADS = 8


def product_threads() -> int:
    """Threads for the product: ``OMP_NUM_THREADS`` if set, else the usable CPUs (≤ ``MAX_THREADS``)."""
    setting = os.environ.get("OMP_NUM_THREADS", "").strip()
    if setting.isdigit() and int(setting) > 0:
        return min(int(setting), MAX_THREADS)
    # the CPUs this process may run on (Linux); macOS and Windows have no affinity call
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(usable, MAX_THREADS))


class RowSplitProduct:
    """K as an operator whose ``@`` with an n × C block splits K's rows over threads.

    Parameters
    ----------
    matrix : scipy.sparse.csr_matrix
        K; kept as it is (no copy). ``matrix`` and ``dtype`` are K's.
    threads : int, optional
        Default ``product_threads()``. Ranges of rows hold near-equal numbers of edges.

    The pool's threads are started at the first product that is shared out, and end when the
    operator is garbage-collected (``ThreadPoolExecutor``'s own rule): the block CG builds one
    operator per row order and drops it when it returns.
    """

    def __init__(self, matrix: sp.csr_matrix, threads: int | None = None) -> None:
        self.matrix, self.dtype = matrix, matrix.dtype
        threads = product_threads() if threads is None else max(1, int(threads))
        cuts = np.searchsorted(matrix.indptr, np.linspace(0, matrix.nnz, threads + 1), side="left")
        cuts[0], cuts[-1] = 0, matrix.shape[0]
        self._ranges = [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
        self._pool: ThreadPoolExecutor | None = None

    def __matmul__(self, X: np.ndarray) -> np.ndarray:
        return self.product(X)

    def product(self, X: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """K X, written into ``out`` (C-contiguous, K's dtype, K's rows × X's columns) when
        given: the block CG keeps one block for its products instead of a new one each
        iteration (module docstring of ``harmonic``, "The block CG's memory")."""
        K = self.matrix
        if X.ndim != 2 or X.dtype != K.dtype:  # scipy's own product: it upcasts both, or takes a vector
            if out is None:
                return K @ X
            out[...] = K @ X
            return out
        X = np.ascontiguousarray(X)
        if out is None:
            out = np.empty((K.shape[0], X.shape[1]), dtype=K.dtype)  # each range zeroes its own rows
        if len(self._ranges) < 2 or K.nnz * X.shape[1] < MIN_WORK:  # too little work to share
            self._rows(X, out, 0, K.shape[0])
            return out
        if self._pool is None:
            self._pool = ThreadPoolExecutor(len(self._ranges) - 1, thread_name_prefix="graphlabel-product")
        pending = [self._pool.submit(self._rows, X, out, a, b) for a, b in self._ranges[1:]]
        self._rows(X, out, *self._ranges[0])  # the calling thread takes the first range
        for future in pending:
            future.result()
        return out

    def _rows(self, X: np.ndarray, out: np.ndarray, start: int, stop: int) -> None:
        K, rows = self.matrix, out[start:stop]
        rows.fill(0)  # csr_matvecs adds K X into its output
        _sparsetools.csr_matvecs(stop - start, K.shape[1], X.shape[1], K.indptr[start:stop + 1], K.indices,
                                 K.data, X.ravel(), rows.ravel())
