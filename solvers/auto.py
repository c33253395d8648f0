"""``method="auto"``: pick the solver and its main parameter by cross-validation on the
given labels only, within a time budget, and record every candidate's score.

How it works
------------
1. The default harmonic solver runs once on all given labels, with its defaults (it is
   the answer when nothing beats it, and when nothing else fits in the budget); its wall
   time T is the unit of the budget.
2. The given labels are split into ``cv`` stratified folds (fewer when a class has fewer
   labels). For each candidate in ``CANDIDATES`` (the default first), each fold's labels
   are hidden and the candidate labels the graph from the others. Every given label is so
   held out once; its score is 1 when the candidate's arg-max there is its class, else 0
   (``scoring="log_probability"``: the log of the probability the candidate gives its
   class, floored at ``PROBABILITY_FLOOR``). A candidate's score is the mean over the given
   labels (its ``fold_scores`` the means per fold; ``accuracy`` the held-out arg-max
   accuracy, for the reader).   No hidden test label is ever used: the folds are made of given labels.
3. After each fold a candidate is dropped when its folds left and its final run (at its mean fold
   time so far) would not fit in what is left of ``budget`` × T, and not started when
   less than T is left; the skip is recorded with its reason.
4. The one-standard-error rule (Hastie, Tibshirani & Friedman 2009, Sec. 7.10): the
   best-scoring candidate replaces the default only when its score beats the default's by
   more than ``n_standard_errors`` standard errors of the paired per-label difference.
   The default's Prediction (step 1) is then returned as it is; another winner runs on all
   the given labels with its defaults (noise flags included). ``info["auto"]`` holds the
   budget, T, every candidate's fold scores, mean, accuracy, seconds and status, the
   difference and its standard error, and the choice.

Decisions, and why (``python -m bench auto``: digits, segment, WDBC, 10% of the given
labels flipped; chosen on seeds 0-4, checked on seeds 5-9)
----------------------------------------------------------
- Rule 4 is what closes the gaps. With 70-100 given labels, 10% of them wrong, held-out
  accuracy moves in steps of 1-1.5 points and 3 folds cannot tell candidates 2 points
  apart: taking the best score, auto came 2.2 points below the best candidate on segment
  and 1.4 on WDBC (seeds 0-4). The default is the candidate tuned on the most data
  (``bench/hard_data.py``) and most differences the CV sees are its noise; with the rule
  (one standard error) the gaps were at most 0.2 points on both seed sets.
- Score: accuracy. The log-probability of the given class, a proper score that separates
  candidates agreeing on the arg-max, did as well on the three sets (at most 0.2 points
  with rule 4; 0.8 without) but judges calibration as well as the arg-max: on the
  "unequal sizes" set (``bench/hard_data.py``, 5,000 nodes, 10% labelled, seeds 0-1) it
  preferred harmonic without class mass by 9.6 standard errors, 2.3 and 7.7 points below the
  default on the hidden labels, where accuracy kept the default (``python -m bench auto
  --generated [--scoring log_probability]``: 5.2 points below the best candidate there
  against 1.3 by accuracy, and 1.6 against 0.0 on "overlap" at 10%). It stays an option.
  Scored by the probability itself (no log, 3 × 3 folds) auto chose NMF nearly always,
  3.1-3.8 points below the best on segment. ``PROBABILITY_FLOOR = 1e-3``: a flipped label
  gets probability near 0 from every good candidate and an unfloored log would let the
  few flipped labels decide; 1e-3 to 1e-6 gave the same choices on seeds 0-4, 1e-2 lost
  0.6 points on digits (seeds 5-9).
- ``scoring="balanced_accuracy"`` weighs each held-out label by its class's rarity among
  the given labels (the mean is then the classes' mean recall), for a rare class that is
  the point. On the three sets above (classes of near equal size) it chose as accuracy did
  on 14 of the 15 seeds, with the same mean accuracies (``python -m bench auto --scoring
  balanced_accuracy``). Not the default: where one class is rare it trades accuracy for
  that class's recall, which a user should ask for. On weka's ReutersCorn (45 of 1,554 articles,
  half the labels held out) accuracy chose NMF, which found few of the held-out corn
  articles (balanced accuracy 0.523-0.727 over three graphs); balanced scoring chose
  harmonic or harmonic with uniform class mass (0.739-0.961; README, ``--solver auto``).
- Not the leave-one-out estimates the solvers already compute (harmonic's local
  estimate, NMF's cavity field): scored by them across solvers, NMF's cavity estimate is
  optimistic and won on every seed, 3.1-3.8 points below the best on segment.
- Candidates: the default harmonic function, the same without and with class mass
  normalisation (Zhu et al. 2003, Sec. 4) expressed as its ``class_mass`` option (so they
  follow the default's other parameters), and the mean-field Potts model with γ = 1
  (Bergamim & Breve 2022); inside the CV they run without noise flags and calibration.
  NMF comes second, before the class mass variants: it is the candidate most unlike the
  default, and on 5,000-node generated sets (``bench/hard_data.py``'s "overlap" and
  "unequal sizes", 1% and 10% labelled, seeds 0-1) it was skipped for time in 6 of the 7
  runs that cross-validate when it came last; second, in 4 of 7 (log-probability scoring,
  the budget checked after the first fold only), and it was chosen on
  "overlap" at 10% on both seeds (4.8 and 3.2 points above the default).
  NMF with γ = midpoint was dropped: never the best candidate over ten seeds on any of the
  three sets and 3.5-4.3 points below the best on WDBC. The cut solvers, the SGT and max-margin cuts cost
  9-4,100 harmonic runs each (``bench/auto.py`` reports mincut and maxmargin beside auto)
  and never fit a budget of 10 with folds, so they are not candidates; name them
  explicitly to use them.
- Folds: ``cv = 3`` by default: with 10 labels per class a fold holds 3-4 labels of each
  class. Three repetitions of the 3 folds, scored by log-likelihood, changed no gap by more
  than 0.4 points and cost three times as much.
- Timing makes the choice depend on the machine: a candidate skipped for time on a
  busy machine may be scored on a quiet one. The record says which were skipped.

References
----------
Zhu, Ghahramani & Lafferty (2003), Sec. 4 (class mass normalisation). Bergamim & Breve
(2022), Sec. 5.1. Hastie, Tibshirani & Friedman (2009), The Elements of Statistical
Learning, 2nd ed., Sec. 7.10 (the one-standard-error rule). Stratified k-fold:
scikit-learn's ``StratifiedKFold``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

import numpy as np
from sklearn.model_selection import StratifiedKFold

from ._budget import SolverTimeLimit
from ._timing import Stopwatch
from ._validation import Integral, Interval, Options, Real, validate_params
from .problem import LabelProblem, Prediction

# (name, method, parameters of its final run); the first is the default, rule 4's prior.
CANDIDATES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("harmonic", "harmonic", {}),
    ("nmf", "nmf", {}),
    ("harmonic, no class mass", "harmonic", {"class_mass": "none"}),
    ("harmonic, class mass", "harmonic", {"class_mass": "uniform"}),
)
# Added to a candidate's parameters inside the CV: the score is its held-out distribution,
# which the noise flags (and NMF's flags, at a threshold nothing reaches) would not change;
# uncalibrated, as the candidates were scored when the CV was measured (NMF's calibration is
# five more runs per fold).
CV_PARAMETERS: dict[str, dict[str, Any]] = {
    "harmonic": {"detect_noise": False, "calibrate": False},
    "nmf": {"noise_threshold": 0.99, "calibrate": False},
}
# Candidates whose solver takes ``time_limit`` (solvers/_budget.py): a fold gets what is left
# of auto's budget, so one slow fold cannot run past it.
TIME_LIMITED = frozenset({"nmf"})
PROBABILITY_FLOOR = 1e-3  # of a held-out label's class, before the log (module docstring)
#: How the run's record names each score.
SCORING_NAMES = {
    "accuracy": "held-out accuracy on the given labels",
    "balanced_accuracy": "held-out balanced accuracy on the given labels (the mean of the classes' recall)",
    "log_probability": f"mean held-out log-probability of the given class (floor {PROBABILITY_FLOOR:g})",
}
# Checked once at the door (solvers/_validation.py).
PARAMETER_CONSTRAINTS = {
    "budget": [Interval(Real, 1, None, closed="neither")],  # in harmonic runs, the first included
    "cv": [Interval(Integral, 2, None)],
    "n_standard_errors": [Interval(Real, 0, None, closed="left")],
    "scoring": [Options(("accuracy", "balanced_accuracy", "log_probability"))],
    "random_state": [Interval(Integral, 0, None)],
}


def _run(problem: LabelProblem, method: str, params: dict) -> Prediction:
    return getattr(import_module(f"solvers.{method}"), method)(problem, **params)  # each solver's module is its name


def class_probabilities(prediction: Prediction) -> np.ndarray:
    """Each node's class distribution (n × C) on the scale the prediction's arg-max uses:
    harmonic's absorption probabilities times its class mass weights, NMF's marginals;
    rows with no mass (nodes no label reaches) are uniform."""
    scores = np.clip(np.asarray(prediction.label_scale_scores, dtype=np.float64), 0.0, None)
    total = scores.sum(axis=1, keepdims=True)
    uniform = np.full_like(scores, 1.0 / scores.shape[1])
    return np.divide(scores, total, out=uniform, where=total > 0)


def auto(problem: LabelProblem, *, budget: float = 10.0, cv: int = 3, n_standard_errors: float = 1.0,
         scoring: str = "accuracy", random_state: int = 0) -> Prediction:
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
    n_standard_errors : float >= 0, default 1
        A candidate replaces the default harmonic solver only when its mean held-out
        score beats the default's by more than this many standard errors of the paired
        per-label difference (module docstring, step 4); 0 takes the best score.
    scoring : {"accuracy", "balanced_accuracy", "log_probability"}, default "accuracy"
        Each held-out given label's score: 1 when the candidate's arg-max is its class,
        else 0; with ``"balanced_accuracy"`` the same weighed by its class's rarity among
        the given labels, so that the mean is the mean of the classes' recall; or the log
        of the probability the candidate gives its class (floored at ``PROBABILITY_FLOOR``).
    random_state : int, default 0
        Seed of the folds.

    Returns
    -------
    Prediction
        The chosen solver's, with ``method`` its name and ``info["auto"]`` the record.
    """
    validate_params({"budget": budget, "cv": cv, "n_standard_errors": n_standard_errors, "scoring": scoring,
                     "random_state": random_state}, PARAMETER_CONSTRAINTS)
    clock = Stopwatch()
    baseline = _run(problem, "harmonic", {})
    unit = clock.elapsed
    allowed = budget * unit
    lab = np.flatnonzero(problem.labeled)
    y_l = problem.y[lab]
    counts = np.bincount(y_l, minlength=problem.n_classes)
    n_folds = int(min(cv, counts[counts > 0].min()))
    # a label's weight in the mean: 1, or (balanced) n / (classes given × its class's labels)
    weight = (len(lab) / (np.count_nonzero(counts) * counts[y_l]) if scoring == "balanced_accuracy"
              else np.ones(len(lab)))
    record: dict[str, Any] = {"budget_harmonic_runs": float(budget), "harmonic_seconds": unit, "folds": n_folds,
                              "scoring": SCORING_NAMES[scoring],
                              "n_standard_errors": float(n_standard_errors), "candidates": []}
    if n_folds < 2:
        record["chosen"] = "harmonic"
        record["reason"] = "a class has a single given label: no fold can hold one out; default harmonic kept"
        baseline.info["auto"] = record
        return baseline
    folds = list(StratifiedKFold(n_folds, shuffle=True, random_state=random_state).split(lab, y_l))
    held_out: dict[str, np.ndarray] = {}  # a scored candidate's log-probability of each given label
    for name, method, params in CANDIDATES:  # a loop over a few candidates
        entry: dict[str, Any] = {"name": name, "method": method, "params": params, "fold_scores": [],
                                 "score": None, "accuracy": None, "seconds": 0.0, "status": "scored"}
        record["candidates"].append(entry)
        started = clock.elapsed
        per_label = np.full(len(lab), np.nan)  # the score of each held-out given label
        correct = np.zeros(len(lab), dtype=bool)
        for index, (_, held) in enumerate(folds):  # a loop over folds
            if clock.elapsed + unit > allowed:  # not even one more harmonic run's time left
                entry.update(status="skipped: no time left in the budget", fold_scores=[])
                break
            y_fold = problem.y.copy()
            y_fold[lab[held]] = -1
            options = {**params, **CV_PARAMETERS.get(method, {})}
            if method in TIME_LIMITED:
                options["time_limit"] = max(allowed - clock.elapsed, 1e-3)
            try:
                p = _run(problem.with_labels(y_fold), method, options)
            except SolverTimeLimit:
                entry.update(status="skipped: it stopped itself at the end of the time budget", fold_scores=[])
                break
            correct[held] = p.labels[lab[held]] == y_l[held]
            if scoring == "log_probability":
                probability = class_probabilities(p)[lab[held], y_l[held]]
                per_label[held] = np.log(np.maximum(probability, PROBABILITY_FLOOR))
            else:
                per_label[held] = correct[held] * weight[held]
            entry["fold_scores"].append(float(per_label[held].mean()))
            # after every fold: the folds left and, should it win, its final run (about one
            # fold's time; none for the default, whose run is step 1's), at the mean fold time
            fold_seconds = (clock.elapsed - started) / (index + 1)
            runs_left = n_folds - index - 1 + (name != CANDIDATES[0][0])
            if clock.elapsed + runs_left * fold_seconds > allowed:
                entry.update(status="skipped: its folds would pass the time budget", fold_scores=[])
                break
        entry["seconds"] = clock.elapsed - started
        if entry["status"] == "scored":
            held_out[name] = per_label
            entry.update(score=float(per_label.mean()), accuracy=float(correct.mean()))
    chosen_name = _one_standard_error_choice(held_out, n_standard_errors, record)
    if chosen_name == CANDIDATES[0][0]:
        chosen = baseline
    else:
        _, method, params = next(c for c in CANDIDATES if c[0] == chosen_name)
        # its folds fitted in the budget: its run on every label is not cut short
        chosen = _run(problem, method, {**params, **({"time_limit": None} if method in TIME_LIMITED else {})})
    record["chosen"] = chosen_name
    record["seconds"] = clock.elapsed
    chosen.info["auto"] = record
    return chosen


def _one_standard_error_choice(held_out: dict[str, np.ndarray], n_standard_errors: float,
                               record: dict[str, Any]) -> str:
    """The default unless the best-scoring candidate beats it by more than
    ``n_standard_errors`` standard errors of the paired per-label difference (step 4)."""
    default = CANDIDATES[0][0]
    if not held_out:
        record["reason"] = "no candidate fitted the budget: default harmonic kept"
        return default
    best = max(held_out, key=lambda name: held_out[name].mean())  # ties: the earlier candidate
    if default not in held_out or best == default:
        return best
    difference = held_out[best] - held_out[default]
    standard_error = float(difference.std(ddof=1) / np.sqrt(len(difference)))
    record["best_minus_default"] = float(difference.mean())
    record["standard_error"] = standard_error
    return best if difference.mean() > n_standard_errors * standard_error else default
