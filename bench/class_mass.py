"""The default harmonic's class mass normalisation as the labelled share grows: each rule
(``class_mass`` = auto, labels, none, uniform, center) against the best of the peers on the same
W, at 1%, 10%, 50% and 80% labelled, on ``hard_data``'s sets and weka's glass (six unequal
classes: 70, 76, 29, 17, 13 and 9 records) and soybean (19 classes of 92 down to 8 records,
35 nominal attributes one-hot encoded).

    python -m bench class_mass                    # seeds 0-2 on the real sets, seed 0 on the generated
    python -m bench class_mass --only glass,soybean --fractions 0.1,0.5

Why: ``hard_data`` measures 1% and 10% only, where the smoothed prior (κ = 100 pseudo-labels per
class, ``solvers/harmonic.py``) was tuned; a user who scores a run with ``--holdout 0.1`` on a
file whose records all carry a label solves at 90%. Data, graph, labels and peers as
``bench/hard_data.py`` (its functions: 20,000-node generated sets, ``knn_graph(X, 10)``, each
node labelled with probability f, LabelSpreading α = 0.2 and 0.99, scikit-network's
diffusion). Besides each rule's accuracy on the unlabelled nodes, the table gives the
accuracy of the given labels' leave-one-out arg-max on that rule's scale (``info["loo_scores"]``,
labels only), the one signal a solver could choose a rule by without hidden labels, and three
more methods:

- ``solver auto``: ``solve(problem, "auto")`` with its defaults (cross-validated choice among
  harmonic's rules and nmf);
- ``LOO-chosen``: the rule whose leave-one-out accuracy beats the default's by more than one
  standard error of the paired per-label difference (``labels`` or ``none``; else the
  default), as a solver could choose it;
- ``fading prior``: a candidate rule that is not in the solver, the target share
  (1 − λ) n_c / n_l + λ / C with λ = r / (r + 10), r the unlabelled nodes per given label
  (``fading_prior``: ``solvers.harmonic._mass_target`` replaced for those calls, so the
  noise flags' scale follows it too);
- ``fading arg-max``: the same target for the predictions' arg-max only (``fading_arg_max``:
  the class-mass weights scaled by the ratio of the two targets in ``_finish``), so that the
  noise flags, the flagged labels' classes and the re-solve stay those of the default;
- ``tempered prior``: the arg-max of min(T, 1) log q_c + log(F_ic / m_c), q the labels' shares
  with one pseudo-label per class and T the confidence temperature the solver fits on the
  given labels' leave-one-out distributions (``tempered_prior``): on a flat solution T is
  small and the prior fades, where the solution is not flat the labels' shares count.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from unittest import mock

import numpy as np
import pandas as pd

from labelling.sampling import random_labels
from similarity import knn_graph
from solvers import LabelProblem, solve

from ._common import Report, real_set
from .hard_data import GENERATED, REAL, generated, peers

RULES = ("auto", "labels", "none", "uniform", "center")
METHODS = (*RULES, "solver auto", "LOO-chosen", "fading prior", "fading arg-max", "tempered prior")
SETS = GENERATED + REAL + ("glass", "soybean")
#: The fading prior's r at which equal masses and the labels' shares weigh alike.
FADING_RATIO = 10.0


def _fading_target(y: np.ndarray, labeled: np.ndarray, n_classes: int) -> np.ndarray:
    """(1 − λ) n_c / n_l + λ / C over the labelled classes, λ = r / (r + FADING_RATIO)."""
    counts = np.bincount(y[labeled], minlength=n_classes).astype(float)
    n_labelled = counts.sum()
    per_label = (len(y) - n_labelled) / n_labelled
    prior = per_label / (per_label + FADING_RATIO)
    present = counts > 0
    return np.where(present, (1.0 - prior) * counts / n_labelled + prior / present.sum(), 0.0)


def fading_prior():
    """The candidate rule of the module docstring in place of harmonic's smoothed target."""
    import solvers.harmonic as harmonic

    smoothed = harmonic._mass_target

    def target(rule: str, y: np.ndarray, labeled: np.ndarray, n_classes: int):
        return _fading_target(y, labeled, n_classes) if rule == "smoothed" else smoothed(rule, y, labeled, n_classes)

    return mock.patch.object(harmonic, "_mass_target", target)


def _arg_max_target(problem: LabelProblem, target: Callable[[float], np.ndarray]):
    """``target(T)`` (T the fitted confidence temperature) in place of the default's smoothed
    target for the final arg-max only: the default's class-mass weights s_c / m_c times
    target_c / s_c, in ``harmonic._finish``. The default re-solve keeps every label clamped
    (``noisy_labels="soften"``), so the final masses are taken over the given labels."""
    import solvers.harmonic as harmonic

    finish = harmonic._finish
    smoothed = harmonic._mass_target("smoothed", problem.y, problem.labeled, problem.n_classes)

    def scaled(F, weights, temperature, offset=None):
        factor = np.divide(target(temperature), smoothed, out=np.zeros(len(smoothed)), where=smoothed > 0)
        return finish(F, weights * factor, temperature, offset)

    return mock.patch.object(harmonic, "_finish", scaled)


