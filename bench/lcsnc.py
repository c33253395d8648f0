"""LC-SNC benchmark.

1. WDBC under the paper's protocol (Nitayanont 2022, section 5): 60/40 stratified
   labelled/unlabelled split, per-class flips of 0/10/20/30% of the labelled part, several
   splits; SNC and LC-c / LC-lm / LC-knn / LC-ens tuned by 5-fold stratified CV on the
   labelled nodes (grid of Table 2, scored by accuracy), on the paper's FI-weighted symmetric
   kNN graph; the search evaluates 15 random (k, eps, c) draws x the 4 lambdas of one
   parametric sweep = the paper's 60 candidates (``--n-iter 0``: full grid). Accuracy, balanced
   accuracy and F1 (positive = benign, target 1) on the
   unlabelled part, noise precision / recall / F1 on the labelled part, side by side with the
   paper's WDBC rows (dataset 15 of Tables 10, 11, 17, 20) and with
   ``cleanlab.filter.find_label_issues`` (out-of-fold logistic-regression probabilities)
   on the same splits.
2. One full parametric lambda sweep (the 8 signed lambdas of the class-balance grid) of an
   LC-SNC cut on kNN graphs up to 100k nodes: pseudoflow (one parametric run) against
   PyMaxflow (one max flow per lambda), median of repeats, same cuts checked.

``python -m bench lcsnc`` (quick: 2 splits x 1 corruption, sweep sizes 569 and 10k) or
``--full`` (8 splits x 5 corruptions, 8 runs at 0% as in the paper; sizes 569, 10k, 30k,
100k). ``--splits``, ``--corruptions``, ``--sizes`` and ``--repeats`` override.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ._common import machine

NOISE_LEVELS = (0.0, 0.1, 0.2, 0.3)
MODELS = ("SNC", "LC-c", "LC-lm", "LC-knn", "LC-ens")
MEMBER_NAME = {"constant": "LC-c", "local_mean": "LC-lm", "knn": "LC-knn"}

# Dataset 15 (wdbc) of the paper, in %; only the 0% and 20% noise levels are published.
PAPER = {
    ("accuracy", 0.0): dict(zip(MODELS, (94.94, 95.87, 95.42, 95.52, 95.74))),
    ("accuracy", 0.2): dict(zip(MODELS, (94.23, 94.61, 94.72, 94.69, 94.98))),
    ("balanced accuracy", 0.0): dict(zip(MODELS, (93.80, 94.71, 94.81, 94.24, 94.63))),
    ("balanced accuracy", 0.2): dict(zip(MODELS, (92.70, 93.59, 93.10, 93.53, 93.85))),
    ("F1", 0.0): dict(zip(MODELS, (96.02, 96.77, 96.46, 96.60, 96.71))),
    ("F1", 0.2): dict(zip(MODELS, (95.39, 95.73, 95.93, 95.87, 95.92))),
}
# Table 17, wdbc row: (precision, recall, F1); models tuned for balanced accuracy, noise
# level not stated in the paper.
PAPER_NOISE = {"LC-c": (0.63, 0.43, 0.47), "LC-lm": (0.91, 0.81, 0.84),
               "LC-knn": (0.95, 0.60, 0.67), "LC-ens": (0.95, 0.64, 0.72)}

RESULTS = Path(__file__).parent / "results" / "lcsnc.md"


def _metrics(truth, pred):
    accuracy = np.mean(pred == truth)
    recalls = [np.mean(pred[truth == c] == c) for c in (0, 1)]
    tp = np.sum((pred == 1) & (truth == 1))
    precision = tp / max(1, np.sum(pred == 1))
    recall = recalls[1]
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return 100 * accuracy, 100 * np.mean(recalls), 100 * f1


def _wdbc_runs(n_splits, n_corruptions, scoring, n_iter):
    from cleanlab.filter import find_label_issues
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict, train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from labelling.evaluation import noise_scores
    from labelling.sampling import flip_labels_per_class
    from solvers.problem import LabelProblem
    from solvers.registry import solve

    X, y = load_breast_cancer(return_X_y=True)
    n = len(y)
    rows = []
    for split in range(n_splits):  # loops over runs, not nodes
        lab, _ = train_test_split(np.arange(n), train_size=0.6, stratify=y, random_state=split)
        given = np.zeros(n, dtype=bool)
        given[lab] = True
        test = ~given
        for noise in NOISE_LEVELS:
            for corruption in range(1 if noise == 0 else n_corruptions):
                rng = np.random.default_rng([split, corruption, int(round(100 * noise))])
                y_noisy, flipped = flip_labels_per_class(y, given, noise, rng)
                y_obs = np.where(given, y_noisy, -1)
                # The graph is built inside the solver from X (graph="knn"), so W is empty.
                problem = LabelProblem(sp.csr_matrix((n, n)), y_obs, X=X)
                run = {"split": split, "corruption": corruption, "noise": noise}

                def record(model, labels, noisy, seconds, extra=None):
                    acc, bal, f1 = _metrics(y[test], labels[test])
                    ns = noise_scores(noisy[given], flipped[given])
                    rows.append({**run, "model": model, "accuracy": acc, "balanced accuracy": bal,
                                 "F1": f1, "noise precision": ns["precision"],
                                 "noise recall": ns["recall"], "noise F1": ns["f1"],
                                 "flagged": ns["flagged"], "seconds": seconds, **(extra or {})})

                t = time.perf_counter()
                snc = solve(problem, "lcsnc", variant="snc", graph="knn", scoring=scoring, n_iter=n_iter,
                            random_state=split)
                record("SNC", snc.labels, snc.noisy, time.perf_counter() - t)
                t = time.perf_counter()
                ens = solve(problem, "lcsnc", confidence="ensemble", graph="knn", scoring=scoring,
                            n_iter=n_iter, random_state=split)
                seconds = time.perf_counter() - t
                for name, member in ens.info["members"].items():
                    record(MEMBER_NAME[name], member["labels"], member["noisy"], seconds / 3,
                           {f"chosen {key}": val for key, val in member["chosen"].items()})
                record("LC-ens", ens.labels, ens.noisy, seconds)

                # Peer: confident learning on out-of-fold probabilities of the same labels.
                t = time.perf_counter()
                model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
                probs = cross_val_predict(model, X[given], y_obs[given], cv=5, method="predict_proba")
                issues = np.zeros(n, dtype=bool)
                issues[np.flatnonzero(given)] = find_label_issues(y_obs[given], probs)
                keep = given & ~issues
                clean_pred = model.fit(X[keep], y_obs[keep]).predict(X)
                record("cleanlab + LR", clean_pred, issues, time.perf_counter() - t)
                noisy_pred = model.fit(X[given], y_obs[given]).predict(X)
                record("LR (noisy labels)", noisy_pred, np.zeros(n, dtype=bool), 0.0)
                print(f"  split {split} noise {noise:.0%} corruption {corruption}: "
                      f"SNC {rows[-7]['accuracy']:.2f} LC-ens {rows[-3]['accuracy']:.2f} "
                      f"({seconds:.1f}s ensemble)", flush=True)
    return pd.DataFrame(rows)


def _wdbc_tables(frame: pd.DataFrame) -> list[str]:
    order = list(MODELS) + ["cleanlab + LR", "LR (noisy labels)"]
    out = []
    for metric in ("accuracy", "balanced accuracy", "F1"):
        lines = [f"### WDBC {metric} (%) on the unlabelled 40%, mean ± std over runs (paper value in brackets)",
                 "", "| noise | runs | " + " | ".join(order) + " |", "|---" * (len(order) + 2) + "|"]
        for noise in NOISE_LEVELS:
            sub = frame[frame.noise == noise]
            cells = []
            for model in order:
                vals = sub[sub.model == model][metric]
                paper = PAPER.get((metric, noise), {}).get(model)
                cell = f"{vals.mean():.2f} ± {vals.std(ddof=0):.2f}"
                cells.append(cell + (f" [{paper:.2f}]" if paper is not None else ""))
            runs = sub[sub.model == "SNC"].shape[0]
            lines.append(f"| {noise:.0%} | {runs} | " + " | ".join(cells) + " |")
        out.append("\n".join(lines))
    noise_models = ["LC-c", "LC-lm", "LC-knn", "LC-ens", "cleanlab + LR"]
    lines = ["### WDBC noise flags on the labelled 60%: precision / recall / F1 (mean over runs)",
             "", "| noise | " + " | ".join(noise_models) + " |", "|---" * (len(noise_models) + 1) + "|"]
    for noise in NOISE_LEVELS[1:]:
        sub = frame[frame.noise == noise]
        cells = []
        for model in noise_models:
            m = sub[sub.model == model]
            precision, recall, f1 = (m[f"noise {what}"].mean() for what in ("precision", "recall", "F1"))
            cells.append(f"{precision:.2f} / {recall:.2f} / {f1:.2f}")
        lines.append(f"| {noise:.0%} | " + " | ".join(cells) + " |")
    lines.append("| paper (Table 17, wdbc, level not stated, tuned for bal. acc.) | "
                 + " | ".join("{:.2f} / {:.2f} / {:.2f}".format(*PAPER_NOISE[m]) if m in PAPER_NOISE else "-"
                              for m in noise_models) + " |")
    flagged = frame[frame.noise == 0].groupby("model")["flagged"].mean()
    lines.append("")
    lines.append("Mean number of given labels flagged at 0% noise (all false alarms): "
                 + ", ".join(f"{m} {flagged.get(m, float('nan')):.1f}" for m in noise_models))
    out.append("\n".join(lines))
    gap = []
    for noise in (0.0, 0.2):
        for model in MODELS[1:]:
            ours = frame[(frame.noise == noise) & (frame.model == model)]["accuracy"].mean()
            gap.append(f"{model}@{noise:.0%}: {ours - PAPER[('accuracy', noise)][model]:+.2f}")
    out.append("Accuracy minus the paper's (points): " + ", ".join(gap))
    seconds = frame.groupby("model")["seconds"].median()
    out.append("Median seconds per run (tuning included; LC members = ensemble time / 3): "
               + ", ".join(f"{m} {seconds[m]:.2f}" for m in order if m in seconds))
    chosen = frame[frame.model.isin(["LC-c", "LC-lm", "LC-knn"])]
    cols = [c for c in chosen.columns if c.startswith("chosen ")]
    if cols:
        summary = chosen.groupby("model")[cols].agg(lambda s: s.value_counts().index[0])
        lines = ["| model | " + " | ".join(c.replace("chosen ", "") for c in cols) + " |",
                 "|---" * (len(cols) + 1) + "|"]
        lines += [f"| {m} | " + " | ".join(f"{v:g}" for v in summary.loc[m]) + " |" for m in summary.index]
        out.append("Most often chosen hyperparameters (mode over runs):\n\n" + "\n".join(lines))
    return out


def _sweep_timing(sizes, repeats):
    from sklearn.datasets import make_classification

    from similarity.knn import knn_graph
    from solvers._parametric_cut import parametric_min_cut

    lams = np.array([-0.25, -0.0625, -0.015625, -0.00390625, 0.00390625, 0.015625, 0.0625, 0.25])
    shift = 0.25
    lines = ["### One parametric sweep (8 signed lambdas) of an LC-c cut on a kNN graph (k=10),"
             f" median of {repeats} repeats", "",
             "| nodes | graph arcs | graph build s | pseudoflow s | of which hpf_solve s | breakpoints"
             " | PyMaxflow 8 cuts s | pseudoflow / PyMaxflow | same cuts |",
             "|---|---|---|---|---|---|---|---|---|"]
    for n in sizes:  # loop over graph sizes
        X, y = make_classification(n, n_features=10, n_informative=6, class_sep=1.0, random_state=0)
        t = time.perf_counter()
        W = knn_graph(X, 10)
        build = time.perf_counter() - t
        d = np.asarray(W.sum(axis=1)).ravel()
        rng = np.random.default_rng(0)
        labeled = rng.random(n) < 0.6
        pos, neg, free = labeled & (y == 1), labeled & (y == 0), ~labeled
        args = (W, np.where(pos, 4.0, 0.0), np.where(free, d, 0.0),
                np.where(neg, 4.0, 0.0) + np.where(free, shift * d, 0.0), lams + shift)
        times = {"pseudoflow": [], "maxflow": []}
        cuts, infos = {}, {}
        for _ in range(repeats):
            for backend in ("pseudoflow", "maxflow"):
                t = time.perf_counter()
                cuts[backend], infos[backend] = parametric_min_cut(*args, backend=backend)
                times[backend].append(time.perf_counter() - t)
        pf, mf = np.median(times["pseudoflow"]), np.median(times["maxflow"])
        same = bool(np.array_equal(cuts["pseudoflow"], cuts["maxflow"]))
        inner = infos["pseudoflow"]["hpf_times"]["solve"]
        lines.append(f"| {n} | {W.nnz} | {build:.2f} | {pf:.3f} | {inner:.3f} | {infos['pseudoflow']['n_breakpoints']} "
                     f"| {mf:.3f} | {pf / mf:.2f} | {'yes' if same else 'NO'} |")
        print(lines[-1], flush=True)
    return ["\n".join(lines)]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench lcsnc")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--splits", type=int)
    parser.add_argument("--corruptions", type=int)
    parser.add_argument("--sizes", type=int, nargs="*")
    parser.add_argument("--repeats", type=int)
    parser.add_argument("--n-iter", type=int, default=15,
                        help="random (k, eps, c) draws per CV search; x 4 lambdas = the paper's 60 candidates"
                             " (0 = full grid)")
    parser.add_argument("--scoring", default="accuracy", choices=("accuracy", "balanced_accuracy"))
    args = parser.parse_args(argv)
    n_splits = args.splits or (8 if args.full else 2)
    n_corruptions = args.corruptions or (5 if args.full else 1)
    # One pseudoflow sweep of the 100k graph takes minutes on 2 cores: --full only.
    sizes = args.sizes if args.sizes is not None else ([569, 10_000, 30_000, 100_000] if args.full else [569, 10_000])
    repeats = args.repeats or 3
    header = [
        "## LC-SNC benchmark",
        "",
        f"machine: {machine()}",
        f"settings: {n_splits} splits x {n_corruptions} corruptions per noise level (1 run per split at 0%),"
        f" CV scoring {args.scoring}, {args.n_iter or 'all'} (k, eps, c) draws x every lambda per search,"
        f" sweep sizes {sizes}, {repeats} timing repeats",
    ]
    print("\n".join(header), flush=True)
    t = time.perf_counter()
    frame = _wdbc_runs(n_splits, n_corruptions, args.scoring, args.n_iter or None)
    tables = _wdbc_tables(frame)
    for table in tables:
        print("\n" + table, flush=True)
    timing = _sweep_timing(sizes, repeats) if sizes else []
    footer = f"total wall time {time.perf_counter() - t:.0f} s"
    text = "\n\n".join(header[:1] + ["\n".join(header[2:])] + tables + timing + [footer]) + "\n"
    print("\n" + "\n\n".join(timing) + "\n\n" + footer)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
