"""kNN graph build at scale: faiss HNSW (what ``similarity.knn`` uses above 50k nodes)
against scikit-learn's exact ``NearestNeighbors``, and the whole ``similarity.knn_graph``.

    python -m bench knn_build          # 10k and 100k points   -> results/knn_build.{md,json,png}
    python -m bench knn_build --full   # also 1M points        -> results/knn_build_full.{md,json,png}

Data: ``make_blobs`` with 10 centres in 32 dimensions (``cluster_std=7``, seed 0): about
3% of each point's 10 exact neighbours belong to another blob, so the neighbourhoods have
the structure a labelling graph is built for (``bench/solver_scale.py`` labels the same
points). k = 10 neighbours, the query point itself excluded.

What is measured, per size and method:

- seconds: wall time of the search alone (``similarity.knn.nearest_neighbors``, HNSW:
  M, efConstruction, efSearch from ``similarity.knn.HNSW_*``; exact: scikit-learn brute force) or of
  ``knn_graph`` (search + Gaussian weights + max-symmetrisation into a CSR matrix), each
  run in a fresh process (``_common.peak_memory_call``); median of 3 runs below 1M, one
  run at 1M.
- peak MiB: the largest extra resident memory of the run above the process's baseline
  (features already loaded), the largest over the runs.
- a narrower HNSW (M = 16, efConstruction = 40, efSearch = 32) through the same code,
  beside the library's settings, to show the time they pay for their recall.
- recall@10: for 1,000 random query rows, the share of their 10 true nearest neighbours
  (brute force in float64 against all n points) that the method returns.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import pandas as pd
from sklearn.datasets import make_blobs

from similarity import knn
from similarity.knn import nearest_neighbors

from ._common import Report, peak_memory_call

K = 10
N_FEATURES = 32
N_CLASSES = 10
CLUSTER_STD = 7.0
N_QUERIES = 1_000
# scikit-learn's exact search is brute force in 32 dimensions (its trees lose to brute force
# above ~15): n² distances. 100k points take about a minute here; 1M would take about
# 100× that, so it is not run at 1M and its time there is only extrapolated (and labelled so).
EXACT_MAX_POINTS = 100_000
# Another HNSW setting (fewer links, narrower beams) beside the library's: what recall it
# gives up, and for how much time. Skipped when they are the same. (The recorded
# knn_build_full results were run while the library used (16, 40, 32); its rows name M.)
OTHER_HNSW = (16, 40, 32)
LIBRARY_HNSW = (knn.HNSW_M, knn.HNSW_EF_CONSTRUCTION, knn.HNSW_EF_SEARCH)
METHODS = {
    "hnsw": "faiss HNSW search (M={}, efC={}, efS={}), the library's".format(*LIBRARY_HNSW),
    "hnsw_other": "faiss HNSW search (M={}, efC={}, efS={}), other setting".format(*OTHER_HNSW),
    "exact": "scikit-learn NearestNeighbors, exact (brute force)",
    "graph": "similarity.knn_graph (HNSW search + Gaussian weights + symmetrise)",
}


def blobs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The benchmark points: 10 Gaussian blobs in 32-d, fixed seed (shared with solver_scale)."""
    return make_blobs(n, n_features=N_FEATURES, centers=N_CLASSES, cluster_std=CLUSTER_STD, random_state=0)


def exact_neighbours(X: np.ndarray, queries: np.ndarray, k: int = K, chunk: int = 100) -> np.ndarray:
    """The k nearest rows of X to each row X[queries] (itself excluded), by brute force.

    Squared distances |q|² - 2 q·x + |x|² in float64, ``chunk`` queries at a time so the
    chunk × n distance block stays a few hundred MB even at n = 1M.
    """
    sq = np.einsum("ij,ij->i", X, X)
    out = np.empty((len(queries), k), dtype=np.int64)
    for start in range(0, len(queries), chunk):  # chunks of queries bound the memory
        q = queries[start:start + chunk]
        D = sq[q, None] - 2.0 * (X[q] @ X.T) + sq[None, :]
        D[np.arange(len(q)), q] = np.inf  # the query itself is not its own neighbour
        part = np.argpartition(D, k, axis=1)[:, :k]
        order = np.argsort(np.take_along_axis(D, part, axis=1), axis=1)
        out[start:start + chunk] = np.take_along_axis(part, order, axis=1)
    return out