def fading_arg_max(problem: LabelProblem):
    """The fading target for the final arg-max only (the noise flags stay the default's)."""
    fading = _fading_target(problem.y, problem.labeled, problem.n_classes)
    return _arg_max_target(problem, lambda _temperature: fading)


def tempered_prior(problem: LabelProblem):
    """The tempered prior of the module docstring: q_c^t, q the labels' shares plus one, t = min(T, 1)."""
    counts = np.bincount(problem.y[problem.labeled], minlength=problem.n_classes)
    shares = np.where(counts > 0, counts + 1.0, 0.0)
    return _arg_max_target(problem, lambda temperature: shares ** min(temperature, 1.0))


def _loo_chosen(correct: dict[str, np.ndarray]) -> str:
    """The rule the given labels' leave-one-out would pick at one standard error."""
    chosen, gain = "auto", 0.0
    for rule in ("labels", "none"):
        difference = correct[rule].astype(float) - correct["auto"]
        if len(difference) < 2:
            continue
        error = difference.std(ddof=1) / np.sqrt(len(difference))
        if difference.mean() > error and difference.mean() > gain:
            chosen, gain = rule, difference.mean()
    return chosen


def _cells(name: str, W, y: np.ndarray, fractions, seeds) -> list[dict]:
    rows = []
    for fraction in fractions:
        for seed in seeds:
            given = random_labels(y, fraction, np.random.default_rng(seed))
            y_given = np.where(given, y, -1)
            hidden = ~given
            row = {"data": name, "labelled": fraction, "seed": seed, "given labels": int(given.sum())}
            for method, (labels, _, _) in peers(W, y_given).items():
                if "Propagation" not in method:  # hard_data's peers: LabelSpreading (both α) and the diffusion
                    row[method] = float(np.mean(labels[hidden] == y[hidden]))
            problem = LabelProblem(W, y_given, n_classes=int(y.max()) + 1)
            correct = {}
            for rule in RULES:
                prediction = solve(problem, "harmonic", class_mass=rule)
                row[rule] = float(np.mean(prediction.labels[hidden] == y[hidden]))
                correct[rule] = np.argmax(prediction.info["loo_scores"], axis=1) == y[given]
                row[f"LOO {rule}"] = float(np.mean(correct[rule]))
            row["solver auto"] = float(np.mean(solve(problem, "auto").labels[hidden] == y[hidden]))
            row["LOO-chosen"] = row[_loo_chosen(correct)]
            with fading_prior():
                row["fading prior"] = float(np.mean(solve(problem, "harmonic").labels[hidden] == y[hidden]))
            with fading_arg_max(problem):
                row["fading arg-max"] = float(np.mean(solve(problem, "harmonic").labels[hidden] == y[hidden]))
            with tempered_prior(problem):
                row["tempered prior"] = float(np.mean(solve(problem, "harmonic").labels[hidden] == y[hidden]))
            rows.append(row)
    return rows


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench class_mass")
    parser.add_argument("--only", help="comma-separated data set names")
    parser.add_argument("--fractions", default="0.01,0.1,0.5,0.8")
    parser.add_argument("--seeds", type=int, default=3, help="label draws on the real sets (default 3)")
    args = parser.parse_args(argv)
    fractions = [float(f) for f in args.fractions.split(",")]
    names = args.only.split(",") if args.only else list(SETS)
    report = Report("class_mass", "The default harmonic's class mass rules as the labelled share grows")
    load = os.getloadavg()[0]
    rows = []
    for name in names:
        X, y = generated(name, 20_000) if name in GENERATED else real_set(name)
        seeds = (0,) if name in GENERATED else tuple(range(args.seeds))
        rows += _cells(name, knn_graph(X, 10), np.asarray(y), fractions, seeds)
    frame = pd.DataFrame(rows)
    mean = frame.groupby(["data", "labelled"], sort=False).mean(numeric_only=True).drop(columns="seed").reset_index()
    # as hard_data: the best of the peers' mean accuracies (not the mean of each draw's best)
    peer_columns = [c for c in mean.columns if c.startswith(("LabelSpreading", "scikit-network"))]
    mean["best peer"] = mean[peer_columns].max(axis=1)
    for method in METHODS:
        mean[f"{method} − best peer"] = mean[method] - mean["best peer"]
    shown = ["data", "labelled", "given labels", "best peer", *[f"{method} − best peer" for method in METHODS],
             *[f"LOO {rule}" for rule in RULES]]
    report.table(f"Means over the label draws (seeds 0-{args.seeds - 1} on the real sets, 0 on the generated); "
                 "accuracy on the unlabelled nodes minus the best peer's (the best of the peers' means, as in "
                 "hard_data), and the given labels' leave-one-out accuracy on each rule's scale", mean[shown])
    below = {method: int((mean[f"{method} − best peer"] < -0.01).sum()) for method in METHODS}
    report.note(f"cells more than 1 point below the best peer, of {len(mean)}: "
                + ", ".join(f"{method} {n}" for method, n in below.items())
                + "; mean over the cells − best peer: "
                + ", ".join(f"{method} {mean[f'{method} − best peer'].mean():+.4f}" for method in METHODS)
                + f". Load average (1 min) {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end.")
    report.table("Every draw", frame)
    report.save()
