"""Every solver on the same large kNN graphs, next to scikit-learn's LabelSpreading and (for
the cut solvers) networkx, with the SpMV lower bound of the iterative solvers.

    python -m bench solver_scale          # 10k and 100k nodes -> results/solver_scale.{md,json,png}
    python -m bench solver_scale --full   # also 1M nodes      -> results/solver_scale_full.{md,json,png}
    python -m bench solver_scale --solvers harmonic   # harmonic and the peers only
                                          # -> results/solver_scale_harmonic.{md,json,png}

Graphs: the points of ``bench/knn_build.py`` (10 Gaussian blobs in 32-d, seed 0), the
library's own ``similarity.knn_graph(X, 10)`` (Gaussian weights, union-symmetrised; exact
search up to 50k nodes, faiss HNSW above), 1% of the nodes labelled (n/1000 per class,
seed 0). Accuracy is on the unlabelled nodes (a node left without a label counts as wrong).

Each run is a fresh process (``_common.peak_memory_call``): wall time of ``solve(problem,
method, **params)`` inside it, and its peak resident memory above the process's baseline
(the graph and labels already loaded). Medians of 3 runs below 1M nodes, single runs at 1M
under a per-run time limit (``--timeout``).

The solver parameters are the ones that stay feasible at 1M nodes, the same at every size
unless the table says otherwise; each table row states them. Why each was chosen:

- harmonic: with its defaults (float32 Jacobi-CG on all class columns at once, rtol 1e-4,
  the local leave-one-out noise flags, calibration, class mass normalisation), and with
  ``solver="cg", detect_noise=False`` for the cost of the solve alone (its CG column
  products are the SpMV-bound's count).
- mincut: ``n_cuts=0`` and ``noise="none"`` (the randomized cuts and the leave-one-out flags
  are 20 and one-per-label extra multi-class cuts; the harmonic relaxation that gives its
  confidence runs in every call), ``alpha=0.1`` (Blum & Chawla §5.1:
  edges between two unlabelled nodes weigh 0.1). With ``alpha=1`` the cheapest cut isolates
  the few labelled nodes and every unlabelled node falls in one class (accuracy 0.10, shown
  at 10k); α ∈ {0.3, 0.1, 0.03} all gave ≥ 0.989 at 10k, 0.1 is the middle one.
- lcsnc: LC-SNC with graph confidences (``confidence="knn"`` on the graph, no features:
  no random forest), fixed ``lam=4⁻⁴, c=4`` (what its own 5-fold CV picked on the 10k graph
  in 60 s) and a single-λ path (``lam_grid=(lam,)``): one max flow per class, no CV;
  ``multiclass="cut"``: the exact λ path of the default rule took 647 s per class at 100k
  (1,635 breakpoints, ``bench/lcsnc.py``).
- spectral: ``d=10`` eigenvectors (Lanczos above 3,000 nodes), ``calibration="none"``
  (the leave-one-out Platt fit costs one more solve per given label).
- maxmargin: ``cv=0`` (no calibration folds), RBF SVC with ``C=1``, only up to
  ``MAXMARGIN_MAX_NODES`` (one run at 100k): the SVC fits every induced label and then
  predicts every node, both about quadratic in n.
- nmf: the defaults (γ = 1, β* from the Γ criterion, ``damping="auto"``).
- peers, all on the *same* W: scikit-learn ``LabelSpreading`` with its defaults (α = 0.2,
  max_iter = 30, tol = 1e-3; a callable kernel returning W) and with α = 0.99 run to
  convergence (max_iter = 1000), scikit-network's ``Propagation`` and
  ``DiffusionClassifier`` with their defaults. The note of each harmonic row names the
  fastest peer whose accuracy is at least the harmonic row's less ``EQUAL_ACCURACY`` (0.001),
  and the time ratio to it, then the ratios to Propagation and LabelSpreading α = 0.99. At 10k
  also ``LabelSpreading(kernel="knn", n_neighbors=10)`` as shipped:
  its own exact 10-NN search and 0/1 graph, end to end.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp

from labelling.sampling import keep_per_class
from similarity import knn_graph
from similarity.knn import EXACT_MAX_NODES
from solvers import LabelProblem, solve
from solvers._row_split_product import product_threads

from ._common import Report, peak_memory_call
from .knn_build import N_CLASSES, K, blobs

LABELED_FRACTION = 0.01
# The SVC of maxmargin trains on every node with an induced label (all n here) and then
# predicts all n: at 100k (one trial run) 7 s harmonic, 42 s SVC fit and ~175 s of SVC
# predict / predict_proba (n × support vectors kernel values, twice); both grow about
# quadratically, so 1M would take hours. One run at 100k, none at 1M.
MAXMARGIN_MAX_NODES = 100_000
# networkx's preflow-push is pure Python: ~seconds at 10k nodes, and superlinear beyond.
NETWORKX_MAX_NODES = 10_000
SPMV_REPEATS = 30
# Imported in each measuring process before the clock starts: the registry imports a solver
# (and the solver its compiled library) on first use, which is start-up, not solving.
PRELOAD = tuple(m for m in ("solvers.harmonic", "solvers.mincut", "solvers.lcsnc", "solvers.spectral",
                            "solvers.maxmargin", "solvers.nmf", "solvers._parametric_cut",
                            "sklearn.semi_supervised", "threadpoolctl", "pyamg", "networkx")
                if importlib.util.find_spec(m.split(".")[0]) is not None)
LCSNC_LAM, LCSNC_C = 4.0**-4, 4.0
MINCUT_ALPHA = 0.1
# A peer counts as equally accurate within this much (0.1 point: 99 nodes of 99,000 at 100k);
# the issue compares harmonic with Propagation at -0.00006, six nodes of the 99,000.
EQUAL_ACCURACY = 1e-3


def _solver_runs(n: int) -> list[dict]:
    """The graphlabel runs at size n: key, method, parameters, label, and why a run is skipped."""
    runs = [
        {"key": "harmonic_flags", "method": "harmonic", "params": {},
         "label": "harmonic, defaults",
         "shown": "defaults: float32 CG on all columns (rtol 1e-4), noise flags, calibration"},
        {"key": "harmonic", "method": "harmonic", "params": {"solver": "cg", "detect_noise": False},
         "label": "harmonic", "shown": "solver='cg' (float32 CG, rtol 1e-4), detect_noise=False"},
        {"key": "mincut", "method": "mincut",
         "params": {"alpha": MINCUT_ALPHA, "n_cuts": 0, "noise": "none"},
         "label": "mincut", "shown": f"alpha={MINCUT_ALPHA}, n_cuts=0, noise='none', expansion"},
        {"key": "lcsnc", "method": "lcsnc",
         "params": {"variant": "lc", "confidence": "knn", "lam": LCSNC_LAM, "c": LCSNC_C, "k": K, "eps": 1.0,
                    "lam_grid": (LCSNC_LAM,), "multiclass": "cut"},
         "label": "lcsnc", "shown": "LC, graph knn confidence, lam=4^-4, c=4 fixed, one λ"},
        {"key": "spectral", "method": "spectral", "params": {"d": 10, "calibration": "none"},
         "label": "spectral", "shown": "d=10 (Lanczos), calibration='none'"},
        {"key": "maxmargin", "method": "maxmargin", "params": {"cv": 0},
         "label": "maxmargin", "shown": "cv=0, rbf SVC, C=1, gamma_g=1",
         "skip": None if n <= MAXMARGIN_MAX_NODES else
         f"not run above {MAXMARGIN_MAX_NODES:,} nodes: SVC fit and predict on all n grow ~n² (hours at 1M)",
         "repeats": 1 if n > 10_000 else None},
        {"key": "nmf", "method": "nmf", "params": {}, "label": "nmf", "shown": "defaults (γ=1, β*, damping='auto')"},
    ]
    if n <= 10_000:  # the paper's plain mincut, once
        runs.insert(3, {"key": "mincut_alpha1", "method": "mincut",
                        "params": {"alpha": 1.0, "n_cuts": 0, "noise": "none"},
                        "label": "mincut, alpha=1", "shown": "alpha=1 (plain mincut), n_cuts=0, noise='none'"})
    return runs


# --------------------------------------------------------------------------- measured calls
# Module-level so that the spawned child process imports them; each returns only what the
# tables need (labels and a few numbers), not the whole Prediction.

def run_solver(problem: LabelProblem, method: str, params: dict) -> dict:
    """``solve`` and what the tables read from its Prediction."""
    p = solve(problem, method, **params)
    info = p.info
    iterations = {
        "harmonic": (info.get("cg_iterations"), "CG iterations, all classes"),
        "nmf": (info.get("n_iter"), "mean-field iterations"),
        "mincut": (info.get("expansion_sweeps"), "α-expansion sweeps after the isolating cuts"),
        "lcsnc": (problem.n_classes, "max flows (one per class, one λ)"),
    }.get(method, (None, ""))
    extra = {key: info[key] for key in ("amg_fallbacks", "converged", "n_train", "spectrum_seconds") if key in info}
    return {"labels": p.labels, "iterations": iterations[0], "counted": iterations[1], "extra": extra}


class _FixedGraph:
    """LabelSpreading kernel returning our W: ``fit`` is called on the node ids 0..n-1 (in
    order), so ``kernel(X, X)`` is W itself (as COO: LabelSpreading reads .row/.col)."""

    def __init__(self, W: sp.csr_matrix) -> None:
        self.W = W

    def __call__(self, a, b):
        return self.W.tocoo()


def run_label_spreading(W: sp.csr_matrix, y_given: np.ndarray) -> dict:
    from sklearn.semi_supervised import LabelSpreading

    model = LabelSpreading(kernel=_FixedGraph(W))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter reached: reported through n_iter_
        model.fit(np.arange(W.shape[0], dtype=float)[:, None], y_given)
    return {"labels": model.transduction_, "iterations": int(model.n_iter_), "counted": "label-spreading iterations",
            "extra": {}}


def run_label_spreading_converged(W: sp.csr_matrix, y_given: np.ndarray) -> dict:
    """LabelSpreading α = 0.99 (close to the harmonic function) run to convergence."""
    from sklearn.semi_supervised import LabelSpreading

    model = LabelSpreading(kernel=_FixedGraph(W), alpha=0.99, max_iter=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(np.arange(W.shape[0], dtype=float)[:, None], y_given)
    return {"labels": model.transduction_, "iterations": int(model.n_iter_), "counted": "label-spreading iterations",
            "extra": {}}


def run_sknetwork(W: sp.csr_matrix, y_given: np.ndarray, name: str) -> dict:
    """scikit-network's Propagation (hard-label votes until stable) or DiffusionClassifier."""
    from sknetwork.classification import DiffusionClassifier, Propagation

    model = Propagation() if name == "Propagation" else DiffusionClassifier()
    return {"labels": np.asarray(model.fit_predict(W, y_given)), "iterations": None, "counted": "", "extra": {}}


