"""Parametric minimum s-t cut on a similarity graph, for a list of parameter values.

The network has one node per graph node plus a source s and a sink t:

- an arc i -> j and an arc j -> i of capacity ``W[i, j]`` for every edge,
- an arc s -> i of capacity ``source_const[i] + lam * source_slope[i]`` (slope >= 0),
- an arc i -> t of capacity ``sink_cap[i]`` (constant in ``lam``).

Source capacities grow with ``lam``, so the minimal source sets are nested and the whole
family is one parametric problem (Gallo, Grigoriadis & Tarjan 1989; Hochbaum 2008).
Two backends, each a compiled library:

- ``"pseudoflow"``: Hochbaum's parametric pseudoflow (``libhpf`` shipped by the PyPI
  ``pseudoflow`` package) solves every ``lam`` of the range in one run and returns the
  breakpoints. The package's Python wrapper only accepts networkx / igraph graphs, neither
  of which this project installs, so ``_hpf`` calls the same C entry point ``hpf_solve``
  through ctypes with a flat numpy arc array (the exact arguments the wrapper passes).
- ``"maxflow"``: PyMaxflow (Boykov-Kolmogorov), one max flow per ``lam`` (the fallback).

Both return, for every ``lam``, the **minimal** source set of a minimum cut (the nodes
reachable from s in the residual network), so they agree node for node.
"""

from __future__ import annotations

import ctypes

import numpy as np
import scipy.sparse as sp

from ._validation import check_choice

BACKENDS = ("auto", "pseudoflow", "maxflow")


def _have_pseudoflow() -> bool:
    try:
        import pseudoflow  # noqa: F401
    except (ImportError, OSError):
        return False
    return True


def resolve_backend(backend: str) -> str:
    """The backend actually used: ``"auto"`` is pseudoflow when it loads, else PyMaxflow."""
    check_choice("backend", backend, BACKENDS)
    if backend == "auto":
        return "pseudoflow" if _have_pseudoflow() else "maxflow"
    return backend


def parametric_min_cut(
    W: sp.csr_matrix,
    source_const: np.ndarray,
    source_slope: np.ndarray,
    sink_cap: np.ndarray,
    lambdas,
    backend: str = "auto",
) -> tuple[np.ndarray, dict]:
    """Minimal source sets of the minimum s-t cuts for every value in ``lambdas``.

    Parameters
    ----------
    W : scipy.sparse matrix, shape (n, n)
        Symmetric non-negative edge capacities (zero diagonal).
    source_const, source_slope, sink_cap : arrays of float >= 0, shape (n,)
        Terminal capacities: s -> i is ``source_const + lam * source_slope``, i -> t is
        ``sink_cap``.
    lambdas : sequence of float >= 0
        Parameter values (any order).
    backend : {"auto", "pseudoflow", "maxflow"}

    Returns
    -------
    in_source : array of bool, shape (len(lambdas), n)
        ``in_source[q, i]`` is True when node i is on the source side at ``lambdas[q]``.
    info : dict
        ``backend`` used, ``n_breakpoints`` (pseudoflow only) and ``n_max_flows``.

    References
    ----------
    D. S. Hochbaum, "The pseudoflow algorithm: a new algorithm for the maximum-flow
    problem", Operations Research 56(4), 2008 (parametric version in section 8).
    """
    lambdas = np.asarray(lambdas, dtype=np.float64).ravel()
    n = W.shape[0]
    if lambdas.size == 0:
        raise ValueError("lambdas must hold at least one value")
    if np.any(lambdas < 0) or not np.all(np.isfinite(lambdas)):
        raise ValueError("lambdas must be finite and non-negative")
    source_const, source_slope, sink_cap = (
        np.asarray(a, dtype=np.float64) for a in (source_const, source_slope, sink_cap)
    )
    for name, a in (("source_const", source_const), ("source_slope", source_slope), ("sink_cap", sink_cap)):
        if a.shape != (n,):
            raise ValueError(f"{name} must have shape ({n},), got {a.shape}")
        if np.any(a < 0) or not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must be finite and non-negative")
    backend = resolve_backend(backend)
    W = sp.csr_matrix(W)
    if n == 0:
        return np.zeros((lambdas.size, 0), dtype=bool), {"backend": backend, "n_max_flows": 0}
    if backend == "pseudoflow":
        return _pseudoflow_cuts(W, source_const, source_slope, sink_cap, lambdas)
    return _maxflow_cuts(W, source_const, source_slope, sink_cap, lambdas)


