"""Accuracy on hard data: every solver against LabelSpreading (both α) and scikit-network's
diffusion and propagation, on the same graph, on generated and real data sets.

    python -m bench hard_data          # generated sets at 20k nodes, real sets; 2 seeds
    python -m bench hard_data --full   # generated sets at 50k nodes

Data (``SETS``): six generators (scikit-learn ``make_classification`` / ``make_blobs`` in
32-d: overlapping classes, two clusters per class, wide blobs, unequal class sizes, 30
classes, 20% of the true labels flipped) and the real sets of ``labelling.datasets``
(digits; segment, WDBC, diabetes, ionosphere and vote z-scored). Graph:
``similarity.knn_graph(X, 10)`` (Gaussian weights, union), the same W for every method.
Labels: a uniformly random subset of the nodes (1% or 10%, at least one per class), seeds
0-2 on the real sets and seed 0 on the generated ones (20k nodes: one draw already holds
200 or 2,000 labels and 19,800 or 18,000 test nodes); accuracy on the other nodes (no prediction counts as wrong); "chance" is the
largest class's share of them.

Methods: every solver with its defaults (what users run), harmonic also with each class
mass normalisation rule; the peers: scikit-learn ``LabelSpreading`` on W (α = 0.2 with its
defaults; α = 0.99 with max_iter = 1000, so that it converges), scikit-network
``DiffusionClassifier`` and ``Propagation`` with their defaults. spectral, mincut, lcsnc
and maxmargin run in a child process stopped at 10× the harmonic solver's time on the
same problem (at least ``MIN_LIMIT`` s); a stop is reported, not hidden.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from labelling.datasets import load, standardise
from similarity import knn_graph
from solvers import LabelProblem, solve

from ._common import Report, peak_memory_call

MIN_LIMIT = 20.0
SLOW = ("spectral", "mincut", "lcsnc", "maxmargin")
REAL = ("digits", "segment", "wdbc", "diabetes", "ionosphere", "vote")


def generated(name: str, n: int, seed: int = 0):
    from sklearn.datasets import make_blobs, make_classification

    common = dict(n_samples=n, n_features=32, n_redundant=0, random_state=seed)
    if name == "overlap":
        return make_classification(n_informative=16, n_classes=10, n_clusters_per_class=1, class_sep=1.0, **common)
    if name == "overlap, 2 clusters per class":
        return make_classification(n_informative=8, n_classes=10, n_clusters_per_class=2, class_sep=1.0, **common)
    if name == "wide blobs":
        return make_blobs(n, n_features=32, centers=10, cluster_std=11.0, center_box=(-10, 10), random_state=seed)
    if name == "unequal sizes":
        return make_classification(n_informative=16, n_classes=5, weights=[0.5, 0.25, 0.13, 0.07, 0.05],
                                   class_sep=1.0, **common)
    if name == "30 classes":
        return make_classification(n_informative=16, n_classes=30, n_clusters_per_class=1, class_sep=1.5, **common)
    if name == "20% of labels flipped":
        return make_classification(n_informative=16, n_classes=10, n_clusters_per_class=1, class_sep=1.5,
                                   flip_y=0.2, **common)
    raise ValueError(name)


GENERATED = ("overlap", "overlap, 2 clusters per class", "wide blobs", "unequal sizes", "30 classes",
             "20% of labels flipped")


def random_labels(y: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Each node labeled with probability ``fraction``; one more of any class left without."""
    kept = rng.random(len(y)) < fraction
    for c in np.unique(y):  # a loop over classes
        if not kept[y == c].any():
            kept[rng.choice(np.flatnonzero(y == c))] = True
    return kept


class _FixedGraph:
    def __init__(self, W):
        self.W = W

    def __call__(self, a, b):
        return self.W.tocoo()


def peers(W, y_given) -> dict:
    from sklearn.semi_supervised import LabelSpreading
    from sknetwork.classification import DiffusionClassifier, Propagation

    out = {}
    ids = np.arange(W.shape[0], dtype=float)[:, None]
    for alpha, max_iter in ((0.2, 30), (0.99, 1000)):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = LabelSpreading(kernel=_FixedGraph(W), alpha=alpha, max_iter=max_iter).fit(ids, y_given)
        out[f"LabelSpreading α={alpha}"] = (model.transduction_, time.perf_counter() - start, "")
    for name, model in (("scikit-network DiffusionClassifier", DiffusionClassifier()),
                        ("scikit-network Propagation", Propagation())):
        start = time.perf_counter()
        labels = model.fit_predict(W, y_given)
        out[name] = (labels, time.perf_counter() - start, "")
    return out


def run_slow(problem: LabelProblem, method: str) -> np.ndarray:
    return solve(problem, method).labels


