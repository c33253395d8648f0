"""Max-margin graph cuts (Kveton et al. 2010): digit pairs, noise and calibration, 100k timing.

`python -m bench maxmargin` (quick: 10 digit pairs, 2 repetitions, RBF-only timing) or
`python -m bench maxmargin --full` (all 45 pairs, 5 repetitions, three kernels).

1. Fig. 4 protocol on the 45 one-vs-one pairs of ``load_digits`` (the 1,797-image UCI
   optdigits test partition; the paper does not say which digit set it used): each pair
   is cut into random thirds (train / validation / test); 1, 2, 5, 10% of the training
   third is labelled (at least one per class); the validation third is capped at n_l points;
   γ ∈ {0.01, 0.0316, 0.1}·n_l (C = 1/(2γ)) and γ_g ∈ {10⁻³ … 10³} are chosen by validation
   error (ties: the first in grid order, γ_g ascending then γ ascending), ε = 10⁻⁶; the
   graph is the Gaussian 5-NN with width √K·σ on the training third. Test error of
   - SVM: libsvm on the labelled points only (γ tuned),
   - MR: manifold-regularised SVM (LapSVM) through the deformed kernel of Sindhwani,
     Niyogi & Belkin (2005), k̃ = k − k_xᵀ(I + MK)⁻¹M k_z with M = L/γ_g (γ_g = γ/γ_u, the
     paper's tie), then libsvm on the labelled points. No maintained LapSVM is installed;
     this is our own ~20-line bench-only implementation, not Belkin et al.'s MATLAB code,
   - GC: ``MaxMarginGraphCut`` (cv=0),
   - LabelSpreading: scikit-learn, RBF kernel of width √K·σ/√{1, 10, 100} and
     α ∈ {0.2, 0.8, 0.99}, tuned on the same validation points.
2. Ten-class digits, 10% of a training set of 1,200 labelled, 10% of those labels flipped:
   held-out error, noise precision / recall / F1 of the flags (peer: the harmonic solver's
   leave-one-out flags on the same graph), and the reliability table of the confidence on
   held-out digits.
3. One solve at 100k nodes (ten-class digit interpolations, 1% labelled): harmonic step and
   SVM fit timed separately (medians), next to the supervised SVM on the labelled points and,
   with --full, scikit-learn's LabelSpreading (5-NN kernel) on the same data.
"""

from __future__ import annotations

import argparse
import time
import warnings
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.sparse import csgraph
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel
from sklearn.semi_supervised import LabelSpreading
from sklearn.svm import SVC

from labelling.evaluation import expected_calibration_error, noise_scores, reliability_table
from labelling.sampling import flip_labels, keep_per_class
from similarity.knn import knn_graph
from solvers.harmonic import harmonic
from solvers.maxmargin import MaxMarginGraphCut, induce_labels, paper_bandwidth
from solvers.problem import LabelProblem

from ._common import machine, markdown_table

RESULTS = Path(__file__).parent / "results" / "maxmargin.md"
FRACTIONS = (0.01, 0.02, 0.05, 0.10)
GAMMA_G = tuple(10.0**p for p in range(-3, 4))
GAMMA_FACTORS = (0.01, 0.0316, 0.1)
KERNELS = ("linear", "cubic", "rbf")
LS_GRID = tuple((alpha, scale) for alpha in (0.2, 0.8, 0.99) for scale in (1.0, 10.0, 100.0))
# Figure 4, digit recognition rows (test error %), for reference.
PAPER = pd.DataFrame(
    [[7.06, 9.59, 6.88, 9.62, 5.29, 8.55, 8.22, 6.36, 7.65],
     [4.87, 7.97, 4.60, 6.06, 5.06, 5.09, 6.17, 4.21, 5.61],
     [2.97, 3.68, 2.29, 3.04, 2.27, 2.36, 2.74, 2.29, 2.19],
     [1.70, 2.86, 1.59, 1.87, 1.60, 1.74, 1.68, 1.75, 1.35]],
    index=[f"{int(f * 100)}%" for f in FRACTIONS],
    columns=[f"{k} {m}" for k in KERNELS for m in ("SVM", "MR", "GC")])



def paper_graph(X):
    return knn_graph(X, 5, weights="gaussian", sigma=paper_bandwidth(X))


def _gram(kernel: str, A, B, width: float):
    if kernel == "linear":
        return A @ B.T
    if kernel == "cubic":
        return polynomial_kernel(A, B, degree=3, gamma=1.0 / width**2, coef0=1.0)
    return rbf_kernel(A, B, gamma=1.0 / (2.0 * width**2))


def _svc(kernel: str, C: float, width: float) -> SVC:
    params = {"linear": dict(kernel="linear"),
              "cubic": dict(kernel="poly", degree=3, gamma=1.0 / width**2, coef0=1.0),
              "rbf": dict(kernel="rbf", gamma=1.0 / (2.0 * width**2))}[kernel]
    return SVC(C=C, **params)


