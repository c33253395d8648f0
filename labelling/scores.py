"""Per-class scores a person can read, with the runner-up class and the margin to it.

Every solver returns ``Prediction.scores`` (n × C) in a meaning of its own (its module
docstring says which): harmonic's class distributions after class mass normalisation,
NMF's mean-field marginals φ, maxmargin's calibrated SVM probabilities, mincut's harmonic
relaxation's calibrated class probabilities, the spectral graph transducer's signed normalised
margins (Joachims 2003, Sec. 5), LC-SNC's one-vs-rest scores. Written to the store as they
are, the numbers of two runs with different solvers could not be compared, and signed
margins read as nothing. ``readable_scores`` maps each node's row to one distribution over
the classes (non-negative, summing to 1):

- a row whose finite entries are all >= 0 is divided by its sum: the solver's own class
  probabilities where it has them (harmonic, NMF, maxmargin and mincut rows already sum to
  1 and are unchanged);
- a row holding a negative entry (signed margins) becomes the softmax of its entries at
  unit temperature: the order of the classes is kept and the margins' differences set the
  shares. These are not calibrated probabilities; ``label_confidence`` stays the solver's
  own (calibrated where the solver calibrates) confidence in its label;
- non-finite entries (spectral's −inf for a class no given label reaches) count as 0;
- a node without a prediction (label −1: no given label reaches it) gets no scores (null),
  no runner-up and no margin, as it gets no label.

``label_runner_up`` is the best class other than the predicted one, and ``label_margin``
the predicted class's score minus the runner-up's, in [-1, 1]. Harmonic's scores are
written on the scale its confidences read: the propagated distribution F times its class
mass weights (Zhu, Ghahramani & Lafferty 2003, Sec. 4; ``info["class_mass_weights"]``, kept
for an incremental run's region too), then normalised and sharpened by the run's confidence
temperature (``Prediction.label_scale_scores``), so that a node's score of its label is its
``label_confidence``; its label reads them too, but where it is the centred arg-max of F
(three or more classes, 7% labelled: ``solvers/harmonic.py``). Written unsharpened, a node
whose neighbours all carried its label at confidence 1.000 read as 55% of that class in
``explain``'s vote by scores (digits demo). Written as F alone, the label was
not the scores' arg-max on 1.4% of the digits demo's nodes with the earlier default, and
on 7 of 47 nodes of the wine scenario's incremental run (tests/outputs_scenario.py) once
class mass became part of every run. A solver's label can still differ from its scores'
arg-max: a flagged given label's prediction is its held-out class (harmonic's leave-one-out,
maxmargin's cross-fitted model), harmonic's centred arg-max reads F less each class's mean,
maxmargin's multi-class label is libsvm's one-vs-one vote, mincut's label is the cut's and
its scores are the relaxation's (which may prefer another class). The
scores are kept as the solver gave them (not bent to the label, which would make them say
what the solver did not compute); such a node's runner-up is then the class with the best
score and its margin is negative, which is what tells a reader that a step after the scores
chose the label.
It is the margin cleanlab's ``normalized_margin`` ranks by, here of the node's prediction
rather than of its given label (that one is ``label_noise_score``).
"""

from __future__ import annotations

import numpy as np


def readable_scores(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Each node's scores as a distribution over the classes (module docstring).

    Parameters
    ----------
    scores : array of float, shape (n, C)
        ``Prediction.scores``.
    labels : array of int, shape (n,)
        ``Prediction.labels``; rows with -1 come back as NaN.

    Returns
    -------
    array of float, shape (n, C)
        Rows non-negative and summing to 1; NaN rows for nodes without a prediction or
        whose scores are all zero or non-finite.
    """
    labels = np.asarray(labels)
    if np.ndim(scores) != 2 or np.shape(scores)[0] != labels.shape[0]:
        raise ValueError(f"scores must have shape (n, C) with n = {labels.shape[0]}, got {np.shape(scores)}")
    # in place on one copy, a few passes over it: a million nodes of 1,000 classes is 8 GB
    # an array, and the write-back made about ten such temporaries (readable, runner_up and
    # the BLOB: 12.0 s and 3.1 GiB over the scores at 100,000 x 1,000, measured ad hoc with
    # tracemalloc on; the write-back as a whole: bench/results/write_back_paired_100000_1000.md)
    readable = np.array(scores, dtype=np.float64)
    finite = np.isfinite(readable)
    if not finite.all():
        readable[~finite] = 0.0  # non-finite entries count as 0
    signed = readable.min(axis=1, initial=0.0) < 0
    if signed.any():  # the softmax of signed rows, shifted by the row maximum so exp never overflows
        shown, counted = readable[signed], finite[signed]
        top = np.where(counted, shown, -np.inf).max(axis=1, keepdims=True)
        soft = np.exp(shown - np.where(np.isfinite(top), top, 0.0))
        soft[~counted] = 0.0
        readable[signed] = soft
    total = readable.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        readable /= total
    readable[(labels < 0) | (total[:, 0] <= 0)] = np.nan
    return readable


def runner_up(readable: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The best class other than the predicted one and the margin to it.

    Parameters
    ----------
    readable : array of float, shape (n, C)
        ``readable_scores``' output.
    labels : array of int, shape (n,)

    Returns
    -------
    runner : array of int, shape (n,)
        Class index; -1 where there is none (no prediction, no scores, one class).
    margin : array of float, shape (n,)
        ``readable[i, labels[i]] - readable[i, runner[i]]``; NaN where ``runner`` is -1.
    """
    n, n_classes = readable.shape
    labels = np.asarray(labels)
    rows = np.arange(n)
    own = np.where(labels >= 0, labels, 0)
    valid = (labels >= 0) & ~np.isnan(readable.sum(axis=1)) & (n_classes >= 2)
    if not n_classes:
        return np.full(n, -1), np.full(n, np.nan)
    # the best class but the own one: the own class's score set aside for one argmax, then
    # put back (not an n x C mask and copy: three arrays of 8 GB each for a million nodes
    # of 1,000 classes); a row with NaN is not valid, whatever its argmax
    mine = readable[rows, own]
    readable[rows, own] = -np.inf
    try:
        runner = np.argmax(readable, axis=1)
    finally:
        readable[rows, own] = mine
    margin = np.where(valid, mine - readable[rows, runner], np.nan)
    return np.where(valid, runner, -1), margin
