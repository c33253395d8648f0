"""``method="auto"``: pick the solver and its main parameter by cross-validation on the
given labels only, within a time budget, and record every candidate's score.

How it works
------------
1. The default harmonic solver runs once on all given labels (it is also the answer
   when nothing else fits in the budget); its wall time T is the unit of the budget.
2. The given labels are split into ``cv`` stratified folds (fewer when a class has fewer
   labels). For each candidate in ``CANDIDATES`` (cheapest first), each fold's labels
   are hidden and the candidate labels the graph from the others; its score is the
   accuracy on the hidden labels, averaged over the folds. No hidden test label is ever
   used: the folds are made of given labels.
3. A candidate is skipped when its first fold, timed, shows that its folds would not fit
   in what is left of ``budget`` × T; the skip is recorded with its reason.
4. The best score wins (ties: the earlier candidate, i.e. the cheaper); it runs on all
   the given labels with its defaults (noise flags included) and its Prediction is
   returned, with ``info["auto"]``: the budget, T, every candidate's fold scores, mean,
   seconds and status, and the choice.

Decisions, and why
------------------
- Timing makes the choice depend on the machine: a candidate skipped for time on a
  busy machine may be scored on a quiet one. The record says which were skipped.
- Candidates: the harmonic function without and with class mass normalisation (Zhu et
  al. 2003, Sec. 4) and the mean-field Potts model with γ = 1 and γ = midpoint
  (Bergamim & Breve 2022); inside the CV they run without noise flags and calibration
  (the score is the arg-max). The cut solvers, the SGT and max-margin cuts cost 20-500
  harmonic runs each on digits (``bench/noise_flags.py``'s seconds column) and never fit
  a budget of 10, so they are not candidates; name them explicitly to use them.
- Folds: ``cv = 3`` by default: with 10 labels per class a fold holds 3-4 labels of each
  class, and 3 folds × 4 candidates fit in 10 harmonic runs on the data measured
  (``bench/auto.py``).
- Score: plain accuracy on the held-out labels (the labels may be noisy: that is what
  the user has).

References
----------
Zhu, Ghahramani & Lafferty (2003), Sec. 4 (class mass normalisation). Bergamim & Breve
(2022), Sec. 5.1. Stratified k-fold: scikit-learn's ``StratifiedKFold``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

import numpy as np
from sklearn.model_selection import StratifiedKFold

from ._timing import Stopwatch
from ._validation import Integral, Interval, Real, validate_params
from .problem import LabelProblem, Prediction

# (name, method, parameters inside the CV, parameters of the final run)
CANDIDATES: tuple[tuple[str, str, dict[str, Any], dict[str, Any]], ...] = (
    ("harmonic", "harmonic", {"detect_noise": False, "calibrate": False, "class_mass": "none"},
     {"class_mass": "none"}),
    ("harmonic, class mass", "harmonic", {"detect_noise": False, "calibrate": False, "class_mass": "uniform"},
     {"class_mass": "uniform"}),
    ("nmf, γ=1", "nmf", {"noise_threshold": 0.99}, {}),
    ("nmf, γ=midpoint", "nmf", {"gamma": "midpoint", "noise_threshold": 0.99}, {"gamma": "midpoint"}),
)
# Checked once at the door (solvers/_validation.py).
PARAMETER_CONSTRAINTS = {
    "budget": [Interval(Real, 1, None, closed="neither")],  # in harmonic runs, the first included
    "cv": [Interval(Integral, 2, None)],
    "random_state": [Interval(Integral, 0, None)],
}


def _run(problem: LabelProblem, method: str, params: dict) -> Prediction:
    module = {"harmonic": "solvers.harmonic", "nmf": "solvers.nmf"}[method]
    return getattr(import_module(module), method)(problem, **params)


def auto(problem: LabelProblem, *, budget: float = 10.0, cv: int = 3, random_state: int = 0) -> Prediction:
    """Choose among ``CANDIDATES`` by stratified CV on the given labels, in ``budget``
    harmonic runs, and return the chosen one's prediction on all the labels.

    Parameters
    ----------
    problem : LabelProblem
    budget : float > 1, default 10
        Total time allowed, in multiples of one default harmonic run on the problem
        (that run included).
    cv : int >= 2, default 3
        Stratified folds of the given labels (capped by the smallest class's count).
    random_state : int, default 0
        Seed of the folds.

    Returns
    -------
    Prediction
        The chosen solver's, with ``method`` its name and ``info["auto"]`` the record.
    """
    validate_params({"budget": budget, "cv": cv, "random_state": random_state}, PARAMETER_CONSTRAINTS)
    clock = Stopwatch()
    baseline = _run(problem, "harmonic", {})
    unit = clock.elapsed
    allowed = budget * unit
    lab = np.flatnonzero(problem.labeled)
    y_l = problem.y[lab]
    counts = np.bincount(y_l, minlength=problem.n_classes)
    n_folds = int(min(cv, counts[counts > 0].min()))
    record: dict[str, Any] = {"budget_harmonic_runs": float(budget), "harmonic_seconds": unit, "folds": n_folds,
                              "candidates": []}
    if n_folds < 2:
        record["chosen"] = "harmonic"
        record["reason"] = "a class has a single given label: no fold can hold one out; default harmonic kept"
        baseline.info["auto"] = record
        return baseline
    folds = list(StratifiedKFold(n_folds, shuffle=True, random_state=random_state).split(lab, y_l))
    best = None
    for name, method, cv_params, final_params in CANDIDATES:  # a loop over a few candidates
        scores, candidate_started, status = [], clock.elapsed, "scored"
        for index, (_, held) in enumerate(folds):  # a loop over folds
            y_fold = problem.y.copy()
            y_fold[lab[held]] = -1
            if len(set(y_fold[y_fold >= 0].tolist())) < 2:
                continue
            p = _run(problem.with_labels(y_fold), method, cv_params)
            scores.append(float(np.mean(p.labels[lab[held]] == y_l[held])))
            # the other folds and, should it win, its final run (about one fold's time)
            if index == 0 and clock.elapsed + n_folds * (clock.elapsed - candidate_started) > allowed:
                status = "skipped: its folds would pass the time budget"
                scores = []
                break
        mean = float(np.mean(scores)) if scores else None
        record["candidates"].append({"name": name, "method": method, "params": final_params, "fold_scores": scores,
                                     "score": mean, "seconds": clock.elapsed - candidate_started, "status": status})
        if mean is not None and (best is None or mean > best[0]):
            best = (mean, name, method, final_params)
    if best is None:
        chosen = baseline
        record["chosen"] = "harmonic (defaults: no candidate fitted the budget)"
    else:
        chosen = _run(problem, best[2], best[3])
        record["chosen"] = best[1]
    record["seconds"] = clock.elapsed
    chosen.info["auto"] = record
    return chosen
