"""Spectral graph transducer (Joachims 2003): digits protocol, k criterion, calibration, scale.

`python -m bench spectral` (quick) or `python -m bench spectral --full`.

1. Optdigits (sklearn's load_digits, the paper's 1797×64) with the paper's protocol: ten
   one-vs-rest tasks, l = 10 stratified (round(10·fraction), at least one positive), 100
   samples per task in --full (20 quick), macro PRBEP on the test nodes; k = 10, d = 80,
   c = 3200. Peer: similarity-weighted cosine kNN on the labelled nodes, with its k chosen
   on the test set (the paper's "unfair advantage"). All four Laplacian variants.
2. The paper's unsupervised k criterion (average normalised objective) against PRBEP.
3. Multi-class digits (10 labels per class), confidence calibrated by leave-one-out
   Platt scaling against the raw margin gap: reliability tables and ECE.
4. Scale: the eigen step at 10k and 100k nodes (1M in --full) and one solve at 100k, on
   "digits-like" data (convex mixes of two same-class digits plus noise, cosine 10-NN,
   exact search up to 50k nodes, faiss HNSW above); the three sparse eigensolvers are
   each other's peers, the kNN scoring is the solve's peer.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_digits

from labelling.evaluation import expected_calibration_error, reliability_table
from labelling.sampling import keep_per_class
from similarity.knn import nearest_neighbors
from solvers.problem import LabelProblem
from solvers.spectral import graph_spectrum, select_k, sgt_graph, spectral

from ._common import machine, median_time

RESULTS = Path(__file__).parent / "results" / "spectral.md"
EIGEN_PEERS = ("lanczos", "arpack", "lobpcg")


def _out(lines: list[str], text: str = "") -> None:
    print(text, flush=True)
    lines.append(text)


def _table(lines, header, rows):
    _out(lines, "| " + " | ".join(header) + " |")
    _out(lines, "|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        _out(lines, "| " + " | ".join(str(x) for x in r) + " |")
    _out(lines)


def cosine_knn_graph(X: np.ndarray, k: int, backend: str = "auto") -> sp.csr_matrix:
    """The SGT's graph: directed cosine kNN, rows scaled to 1, A = A' + A'ᵀ (eq. 22)."""
    idx, dist = nearest_neighbors(X, k, "cosine", backend)
    n = len(X)
    S = sp.csr_matrix(((1.0 - dist).ravel(), (np.repeat(np.arange(n), k), idx.ravel())), shape=(n, n))
    return sgt_graph(S, k=k)