def _deformed_grams(K_train, K_eval_train, L, gamma_g, lab):
    """LapSVM's deformed kernel (Sindhwani et al. 2005) between labelled and evaluated points."""
    n = K_train.shape[0]
    Z = np.linalg.solve(np.eye(n) + (L / gamma_g) @ K_train, L / gamma_g)  # (I + MK)⁻¹M
    K_ll = K_train[np.ix_(lab, lab)] - K_train[lab] @ Z @ K_train[:, lab]
    K_el = K_eval_train[:, lab] - K_eval_train @ Z @ K_train[:, lab]
    return K_ll, K_el


def _pick(val_err: np.ndarray, test_err: np.ndarray) -> float:
    """Test error of the first setting with the lowest validation error."""
    return float(test_err[int(np.argmin(val_err))])


def _one_pair(X, y, rng, fraction):
    """Test error (%) of every method on one random split of one binary problem."""
    thirds = np.array_split(rng.permutation(len(y)), 3)
    tr, va, te = thirds
    n_l = max(2, int(round(fraction * len(tr))))
    first = np.flatnonzero(keep_per_class(y[tr], 1, rng))  # one per class, then the rest
    rest = rng.choice(np.setdiff1d(np.arange(len(tr)), first), n_l - len(first), replace=False)
    lab = np.concatenate([first, rest])
    va = va[:n_l]
    Xtr, ytr = X[tr], y[tr]
    yg = np.full(len(tr), -1)
    yg[lab] = ytr[lab]
    W = paper_graph(Xtr)
    width = paper_bandwidth(Xtr)
    problem = LabelProblem(W, yg, X=Xtr)
    Cs = [1.0 / (2.0 * g * n_l) for g in GAMMA_FACTORS]
    Lap = csgraph.laplacian(W).toarray()
    out = {}
    for kernel in KERNELS:  # loops over kernels and the hyper-parameter grid, not nodes
        errs = {"SVM": [], "MR": [], "GC": []}
        for C in Cs:
            svm = _svc(kernel, C, width).fit(Xtr[lab], ytr[lab])
            errs["SVM"].append((np.mean(svm.predict(X[va]) != y[va]), np.mean(svm.predict(X[te]) != y[te])))
        K_train = _gram(kernel, Xtr, Xtr, width)
        K_eval = _gram(kernel, X[np.concatenate([va, te])], Xtr, width)
        for gamma_g in GAMMA_G:
            K_ll, K_el = _deformed_grams(K_train, K_eval, Lap, gamma_g, lab)
            for C in Cs:
                mr = SVC(kernel="precomputed", C=C).fit(K_ll, ytr[lab])
                pred = mr.predict(K_el)
                errs["MR"].append((np.mean(pred[: len(va)] != y[va]), np.mean(pred[len(va):] != y[te])))
                gc = MaxMarginGraphCut(gamma_g=gamma_g, kernel=kernel, C=C, cv=0, bandwidth=width)
                gc.fit(problem)
                errs["GC"].append((np.mean(gc.predict(X[va]) != y[va]), np.mean(gc.predict(X[te]) != y[te])))
        for method, pairs in errs.items():
            v, t = np.array(pairs).T
            out[f"{kernel} {method}"] = 100 * _pick(v, t)
    ls_errs = []
    for alpha, scale in LS_GRID:  # RBF: the 5-NN kernel leaves unreached test points NaN
        ls = LabelSpreading(kernel="rbf", gamma=scale / (2.0 * width**2), alpha=alpha, max_iter=1000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ls.fit(Xtr, yg)
        ls_errs.append((np.mean(ls.predict(X[va]) != y[va]), np.mean(ls.predict(X[te]) != y[te])))
    v, t = np.array(ls_errs).T
    out["LabelSpreading"] = 100 * _pick(v, t)
    return out


def digit_pairs(n_pairs: int, reps: int, seed: int) -> tuple[pd.DataFrame, float]:
    X, y = load_digits(return_X_y=True)
    pairs = list(combinations(range(10), 2))
    chosen = [pairs[i] for i in np.random.default_rng(seed).permutation(len(pairs))[:n_pairs]]
    rows = []
    start = time.perf_counter()
    for p, (a, b) in enumerate(chosen):
        keep = (y == a) | (y == b)
        Xp, yp = X[keep], (y[keep] == b).astype(np.int64)
        for fraction in FRACTIONS:
            for rep in range(reps):
                rng = np.random.default_rng([seed, p, rep, int(fraction * 100)])
                rows.append({"L": f"{int(fraction * 100)}%", **_one_pair(Xp, yp, rng, fraction)})
    table = pd.DataFrame(rows).groupby("L", sort=False).mean()
    return table, time.perf_counter() - start


def _noise_run(X, y, X_test, y_test, W, rng, flip: float):
    given = np.zeros(len(y), dtype=bool)
    given[rng.choice(len(y), int(0.1 * len(y)), replace=False)] = True
    noisy_y, flipped = flip_labels(y, given, flip, 10, rng)
    problem = LabelProblem(W, np.where(given, noisy_y, -1), n_classes=10, X=X)
    rows, reliab = [], None
    for threshold in (0.5, 0.7, 0.9):
        for drop in (True, False):
            model = MaxMarginGraphCut(gamma_g=0.1, C=10.0, noise_threshold=threshold, drop_noisy=drop)
            model.fit(problem)
            labels = model.predict(X_test)
            conf = model.predict_proba(X_test)[np.arange(len(labels)), labels]
            ns = noise_scores(model.noisy_[given], flipped[given])
            rows.append({"method": f"maxmargin thr={threshold} drop={drop}",
                         "test error %": 100 * np.mean(labels != y_test),
                         "ECE": expected_calibration_error(conf, labels == y_test),
                         **{k: ns[k] for k in ("flagged", "caught", "precision", "recall", "f1")}})
            if threshold == 0.5 and not drop:  # the defaults
                reliab = (conf, labels == y_test)
    raw = MaxMarginGraphCut(gamma_g=0.1, C=10.0, cv=0).fit(problem)
    labels = raw.predict(X_test)
    conf = raw.predict_proba(X_test)[np.arange(len(labels)), labels]
    rows.append({"method": "maxmargin cv=0 (uncalibrated, no flags)",
                 "test error %": 100 * np.mean(labels != y_test),
                 "ECE": expected_calibration_error(conf, labels == y_test)})
    peer = harmonic(problem, gamma_g=0.1)
    ns = noise_scores(peer.noisy[given], flipped[given])
    unl = ~given
    rows.append({"method": "peer: harmonic (graph nodes, not new vectors)",
                 "test error %": 100 * np.mean(peer.labels[unl] != y[unl]),
                 "ECE": expected_calibration_error(peer.confidence[unl], peer.labels[unl] == y[unl]),
                 **{k: ns[k] for k in ("flagged", "caught", "precision", "recall", "f1")}})
    return rows, reliab


def noise_and_calibration(reps: int, seed: int):
    X, y = load_digits(return_X_y=True)
    out = {}
    for flip in (0.0, 0.1):
        rows, confs, corrects = [], [], []
        for rep in range(reps):
            rng = np.random.default_rng([seed, rep, 7])
            perm = rng.permutation(len(y))
            tr, te = perm[:1200], perm[1200:]
            r, (c, ok) = _noise_run(X[tr], y[tr], X[te], y[te], paper_graph(X[tr]), rng, flip)
            rows += r
            confs.append(c)
            corrects.append(ok)
        table = pd.DataFrame(rows).groupby("method", sort=False).mean()
        out[flip] = (table, reliability_table(np.concatenate(confs), np.concatenate(corrects)))
    return out


def _interpolated_digits(n: int, rng):
    """Convex combinations of two same-class digits plus noise: a connected manifold per class."""
    X0, y0 = load_digits(return_X_y=True)
    idx = rng.integers(0, len(y0), n)
    y = y0[idx]
    order = np.argsort(y0, kind="stable")
    start = np.searchsorted(y0[order], y)
    mate = order[start + (rng.random(n) * np.bincount(y0)[y]).astype(int)]
    a = rng.random(n)[:, None]
    return a * X0[idx] + (1 - a) * X0[mate] + rng.normal(0.0, 0.5, (n, X0.shape[1])), y


def _median_time(fn, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), result


def timing(n: int, kernels, repeats: int, with_ls: bool, seed: int):
    rng = np.random.default_rng([seed, 100])
    X, y = _interpolated_digits(n + 2000, rng)
    X, y, X_new, y_new = X[:n], y[:n], X[n:], y[n:]
    start = time.perf_counter()
    W = paper_graph(X)
    graph_seconds = time.perf_counter() - start
    given = np.zeros(n, dtype=bool)
    given[rng.choice(n, n // 100, replace=False)] = True
    yg = np.where(given, y, -1)
    problem = LabelProblem(W, yg, n_classes=10, X=X)
    width = paper_bandwidth(X)
    rows = []
    t_h, (induced, _) = _median_time(lambda: induce_labels(W, yg, 10, gamma_g=1.0), repeats)
    rows.append({"step": "harmonic (L_uu + γ_g I) F = W_ul Y_l, 10 RHS (AMG-CG above 50k unknowns)",
                 "seconds (median)": t_h,
                 "points": n, "test error % (2,000 new vectors)": np.nan})
    train = induced >= 0
    for kernel in kernels:
        t_s, svm = _median_time(lambda: _svc(kernel, 1.0, width).fit(X[train], induced[train]), repeats)
        rows.append({"step": f"GC SVM fit ({kernel}) on induced labels", "seconds (median)": t_s,
                     "points": int(train.sum()),
                     "test error % (2,000 new vectors)": 100 * np.mean(svm.predict(X_new) != y_new)})
        t_p, sup = _median_time(lambda: _svc(kernel, 1.0, width).fit(X[given], y[given]), repeats)
        rows.append({"step": f"peer: supervised SVM ({kernel}) on labelled only", "seconds (median)": t_p,
                     "points": int(given.sum()),
                     "test error % (2,000 new vectors)": 100 * np.mean(sup.predict(X_new) != y_new)})
    if with_ls:
        t_f, model = _median_time(lambda: MaxMarginGraphCut(gamma_g=1.0, kernel="rbf", cv=0).fit(problem), 1)
        rows.append({"step": "MaxMarginGraphCut.fit (rbf, cv=0), end to end, once", "seconds (median)": t_f,
                     "points": n, "test error % (2,000 new vectors)": 100 * np.mean(model.predict(X_new) != y_new)})
        with warnings.catch_warnings():  # 5-NN LabelSpreading: unreached points divide 0 by 0
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            t_l, ls = _median_time(lambda: LabelSpreading(kernel="knn", n_neighbors=5, max_iter=100).fit(X, yg), 1)
            ls_error = 100 * np.mean(ls.predict(X_new) != y_new)
        rows.append({"step": "peer: sklearn LabelSpreading (knn 5, own kNN search), once",
                     "seconds (median)": t_l, "points": n, "test error % (2,000 new vectors)": ls_error})
    return pd.DataFrame(rows).set_index("step"), graph_seconds, W.nnz


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench maxmargin")
    parser.add_argument("--full", action="store_true", help="all 45 pairs, 5 repetitions, 3 kernels")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--nodes", type=int, default=100_000)
    args = parser.parse_args(argv)
    n_pairs, reps, noise_reps = (45, 5, 5) if args.full else (10, 2, 2)
    kernels = KERNELS if args.full else ("rbf",)
    timing_repeats = 3 if args.full else 2
    out: list[str] = []

    def emit(lines):
        for line in lines:
            print(line, flush=True)
        out.extend(lines)

    emit([f"# Max-margin graph cuts ({'full' if args.full else 'quick'})", "",
          f"machine: {machine()}", ""])

    table, seconds = digit_pairs(n_pairs, reps, args.seed)
    cols = [f"{k} {m}" for k in KERNELS for m in ("SVM", "MR", "GC")]
    gc_svm = int(sum((table[f"{k} GC"] < table[f"{k} SVM"]).sum() for k in KERNELS))
    gc_mr = int(sum((table[f"{k} GC"] < table[f"{k} MR"]).sum() for k in KERNELS))
    gc_ls = int(sum((table[f"{k} GC"] < table["LabelSpreading"]).sum() for k in KERNELS))
    emit([f"## Digit pairs: test error % ({n_pairs} of 45 pairs x {reps} repetitions, load_digits thirds)", "",
          markdown_table(table[cols + ["LabelSpreading"]], ".2f", index=True), "",
          f"GC below SVM in {gc_svm}/12 cells, below MR in {gc_mr}/12, below LabelSpreading in {gc_ls}/12 "
          f"({seconds:.0f} s). MR = our deformed-kernel LapSVM (bench only).", "",
          "Paper, Figure 4, digit recognition (UCI digits, not load_digits):", "",
          markdown_table(PAPER, ".2f", index=True), ""])

    for flip, (tbl, reliab) in noise_and_calibration(noise_reps, args.seed).items():
        emit([f"## Ten-class digits, 10% of 1,200 labelled, {int(flip * 100)}% of labels flipped "
              f"(mean of {noise_reps} splits; errors on the 597 held-out digits; γ_g = 0.1, C = 10, RBF)", "",
              markdown_table(tbl, index=True), "",
              "Reliability of the confidence on held-out digits (defaults: thr=0.5, drop=False; pooled):", "",
              markdown_table(reliab, index=True), ""])

    tbl, graph_seconds, nnz = timing(args.nodes, kernels, timing_repeats, args.full, args.seed)
    emit([f"## One solve at {args.nodes:,} nodes (digit interpolations, 10 classes, 1% labelled, γ_g = 1, C = 1; "
          f"medians of {timing_repeats})", "",
          f"5-NN graph (faiss HNSW above 50k nodes): {graph_seconds:.1f} s, {nnz:,} stored weights"
          " (not part of the solve).", "",
          markdown_table(tbl, index=True), ""])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(out) + "\n")
    print(f"wrote {RESULTS}")
