"""kNN search at scale: every neighbour search of ``similarity.knn`` side by side, on the
end-to-end data and on the hard case, with recall against exact neighbours.

    python -m bench knn_build          # 10k and 100k points   -> results/knn_build.{md,json,png}
    python -m bench knn_build --full   # also 1M points        -> results/knn_build_full.{md,json,png}
    python -m bench knn_build --sizes 20000 --data e2e      # a trial -> results/knn_build_trial.*
    python -m bench knn_build --layout --sizes 1000000      # the HNSW row layout, paired -> knn_build_layout.md

Data (32 features, k = 10 neighbours, the query point itself excluded):

- ``e2e``: the features of ``bench/e2e.py`` (``features``: 8 informative directions of 10
  classes mixed into 32, scikit-learn's make_classification, seed 0), what the 1M end-to-end
  target runs.
- ``blobs``: ``make_blobs`` with 10 centres in 32 dimensions (``cluster_std=7``, seed 0),
  isotropic: every direction carries noise, the hard case of approximate search (about 3%
  of each point's 10 exact neighbours belong to another blob; ``bench/solver_scale.py``
  labels the same points).

What is measured, per data set, size and setting (``GRID``): the backends' own index
classes (``similarity.knn.INDEXES``, what ``nearest_neighbors`` builds and searches), one
fresh process (``_common.peak_memory_call``) per index build, then every search setting
of that build on all n rows (``KNN_QUERY_CHUNK`` queries at a time, as the library searches):

- build s, search s, seconds = build + search: wall times inside the process, one run each
  (read the ratios of one table, which pair runs of the same moment);
- recall@10: for 1,000 random query rows, the share of their 10 true nearest neighbours
  (brute force in float64 against all n points) that the setting returns;
- peak MiB: the build's largest extra resident memory above the process's baseline (the
  float64 features already loaded), over the build and all its searches.

Exact search (scikit-learn brute force through ``nearest_neighbors``) runs up to
``EXACT_MAX_POINTS``; ``similarity.knn_graph`` with its defaults runs at every size (the
library's default search, then weights and symmetrising, timed inside the same call).
"""

from __future__ import annotations

import argparse
import os
import re
import time

import numpy as np
import pandas as pd
from sklearn.datasets import make_blobs

from similarity import knn

from ._common import Report, peak_memory_call

K = 10
N_FEATURES = 32
N_CLASSES = 10
CLUSTER_STD = 7.0
N_QUERIES = 1_000
# scikit-learn's exact search is brute force in 32 dimensions (its trees lose to brute force
# above ~15): n² distances. 100k points take about a minute here; 1M would take about
# 100× that, so it is not run at 1M.
EXACT_MAX_POINTS = 100_000
# What is measured: (backend, build settings, search settings, largest n or None, module
# constants set for that build). One process per build; each search setting reuses its index.
# The 1M points keep only what draws the curve (the machine is shared).
GRID: list[tuple[str, dict, list[dict], int | None, dict]] = [
    ("hnsw", {"m": 16, "ef_construction": 20}, [{"ef_search": 16}, {"ef_search": 32}], None, {}),
    ("hnsw", {"m": 16, "ef_construction": 40}, [{"ef_search": 32}, {"ef_search": 64}], 100_000, {}),
    ("hnsw", {"m": 32, "ef_construction": 40}, [{"ef_search": 16}, {"ef_search": 32}, {"ef_search": 64}], None, {}),
    ("hnsw", {"m": 32, "ef_construction": 80}, [{"ef_search": 64}], None, {}),
    # the same index with the rows in their input order (the code before the k-means layout)
    ("hnsw", {"m": 32, "ef_construction": 80}, [{"ef_search": 64}], None, {"LAYOUT_CELLS": 0}),
    ("ivf", {}, [{"nprobe": p} for p in (4, 8, 16, 32)], None, {}),
    ("hnswlib", {"m": 16, "ef_construction": 40}, [{"ef": 16}, {"ef": 32}], None, {}),
    ("hnswlib", {"m": 32, "ef_construction": 80}, [{"ef": 64}], 100_000, {}),
    ("pynndescent", {"n_neighbors": 10}, [{}], 100_000, {}),
    ("pynndescent", {"n_neighbors": 20}, [{}], None, {}),
    ("pynndescent", {"n_neighbors": 30}, [{}], 100_000, {}),
    ("exact", {}, [{}], EXACT_MAX_POINTS, {}),
]
LIBRARIES = {"hnsw": "faiss HNSW", "ivf": "faiss IVF-Flat", "hnswlib": "hnswlib HNSW",
             "pynndescent": "pynndescent NN-descent", "exact": "scikit-learn exact"}
