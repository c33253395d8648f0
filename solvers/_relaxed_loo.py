"""The harmonic function's leave-one-out margin of every given label, for solvers whose own
noise score is combined with it (``solvers.mincut``, ``solvers.maxmargin``).

The harmonic function (Zhu, Ghahramani & Lafferty 2003) minimises the same energy
Σ w_ij (f_i − f_j)² that a minimum cut minimises over {0, 1} labellings (their Sec. 2: the
relaxation of the mincut of Blum & Chawla 2001), and it is the graph step of max-margin
graph cuts (Kveton et al. 2010, eq. 6). Its leave-one-out distribution of a given label,
estimated without a solve per label (``solvers.harmonic._local_leave_one_out``), is the
margin this module returns: the best other class minus the given one, in [-1, 1].
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .problem import LabelProblem


def harmonic_loo_margin(W: sp.spmatrix, y: np.ndarray, n_classes: int,
                        label_confidence: np.ndarray | None = None) -> np.ndarray:
    """Leave-one-out margin of each given label under the harmonic function on ``W``.

    Parameters
    ----------
    W : sparse matrix (n, n)
        Symmetric non-negative weights.
    y : array of int (n,)
        Given labels, -1 for unlabelled.
    n_classes : int
    label_confidence : array (n,), optional
        Trust of each given label (``LabelProblem.label_confidence``).

    Returns
    -------
    margin : array (n,)
        The harmonic solver's ``noise_score`` with its defaults (γ_g = 0, class mass
        normalisation ``"auto"``, the local leave-one-out estimate): the margin by which the
        best other class beats the given one when the label is left out; NaN off the labels.
        Cost: one harmonic solve and a few sparse products (no re-solve, no calibration).

    References
    ----------
    Zhu, X., Ghahramani, Z., Lafferty, J. (2003). Semi-supervised learning using Gaussian
    fields and harmonic functions. ICML. Sec. 2.
    """
    from .harmonic import harmonic

    problem = LabelProblem(W, y, n_classes=n_classes, label_confidence=label_confidence)
    prediction = harmonic(problem, noisy_labels="keep", calibrate=False)
    assert prediction.noise_score is not None, "harmonic's noise flags are on by default"
    return prediction.noise_score