def _maxflow_cuts(W, source_const, source_slope, sink_cap, lambdas):
    import maxflow

    upper = sp.triu(W, k=1).tocoo()
    out = np.empty((lambdas.size, W.shape[0]), dtype=bool)
    for q, lam in enumerate(lambdas):  # one max flow per parameter value: the fallback
        graph = maxflow.Graph[float](W.shape[0], upper.nnz)
        nodes = graph.add_nodes(W.shape[0])
        graph.add_edges(upper.row.astype(np.int32), upper.col.astype(np.int32), upper.data, upper.data)
        # The network is solved reversed (terminals swapped; the edges are symmetric).
        # Boykov-Kolmogorov labels "sink" exactly the nodes of its final sink tree, those
        # that reach the sink in the residual network, and gives every other node to the
        # source. In the reversed network that sink tree is the set of nodes reachable
        # from the original source: the minimal source set (without the swap, PyMaxflow
        # would return the maximal one).
        graph.add_grid_tedges(nodes, sink_cap, source_const + lam * source_slope)
        graph.maxflow()
        out[q] = graph.get_grid_segments(nodes)
    return out, {"backend": "maxflow", "n_max_flows": int(lambdas.size)}


def _pseudoflow_cuts(W, source_const, source_slope, sink_cap, lambdas):
    n = W.shape[0]
    # libhpf numbering: 0 = source, 1..n = graph nodes, n + 1 = sink.
    coo = W.tocoo()
    has_source = (source_const > 0) | (source_slope > 0)
    has_sink = sink_cap > 0
    nodes = np.arange(1, n + 1, dtype=np.float64)
    arcs = np.concatenate(
        [
            np.column_stack([np.zeros(has_source.sum()), nodes[has_source],
                             source_const[has_source], source_slope[has_source]]),
            np.column_stack([nodes[has_sink], np.full(has_sink.sum(), n + 1.0),
                             sink_cap[has_sink], np.zeros(has_sink.sum())]),
            np.column_stack([coo.row + 1.0, coo.col + 1.0, coo.data, np.zeros(coo.nnz)]),
        ]
    )
    lo, hi = float(lambdas.min()), float(lambdas.max())
    breakpoints, cuts, times = _hpf(n + 2, arcs, lo, hi)
    # Cut j is the minimal source set on (breakpoints[j-1], breakpoints[j]] (checked against
    # PyMaxflow in the tests), so a value maps to the first breakpoint >= it.
    which = np.minimum(np.searchsorted(breakpoints, lambdas, side="left"), len(breakpoints) - 1)
    out = cuts[which][:, 1 : n + 1].astype(bool)
    return out, {"backend": "pseudoflow", "n_max_flows": 1, "n_breakpoints": int(len(breakpoints)),
                 "hpf_times": times}


#: Arcs whose capacity is below this share of the largest one (and that have no slope) are
#: left out of libhpf's network. On segment's 10-NN graph (Gaussian weights down to 1e-160
#: between far neighbours) lcsnc's tuning, 10 labels a class, made libhpf 2022.12 run away:
#: it recursed until the process died of a segmentation fault (faulthandler's stack ends in
#: ``hpf_solve``), and on a 512 MiB thread stack it took 24 GB. The captured networks are
#: finite, non-negative, without self-loops or duplicate arcs. Leaving out the arcs below
#: 1e-6 of the largest made all five label draws (seeds 100-104) solve; 1e-12 and 1e-9
#: still failed on one, so the cause inside libhpf is not known, and this is a measured
#: guard, not a proof. Such arcs carry at most 20 × 1e-6 of the largest weight per node on a
#: 10-NN graph, and the cuts the tests compare with PyMaxflow do not change.
NEGLIGIBLE_CAPACITY = 1e-6


#: libhpf is called with the range's upper end raised by this share of it (at least this much).
#: On wine's 10-NN graph (standardised, 10 labels a class) lcsnc's path rule asks for
#: [1e-6, 1]: at λ = 1 every unlabelled node's source arc equals its degree, a tie of the
#: whole graph, and libhpf's parametric recursion (``parametricCut``, whose tolerance is
#: 1e-8) never ended: the process died of a segmentation fault at its stack's end, and ran
#: on past a minute on an unlimited stack. With the network captured there, 1.0 alone failed;
#: 1 ± 1 ulp, 1 + 1e-7, 1.001 and 2 solved it, with the same breakpoints below 1. The raised
#: end moves the range's end off such a tie; a breakpoint past ``hi`` is then reported
#: beyond it, and callers read the cuts at values up to ``hi`` only.
RANGE_END_MARGIN = 1e-7