def recall_at_k(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean share of each row's true neighbours among the found ones (order ignored)."""
    hits = (found[:, :, None] == truth[:, None, :]).any(axis=2)
    return float(hits.sum(axis=1).mean() / truth.shape[1])


# The measured calls: module-level, so a spawned child process can import them.

def search(X: np.ndarray, backend: str, queries: np.ndarray) -> np.ndarray:
    """Neighbour search of every row; returns only the query rows (a small pipe message)."""
    idx, _ = nearest_neighbors(X, K, backend=backend)
    return idx[queries]


def search_with(X: np.ndarray, queries: np.ndarray, m: int, ef_construction: int, ef_search: int) -> np.ndarray:
    """HNSW search through the same ``nearest_neighbors`` code with other index settings
    (its module constants, set for this call only)."""
    import similarity.knn as knn

    saved = knn.HNSW_M, knn.HNSW_EF_CONSTRUCTION, knn.HNSW_EF_SEARCH
    knn.HNSW_M, knn.HNSW_EF_CONSTRUCTION, knn.HNSW_EF_SEARCH = m, ef_construction, ef_search
    try:
        return search(X, "hnsw", queries)
    finally:
        knn.HNSW_M, knn.HNSW_EF_CONSTRUCTION, knn.HNSW_EF_SEARCH = saved


def graph(X: np.ndarray) -> tuple[int, float]:
    """``knn_graph`` with the HNSW search: the stored weights (nnz) and the seconds the same
    call spent in its neighbour search (``nearest_neighbors``, wrapped with a timer for
    this call), so the rest of the build is measured in the same run, not as a difference
    of two noisy medians."""
    import similarity.knn as knn

    search_fn, spent = knn.nearest_neighbors, []

    def timed_search(*args, **kwargs):
        start = time.perf_counter()
        out = search_fn(*args, **kwargs)
        spent.append(time.perf_counter() - start)
        return out

    knn.nearest_neighbors = timed_search  # knn_graph looks it up as a module global
    try:
        W = knn.knn_graph(X, K, backend="hnsw")
    finally:
        knn.nearest_neighbors = search_fn
    return W.nnz, spent[0]


def measure(fn, args, repeats: int) -> dict:
    """Median seconds and largest peak memory over ``repeats`` fresh-process runs."""
    runs = [peak_memory_call(fn, *args, preload=("faiss", "sklearn.neighbors")) for _ in range(repeats)]
    return {"seconds": statistics.median(r[0] for r in runs), "peak": max(r[1] for r in runs),
            "result": runs[-1][2], "results": [r[2] for r in runs], "times": [r[0] for r in runs],
            "runs": repeats}


def run(sizes: list[int]) -> tuple[pd.DataFrame, dict]:
    rows, extra = [], {}
    for n in sizes:
        X, _ = blobs(n)
        queries = np.sort(np.random.default_rng(0).choice(n, N_QUERIES, replace=False))
        truth = exact_neighbours(X, queries)
        repeats = 3 if n < 1_000_000 else 1
        results = {"hnsw": measure(search, (X, "hnsw", queries), repeats)}
        if OTHER_HNSW != LIBRARY_HNSW:
            results["hnsw_other"] = measure(search_with, (X, queries, *OTHER_HNSW), repeats)
        if n <= EXACT_MAX_POINTS:
            results["exact"] = measure(search, (X, "exact", queries), repeats)
        results["graph"] = measure(graph, (X,), repeats)
        for key, label in METHODS.items():
            if key == "hnsw_other" and OTHER_HNSW == LIBRARY_HNSW:
                continue
            r = results.get(key)
            row = {"points": n, "method": label, "runs": r["runs"] if r else 0,
                   "seconds": r["seconds"] if r else np.nan, "peak MiB": r["peak"] if r else np.nan,
                   "recall@10": recall_at_k(r["result"], truth) if r and key != "graph" else np.nan}
            rows.append(row)
            print(f"  n={n:,} {key}: {row['seconds']:.2f} s, {row['peak MiB']:.0f} MiB", flush=True)
        g = results["graph"]
        rest = [total - search_s for total, (_, search_s) in zip(g["times"], g["results"])]
        extra[n] = {"edges": g["result"][0] // 2, "rest": statistics.median(rest),
                    "share": statistics.median(r / t for r, t in zip(rest, g["times"]))}
    frame = pd.DataFrame(rows)
    exact = frame[frame["method"] == METHODS["exact"]].set_index("points")["seconds"]
    frame["time / exact"] = frame["seconds"] / frame["points"].map(exact)
    return frame, extra


def extrapolate_exact(frame: pd.DataFrame, n: int) -> tuple[float, float] | None:
    """Exact-search seconds at ``n`` from the power law through the two largest measured
    sizes (t ∝ n^a), and the exponent a; None with fewer than two measured sizes."""
    exact = frame[(frame["method"] == METHODS["exact"]) & frame["seconds"].notna()].sort_values("points")
    if len(exact) < 2:
        return None
    (n0, t0), (n1, t1) = exact[["points", "seconds"]].iloc[-2:].to_numpy()
    a = np.log(t1 / t0) / np.log(n1 / n0)
    return float(t1 * (n / n1) ** a), float(a)


def plot(report: Report, frame: pd.DataFrame, sizes: list[int], estimate) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for (_, label), marker in zip(METHODS.items(), "o^sD"):
        part = frame[(frame["method"] == label) & frame["seconds"].notna()]
        ax.loglog(part["points"], part["seconds"], marker=marker, label=label)
    if estimate is not None and max(sizes) > EXACT_MAX_POINTS:
        last = frame[(frame["method"] == METHODS["exact"]) & frame["seconds"].notna()].iloc[-1]
        ax.loglog([last["points"], max(sizes)], [last["seconds"], estimate[0]], "s--", mfc="none", color="C1",
                  label=f"scikit-learn exact, extrapolated (n^{estimate[1]:.2f}), not run")
    ax.set_xlabel("points (32-d, 10 blobs)")
    ax.set_ylabel("seconds (median of 3 below 1M, 1 run at 1M)")
    ax.set_title("10-NN search and graph build time")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    report.figure(fig, "kNN search / graph build time against n, log-log")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench knn_build")
    parser.add_argument("--full", action="store_true", help="add 1M points (about 20 minutes more)")
    parser.add_argument("--sizes", type=lambda s: [int(v) for v in s.split(",")], help="e.g. 2000,5000 (a trial)")
    args = parser.parse_args(argv)
    sizes = args.sizes or [10_000, 100_000] + ([1_000_000] if args.full else [])
    name = "knn_build_trial" if args.sizes else "knn_build_full" if args.full else "knn_build"
    report = Report(name, "kNN graph build: faiss HNSW vs scikit-learn exact (32-d blobs, k = 10)")
    load_start = os.getloadavg()[0]
    frame, extra = run(sizes)
    report.table(f"10-NN of n points in 32-d (10 blobs, cluster_std {CLUSTER_STD:g}); recall@10 on "
                 f"{N_QUERIES:,} random queries against brute force; peak = extra resident memory of the run",
                 frame, floatfmt=".3f")
    overhead = pd.DataFrame([{"points": n, "graph edges": e["edges"],
                              "weights + symmetrise s": e["rest"], "share of knn_graph": e["share"]}
                             for n, e in extra.items()])
    report.table("Non-search part of knn_graph: its time outside nearest_neighbors, timed inside the same "
                 "knn_graph runs (median)", overhead)
    estimate = extrapolate_exact(frame, max(sizes))
    report.note(
        f"scikit-learn's exact search is run up to {EXACT_MAX_POINTS:,} points: it is brute force in 32 "
        "dimensions (n² distances, chunked so its memory stays bounded), so 1M points cost about 100× the "
        "100k time.")
    if estimate is not None and max(sizes) > EXACT_MAX_POINTS:
        report.note(f"Extrapolation, not a measurement: exact search at {max(sizes):,} points ≈ {estimate[0]:,.0f} s "
                    f"(power law t ∝ n^{estimate[1]:.2f} through the two measured sizes); its cell above is empty.")
    report.note("Each run is a fresh process (`_common.peak_memory_call`): the time is the call's wall time in "
                "it; peak MiB is its resident-memory high-water mark (VmHWM, reset just before the call) minus "
                "its resident memory just before the call, so the 32-d features (float64, "
                f"{max(sizes) * N_FEATURES * 8 / 2**20:,.0f} MiB at {max(sizes):,}) are not counted, the float32 "
                "copy faiss indexes is.")
    report.note(f"load average (1 min) at the start {load_start:.1f}, at the end {os.getloadavg()[0]:.1f} on "
                f"{os.cpu_count()} cores: above the core count, runs wait for a core (and multi-threaded BLAS / "
                "OpenMP waits for its slowest thread), so absolute times are inflated; the ratios pair runs of "
                "the same moment.")
    report.note(f"threads: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} (faiss and BLAS use "
                f"every core by default; {os.cpu_count()} here, shared with other jobs: timings are noisy, "
                "compare within a table).")
    plot(report, frame, sizes, estimate)
    print(f"written to {report.save()}")