def run_label_spreading_knn(X: np.ndarray, y_given: np.ndarray) -> dict:
    from sklearn.semi_supervised import LabelSpreading

    model = LabelSpreading(kernel="knn", n_neighbors=K)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y_given)
    return {"labels": model.transduction_, "iterations": int(model.n_iter_), "counted": "label-spreading iterations",
            "extra": {}}


def cut_pymaxflow(W: sp.csr_matrix, source_cap: np.ndarray, sink_cap: np.ndarray) -> np.ndarray:
    """graphlabel's cut, through the function the solver itself calls: ``mincut``'s
    ``binary_min_cut`` when the seeds are infinite, else LC-SNC's ``parametric_min_cut``
    at one λ (already folded into ``source_cap``). Both return the minimal source side."""
    from solvers._parametric_cut import parametric_min_cut
    from solvers.mincut import binary_min_cut

    if np.isinf(source_cap).any():
        side, _ = binary_min_cut(W, np.isinf(source_cap), np.isinf(sink_cap))
        return side
    cuts, _ = parametric_min_cut(W, source_cap, np.zeros(W.shape[0]), sink_cap, [0.0], backend="maxflow")
    return cuts[0]


def cut_networkx(W: sp.csr_matrix, source_cap: np.ndarray, sink_cap: np.ndarray) -> tuple[np.ndarray, float]:
    """networkx ``minimum_cut`` (preflow-push) on the same network, graph construction
    included (as PyMaxflow's is); an infinite terminal arc is an arc without capacity.
    Returns its source side and the cut value it reports."""
    import networkx as nx
    from networkx.algorithms.flow import minimum_cut

    U = sp.triu(W, k=1).tocoo()
    G = nx.DiGraph()
    G.add_weighted_edges_from(zip(U.row.tolist(), U.col.tolist(), U.data.tolist()), weight="capacity")
    G.add_weighted_edges_from(zip(U.col.tolist(), U.row.tolist(), U.data.tolist()), weight="capacity")
    for caps, arc in ((source_cap, lambda i: ("s", i)), (sink_cap, lambda i: (i, "t"))):
        for i in np.flatnonzero(caps > 0).tolist():
            G.add_edge(*arc(i), **({} if np.isinf(caps[i]) else {"capacity": float(caps[i])}))
    value, (source_side, _) = minimum_cut(G, "s", "t", capacity="capacity")
    side = np.zeros(W.shape[0], dtype=bool)
    side[[v for v in source_side if v != "s"]] = True
    return side, float(value)


