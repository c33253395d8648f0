"""Confidence calibration shared by the solvers that read a class distribution per node:
a temperature T fitted on the given labels' held-out distributions (harmonic's
leave-one-out, NMF's cross-fitted marginals), and the sharpening p ∝ p^(1/T) it sets."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def normalise(F: np.ndarray) -> np.ndarray:
    """Each row divided by its sum (negatives clipped to 0); a row of zeros stays zeros.
    One new array: the scores of a million nodes of 1,000 classes are 8 GB each."""
    return rows_normalised(np.clip(F, 0.0, None))


def sharpen(P: np.ndarray, temperature: float) -> np.ndarray:
    """Each row p as p^(1/T) / Σ_c p_c^(1/T), in one new array."""
    # CG may leave -1e-17 where the exact value is 0; a fractional power of it is NaN.
    sharp = np.clip(P, 0.0, None)
    return rows_normalised(np.power(sharp, 1.0 / temperature, out=sharp))


def rows_normalised(F: np.ndarray) -> np.ndarray:
    """``F`` (non-negative) with each row divided by its sum, in place; a row without a
    positive sum becomes zeros."""
    total = F.sum(axis=1, keepdims=True)
    np.divide(F, total, out=F, where=total > 0)
    F[~(total[:, 0] > 0)] = 0.0
    return F


def bounded_minimum(f: Callable[[float], float], lo: float, hi: float, xatol: float = 1e-5,
                    maxiter: int = 500) -> float:
    """The x in [lo, hi] minimising ``f``: Brent's bounded search, step for step the one of
    ``scipy.optimize.minimize_scalar(method="bounded")`` with its default options (SciPy's
    ``_minimize_scalar_bounded``, BSD-3-Clause, the SciPy developers), so it returns the same x
    (tests/test_harmonic.py compares them). Not imported from scipy: scipy.optimize's import
    (0.15-0.8 s: it loads scipy.special, scipy.fft, scipy.linalg.interpolative...) was up to a fifth of
    ``graphlabel label --full`` on 2,000 rows, for a search of ~15 evaluations (bench/cli.py)."""
    sqrt_eps = math.sqrt(2.2e-16)
    golden_mean = 0.5 * (3.0 - math.sqrt(5.0))
    a, b = lo, hi
    fulc = a + golden_mean * (b - a)
    nfc, xf = fulc, fulc
    rat = e = 0.0
    x = xf
    fx = f(x)
    num = 1
    ffulc = fnfc = fx
    xm = 0.5 * (a + b)
    tol1 = sqrt_eps * abs(xf) + xatol / 3.0
    tol2 = 2.0 * tol1
    while abs(xf - xm) > (tol2 - 0.5 * (b - a)):
        golden = True
        if abs(e) > tol1:  # try a parabolic step
            golden = False
            r = (xf - nfc) * (fx - ffulc)
            q = (xf - fulc) * (fx - fnfc)
            p = (xf - fulc) * q - (xf - nfc) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            r = e
            e = rat
            if abs(p) < abs(0.5 * q * r) and p > q * (a - xf) and p < q * (b - xf):
                rat = (p + 0.0) / q
                x = xf + rat
                if (x - a) < tol2 or (b - x) < tol2:
                    rat = tol1 * (-1.0 if xm - xf < 0 else 1.0)
            else:
                golden = True
        if golden:  # a golden-section step
            e = a - xf if xf >= xm else b - xf
            rat = golden_mean * e
        x = xf + (-1.0 if rat < 0 else 1.0) * max(abs(rat), tol1)
        fu = f(x)
        num += 1
        if fu <= fx:
            if x >= xf:
                a = xf
            else:
                b = xf
            fulc, ffulc = nfc, fnfc
            nfc, fnfc = xf, fx
            xf, fx = x, fu
        else:
            if x < xf:
                a = x
            else:
                b = x
            if fu <= fnfc or nfc == xf:
                fulc, ffulc = nfc, fnfc
                nfc, fnfc = x, fu
            elif fu <= ffulc or fulc == xf or fulc == nfc:
                fulc, ffulc = x, fu
        xm = 0.5 * (a + b)
        tol1 = sqrt_eps * abs(xf) + xatol / 3.0
        tol2 = 2.0 * tol1
        if num >= maxiter:
            break
    return xf


def fit_temperature(loo: np.ndarray, given: np.ndarray, weight: np.ndarray | None = None) -> float:
    """Temperature T maximising the likelihood of the given labels under their sharpened
    leave-one-out distributions (bounded search over log T; each label's log-probability
    counted with its ``weight``, 1 when None); 1 without labels. When the
    arg-max of every label's leave-one-out is its class, the likelihood has no optimum
    (it rises as T falls): T is then the one at which the labels' mean probability of
    their class is Laplace's rule of succession, (N + 1) / (N + 2) for N labels.

    Why: there the search ran to its bound (0.05), and every prediction got a confidence
    near 1: on iris at 5% labelled (10 labels, seed 0) 81% of the wrong predictions had a
    confidence ≥ 0.99 (``python -m bench calibration``). Ten right of ten is no proof of
    certainty; the rule of succession says 11/12. Tried and not kept: Platt's smoothed
    targets for every fit (as maxmargin's calibration), and the rule of succession as a
    ceiling on every fit; both left the confidences well below the accuracy on average
    (0.84 and 0.83 against 0.92, wine and iris at 5% and 10% labelled, 3 draws): a label's
    leave-one-out, with one of few labels gone, is less often right than the full solution.

    Which labels count (the caller's ``weight``): every label, a flagged one with the
    probability its own leave-one-out gives its class (at most (1 − θ)/2 for the flag
    threshold θ, near 0 for a label its neighbours all contradict). Why: fitted on the
    unflagged labels only, T saw an easy sample where the labels are clean, since there the
    flagged ones are the hard right ones: on segment at 5% labelled the unflagged labels'
    leave-one-out was right 95% of the time against 85% on the unlabelled nodes, and 27% of
    the wrong predictions had a confidence ≥ 0.99. Counted fully, the flagged labels made
    the confidences 9-12 points too low where 10% of the labels were flipped (there they
    are mostly the wrong ones). Weighted by their own probability, a wrong label adds
    little and a false flag adds some: ``python -m bench calibration`` with
    ``--flipped 0``, ``0.1`` and ``0.2`` against the unflagged-only fit, in the README.
    A constant weight (0.25 for every flagged label) and a weight falling linearly with
    the margin from 1 at θ did about as well on clean labels and worse at 20% flipped
    (mean ECE 0.129 and 0.162 against 0.121, 5 draws, six sets, 5% and 10% labelled)."""
    if weight is not None:  # a label of weight 0 adds nothing; the rule below counts the others
        counted = weight > 0
        loo, given, weight = loo[counted], given[counted], weight[counted]
    if len(given) == 0:  # every label flagged: nothing to fit on
        return 1.0
    rows = np.arange(len(given))
    low, high = float(np.log(0.05)), float(np.log(5.0))
    if np.all(np.argmax(loo, axis=1) == given):
        ceiling = (len(given) + 1) / (len(given) + 2)

        def excess(log_t: float) -> float:  # falls as T rises: every arg-max is the label's class
            return float(np.mean(sharpen(loo, np.exp(log_t))[rows, given])) - ceiling

        if excess(low) <= 0:
            return float(np.exp(low))
        if excess(high) >= 0:
            return float(np.exp(high))
        below, above = low, high
        for _ in range(40):  # bisection on log T
            middle = 0.5 * (below + above)
            below, above = (middle, above) if excess(middle) > 0 else (below, middle)
        return float(np.exp(above))

    def nll(log_t: float) -> float:
        p = sharpen(loo, np.exp(log_t))[rows, given]
        return -np.average(np.log(np.clip(p, 1e-12, None)), weights=weight)

    return float(np.exp(bounded_minimum(nll, low, high)))


def fit_held_out_temperature(held_out: np.ndarray, given: np.ndarray, flagged: np.ndarray,
                             judged: np.ndarray) -> float:
    """``fit_temperature`` on the ``judged`` labels' held-out class distributions (one row per
    given label: harmonic's leave-one-out, NMF's cross-fitted marginal), a ``flagged`` label
    counted with the probability its own row gives its class (``fit_temperature`` says why)."""
    own = held_out[np.arange(len(given)), given]
    weight = np.where(flagged, own, 1.0)[judged]
    return fit_temperature(held_out[judged], given[judged], weight)