def ours(W, X, y_given, C) -> dict:
    out = {}
    problem = LabelProblem(W, y_given, n_classes=C)
    for rule in ("auto", "none", "uniform", "labels"):
        start = time.perf_counter()
        p = solve(problem, "harmonic", class_mass=rule)
        label = "harmonic (defaults, class_mass=auto)" if rule == "auto" else f"harmonic class_mass={rule}"
        out[label] = (p.labels, time.perf_counter() - start, f"used {p.info['class_mass']}" if rule == "auto" else "")
    base = out["harmonic (defaults, class_mass=auto)"][1]
    start = time.perf_counter()
    p = solve(problem, "nmf")
    out["nmf"] = (p.labels, time.perf_counter() - start, "deflated" if p.info["deflated"] else "")
    for method in SLOW:
        limit = max(10 * base, MIN_LIMIT)
        prob = LabelProblem(W, y_given, n_classes=C, X=X) if method == "maxmargin" else problem
        try:
            seconds, _, labels = peak_memory_call(run_slow, prob, method, timeout=limit, preload=(f"solvers.{method}",))
            out[method] = (labels, seconds, "")
        except TimeoutError:
            out[method] = (None, limit, f"stopped at {limit:.0f} s (10× harmonic, at least {MIN_LIMIT:.0f} s)")
        except RuntimeError as err:
            out[method] = (None, np.nan, "failed: " + str(err).splitlines()[0][:100])
    return out


def table(sets, fractions, seeds) -> pd.DataFrame:
    rows = []
    for name, X, y in sets:
        W = knn_graph(X, 10)
        C = int(y.max()) + 1
        for fraction in fractions:
            for seed in (seeds if len(y) < 10_000 else seeds[:1]):
                rng = np.random.default_rng(seed)
                kept = random_labels(y, fraction, rng)
                y_given = np.where(kept, y, -1)
                hidden = ~kept
                chance = np.bincount(y[hidden]).max() / hidden.sum()
                results = {**ours(W, X, y_given, C), **peers(W, y_given)}
                base = results["harmonic (defaults, class_mass=auto)"][1]
                for method, (labels, seconds, note) in results.items():
                    acc = np.nan if labels is None else float(np.mean(labels[hidden] == y[hidden]))
                    rows.append({"data": name, "n": len(y), "labeled": fraction, "seed": seed, "method": method,
                                 "accuracy": acc, "chance": chance, "seconds": seconds,
                                 "× harmonic time": seconds / base, "note": note})
                print(f"  {name} {fraction} seed {seed}: " + ", ".join(
                    f"{m.split(' ')[0]} {np.mean(r[0][hidden] == y[hidden]) if r[0] is not None else np.nan:.3f}"
                    for m, r in results.items()), flush=True)
    return pd.DataFrame(rows)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean accuracy over seeds per (data, labeled) and method, with the best peer's."""
    mean = frame.groupby(["data", "labeled", "method"], sort=False).agg(
        accuracy=("accuracy", "mean"), seconds=("seconds", "mean"), chance=("chance", "mean"),
        note=("note", lambda v: "; ".join(sorted(set(x for x in v if x))))).reset_index()
    peer = mean[mean["method"].str.startswith(("LabelSpreading", "scikit-network DiffusionClassifier"))]
    best = peer.groupby(["data", "labeled"])["accuracy"].max().rename("best peer (LS α=0.2, α=0.99, diffusion)")
    mean = mean.join(best, on=["data", "labeled"])
    mean["− best peer"] = mean["accuracy"] - mean["best peer (LS α=0.2, α=0.99, diffusion)"]
    return mean


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench hard_data")
    parser.add_argument("--full", action="store_true", help="generated sets at 50k nodes")
    parser.add_argument("--only", help="comma-separated data set names")
    args = parser.parse_args(argv)
    n = 50_000 if args.full else 20_000
    names = args.only.split(",") if args.only else list(GENERATED) + list(REAL)
    sets = []
    for name in names:
        if name in REAL:
            X, y, _ = load(name)
            sets.append((name, X if name == "digits" else standardise(X), y))
        else:
            X, y = generated(name, n)
            sets.append((name, X, y))
    report = Report("hard_data_full" if args.full else "hard_data",
                    f"Hard data: every solver and the peers on the same 10-NN graph (generated sets at {n:,} nodes)")
    started = time.perf_counter()
    frame = table(sets, (0.01, 0.1), (0, 1, 2))
    report.table("Accuracy on the unlabeled nodes (random labeled sets; means of seeds 0-2 on the real sets, seed 0 "
                 "on the generated ones), against the best "
                 "of LabelSpreading α=0.2, α=0.99 and scikit-network's diffusion", summary(frame))
    report.note(f"total wall time {time.perf_counter() - started:.0f} s")
    print(f"written to {report.save()}")