def cut_value(W: sp.csr_matrix, source_cap: np.ndarray, sink_cap: np.ndarray, side: np.ndarray) -> float:
    """Capacity of the s-t cut whose source side (without s) is ``side``."""
    U = sp.triu(W, k=1).tocoo()
    crossing = side[U.row] != side[U.col]
    return float(U.data[crossing].sum() + source_cap[~side].sum() + sink_cap[side].sum())


# --------------------------------------------------------------------------- measuring

def measure(fn, args: tuple, repeats: int, timeout: float | None) -> dict:
    """Median seconds and largest peak MiB over ``repeats`` fresh-process runs, or why not."""
    runs = []
    for _ in range(repeats):
        try:
            runs.append(peak_memory_call(fn, *args, timeout=timeout, preload=PRELOAD))
        except TimeoutError:
            return {"status": f"stopped at the {timeout:.0f} s limit"}
        except RuntimeError as err:
            return {"status": "failed: " + str(err).splitlines()[0][:120]}
    return {"seconds": statistics.median(r[0] for r in runs), "peak": max(r[1] for r in runs),
            "result": runs[-1][2], "runs": len(runs), "status": ""}


def spmv_seconds(W: sp.csr_matrix, columns: int, repeats: int = SPMV_REPEATS) -> float:
    """Median time of W @ x (``columns`` = 1: a vector; else x is n × columns, C order)."""
    rng = np.random.default_rng(0)
    x = rng.random(W.shape[0]) if columns == 1 else rng.random((W.shape[0], columns))
    W @ x  # warm-up: page the matrix in
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        W @ x
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def graph_for(n: int, classes: int = N_CLASSES):
    """Points, classes, the library's 10-NN graph (and its build seconds), the labelled mask
    (of 10 blobs, or ``classes``)."""
    X, y = blobs(n, classes)
    start = time.perf_counter()
    W = knn_graph(X, K)
    seconds = time.perf_counter() - start
    given = keep_per_class(y, max(1, round(LABELED_FRACTION * n / classes)), np.random.default_rng(0))
    return X, y, W, given, seconds