DATA = ("e2e", "blobs")


def blobs(n: int, classes: int = N_CLASSES) -> tuple[np.ndarray, np.ndarray]:
    """The hard-case points: 10 (or ``classes``) Gaussian blobs in 32-d, fixed seed (shared with solver_scale)."""
    return make_blobs(n, n_features=N_FEATURES, centers=classes, cluster_std=CLUSTER_STD, random_state=0)


def dataset(name: str, n: int) -> np.ndarray:
    """The float64 features of data set ``name`` ("e2e" or "blobs") at n points."""
    if name == "e2e":
        from .e2e import features

        return features(n)[0]
    return blobs(n)[0]


def exact_neighbours(X: np.ndarray, queries: np.ndarray, k: int = K, chunk: int = 25) -> np.ndarray:
    """The k nearest rows of X to each row X[queries] (itself excluded), by brute force.

    Squared distances |q|² - 2 q·x + |x|² in float64, ``chunk`` queries at a time so the
    chunk × n distance block stays 200 MB at n = 1M.
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


def describe(backend: str, build: dict, search: dict, constants: dict) -> str:
    """The setting as the tables and plots name it, e.g. ``M=16 efC=20 efS=16``."""
    short = {"m": "M", "ef_construction": "efC", "ef_search": "efS", "ef": "ef", "nprobe": "nprobe",
             "n_neighbors": "n_neighbors"}
    text = " ".join(f"{short[k]}={v}" for k, v in {**build, **search}.items())
    if backend == "ivf":
        text = f"nlist=4√n {text}"
    if constants.get("LAYOUT_CELLS") == 0:
        text += " (input order)"
    return text or "brute force"


def is_default(backend: str, build: dict, search: dict, constants: dict) -> bool:
    """Whether a setting is what ``nearest_neighbors`` runs by default above EXACT_MAX_NODES."""
    if backend != knn.DEFAULT_BACKEND or constants:
        return False
    defaults = {"hnsw": {"m": knn.HNSW_M, "ef_construction": knn.HNSW_EF_CONSTRUCTION,
                         "ef_search": knn.HNSW_EF_SEARCH},
                "ivf": {"nprobe": knn.IVF_NPROBE},
                "hnswlib": {"m": knn.HNSWLIB_M, "ef_construction": knn.HNSWLIB_EF_CONSTRUCTION, "ef": knn.HNSWLIB_EF},
                "pynndescent": {"n_neighbors": knn.PYNNDESCENT_N_NEIGHBORS}}[backend]
    return {**build, **search} == defaults


# The measured calls: module-level, so a spawned child process can import them.

def run_backend(X: np.ndarray, queries: np.ndarray, backend: str, build: dict, searches: list[dict],
                constants: dict) -> dict:
    """Build one index of all rows (``similarity.knn.INDEXES[backend]``) and search all rows
    with each setting; returns the timings and only the query rows (a small pipe message)."""
    import similarity.knn as knn

    for name, value in constants.items():  # this child process only
        setattr(knn, name, value)
    rows = np.arange(len(X))
    if backend == "exact":
        start = time.perf_counter()
        idx, _ = knn.nearest_neighbors(X, K, backend="exact")
        return {"build s": 0.0, "searches": [{"search s": time.perf_counter() - start, "found": idx[queries],
                                              "short rows": 0}]}
    start = time.perf_counter()
    index = knn.INDEXES[backend](X, **build)
    out = {"build s": time.perf_counter() - start, "searches": []}
    for search in searches:
        start = time.perf_counter()
        dist, idx = index.search(rows, K + 1, **search)
        seconds = time.perf_counter() - start
        short = int((idx < 0).any(axis=1).sum())  # rows the index answered with < k + 1 rows
        idx, _ = knn._drop_self(idx, dist, rows, K)
        out["searches"].append({"search s": seconds, "found": idx[queries], "short rows": short})
        del dist, idx  # not alive beside the next search's answers (the peak is one search's)
    return out


def graph(X: np.ndarray) -> tuple[int, float]:
    """``knn_graph`` with its defaults: the stored weights (nnz) and the seconds the same
    call spent in its neighbour search (``nearest_neighbors``, wrapped with a timer for
    this call), so the rest of the build is measured in the same run, not as a difference
    of two noisy runs."""
    import similarity.knn as knn

    search_fn, spent = knn.nearest_neighbors, []

    def timed_search(*args, **kwargs):
        start = time.perf_counter()
        out = search_fn(*args, **kwargs)
        spent.append(time.perf_counter() - start)
        return out

    knn.nearest_neighbors = timed_search  # knn_graph looks it up as a module global
    try:
        W = knn.knn_graph(X, K)
    finally:
        knn.nearest_neighbors = search_fn
    return W.nnz, spent[0]


def jit_warm_up(n: int = 2_000) -> float:
    """Seconds of pynndescent on n rows in a fresh process: nearly all numba compilation,
    which each new process (each CLI command) pays once before its first graph."""
    X = np.random.default_rng(0).normal(size=(n, N_FEATURES))
    start = time.perf_counter()
    knn.INDEXES["pynndescent"](X, n_neighbors=K)
    return time.perf_counter() - start


PRELOAD = ("faiss", "hnswlib", "pynndescent", "sklearn.neighbors")


def run(sizes: list[int], data: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, graphs = [], []
    for name in data:
        for n in sizes:
            X = dataset(name, n)
            queries = np.sort(np.random.default_rng(0).choice(n, N_QUERIES, replace=False))
            truth = exact_neighbours(X, queries)
            for backend, build, searches, largest, constants in GRID:
                if largest is not None and n > largest:
                    continue
                load = os.getloadavg()[0]
                _, peak, result = peak_memory_call(run_backend, X, queries, backend, build, searches, constants,
                                                   preload=PRELOAD)
                for search, found in zip(searches, result["searches"]):
                    row = {"data": name, "points": n, "backend": backend,
                           "library": LIBRARIES[backend], "settings": describe(backend, build, search, constants),
                           "default": is_default(backend, build, search, constants),
                           "build s": result["build s"], "search s": found["search s"],
                           "seconds": result["build s"] + found["search s"],
                           "recall@10": recall_at_k(found["found"], truth), "peak MiB": peak,
                           "short rows": found["short rows"], "load": load}
                    rows.append(row)
                    print(f"  {name} n={n:,} {backend} {row['settings']}: {row['seconds']:.1f} s, recall "
                          f"{row['recall@10']:.4f}, {peak:.0f} MiB", flush=True)
            seconds, peak, (nnz, search_s) = peak_memory_call(graph, X, preload=PRELOAD)
            graphs.append({"data": name, "points": n, "graph edges": nnz // 2, "knn_graph s": seconds,
                           "search s": search_s, "weights + symmetrise s": seconds - search_s,
                           "share of knn_graph": (seconds - search_s) / seconds, "peak MiB": peak})
    return pd.DataFrame(rows), pd.DataFrame(graphs)


def plot_curve(report: Report, frame: pd.DataFrame, n: int) -> None:
    """Seconds against recall@10 at n points, one panel per data set, one line per index
    build (its search settings), the target's corner shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = list(dict.fromkeys(frame["data"]))
    fig, axes = plt.subplots(1, len(data), figsize=(6.2 * len(data), 4.8), squeeze=False)
    markers = {"hnsw": "o", "ivf": "s", "hnswlib": "^", "pynndescent": "D", "exact": "*"}
    for ax, name in zip(axes[0], data):
        part = frame[(frame["data"] == name) & (frame["points"] == n)]
        builds = part.groupby(["backend", part["settings"].str.replace(r" (efS|ef|nprobe)=\d+", "", regex=True)],
                              sort=False)
        for (backend, build), group in builds:
            line = ax.semilogy(group["recall@10"], group["seconds"], marker=markers[backend], ms=5, lw=1,
                               label=f"{LIBRARIES[backend]} {build}")[0]
            for settings, recall, seconds in group[["settings", "recall@10", "seconds"]].itertuples(index=False):
                searched = re.search(r"(efS|ef|nprobe)=\d+", settings)
                ax.annotate(searched.group(0) if searched else "", (recall, seconds), fontsize=6,
                            color=line.get_color(), xytext=(3, 3), textcoords="offset points")
        default = part[part["default"]]
        ax.semilogy(default["recall@10"], default["seconds"], "k*", ms=14, mfc="none", label="library default")
        ax.axvline(0.95, color="grey", ls=":", lw=1)
        ax.axhline(60, color="grey", ls=":", lw=1)
        ax.fill_between([0.95, 1.0], 1e-3, 60, color="green", alpha=0.06, label="target: recall ≥ 0.95 in < 60 s")
        ax.set_xlim(part["recall@10"].min() - 0.02, 1.005)
        ax.set_ylim(part["seconds"].min() / 1.5, part["seconds"].max() * 1.5)
        ax.set_xlabel(f"recall@10 ({N_QUERIES:,} queries against exact float64 neighbours)")
        ax.set_ylabel("seconds: build + search of all n rows")
        ax.set_title(f"{name}: 10-NN of {n:,} points × 32 features", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6, loc="upper left")
    fig.suptitle(f"kNN search time against recall, one run each, {os.cpu_count()} cores (faiss, hnswlib, numba "
                 "threads = cores); HNSW settings M / efConstruction, labels efSearch", fontsize=9)
    fig.tight_layout()
    report.figure(fig, f"kNN search: seconds against recall@10 at {n:,} points")