def _hpf(n_nodes: int, arcs: np.ndarray, lo: float, hi: float):
    """Call ``hpf_solve`` of libhpf: arcs rows are (from, to, constant, multiplier); the
    range solved is [lo, hi] with ``hi`` raised by ``RANGE_END_MARGIN``."""
    from pseudoflow.python.hpf import libhpf

    arcs = arcs[(arcs[:, 2] >= NEGLIGIBLE_CAPACITY * arcs[:, 2].max(initial=0.0)) | (arcs[:, 3] > 0)]
    hi = hi + RANGE_END_MARGIN * max(abs(hi), 1.0)

    c_int, c_double, POINTER = ctypes.c_int, ctypes.c_double, ctypes.POINTER
    libhpf.hpf_solve.argtypes = [
        c_int, c_int, c_int, c_int, POINTER(c_double), c_double * 2, c_int,
        POINTER(c_int), POINTER(POINTER(c_int)), POINTER(POINTER(c_double)),
        c_int * 5, c_double * 3,
    ]
    flat = np.ascontiguousarray(arcs, dtype=np.float64).ravel()
    n_breakpoints = c_int(0)
    cuts_ptr = POINTER(c_int)()
    breakpoints_ptr = POINTER(c_double)()
    stats = (c_int * 5)()
    times = (c_double * 3)()
    libhpf.hpf_solve(
        n_nodes, arcs.shape[0], 0, n_nodes - 1, flat.ctypes.data_as(POINTER(c_double)),
        (c_double * 2)(lo, hi), 0, ctypes.byref(n_breakpoints), ctypes.byref(cuts_ptr),
        ctypes.byref(breakpoints_ptr), stats, times,
    )
    k = n_breakpoints.value
    try:
        breakpoints = np.ctypeslib.as_array(breakpoints_ptr, shape=(k,)).copy()
        cuts = np.ctypeslib.as_array(cuts_ptr, shape=(k, n_nodes)).copy()
    finally:
        libhpf.libfree(breakpoints_ptr)
        libhpf.libfree(cuts_ptr)
    return breakpoints, cuts, {"read": times[0], "init": times[1], "solve": times[2]}


def entry_parameters(
    W: sp.csr_matrix,
    source_const: np.ndarray,
    source_slope: np.ndarray,
    sink_cap: np.ndarray,
    lo: float,
    hi: float,
) -> tuple[np.ndarray, int]:
    """For every node, the smallest parameter in [lo, hi] at which it is in the minimal
    source set (``lo`` when it already is at ``lo``, ``inf`` when it never is).

    One parametric pseudoflow run gives every breakpoint of the range and the nested
    minimal source sets between them (cut j holds on (b_{j-1}, b_j]), so the entry value
    is exact, not read off a grid. Returns the entry values and the number of breakpoints.
    """
    n = W.shape[0]
    if n == 0:
        return np.zeros(0), 0
    source_const, source_slope, sink_cap = (
        np.asarray(a, dtype=np.float64) for a in (source_const, source_slope, sink_cap))
    coo = sp.csr_matrix(W).tocoo()
    has_source = (source_const > 0) | (source_slope > 0)
    has_sink = sink_cap > 0
    nodes = np.arange(1, n + 1, dtype=np.float64)
    arcs = np.concatenate([
        np.column_stack([np.zeros(has_source.sum()), nodes[has_source], source_const[has_source],
                         source_slope[has_source]]),
        np.column_stack([nodes[has_sink], np.full(has_sink.sum(), n + 1.0), sink_cap[has_sink],
                         np.zeros(has_sink.sum())]),
        np.column_stack([coo.row + 1.0, coo.col + 1.0, coo.data, np.zeros(coo.nnz)]),
    ])
    breakpoints, cuts, _ = _hpf(n + 2, arcs, float(lo), float(hi))
    inside = cuts[:, 1 : n + 1].astype(bool)
    first = np.where(inside.any(axis=0), inside.argmax(axis=0), len(breakpoints))
    lower = np.concatenate([[lo], breakpoints])  # the interval's lower end: where the node enters
    entry = np.where(first < len(breakpoints), lower[np.minimum(first, len(breakpoints))], np.inf)
    return np.where(entry <= hi, entry, np.inf), len(breakpoints)  # a node entering past hi: never, here