def run_size(n: int, timeout: float | None, solvers: list[str] | None = None) -> dict:
    """Every run at size n: main table rows, SpMV rows, cut rows, graph facts. ``solvers``: only
    the graphlabel runs whose key starts with one of these (the peers always run), no cuts."""
    X, y, W, given, graph_s = graph_for(n)
    backend = "exact" if n <= EXACT_MAX_NODES else "faiss HNSW"  # knn_graph's "auto" rule
    print(f"n={n:,}: graph {graph_s:.1f} s ({backend}), {W.nnz // 2:,} edges, {int(given.sum()):,} labels", flush=True)
    y_given = np.where(given, y, -1)
    problem = LabelProblem(W, y_given, n_classes=N_CLASSES)
    repeats = 3 if n < 1_000_000 else 1
    hidden = ~given

    def accuracy(labels):
        return float(np.mean(labels[hidden] == y[hidden]))

    results = {"ls": measure(run_label_spreading, (W, y_given), repeats, timeout),
               "ls99": measure(run_label_spreading_converged, (W, y_given), repeats, timeout),
               "sk_propagation": measure(run_sknetwork, (W, y_given, "Propagation"), repeats, timeout),
               "sk_diffusion": measure(run_sknetwork, (W, y_given, "DiffusionClassifier"), repeats, timeout)}
    if n <= 10_000:
        results["ls_knn"] = measure(run_label_spreading_knn, (X, y_given), repeats, timeout)
    runs = [run for run in _solver_runs(n) if solvers is None or run["key"].startswith(tuple(solvers))]
    for run in runs:
        if run.get("skip"):
            results[run["key"]] = {"status": run["skip"]}
            continue
        prob = LabelProblem(W, y_given, n_classes=N_CLASSES, X=X) if run["method"] == "maxmargin" else problem
        results[run["key"]] = measure(run_solver, (prob, run["method"], run["params"]),
                                      run.get("repeats") or repeats, timeout)
        r = results[run["key"]]
        print(f"  {run['label']}: " + (f"{r['seconds']:.2f} s, {r['peak']:.0f} MiB, accuracy "
                                      f"{accuracy(r['result']['labels']):.4f}" if "seconds" in r else r["status"]),
              flush=True)

    peer = results["ls"]
    peer_ok = "seconds" in peer
    peer_acc = accuracy(peer["result"]["labels"]) if peer_ok else np.nan
    rows = []
    entries = [("ls", "LabelSpreading (peer), same W", "sklearn defaults α=0.2, max_iter=30; kernel = W"),
               ("ls99", "LabelSpreading α=0.99 (peer), same W", "α=0.99, max_iter=1000 (converged); kernel = W"),
               ("sk_propagation", "scikit-network Propagation (peer)", "defaults (n_iter=-1: until no label changes)"),
               ("sk_diffusion", "scikit-network DiffusionClassifier (peer)", "defaults (n_iter=10)")]
    if "ls_knn" in results:
        entries.append(("ls_knn", "LabelSpreading kernel='knn'", "n_neighbors=10: own exact search, 0/1 graph"))
    entries += [(run["key"], run["label"], run["shown"]) for run in runs]
    for key, label, shown in entries:
        r = results[key]
        ok = "seconds" in r
        acc = accuracy(r["result"]["labels"]) if ok else np.nan
        rows.append({
            "nodes": n, "solver": label, "parameters": shown, "runs": r.get("runs", 0),
            "seconds": r.get("seconds", np.nan), "peak MiB": r.get("peak", np.nan),
            "iterations": r["result"]["iterations"] if ok and r["result"]["iterations"] is not None else np.nan,
            "accuracy": acc,
            "time / LabelSpreading": r["seconds"] / peer["seconds"] if ok and peer_ok else np.nan,
            "accuracy − LabelSpreading": acc - peer_acc,
            "note": r["status"],
        })
    by_key = {key: row for (key, _, _), row in zip(entries, rows)}
    for key in ("harmonic_flags", "harmonic"):  # against the best peer at equal or better accuracy
        ours = by_key.get(key)
        if ours is None or np.isnan(ours["seconds"]):
            continue
        fair = [by_key[p] for p in ("ls", "ls99", "sk_propagation", "sk_diffusion")
                if not np.isnan(by_key[p]["seconds"])
                and by_key[p]["accuracy"] >= ours["accuracy"] - EQUAL_ACCURACY]
        if fair:
            best = min(fair, key=lambda r: r["seconds"])
            ours["note"] = (ours["note"] + "; " if ours["note"] else "") + (
                f"{ours['seconds'] / best['seconds']:.2f}× {best['solver'].split(' (')[0]}, the fastest peer at "
                f"equal (within {EQUAL_ACCURACY}) or better accuracy")
        else:
            ours["note"] = (ours["note"] + "; " if ours["note"] else "") + "no peer reaches its accuracy"
        named = [f"{ours['seconds'] / by_key[p]['seconds']:.2f}× {by_key[p]['solver'].split(' (')[0]}"
                 for p in ("sk_propagation", "ls99") if not np.isnan(by_key[p]["seconds"])]
        if named:  # the two peers, named whatever their accuracy
            ours["note"] += "; " + ", ".join(named)

    spmv, spmm = spmv_seconds(W, 1), spmv_seconds(W, N_CLASSES)
    bound_rows = []
    for key, label, unit in (("harmonic", "harmonic, solver='cg' (column products)", spmv),
                             ("harmonic_flags", "harmonic, defaults (column products)", spmv),
                             ("nmf", "nmf", spmm), ("ls", "LabelSpreading (peer)", spmm),
                             ("ls99", "LabelSpreading α=0.99 (peer)", spmm)):
        r = results.get(key, {})
        if "seconds" not in r or r["result"]["iterations"] is None:
            continue
        products = r["result"]["iterations"]
        bound = products * unit
        bound_rows.append({
            "nodes": n, "nnz(W)": W.nnz, "solver": label, "products": products,
            "product": "W @ x (1 column)" if unit is spmv else f"W @ X ({N_CLASSES} columns)",
            "one product ms": unit * 1e3, "bound s": bound, "solver s": r["seconds"],
            "solver / bound": r["seconds"] / bound, "accuracy": accuracy(r["result"]["labels"]),
            "amg fallbacks": r["result"]["extra"].get("amg_fallbacks", np.nan),
        })

    cut_rows = []
    if n <= NETWORKX_MAX_NODES and solvers is None:
        cut_rows = binary_cuts(W, y_given, n, repeats)
    return {"rows": rows, "bound": bound_rows, "cuts": cut_rows,
            "graph": {"nodes": n, "edges": W.nnz // 2, "labels": int(given.sum()), "search": backend,
                      "graph build s": graph_s, "W @ x ms": spmv * 1e3, f"W @ X({N_CLASSES}) ms": spmm * 1e3}}