def plot_growth(report: Report, frame: pd.DataFrame) -> None:
    """Seconds against n of each backend's fastest setting with recall@10 ≥ 0.95 at every
    size it ran (at least two)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = list(dict.fromkeys(frame["data"]))
    fig, axes = plt.subplots(1, len(data), figsize=(6.2 * len(data), 4.2), squeeze=False)
    for ax, name in zip(axes[0], data):
        part = frame[frame["data"] == name]
        good = part.groupby(["backend", "settings"]).filter(lambda g: len(g) >= 2 and (g["recall@10"] >= 0.95).all())
        for backend, group in good.groupby("backend", sort=False):
            # the setting run at the most sizes, then the fastest at its largest
            at_largest = group.sort_values("points").groupby("settings").agg(sizes=("points", "size"),
                                                                            seconds=("seconds", "last"))
            fastest = at_largest.sort_values(["sizes", "seconds"], ascending=[False, True]).index[0]
            line = group[group["settings"] == fastest].sort_values("points")
            ax.loglog(line["points"], line["seconds"], marker="o", label=f"{LIBRARIES[backend]} {fastest}")
        ax.set_xlabel("points (32 features)")
        ax.set_ylabel("seconds (one run)")
        ax.set_title(f"{name}: each backend's fastest setting with recall@10 ≥ 0.95 at every size run", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    report.figure(fig, "kNN search time against n (settings with recall@10 ≥ 0.95 at every size)")


def replot(name: str) -> None:
    """Draw the figures of bench/results/NAME.json again (its tables, no new measurement)."""
    import json

    from ._common import RESULTS

    saved = json.loads((RESULTS / f"{name}.json").read_text())
    backends = {label: backend for backend, label in LIBRARIES.items()}
    frames = [pd.DataFrame(rows).assign(data=heading.split(":")[0]) for heading, rows in saved["tables"].items()
              if heading.split(":")[0] in DATA]
    frame = pd.concat(frames, ignore_index=True)
    frame["backend"] = frame["library"].map(backends)
    report = Report(name, saved["title"])
    plot_curve(report, frame, int(frame["points"].max()))
    if frame["points"].nunique() > 1:
        plot_growth(report, frame)


def layout(sizes: list[int], data: list[str], pairs: int) -> None:
    """The library's HNSW settings with the rows stored by k-means cell (the library's
    layout) and in their input order, alternated ``pairs`` times in fresh processes, so
    each pair ran at the same moment of a shared machine."""
    report = Report("knn_build_layout", "faiss HNSW with and without the k-means row layout (library settings "
                                        f"M={knn.HNSW_M}, efC={knn.HNSW_EF_CONSTRUCTION}, efS={knn.HNSW_EF_SEARCH})")
    build = {"m": knn.HNSW_M, "ef_construction": knn.HNSW_EF_CONSTRUCTION}
    search = [{"ef_search": knn.HNSW_EF_SEARCH}]
    rows = []
    for name in data:
        for n in sizes:
            X = dataset(name, n)
            queries = np.sort(np.random.default_rng(0).choice(n, N_QUERIES, replace=False))
            truth = exact_neighbours(X, queries)
            for pair in range(pairs):
                for stored, constants in (("k-means cells", {}), ("input order", {"LAYOUT_CELLS": 0})):
                    load = os.getloadavg()[0]
                    _, peak, result = peak_memory_call(run_backend, X, queries, "hnsw", build, search, constants,
                                                       preload=PRELOAD)
                    found = result["searches"][0]
                    rows.append({"data": name, "points": n, "pair": pair + 1, "rows stored by": stored,
                                 "build s": result["build s"], "search s": found["search s"],
                                 "seconds": result["build s"] + found["search s"],
                                 "recall@10": recall_at_k(found["found"], truth), "peak MiB": peak, "load": load})
                    print(f"  {name} n={n:,} pair {pair + 1} {stored}: {rows[-1]['seconds']:.1f} s", flush=True)
    frame = pd.DataFrame(rows)
    report.table("Each pair: the two layouts one after the other, fresh processes, one run each", frame)
    ratio = frame.pivot_table(index=["data", "points", "pair"], columns="rows stored by",
                              values=["build s", "search s", "seconds"])
    ratio = (ratio.xs("input order", axis=1, level=1) / ratio.xs("k-means cells", axis=1, level=1)).reset_index()
    report.table("Input order ÷ k-means cells (time ratios within each pair)", ratio)
    report.note("The layout (similarity.knn._locality_order) is included in the k-means rows' build s.")
    print(f"written to {report.save()}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench knn_build")
    parser.add_argument("--full", action="store_true", help="add 1M points (about an hour more)")
    parser.add_argument("--sizes", type=lambda s: [int(v) for v in s.split(",")], help="e.g. 20000 (a trial)")
    parser.add_argument("--data", type=lambda s: s.split(","), default=list(DATA), help="e2e,blobs")
    parser.add_argument("--layout", action="store_true", help="only the HNSW row layout against input order")
    parser.add_argument("--pairs", type=int, default=2, help="with --layout: alternated pairs per size")
    parser.add_argument("--replot", action="store_true", help="redraw the figures from the saved JSON only")
    args = parser.parse_args(argv)
    sizes = args.sizes or [10_000, 100_000] + ([1_000_000] if args.full else [])
    if args.layout:
        return layout(sizes, args.data, args.pairs)
    name = "knn_build_trial" if args.sizes else "knn_build_full" if args.full else "knn_build"
    if args.replot:
        return replot(name)
    report = Report(name, "kNN search: faiss HNSW and IVF-Flat, hnswlib, pynndescent, exact (32 features, k = 10)")
    load_start = os.getloadavg()[0]
    import faiss

    threads = faiss.omp_get_max_threads()
    frame, graphs = run(sizes, args.data)
    default = (f"default above {knn.EXACT_MAX_NODES:,} rows: `{knn.DEFAULT_BACKEND}`, marked True in `default`")
    for data in args.data:
        part = frame[frame["data"] == data].drop(columns=["data", "backend"])
        report.table(f"{data}: 10-NN of n points × 32 features; recall@10 on {N_QUERIES:,} random queries against "
                     f"exact neighbours; peak = extra resident memory of the build's process; {default}",
                     part, floatfmt=".3f")
    report.table("knn_graph with its defaults (exact up to EXACT_MAX_NODES, the default backend above): "
                 "its search and the rest (weights, symmetrise), timed inside the same call", graphs)
    report.note(f"Each index build is a fresh process (`_common.peak_memory_call`) that then runs every search "
                "setting of that build on all n rows: seconds = build + that search. Peak MiB is the process's "
                "resident-memory high-water mark (VmHWM, reset just before the build) minus its resident memory "
                "just before it, over the build and all its searches, so the float64 features (the caller's, "
                f"{max(sizes) * N_FEATURES * 8 / 2**20:,.0f} MiB at {max(sizes):,}) are not counted; the "
                "index's float32 copy is.")
    report.note(f"scikit-learn's exact search is run up to {EXACT_MAX_POINTS:,} points (n² distances; 1M would "
                "take about 100× the 100k time).")
    if any(backend == "pynndescent" for backend, *_ in GRID):
        jit = peak_memory_call(jit_warm_up, preload=PRELOAD)[0]
        report.note(f"pynndescent's times include its numba compilation, paid once by every new process: "
                    f"{jit:.1f} s for 2,000 points in a fresh process.")
    report.note(f"threads: faiss OpenMP {threads}, hnswlib num_threads=-1 (all cores), numba's default (all "
                f"cores); OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; {os.cpu_count()} cores.")
    report.note(f"load average (1 min) at the start {load_start:.1f}, at the end {os.getloadavg()[0]:.1f} on "
                f"{os.cpu_count()} cores (the `load` column: at each build's start): above the core count, runs "
                "wait for a core (and OpenMP waits for its slowest thread), so absolute times are inflated; the "
                "ratios pair runs of the same moment.")
    plot_curve(report, frame, max(sizes))
    if len(sizes) > 1:
        plot_growth(report, frame)
    print(f"written to {report.save()}")
