"""Blum & Chawla (2001) graph mincut: accuracy, noise flags, calibration and cut speed.

`python -m bench mincut` (quick: 3 splits, 3 timing repeats) or `--full` (10 splits, 7).

1. Accuracy on digits (10 classes, one-vs-rest + α-expansion) and two moons with the
   paper's Mincut-3, δ½ and δ₀ graphs and a weighted kNN graph, next to scikit-learn's
   LabelSpreading on the same splits.
2. Noise flags (leave-one-out cuts) on digits with 10% of the given labels flipped.
3. Calibration of the confidence (the harmonic relaxation's probability of the cut's
   class, decision 7) on digits (reliability table, ECE).
4. One binary cut on a 100k-node kNN graph with PyMaxflow (Boykov-Kolmogorov) against
   scipy.sparse.csgraph.maximum_flow on integer-scaled capacities of the same graph
   (networkx, the issue's first choice of peer, is not in the lock), and on 5k nodes.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, maximum_flow
from sklearn.datasets import load_digits, make_moons
from sklearn.semi_supervised import LabelSpreading

from labelling.evaluation import expected_calibration_error, noise_scores, reliability_table
from labelling.sampling import flip_labels, keep_per_class
from similarity.cut_graphs import delta_rule_graph, mincut3_graph
from similarity.knn import knn_graph
from solvers.mincut import binary_min_cut, mincut
from solvers.problem import LabelProblem

from ._common import machine, markdown_table

RESULTS = Path(__file__).parent / "results" / "mincut.md"


def _datasets():
    X_d, y_d = load_digits(return_X_y=True)
    X_m, y_m = make_moons(1000, noise=0.15, random_state=0)
    return {"digits": (X_d, y_d, 10), "moons": (X_m, y_m, 5)}


def _graphs(X, y_given, keep, delta_half):
    return {
        "Mincut-3": mincut3_graph(X, keep),
        "δ½": delta_half,
        "δ₀": delta_rule_graph(X, "zero", y_given),
        "kNN-10": knn_graph(X, 10),
    }


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def accuracy_table(seeds: int) -> pd.DataFrame:
    rows = []
    for name, (X, y, per_class) in _datasets().items():
        delta_half = delta_rule_graph(X, "half")
        for seed in range(seeds):
            keep = keep_per_class(y, per_class, np.random.default_rng(seed))
            y_given = np.where(keep, y, -1)
            u = ~keep
            for graph, W in _graphs(X, y_given, keep, delta_half).items():
                variants = [("mincut", "expansion")]
                if name == "digits" and graph in ("kNN-10", "Mincut-3"):
                    variants.append(("mincut, isolation only", "isolation"))
                for method, rule in variants:
                    problem = LabelProblem(W, y_given)
                    p, dt = _timed(lambda: mincut(problem, multiclass=rule, n_cuts=0, noise="none"))
                    acc, cov = np.mean(p.labels[u] == y[u]), np.mean(p.labels[u] >= 0)
                    rows.append((name, method, graph, seed, acc, cov, dt))
            ls = LabelSpreading(kernel="knn", n_neighbors=10, alpha=0.2, max_iter=1000)
            _, dt = _timed(lambda: ls.fit(X, y_given))
            acc = np.mean(ls.transduction_[u] == y[u])
            rows.append((name, "LabelSpreading", "knn-10 (sklearn)", seed, acc, 1.0, dt))
    frame = pd.DataFrame(rows, columns=["dataset", "method", "graph", "seed", "accuracy", "coverage", "seconds"])
    return (
        frame.groupby(["dataset", "method", "graph"], sort=False)
        .agg(
            accuracy=("accuracy", "mean"),
            sd=("accuracy", "std"),
            coverage=("coverage", "mean"),
            median_ms=("seconds", lambda s: 1000 * np.median(s)),
        )
        .round(3)
        .reset_index()
    )


def noise_table(seeds: int) -> pd.DataFrame:
    X, y = load_digits(return_X_y=True)
    delta_half = delta_rule_graph(X, "half")
    rows = []
    for seed in range(seeds):
        rng = np.random.default_rng(100 + seed)
        keep = keep_per_class(y, 20, rng)
        y_noisy, flipped = flip_labels(y, keep, 0.1, 10, rng)
        y_given = np.where(keep, y_noisy, -1)
        u = ~keep
        graphs = {"kNN-10": knn_graph(X, 10), "Mincut-3": mincut3_graph(X, keep), "δ½": delta_half}
        for graph, W in graphs.items():
            p, dt = _timed(lambda: mincut(LabelProblem(W, y_given), n_cuts=0, noise="loo"))
            s = noise_scores(p.noisy[keep], flipped[keep])
            rows.append((graph, seed, s["flipped"], s["flagged"], s["caught"], s["precision"], s["recall"],
                         s["f1"], np.mean(p.labels[u] == y[u]), dt))
        ls = LabelSpreading(kernel="knn", n_neighbors=10, alpha=0.2, max_iter=1000).fit(X, y_given)
        rows.append(("LabelSpreading (no flags)", seed, int(flipped.sum()), 0, 0, np.nan, np.nan, np.nan,
                     np.mean(ls.transduction_[u] == y[u]), np.nan))
    frame = pd.DataFrame(rows, columns=["graph", "seed", "flipped", "flagged", "caught", "precision", "recall",
                                        "f1", "accuracy_unlabeled", "seconds"])
    return (
        frame.groupby("graph", sort=False)
        .agg(
            flipped=("flipped", "mean"),
            flagged=("flagged", "mean"),
            caught=("caught", "mean"),
            precision=("precision", "mean"),
            recall=("recall", "mean"),
            f1=("f1", "mean"),
            accuracy_unlabeled=("accuracy_unlabeled", "mean"),
            median_s=("seconds", "median"),
        )
        .round(3)
        .reset_index()
    )


def calibration_tables(seeds: int):
    X, y = load_digits(return_X_y=True)
    pooled = {}
    summary = []
    for seed in range(seeds):
        keep = keep_per_class(y, 10, np.random.default_rng(200 + seed))
        y_given = np.where(keep, y, -1)
        graphs = {"kNN-10": knn_graph(X, 10), "Mincut-3": mincut3_graph(X, keep)}
        for graph, W in graphs.items():
            p, dt = _timed(lambda: mincut(LabelProblem(W, y_given), noise="none"))
            scored = ~keep & (p.labels >= 0)
            correct = (p.labels == y)[scored]
            conf = p.confidence[scored]
            summary.append((f"mincut {graph}", np.mean(correct), np.mean(conf),
                            expected_calibration_error(conf, correct), dt))
            c0, k0 = pooled.get(graph, (np.empty(0), np.empty(0, dtype=bool)))
            pooled[graph] = (np.concatenate([c0, conf]), np.concatenate([k0, correct]))
        ls = LabelSpreading(kernel="knn", n_neighbors=10, alpha=0.2, max_iter=1000).fit(X, y_given)
        u = ~keep
        conf = ls.label_distributions_[u].max(axis=1)
        correct = ls.transduction_[u] == y[u]
        summary.append(("LabelSpreading (max of label distribution)", np.mean(correct), np.mean(conf),
                        expected_calibration_error(conf, correct), np.nan))
    frame = pd.DataFrame(summary, columns=["method", "accuracy", "mean_confidence", "ECE", "seconds"])
    table = (
        frame.groupby(["method"], sort=False, dropna=False)
        .agg(accuracy=("accuracy", "mean"), mean_confidence=("mean_confidence", "mean"), ECE=("ECE", "mean"),
             median_s=("seconds", "median"))
        .round(3)
        .reset_index()
    )
    reliability = {g: reliability_table(c, k).round(3) for g, (c, k) in pooled.items()}
    return table, reliability


def alpha_table(seeds: int) -> pd.DataFrame:
    """Accuracy against the scale α of unlabeled-unlabeled edges (the paper's Fig 1 sweep)."""
    rows = []
    for name, (X, y, per_class) in _datasets().items():
        delta_half = delta_rule_graph(X, "half")
        for seed in range(seeds):
            keep = keep_per_class(y, per_class, np.random.default_rng(seed))
            y_given = np.where(keep, y, -1)
            u = ~keep
            for graph, W in (("δ½", delta_half), ("kNN-10", knn_graph(X, 10))):
                for alpha in (0.1, 0.4, 0.7, 1.0):
                    p = mincut(LabelProblem(W, y_given), alpha=alpha, n_cuts=0, noise="none")
                    rows.append((name, graph, alpha, np.mean(p.labels[u] == y[u])))
    frame = pd.DataFrame(rows, columns=["dataset", "graph", "alpha", "accuracy"])
    return frame.pivot_table(index=["dataset", "graph"], columns="alpha", values="accuracy", sort=False).round(3) \
        .rename(columns=lambda a: f"α={a}").reset_index()


# Blum & Chawla (2001) Table 1 (accuracy %, notes §4.3): L + U and the Mincut-3 / δ₀ / δ½ cells.
TABLE1 = {
    "diabetes": {"paper name": "Pima", "L": 50, "U": 718, "Mincut-3": 63.8, "δ₀": 48.8, "δ½": 72.3},
    "ionosphere": {"paper name": "Iono", "L": 50, "U": 300, "Mincut-3": 71.0, "δ₀": 78.0, "δ½": 77.6},
    "vote": {"paper name": "Voting", "L": 45, "U": 390, "Mincut-3": 89.1, "δ₀": 66.1, "δ½": 83.3},
}


def table1(seeds: int) -> pd.DataFrame:
    """The paper's Table 1 protocol on Weka's copies of its data, for each unreached rule.

    L + U points drawn at random (both classes in L, else redrawn), features z-scored
    (vote's y/n/? as 1/0/0.5, labelling.datasets), Euclidean distance; accuracy on U,
    a node left without a label counting as wrong; coverage = share of U labelled.
    """
    from labelling.datasets import load, standardise

    rows = []
    for name, spec in TABLE1.items():
        X_all, y_all, _ = load(name)
        X_all = standardise(X_all)
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            while True:
                pick = rng.choice(len(y_all), spec["L"] + spec["U"], replace=False)
                labeled = np.zeros(len(pick), dtype=bool)
                labeled[: spec["L"]] = True
                if len(np.unique(y_all[pick][labeled])) == 2:
                    break
            X, y = X_all[pick], y_all[pick]
            y_given = np.where(labeled, y, -1)
            graphs = {"Mincut-3": mincut3_graph(X, labeled), "δ₀": delta_rule_graph(X, "zero", y_given),
                      "δ½": delta_rule_graph(X, "half")}
            for graph, W in graphs.items():
                for rule in ("none", "paper", "nearest"):
                    p = mincut(LabelProblem(W, y_given, X=X), n_cuts=0, noise="none", unreached=rule)
                    u = ~labeled
                    rows.append((name, spec["paper name"], f"{spec['L']}+{spec['U']}", graph, rule, seed,
                                 100 * np.mean(p.labels[u] == y[u]), np.mean(p.labels[u] >= 0), spec[graph]))
    frame = pd.DataFrame(rows, columns=["data", "paper's name", "L+U", "graph", "unreached", "seed", "accuracy %",
                                        "coverage", "paper %"])
    out = frame.groupby(["data", "paper's name", "L+U", "graph", "unreached"], sort=False).agg(
        **{"accuracy %": ("accuracy %", "mean"), "sd": ("accuracy %", "std"), "coverage": ("coverage", "mean"),
           "paper %": ("paper %", "first")}).reset_index()
    out["− paper"] = out["accuracy %"] - out["paper %"]
    return out.round(2)


def _scipy_cut(W, positive, negative, method):
    """Integer-scaled capacities (int32: the largest scale that cannot overflow), then Dinic or
    Edmonds-Karp, then the smallest source side by a residual BFS from v+."""
    n = W.shape[0]
    C = W.tocoo()
    total = float(C.data.sum()) / 2.0
    scale = np.floor((2**31 - 1) / (4.0 * total + 4.0))
    caps = np.rint(C.data * scale).astype(np.int64)
    big = int(caps.sum() // 2) + 1
    s, t = n, n + 1
    rows = np.concatenate([C.row, np.full(positive.sum(), s), np.flatnonzero(negative)])
    cols = np.concatenate([C.col, np.flatnonzero(positive), np.full(negative.sum(), t)])
    data = np.concatenate([caps, np.full(positive.sum() + negative.sum(), big)]).astype(np.int32)
    G = sp.csr_matrix((data, (rows, cols)), shape=(n + 2, n + 2))
    res = maximum_flow(G, s, t, method=method)
    residual = (G - res.flow).tocsr()
    residual.data = np.maximum(residual.data, 0)
    residual.eliminate_zeros()
    side = np.zeros(n + 2, dtype=bool)
    side[breadth_first_order(residual, s, directed=True, return_predecessors=False)] = True
    return side[:n], res.flow_value / scale, scale


def _networkx_cut(W, positive, negative):
    """networkx's minimum_cut (preflow-push) on the same float capacities; its source side is
    whatever the residual search returns, not the paper's smallest one."""
    import networkx as nx

    C = sp.triu(W, k=1).tocoo()
    G = nx.DiGraph()
    G.add_weighted_edges_from(zip(C.row.tolist(), C.col.tolist(), C.data.tolist()), weight="capacity")
    G.add_weighted_edges_from(zip(C.col.tolist(), C.row.tolist(), C.data.tolist()), weight="capacity")
    big = float(W.sum()) + 1.0
    G.add_weighted_edges_from((("s", int(i), big) for i in np.flatnonzero(positive)), weight="capacity")
    G.add_weighted_edges_from(((int(i), "t", big) for i in np.flatnonzero(negative)), weight="capacity")
    value, (source_side, _) = nx.minimum_cut(G, "s", "t", capacity="capacity")
    side = np.zeros(W.shape[0], dtype=bool)
    side[[v for v in source_side if v != "s"]] = True
    return side, value


def timing_table(repeats: int, sizes=(5_000, 100_000)) -> pd.DataFrame:
    rows = []
    for n in sizes:
        X, y = make_moons(n, noise=0.1, random_state=0)
        W, build = _timed(lambda: knn_graph(X, 10, backend="exact"))
        keep = keep_per_class(y, 10, np.random.default_rng(0))
        pos, neg = keep & (y == 1), keep & (y == 0)
        times, (side, value) = [], (None, None)
        for _ in range(repeats):
            (side, value), dt = _timed(lambda: binary_min_cut(W, pos, neg))
            times.append(dt)
        bk = float(np.median(times))
        rows.append((n, W.nnz // 2, "PyMaxflow BK (float)", bk, 1.0, value, 1.0, build))
        problem = LabelProblem(W, np.where(keep, y, -1))
        solver_times = [_timed(lambda: mincut(problem, n_cuts=0, noise="none"))[1] for _ in range(repeats)]
        t_solver = float(np.median(solver_times))
        rows.append((n, W.nnz // 2, "mincut solver, whole (n_cuts=0, no flags)", t_solver, t_solver / bk, value,
                     1.0, build))
        methods = ["dinic"] + (["edmonds_karp"] if n <= 10_000 else [])
        for method in methods:
            times = []
            for _ in range(repeats):
                (ref_side, ref_value, scale), dt = _timed(lambda: _scipy_cut(W, pos, neg, method))
                times.append(dt)
            t = float(np.median(times))
            rows.append((n, W.nnz // 2, f"scipy maximum_flow {method} (int32, scale {scale:.0f})", t, t / bk,
                         ref_value, float(np.mean(ref_side == side)), build))
        if n <= 10_000 and importlib.util.find_spec("networkx") is not None:
            times = []
            for _ in range(repeats):
                (nx_side, nx_value), dt = _timed(lambda: _networkx_cut(W, pos, neg))
                times.append(dt)
            t = float(np.median(times))
            rows.append((n, W.nnz // 2, "networkx minimum_cut (preflow-push, float)", t, t / bk, nx_value,
                         float(np.mean(nx_side == side)), build))
    return pd.DataFrame(rows, columns=["nodes", "edges", "solver", "median_s", "ratio_to_BK", "cut_value",
                                       "same_side_as_BK", "graph_build_s"]).round(4)



def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench mincut")
    parser.add_argument("--full", action="store_true", help="10 splits and 7 timing repeats")
    args = parser.parse_args(argv)
    seeds, repeats = (10, 7) if args.full else (3, 3)
    out = [
        "# Graph mincut (Blum & Chawla 2001)",
        "",
        f"Machine: {machine()}; mode: {'full' if args.full else 'quick'} "
        f"({seeds} splits, {repeats} timing repeats).",
        "",
    ]

    def emit(title, frame, note=None):
        block = [f"## {title}", ""] + ([note, ""] if note else []) + [markdown_table(frame, ".4g"), ""]
        out.extend(block)
        print("\n".join(block), flush=True)

    print("\n".join(out), flush=True)
    emit("1. Accuracy on the unlabelled nodes (mean over splits; -1 counts as wrong)", accuracy_table(seeds),
         "digits: 10 given labels per class (100 of 1797); moons: 1000 points, noise 0.15, 5 per class. "
         "mincut: n_cuts=0, alpha=1. LabelSpreading(kernel='knn', n_neighbors=10, alpha=0.2) on the same splits.")
    emit("2. Noise flags on digits, 10% of the given labels flipped", noise_table(seeds),
         "20 given labels per class (200), 20 flipped; flags = leave-one-out cuts (module docstring, decision 8). "
         "precision/recall over the given labels; accuracy on the unlabelled nodes under the noise.")
    emit("1b. Accuracy against α (edges between two unlabelled nodes scaled by α; §5.1, Fig 1)", alpha_table(seeds),
         "Same splits as table 1; the paper's Fig 1 (Mushroom, Mincut-δ) had its lowest error at α = 0.4.")
    emit("1c. Table 1 of the paper on Weka's diabetes (Pima), ionosphere and vote, each rule for nodes no label "
         "reaches", table1(seeds),
         "unreached: none = no label (counts as wrong), paper = the cut's own tie rule (negative class), nearest = "
         "the class of the nearest given label in feature space. The paper gives no repetition count, sampling or "
         "scaling (notes §4.2, §7); here random L+U draws with both classes in L, z-scored features.")
    table, reliability = calibration_tables(seeds)
    emit("3. Calibration of the confidence on digits", table,
         "10 given labels per class; mincut's defaults but noise='none'; confidence = the harmonic relaxation's "
         "calibrated probability of the exact cut's label (module docstring, decision 7); scored on unlabelled "
         "nodes with a label. `python -m bench calibration --solver mincut` measures it on six sets.")
    for letter, (graph, rel) in zip("bc", reliability.items()):
        emit(f"3{letter}. Reliability table, {graph} (pooled over splits)",
             rel.reset_index(names="bin"))
    has_nx = importlib.util.find_spec("networkx") is not None
    emit("4. One binary cut: PyMaxflow vs scipy maximum_flow and networkx (5k only)", timing_table(repeats),
         ("networkx's minimum_cut is timed on the 5k graph only. " if has_nx else
          "networkx is not installed in the venv, so the peer is scipy.sparse.csgraph.maximum_flow on "
          "integer-scaled capacities of the same graph (cut_value divided back by the scale; rounding makes "
          "it differ slightly). ")
         + "Two moons (noise 0.1), kNN-10 Gaussian graph (exact search), 10 seeds per class; times include "
         "building the flow network; same_side_as_BK = fraction of nodes on the same side of the two cuts.")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(out) + "\n")
    print(f"(written to {RESULTS})")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