def binary_cuts(W: sp.csr_matrix, y_given: np.ndarray, n: int, repeats: int) -> list[dict]:
    """Class 0 against the other labels, as each cut solver builds it, PyMaxflow vs networkx."""
    from solvers.lcsnc import _confidence
    from solvers.mincut import scale_unlabeled_edges

    labeled = y_given >= 0
    pos, neg = y_given == 0, labeled & (y_given != 0)
    W_mc = scale_unlabeled_edges(W, labeled, MINCUT_ALPHA)  # mincut's network: seeds infinite
    mc = (W_mc, np.where(pos, np.inf, 0.0), np.where(neg, np.inf, 0.0))
    conf = _confidence("knn", pos, labeled, None, W, K, 1.0)  # LC-SNC's network at lam, c
    d = np.asarray(W.sum(axis=1)).ravel()
    lc = (W, np.where(pos, LCSNC_C * conf, 0.0) + np.where(~labeled, LCSNC_LAM * d, 0.0),
          np.where(neg, LCSNC_C * conf, 0.0))
    rows = []
    for name, net in (("mincut: class 0 vs the other labels (α-scaled W, infinite seeds)", mc),
                      ("lcsnc: class 0 LC cut at lam=4^-4, c=4", lc)):
        ours = measure(cut_pymaxflow, net, repeats, None)
        theirs = measure(cut_networkx, net, 1, None)  # seconds each: one run
        finite = [np.where(np.isinf(c), 0.0, c) for c in net[1:]]
        ours_value = cut_value(net[0], *finite, ours["result"])  # infinite arcs are never cut
        nx_side, nx_value = theirs["result"]
        rows.append({"nodes": n, "cut": name, "PyMaxflow s": ours["seconds"], "networkx s": theirs["seconds"],
                     "PyMaxflow / networkx": ours["seconds"] / theirs["seconds"],
                     "PyMaxflow MiB": ours["peak"], "networkx MiB": theirs["peak"],
                     "cut value": ours_value, "networkx's value": nx_value,
                     "networkx side's value": cut_value(net[0], *finite, nx_side),
                     "same source side": float(np.mean(ours["result"] == nx_side))})
    return rows