def digits_like(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n synthetic digits: t·x_a + (1−t)·x_b for two digits of one class, plus N(0, 1) noise."""
    X0, y0 = load_digits(return_X_y=True)
    rng = np.random.default_rng(seed)
    a = rng.integers(0, len(X0), n)
    order = np.argsort(y0, kind="stable")
    start = np.searchsorted(y0[order], np.arange(10))
    count = np.bincount(y0)
    b = order[start[y0[a]] + (rng.random(n) * count[y0[a]]).astype(int)]
    t = rng.random(n)[:, None]
    X = t * X0[a] + (1 - t) * X0[b] + rng.normal(0.0, 1.0, (n, X0.shape[1]))
    return np.clip(X, 0.0, None), y0[a]


def prbep(score: np.ndarray, truth: np.ndarray) -> float:
    """Precision at rank R = #positives (= recall there): the break-even point."""
    order = np.argsort(-score, kind="stable")
    return float(truth[order[: truth.sum()]].mean())


def binary_samples(y, cls, l, n_samples, rng):
    """The paper's stratified samples: round(l·fraction) positives (at least one)."""
    pos_all, neg_all = np.flatnonzero(y == cls), np.flatnonzero(y != cls)
    n_pos = max(1, int(round(l * len(pos_all) / len(y))))
    for _ in range(n_samples):
        yield rng.choice(pos_all, n_pos, replace=False), rng.choice(neg_all, l - n_pos, replace=False)


def knn_scores(Z_test, Z_labeled, signs, ks):
    """Similarity-weighted kNN vote Σ y_j·cos(x, x_j) over the k most similar labelled nodes."""
    sim = Z_test @ Z_labeled.T
    order = np.argsort(-sim, axis=1)
    sorted_sim = np.take_along_axis(sim, order, axis=1)
    votes = sorted_sim * signs[order]
    return {k: votes[:, :k].sum(axis=1) for k in ks}


def digits_protocol(lines, n_samples, seed=0):
    X, y = load_digits(return_X_y=True)
    n = len(y)
    t0 = time.perf_counter()
    A = cosine_knn_graph(X, 10, "exact")
    t_graph = time.perf_counter() - t0
    Z = X / np.linalg.norm(X, axis=1, keepdims=True)
    knn_ks = (1, 3, 5, 7, 9)
    variants = ("rw", "rw_unit", "sym", "unnormalized")
    spectra = {}
    eig_times = {}
    for lap in variants:
        t0 = time.perf_counter()
        spectra[lap] = graph_spectrum(A, 80, laplacian=lap)
        eig_times[lap] = time.perf_counter() - t0
    res = {lap: np.zeros((10, n_samples)) for lap in variants}
    knn = {k: np.zeros((10, n_samples)) for k in knn_ks}
    solve_times, knn_times = [], []
    rng = np.random.default_rng(seed)
    for cls in range(10):  # loops over tasks and samples
        for s, (pos, neg) in enumerate(binary_samples(y, cls, 10, n_samples, rng)):
            yy = np.full(n, -1)
            yy[pos], yy[neg] = 1, 0
            problem = LabelProblem(A, yy)
            test = yy < 0
            truth = y[test] == cls
            for lap in variants:
                t0 = time.perf_counter()
                pred = spectral(problem, spectrum=spectra[lap], calibration="none", check_spectrum=False)
                if lap == "rw":
                    solve_times.append(time.perf_counter() - t0)
                res[lap][cls, s] = prbep(pred.scores[test, 1], truth)
            lab = np.concatenate([pos, neg])
            signs = np.concatenate([np.ones(len(pos)), -np.ones(len(neg))])
            t0 = time.perf_counter()
            scores = knn_scores(Z[test], Z[lab], signs, knn_ks)
            knn_times.append(time.perf_counter() - t0)
            for k in knn_ks:
                knn[k][cls, s] = prbep(scores[k], truth)
    best_k = max(knn_ks, key=lambda k: knn[k].mean())
    _out(lines, f"### Optdigits (load_digits, n={n}), l=10 per one-vs-rest task, {n_samples} samples per task")
    _out(lines, f"graph: cosine 10-NN, eq. 22, built in {t_graph:.2f} s; d=80, c=3200;"
                " macro PRBEP (%) ± s.e. over samples")
    _out(lines)
    rows = []
    for lap in variants:
        m = res[lap].mean(axis=1)
        se = res[lap].std(ddof=1) / np.sqrt(res[lap].size)
        rows.append([f"SGT {lap}", f"{100 * m.mean():.1f} ± {100 * se:.1f}", f"{eig_times[lap]:.2f}"])
    se = knn[best_k].std(ddof=1) / np.sqrt(knn[best_k].size)
    rows.append([f"kNN (k={best_k}, chosen on test)", f"{100 * knn[best_k].mean():.1f} ± {100 * se:.1f}", "-"])
    rows.append(["paper: SGT / kNN", "83.4 / 62.4", "-"])
    _table(lines, ["method", "macro PRBEP", "eigen step (s)"], rows)
    per = [[c, f"{100 * res['rw'][c].mean():.1f}", f"{100 * knn[best_k][c].mean():.1f}"] for c in range(10)]
    _out(lines, "Per task (SGT rw vs kNN):")
    _table(lines, ["digit", "SGT", "kNN"], per)
    wins = int(np.sum(res["rw"].mean(axis=1) > knn[best_k].mean(axis=1)))
    _out(lines, f"SGT beats kNN on {wins}/10 tasks (paper: all).")
    _out(
        lines,
        f"median time of one binary solve (rw, n=1797): {1e3 * statistics.median(solve_times):.2f} ms; "
        f"peer kNN scoring: {1e3 * statistics.median(knn_times):.2f} ms",
    )
    _out(lines)


def k_criterion(lines, n_samples, seed=1):
    X, y = load_digits(return_X_y=True)
    n = len(y)
    ks = (3, 5, 10, 20, 50, 100)
    graphs = {k: cosine_knn_graph(X, k, "exact") for k in ks}
    spectra = {k: graph_spectrum(graphs[k], 80) for k in ks}
    rng = np.random.default_rng(seed)
    label_sets = []
    for cls in range(10):
        for pos, neg in binary_samples(y, cls, 10, n_samples, rng):
            yy = np.full(n, -1)
            yy[pos], yy[neg] = 1, 0
            label_sets.append((cls, yy))
    chosen, avg = select_k(spectra, [yy for _, yy in label_sets])
    rows = []
    for k in ks:
        pr = []
        for cls, yy in label_sets:
            problem = LabelProblem(graphs[k], yy)
            pred = spectral(problem, spectrum=spectra[k], calibration="none", check_spectrum=False)
            test = yy < 0
            pr.append(prbep(pred.scores[test, 1], y[test] == cls))
        rows.append([k, f"{avg[k]:.4f}", f"{100 * np.mean(pr):.1f}"])
    _out(lines, f"### k by the paper's criterion (digits, {n_samples} samples per task, d=80, c=3200)")
    _out(lines, "average normalised objective o_ik / min_k o_ik (eq. 19 at the solution); the paper picks k=10")
    _out(lines)
    _table(lines, ["k", "avg normalised objective", "macro PRBEP"], rows)
    best_k = rows[int(np.argmax([float(r[2]) for r in rows]))][0]
    _out(lines, f"criterion picks k = {chosen}; best PRBEP at k = {best_k}")
    _out(lines)


def calibration(lines, n_repeats, seed=2):
    X, y = load_digits(return_X_y=True)
    A = cosine_knn_graph(X, 10, "exact")
    spec = graph_spectrum(A, 80)
    rng = np.random.default_rng(seed)
    conf = {"loo": [], "none": []}
    correct = []
    accs = []
    for _ in range(n_repeats):
        given = keep_per_class(y, 10, rng)
        yy = np.where(given, y, -1)
        test = ~given
        for cal in conf:
            pred = spectral(LabelProblem(A, yy), spectrum=spec, calibration=cal, check_spectrum=False)
            conf[cal].append(pred.confidence[test])
        correct.append(pred.labels[test] == y[test])
        accs.append(correct[-1].mean())
    correct = np.concatenate(correct)
    _out(lines, f"### Confidence, multi-class digits, 10 labels per class, {n_repeats} repeats (test nodes pooled)")
    _out(lines, f"accuracy {100 * np.mean(accs):.1f}%")
    _out(lines)
    for cal, name in (("loo", "leave-one-out Platt (default)"), ("none", "raw margin gap min(gap, 1)")):
        c = np.concatenate(conf[cal])
        tab = reliability_table(c, correct)
        _out(lines, f"{name}: ECE = {expected_calibration_error(c, correct):.3f}")
        _out(lines)
        _table(
            lines,
            ["bin", "count", "mean confidence", "accuracy"],
            [[i, int(r["count"]), f"{r['mean_confidence']:.3f}", f"{r['accuracy']:.3f}"] for i, r in tab.iterrows()],
        )


def scale(lines, sizes, methods_at, repeats, d_at=None):
    rows = []
    solve_rows = []
    for n in sizes:
        X, y = digits_like(n)
        t0 = time.perf_counter()
        A = cosine_knn_graph(X, 10)
        t_graph = time.perf_counter() - t0
        specs = {}
        d = (d_at or {}).get(n, 80)
        for method in methods_at[n]:
            reps = repeats if n <= 10_000 else 1
            try:
                t, spec = median_time(lambda: graph_spectrum(A, d, eigen_method=method), reps)
            except MemoryError as err:  # pragma: no cover - reported, not hidden
                rows.append([n, A.nnz, f"{t_graph:.1f}", method, d, f"failed: {err}", "-", "-"])
                continue
            specs[method] = spec
            rows.append([n, A.nnz, f"{t_graph:.1f}", method, d, f"{t:.1f}", reps, f"{spec.eigenvalues[-1]:.3e}"])
            _out(lines, f"  (n={n} {method}: {t:.1f} s)")
        if n == 100_000 and specs:
            spec = specs.get("lanczos", next(iter(specs.values())))  # the solver "auto" picks here
            rng = np.random.default_rng(0)
            given = keep_per_class(y, 10, rng)
            yy = np.where(given, y, -1)
            problem = LabelProblem(A, yy)
            t_none, _ = median_time(lambda: spectral(problem, spectrum=spec, calibration="none"), 5)
            t_nochk, _ = median_time(
                lambda: spectral(problem, spectrum=spec, calibration="none", check_spectrum=False), 5)
            t_loo, pred = median_time(lambda: spectral(problem, spectrum=spec), 3)
            Z = X / np.linalg.norm(X, axis=1, keepdims=True)
            lab = np.flatnonzero(given)
            t_knn, _ = median_time(lambda: np.argmax(Z @ Z[lab].T, axis=1), 5)
            acc = np.mean(pred.labels[~given] == y[~given])
            solve_rows += [
                ["SGT solve, 10 classes, l=100 (fingerprint check on)", f"{t_none:.3f}"],
                ["SGT solve, fingerprint check off", f"{t_nochk:.3f}"],
                ["SGT solve + leave-one-out calibration", f"{t_loo:.3f}"],
                ["peer: 1-NN scoring to the labelled nodes (dense)", f"{t_knn:.3f}"],
            ]
            solve_acc = acc
    _out(lines, "### Eigen step (d non-trivial eigenpairs of the rw Laplacian), digits-like data, cosine 10-NN")
    _out(lines)
    _table(lines, ["n", "nnz(A)", "graph (s)", "eigensolver", "d", "eigen step (s, median)", "repeats", "λ_{d+1}"],
           rows)
    if solve_rows:
        _out(lines, f"### One solve at n=100000 (median seconds; test accuracy {100 * solve_acc:.1f}%)")
        _out(lines)
        _table(lines, ["step", "seconds"], solve_rows)


SECTIONS = ("digits", "k", "calibration", "scale")


def main(argv: list[str]) -> None:
    """``--full``: paper-size runs; ``--only=digits,k,calibration,scale``: a subset."""
    full = "--full" in argv
    only = set(SECTIONS)
    for arg in argv:
        if arg.startswith("--only="):
            only = set(arg.split("=", 1)[1].split(","))
            if not only <= set(SECTIONS):
                raise SystemExit(f"--only takes a subset of {SECTIONS}, got {sorted(only)}")
        elif arg != "--full":
            raise SystemExit(f"unknown argument {arg!r}; use --full and/or --only=...")
    lines: list[str] = []
    sections = ", ".join(s for s in SECTIONS if s in only)
    _out(lines, f"## bench spectral ({'full' if full else 'quick'}; sections: {sections})")
    _out(lines, f"machine: {machine()}; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    _out(lines)
    if "digits" in only:
        digits_protocol(lines, 100 if full else 20)
    if "k" in only:
        k_criterion(lines, 20 if full else 5)
    if "calibration" in only:
        calibration(lines, 10 if full else 3)
    if "scale" not in only:
        pass
    elif full:
        sizes = (10_000, 100_000, 1_000_000)
        methods_at = {10_000: EIGEN_PEERS, 100_000: EIGEN_PEERS, 1_000_000: ("lanczos",)}
        # d = 80 at 1M nodes does not fit in the time of a bench run on 2 cores; d = 10 does.
        scale(lines, sizes, methods_at, 3, d_at={1_000_000: 10})
    else:
        sizes = (10_000, 100_000)
        methods_at = {10_000: EIGEN_PEERS, 100_000: ("lanczos",)}
        scale(lines, sizes, methods_at, 2)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    # A run of every section writes bench/results/spectral.md; a subset its own file.
    subset = "" if only == set(SECTIONS) else "-" + "-".join(s for s in SECTIONS if s in only)
    path = RESULTS.with_name(f"spectral{subset}{'-full' if full and subset else ''}.md")
    path.write_text("\n".join(lines) + "\n")
    print(f"(written to {path})")
