"""The harmonic relaxation of a cut's energy, for solvers that read it beside their own
answer: its leave-one-out margin of every given label (combined with ``solvers.mincut``'s
and ``solvers.maxmargin``'s own noise scores) and its calibrated class probabilities
(``solvers.mincut``'s confidence).

The harmonic function (Zhu, Ghahramani & Lafferty 2003) minimises the same energy
Σ w_ij (f_i − f_j)² that a minimum cut minimises over {0, 1} labellings (their Sec. 2: the
relaxation of the mincut of Blum & Chawla 2001), and it is the graph step of max-margin
graph cuts (Kveton et al. 2010, eq. 6). Its leave-one-out distribution of a given label is
estimated without a solve per label (``solvers.harmonic._local_leave_one_out``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._calibration import normalise
from .problem import LabelProblem, Prediction


def harmonic_relaxation(W: sp.spmatrix, y: np.ndarray, n_classes: int,
                        label_confidence: np.ndarray | None = None, *, calibrate: bool = False) -> Prediction:
    """The harmonic solver's prediction on ``W`` with its defaults, every given label kept.

    Parameters
    ----------
    W : sparse matrix (n, n)
        Symmetric non-negative weights.
    y : array of int (n,)
        Given labels, -1 for unlabelled.
    n_classes : int
    label_confidence : array (n,), optional
        Trust of each given label (``LabelProblem.label_confidence``).
    calibrate : bool, default False
        Fit the confidence temperature on the given labels' leave-one-out (the harmonic
        solver's ``calibrate``; its noise scores are the same either way).

    Returns
    -------
    Prediction
        γ_g = 0, class mass normalisation ``"auto"``, the local leave-one-out estimate and
        ``noisy_labels="keep"`` (a flagged label stays clamped: the solver that asks
        decides what a flag does). Cost: one harmonic solve and a few sparse products.

    References
    ----------
    Zhu, X., Ghahramani, Z., Lafferty, J. (2003). Semi-supervised learning using Gaussian
    fields and harmonic functions. ICML. Sec. 2.
    """
    from .harmonic import harmonic

    problem = LabelProblem(W, y, n_classes=n_classes, label_confidence=label_confidence)
    return harmonic(problem, noisy_labels="keep", calibrate=calibrate)


def harmonic_loo_margin(W: sp.spmatrix, y: np.ndarray, n_classes: int,
                        label_confidence: np.ndarray | None = None) -> np.ndarray:
    """Leave-one-out margin of each given label under the harmonic function on ``W``.

    Returns
    -------
    margin : array (n,)
        The harmonic solver's ``noise_score`` with its defaults (``harmonic_relaxation``,
        uncalibrated): the margin by which the best other class beats the given one when
        the label is left out, in [-1, 1]; NaN off the labels.
    """
    margin = harmonic_relaxation(W, y, n_classes, label_confidence).noise_score
    assert margin is not None, "harmonic's noise flags are on by default"
    return margin


def class_probabilities(relaxation: Prediction) -> np.ndarray:
    """The relaxation's class probabilities per node, on the scale of its confidences
    (``Prediction.label_scale_scores``, each row normalised; a row no label reaches stays 0)."""
    return normalise(relaxation.label_scale_scores)