def plot(report: Report, frame: pd.DataFrame) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    sizes = sorted(frame["nodes"].unique())
    for i, (label, part) in enumerate(frame.groupby("solver", sort=False)):
        part = part[part["seconds"].notna()]
        if len(part) < 2 and len(sizes) > 1:
            continue  # single-size rows (defaults, α=1, kernel='knn') stay in the table only
        peer = label.startswith("LabelSpreading")
        ax.loglog(part["nodes"], part["seconds"], marker="o" if not peer else "s", ls="--" if peer else "-",
                  color="black" if peer else f"C{i % 10}", label=label)
    ax.set_xlabel("nodes (10-NN graph of 32-d blobs, 1% labelled)")
    ax.set_ylabel("seconds (median of 3 below 1M, 1 run at 1M)")
    ax.set_title("solve time against graph size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    report.figure(fig, "solver time against n, log-log (LabelSpreading dashed)")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench solver_scale")
    parser.add_argument("--full", action="store_true", help="add 1M nodes (about 40 minutes more)")
    parser.add_argument("--timeout", type=float, default=360.0, help="seconds allowed per run at 1M nodes")
    parser.add_argument("--sizes", type=lambda s: [int(v) for v in s.split(",")], help="e.g. 2000,5000 (a trial)")
    parser.add_argument("--solvers", type=lambda s: s.split(","),
                        help="only these graphlabel runs (key prefixes: harmonic, mincut, lcsnc, spectral, maxmargin, "
                             "nmf; the peers always run), written to results/solver_scale[_full]_<solvers>")
    args = parser.parse_args(argv)
    sizes = args.sizes or [10_000, 100_000] + ([1_000_000] if args.full else [])
    name = "solver_scale_trial" if args.sizes else "solver_scale_full" if args.full else "solver_scale"
    if args.solvers:
        name += "_" + "_".join(args.solvers)
    report = Report(name, "Solvers at scale: 10-NN graphs of 32-d blobs, 10 classes, 1% labelled")
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    out = [run_size(n, args.timeout if n >= 1_000_000 else None, args.solvers) for n in sizes]
    report.table("Graphs (the same for every solver; W @ x: scipy CSR, median of 30)",
                 pd.DataFrame([o["graph"] for o in out]), floatfmt=".2f")
    frame = pd.DataFrame([row for o in out for row in o["rows"]])
    report.table("Each solver on the same graph: time, peak memory (extra MiB above the loaded graph), "
                 "iterations, accuracy on the unlabelled nodes, against LabelSpreading on the same W", frame)
    report.note(
        "Iterations: harmonic = CG iterations summed over the 10 class columns; nmf = mean-field iterations; "
        "mincut = α-expansion sweeps (10 cuts each) after the 10 isolating cuts; lcsnc = max flows; "
        "LabelSpreading = its n_iter_. spectral (Lanczos) and maxmargin (libsvm) do not report theirs.")
    report.table("SpMV bound: solver time / (products × one product of the same graph, same run)",
                 pd.DataFrame([row for o in out for row in o["bound"]]))
    report.note(
        "The bound counts only the sparse products an iterative solver cannot avoid: harmonic, one W @ x per CG "
        "iteration (its matrix L_uu has the nnz of W plus the diagonal); nmf and LabelSpreading, one W @ Φ with "
        f"Φ n × {N_CLASSES} per iteration (measured directly, fairer than {N_CLASSES} separate SpMVs). Setup "
        "(Laplacian, slicing L_uu, β*, graph checks), vector updates and the softmax are all in the ratio. The "
        "issue's target: within 3× for harmonic and nmf. The bound's product is scipy's, on one thread; harmonic's "
        f"and nmf's products ran on {product_threads()} (solvers/_row_split_product.py), so their ratio can fall "
        "below 1.")
    cuts = [row for o in out for row in o["cuts"]]
    if cuts:
        report.table("One binary cut, the cut solvers' network: PyMaxflow (graphlabel) vs networkx minimum_cut "
                     "(preflow-push, graph construction included in both)", pd.DataFrame(cuts))
        report.note(f"networkx is run up to {NETWORKX_MAX_NODES:,} nodes only (one run per cut): pure-Python "
                    "preflow-push, superlinear in the edges (the mincut solver's α-expansion needs 10 such cuts "
                    "per sweep). The value networkx reports is the minimum; the source side it returns need not "
                    "be a minimum cut with float capacities: it splits the residual graph at the edges whose flow "
                    "*equals* their capacity, and a rounding difference leaves a saturated edge out (its side's "
                    "value is then larger than the minimum; with shortest_augmenting_path its side matched ours on "
                    "the 10k mincut network). Our side is the minimal source side (the solvers' tie rule).")
    report.note(
        "Infeasible or skipped cells are empty with the reason in the note column: maxmargin above "
        f"{MAXMARGIN_MAX_NODES:,} nodes (libsvm fit on all n induced labels, then predict on all n: ~n² each, "
        "one run at 100k, hours at 1M), mincut with its defaults anywhere (20 randomized multi-class runs"
        " plus one leave-one-out "
        "cut per given label), mincut α=1 above 10k (shown once: see below), LabelSpreading kernel='knn' above "
        "10k (its exact 10-NN search, timed in bench/knn_build.py), and any 1M run stopped at the time limit "
        f"({args.timeout:.0f} s per run with --full).")

    def worst(label: str) -> float:
        return float(frame.loc[frame["solver"] == label, "accuracy"].max())

    if worst("mincut, alpha=1") < 0.2:  # the explanation is for the degenerate outcome only
        report.note(
            "mincut with α = 1 (the paper's plain mincut) is degenerate here: with 1% labels, cutting the few "
            "labelled nodes out is cheaper than cutting between the blobs, so the isolating cuts claim only the "
            "labels and every other node goes to one class (accuracy 0.10); α = 0.1 scales the "
            "unlabelled–unlabelled edges (Blum & Chawla §5.1) and the blobs separate.")
    if worst("lcsnc") < 0.2:
        report.note(
            "lcsnc's accuracy of 0.10 is the solver's, not the benchmark's: on these graphs no single λ lets a "
            "one-vs-rest cut claim its class's blob. On the 10k graph (17 λ in 1e-4..1, c = 16) the minimal "
            "source side is the class's own seeds up to λ ≈ 0.0056 and every node from λ ≈ 0.01; with the c = 4 "
            "used here (its 5-fold CV's choice, CV score 0.10) the cut at λ = 4⁻⁴ already takes every node and "
            "overrules the other classes' labels (cut value 90 × c = 360 at 10k, table above). Every class then "
            "claims every node and the tie goes to class 0. Its time is still the cost of 10 max flows.")
    report.note(f"load average (1 min) at the start {load_start:.1f}, at the end {os.getloadavg()[0]:.1f} on "
                f"{os.cpu_count()} cores: above the core count, runs wait for a core (and multi-threaded BLAS / "
                "OpenMP waits for its slowest thread), so absolute times are inflated; the ratios pair runs of "
                "the same moment.")
    report.note(f"threads: OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, {os.cpu_count()} cores "
                f"shared with other jobs; total wall time {time.perf_counter() - started:.0f} s.")
    plot(report, frame)
    print(f"written to {report.save()}")
