"""Naive mean-field (NMF) Potts model with β tuned by the mode-probability criterion.

Bergamim & Breve (2022), "On tuning a mean-field model for semi-supervised
classification". The Potts model with a label field (Sec. 3, Eq. 11–12),

    H(s) = −Σ_ij W_ij δ(s_i, s_j) − Σ_i,s θ_is δ(s_i, s),      Ψ(s) ∝ exp(−β H(s)),

is approximated by a product of per-node marginals φ_i minimising KL(Φ‖Ψ); the naive
mean-field equations (Eq. 15–16) are

    h_i(s) = β (θ_is + Σ_j W_ij φ_j(s)),      φ_i = softmax(h_i),

iterated synchronously from φ⁽⁰⁾ = 1/q (Alg. 3.1); labels are arg-max φ_i (Eq. 17).
Labelled nodes are not clamped: they enter only through the field β θ.

β is tuned without test labels (Sec. 5.1): with φ ≈ 1/q and a first-order expansion of
Z_i, the log mode probability (1/N) ln Γ = mean_i ln φ_i(ŷ_i) (Eq. 21–22) is about

    g(β) = β (r_l + 1/q) − r_l ln(q + 2β) − (1 − r_l) ln(q + β)        (Eq. 26)

and β* solves g(β) = ln γ (Eq. 27). g is increasing and convex on β ≥ 0 with
g(0) = −ln q, so the root is unique for every γ in (1/q, 1]. The paper evaluates
γ = (1+q)/(2q) ("midpoint", the authors' NMF-A) and γ = 1 (NMF-B).

Open decisions (the implementation notes' list, then ours) and what this module does
-----------------------------------------------------------------------------------
1. W normalisation, ``variant=``. ``"symmetric"`` (default): D^-1/2 W D^-1/2, what the
   authors' code ran; the notes found the published numbers come from it (with the
   code's graph, stopping rule and start). ``"row"``: D^-1 W, the paper's Eq. 9, under
   which a labelled node's arg-max can never leave its label (Eq. 18–20) and the β*
   derivation is exact to first order. For NMF itself the two give close accuracies
   on the 2-D sets (``bench/nmf.py`` table 2); the notes' large gap is in LGC. The solver
   receives the symmetric graph of the contract and normalises it itself; building the
   paper's graph (mutual kNN, σ of Eq. 7, the code's nearest-neighbour rescue and
   (W+Wᵀ)/2) is the caller's job (``bench/_nmf_datasets.py`` does it).
2. Isolated nodes: under ``"row"`` a node without edges gets a zero row (no division by
   zero); it keeps φ = 1/q and, unless labelled, gets label -1 (contract: no guess).
3. Eq. 6's missing minus sign is a typo (graph construction, caller's side).
4. kNN details (k-th neighbour without self, k = floor(log2 N)): caller's side.
5. Eq. 10 vs Eq. 11 double counting: Eq. 16 is the definition (each W_ij once).
6. Alg. 3.1's θ_{i,s_i} is read θ_{i,s}.
7. φ⁽⁰⁾: uniform 1/q for every node, labelled ones included (the authors' code).
8. Convergence test, ``criterion=``. ``"coupling"`` (default, the authors' code):
   δ = max_is (m⁽ᵗ⁾ − m⁽ᵗ⁻¹⁾)² with m = Wφ and m⁽⁰⁾ = 0, stop when δ ≤ ``tol``; it
   reproduces the published numbers (the effective tolerance on |Δm| is √tol). ``"field"``
   (the paper's text): δ = max |h⁽ᵗ⁾ − h⁽ᵗ⁻¹⁾| (β included), stop when δ < ``tol``.
   ``tol`` = 1e-3 and ``max_iter`` = 10⁴ as in the paper. (ours) Neither test stops the
   first iteration: φ⁽⁰⁾ = 1/q holds no label (item 7), so m⁽¹⁾ = A 1/q does not either;
   the labels reach the couplings at the second. Against m⁽⁰⁾ = 0 the first δ is
   (r/q)², r the largest row sum of the couplings (about 1), below ``tol`` once q
   exceeds about r/√tol ≈ 32. 80 well-separated blobs of 250 nodes at 5% labelled
   stopped there with every unlabelled node uniform, all taken by class 0 (accuracy
   0.062, harmonic 1.000; now 6 iterations and 1.000), and so did ``bench/hard_data.py``'s
   100 overlapping classes (0.010; now 0.348 at 1% labelled and 0.616 at 10%, harmonic
   0.297 and 0.522). A run that did not stop at the first iteration is unchanged: the
   30-class cells of the same bench gave the same accuracies.
9. Update order: synchronous (Jacobi), as in the paper's pseudo-code and the code.
10.–11. GRF/LGC details concern the baselines, not this solver.
12. Γ uses the predicted mode ŷ; ``info["log_mode_probability"]`` = mean_i ln φ_i(ŷ_i)
    over the reachable nodes.
13. r_l in β* is N_l / N with N_l the given labels actually present and N all nodes
    (as the code's N_l = floor(r_l N) / N). β* ignores the graph, as in the paper.
14. q is ``problem.n_classes`` (the score columns), not the count of classes seen.
15. The β grid of Sec. 5 is a study, not part of the solver; ``beta=`` takes a number.
16.–17. Unstated preprocessing and the all-N accuracy of the paper are benchmark matters.
18.–22. Caption errors, the repo's AMI copy bug, splits and timings: benchmark matters.
23. Overflow: softmax with max-shift (log-sum-exp), so no NaN at any β; the paper's
    NaNs at large β disappear.
24. (ours) Root finding: Brent's method on a bracket to 1e-12 instead of the code's
    Newton from x0 = 1 with tolerance 1e-3 (same root to ~1e-3; a Newton step is not
    guaranteed to stay at β > 0, a bracket is).
25. (ours) Per-label confidence: a label of trust c gets field θ_{i,y_i} = c, and the
    criterion uses the same θ in Eq. 24 (with θ in {0, 1} this is exactly Eq. 26).
26. (ours) Confidence of a prediction: the marginal of the mode (the paper's per-node
    factor of Γ), φ_i(ŷ_i), sharpened by a temperature T (φ^(1/T), renormalised: the
    field read at β/T) fitted on the given labels' cross-fitted marginals: the labels
    are split into ``CALIBRATION_FOLDS`` = 5 folds (stratified by class), each fold's
    labels hidden from a run of its own at the run's β, and T maximises the likelihood
    of each hidden label's class under its node's marginal there, by the rule harmonic
    uses (``solvers._calibration``: a flagged label counted with the probability it
    gets, a label alone in its class not counted, Laplace's rule of succession when every
    hidden label comes back). The scores are written sharpened too. Why: at β* the
    marginals are nearly one-hot, and φ_i(ŷ_i) put 39% of the wrong predictions at a
    confidence ≥ 0.99 (``python -m bench calibration --solver nmf``: 85% on segment at
    5% labelled, 74% on glass, 78% on digits; ECE 0.144 over all cells). The cavity
    marginal of item 27 does not do as a held-out distribution: fitted on it, T came out
    below 1 and made the confidences sharper still (segment 5%: 91% of the wrong
    predictions at ≥ 0.99); the neighbours' marginals there had converged with the
    label in the field. Its cost is up to five more runs of the mean field: 2-8× the
    time of the uncalibrated call on the bench's sets, 4-5× on 50k-node blobs. Folds run
    while the next one's expected cost (``FOLD_RUN_MARGIN`` = 1.25 × the longest run so
    far, the call's own first: a fold's run took up to 1.22× it, 30 classes at 10%
    labelled in ``bench/hard_data.py``) keeps the call within the issue's time
    target, 10× the harmonic solve at the fastest the time limit's estimate allows
    (``Budget.strict_target``, ``solvers/_budget.py`` decision 2), or within
    ``CALIBRATION_SECONDS`` = 0.5 s (the real sets' calibrated calls took 0.01-0.27 s in
    ``bench/hard_data.py``, where 10× the harmonic time is Python overhead; 2 s let one or
    two runs take NMF to 12-21× the harmonic time on its 20k-node sets, where a harmonic
    solve is 0.1 s of real work), and within an explicit ``time_limit``; T
    is fitted on the labels of the folds that ran (``info["calibration_labels"]``). When
    not one fits, or the limit comes during them, the labels stand uncalibrated and
    ``info["calibration_skipped"]`` says why (a run's report shows it). Why the strict
    estimate: gated by the time limit's own (median) estimate, the runs passed 10× the
    harmonic time on 3 of ``bench/hard_data.py``'s 24 cells that met it uncalibrated (30
    classes at 10% labelled: 13.7 s against harmonic's 0.30 s; the estimate was 1.8 s).
    Why some folds rather than all or none: measured ad hoc with the first k folds run
    (the calibration bench's six sets, 10 draws; k = 0, 1, 2, 5): ECE 0.144, 0.123, 0.095,
    0.084 and wrong predictions at ≥ 0.99 0.390, 0.080, 0.077, 0.083; on 20k-node
    "overlap" (``bench/hard_data.py``, 1% labelled, 2 draws) ECE 0.118, 0.103, 0.098,
    0.065 and 0.679, 0.397, 0.370, 0.143. ``calibrate=False`` skips them. Measured in
    the README ("The other solvers' confidences").
27. (ours) Noise flags: the marginal the node would have from its neighbours alone,
    ψ_i = softmax(β Σ_j W_ij φ_j) (its own field θ_i removed, one cavity step at the
    converged φ), gives the label's ``noise_score``: the margin of ψ's best other class
    over y_i (as the harmonic solver's). It is flagged at ``noise_threshold`` = 0.35, the
    harmonic solver's value; measured on clean labels (10 seeds, 10 per class; WDBC 28)
    the false-flag rate is 0.8% on digits, 2.7% on segment and 1.4% on WDBC, and digits
    with 10% flipped gives precision / recall 0.92 / 0.91 (the earlier rule, ψ_i(y_i) <
    0.1 and another class preferred, is a margin of about 0.8 for two classes: on WDBC
    it caught 18% of the flips at 10%). ψ is nearly one-hot at β*, so on digits the
    margin is ±1 and any threshold gives the same flags. Nodes without neighbours get
    the score -1 and are never flagged, and neither is a label that is the only one of its
    class in the run (``LabelProblem.lone_labels``: the cavity field of such a class holds
    no other label's evidence; on weka's soybean at 10% labelled 4 of 20 such labels were
    flagged, all right), though its score stays. A flagged node is predicted as ψ's
    arg-max (its neighbours' class without its own label), with ψ's value as its
    confidence, as the harmonic solver predicts a flagged node as its leave-one-out
    class; φ (its ``scores``) is left as computed (``labelling/scores.py`` says how a
    reader sees that). It was φ's arg-max, mostly the given label itself: ``python -m
    bench flagged_predictions --seeds 0-4`` (digits, 10 labels per class, 10% flipped, a
    10-NN graph) found 16 of the 48 flagged nodes predicted right that way (37 as the
    doubted label, mean confidence 0.91), 42 of 48 now (harmonic: 42 of 45).
28. (ours) Slow convergence at large β. The paper's plateau of up to 10⁴ iterations
    is the synchronous update cycling (period 2: δ stays near 1 instead of shrinking,
    sometimes on only a few tightly coupled nodes). ``damping=λ`` replaces φ by
    (1−λ) softmax(h) + λ φ, which has the same fixed points; a damped step moves (1−λ)
    times as far, so the convergence measure is taken on the undamped step (the change
    divided by 1−λ, squared for "coupling") and ``tol`` keeps its meaning.
    ``damping="auto"`` (default) runs the paper's undamped update for the first
    ``AUTO_PATIENCE`` = 100 iterations and, while it has not converged, halves 1−λ every
    further 100 iterations (λ = 0.5, 0.75, 0.875, ... capped at ``AUTO_MAX_DAMPING``
    = 0.99). Every run the paper's update finishes within 100 iterations is unchanged.
    Why it ends the cycles: as λ → 1 the update is a small Euler step of
    dφ/dt = softmax(h(φ)) − φ, which for symmetric couplings (``variant="symmetric"``)
    descends the mean-field free energy and so settles; a cycle of the synchronous map
    needs a Jacobian eigenvalue below −1, which λ maps to (1−λ)μ + λ > −1 once λ is
    large enough. ``damping=0`` is the paper's update throughout.
    ``bench/nmf.py`` measures what this buys and costs.
29. (ours) Collapse into one class on hard graphs. Linearised at the uniform state φ =
    1/q, the update multiplies a perturbation along an eigenvector of the couplings with
    eigenvalue μ by β μ / q; the largest, μ = 1, is each connected component's trivial
    (whole-graph) mode, D^½1 for ``"symmetric"``. So for β > q the uniform state is
    unstable along that mode (the mean-field Potts model's ferromagnetic transition) and
    the whole component can order into one class, whatever the labels say; Eq. 26-27 put
    β* above q whenever few labels are given (β* = 3.29 for q = 2 with 3 of vote's 435
    nodes labelled, 33-35 for q = 10 with 1% of 2,000). Measured on vote (Weka's file,
    z-scored, 10-NN, 3 random labels, seed 2 of ``bench/hard_data.py``'s draw): β* puts
    every unlabelled node in one class (accuracy 0.384); fixed β = 1.5 or 1.9 (< q) does
    not (0.782), β = 3.0 does again. ``deflate`` removes that mode from the couplings:
    ``A φ`` becomes ``A φ − r (lᵀφ)`` per component (``trivial_mode``: r and l its right
    and left eigenvectors), so a class can no longer take a component by the dynamics
    alone, while the labels' field and every other mode are untouched; on vote the
    deflated run at β* scores 0.910. ``deflate="auto"`` (default) runs the paper's model
    first and reruns deflated only when one class has taken the graph: its predicted
    share exceeds its share of the given labels by more than ``COLLAPSE_SHARE`` = 0.25
    (a collapse moves it towards 1). Runs that did not collapse are unchanged. What it
    does not fix: the next mode, μ₂ close to 1 on a kNN graph, can order the same way;
    on 2,000-node versions of ``bench/hard_data.py``'s overlapping classes at 1% labelled
    (β* ≈ 34, q = 10) the deflated run still sits at chance (0.10), where at 20,000
    nodes it scores 0.87 (a fixed β = 0.9 q still ordered into one class there, 0.5 q
    did not: 0.39); and on ionosphere at 1% (seed 1) the rerun lowered accuracy from
    0.670 to 0.598. A labelling that is still degenerate after the rerun (one class takes
    at least 95% of the unlabelled nodes while holding less of the given labels) raises a
    ``DegenerateLabelingWarning`` and is kept in ``info["degenerate"]``.
30. A labelling that is not degenerate may still be no better than a guess (issue 15:
    0.610 on ionosphere at 1% against a majority share of 0.643, silently). The given
    labels' own held-out check is the cavity of item 27: a label comes back when its
    class wins in its node's neighbour-only marginal. When, over the classes with at
    least two given labels, no more come back than the largest class's share of them,
    the same ``DegenerateLabelingWarning`` says so (``info["no_better_than_majority"]``).
    The check is weak by construction: the neighbours' marginals were computed with the
    label in place, so it errs towards agreeing (on digits at 1%, 94-100% came back where
    the unlabelled accuracy was 0.73-0.90), and with one label of a class there is nothing
    to hold out, so ionosphere at 1% (3-4 labels, one of a class) still passes unwarned;
    on the real sets of ``bench/hard_data.py`` (seeds 0-2) it fired on none.

References
----------
Bergamim, E. & Breve, F. (2022). On tuning a mean-field model for semi-supervised
classification. Sections 2.2–5.1: Eqs. 9, 15–17, 18–20, 21–27, Alg. 3.1.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq

from ._budget import UNLIMITED, Budget, SolverTimeLimit
from ._calibration import fit_held_out_temperature, sharpen
from ._graph import (
    finish_labels,
    graph_components,
    margin_scores,
    no_better_than_majority,
    one_class_takes_all,
    per_label,
    predict_flagged,
    unreachable,
    warn_degenerate,
)
from ._memory import check_blocks
from ._row_split_product import RowSplitProduct
from ._timing import Stopwatch
from ._validation import (
    TIME_LIMIT,
    Integral,
    Interval,
    Options,
    Real,
    check,
    check_choice,
    check_interval,
    validate_params,
)
from .problem import LabelProblem, Prediction

VARIANTS = ("symmetric", "row")
CRITERIA = ("coupling", "field")
GAMMAS = ("midpoint",)
# damping="auto": undamped (the paper) for AUTO_PATIENCE iterations, then 1−λ halves
# every AUTO_PATIENCE iterations without convergence, up to AUTO_MAX_DAMPING (item 28).
AUTO_PATIENCE = 100
AUTO_MAX_DAMPING = 0.99
# The paper's stopping rule (Alg. 3.1, item 8): ε and t_max.
TOL = 1e-3
MAX_ITER = 10_000
# deflate="auto": a class predicted on this much more of the graph than its share of the
# given labels has taken it by the ordering of the model, not by the labels (item 29).
COLLAPSE_SHARE = 0.25
PARAMETER_CONSTRAINTS = {
    "variant": [Options(VARIANTS)],
    "beta": [Options(("auto",)), Interval(Real, 0, None, closed="neither")],
    "tol": [Interval(Real, 0, None, closed="neither")],
    "max_iter": [Interval(Integral, 1, None)],
    "criterion": [Options(CRITERIA)],
    "damping": [Options(("auto",)), Interval(Real, 0, 1, closed="left")],
    "deflate": [Options((True, False, "auto"))],
    "noise_threshold": [Interval(Real, 0, 1, closed="neither")],
    "calibrate": [Options((True, False))],
    "time_limit": TIME_LIMIT,
}
#: calibrate=True: the given labels' folds, each hidden from a run of its own (item 26)
#: n × q float32 blocks at the call's peak (the float64 marginals and the mean field's four
#: buffers, ``mean_field``; a calibration run's beside the call's marginals): 8.5, 10.9 and 10.5
#: measured with tracemalloc at 20,000 nodes of 200 classes, 50,000 of 100 and 20,000 of 500
#: (blobs, 10-NN, 5% labelled), where the iteration's arrays made anew took it to 18.5 at the
#: first. What ``check_blocks`` asks for at the door, with the graph's copies (W and the
#: normalised couplings A; 12 bytes an edge each).
PEAK_BLOCKS = 11
GRAPH_COPIES = 2
CALIBRATION_FOLDS = 5
#: ... run while the call stays within 10× the harmonic time at its fastest estimate or this many seconds
CALIBRATION_SECONDS = 0.5
#: ... a fold's run expected to cost this many times the longest run so far
FOLD_RUN_MARGIN = 1.25


def normalise(W: sp.spmatrix, variant: str = "symmetric") -> sp.csr_matrix:
    """The coupling matrix of the mean field: D^-1/2 W D^-1/2 or D^-1 W (Eq. 9).

    Nodes without edges keep a zero row (no division by zero).
    """
    check_choice("variant", variant, VARIANTS)
    W = sp.csr_matrix(W, dtype=np.float64)
    d = np.asarray(W.sum(axis=1)).ravel()
    safe = np.where(d > 0, d, 1.0)
    if variant == "row":
        return sp.csr_matrix(sp.diags(1.0 / safe) @ W)
    s = 1.0 / np.sqrt(safe)
    return sp.csr_matrix(sp.diags(s) @ W @ sp.diags(s))


def log_mode_probability_approx(beta, field_values, field_weights, n_classes: int):
    """Small-β approximation of (1/N) ln Γ (Eq. 24; Eq. 26 when θ is 0/1).

    Parameters
    ----------
    beta : float or array of float
    field_values : array of float
        The distinct label-field strengths θ_{i,y_i} (0 for unlabelled nodes).
    field_weights : array of float
        Fraction of the nodes with each field strength (sums to 1).
    n_classes : int
        q.

    Returns
    -------
    float or array: β (Σ w θ + 1/q) − Σ w ln(q + β (θ + 1)).
    """
    beta = np.asarray(beta, dtype=np.float64)
    v = np.asarray(field_values, dtype=np.float64)
    w = np.asarray(field_weights, dtype=np.float64)
    q = float(n_classes)
    logs = np.log(q + beta[..., None] * (v + 1.0)) @ w
    return beta * (w @ v + 1.0 / q) - logs


def beta_star(labeled_rate: float, n_classes: int, gamma: float | str = 1.0,
              field_values=None, field_weights=None) -> float:
    """β* solving (1/N) ln Γ ≈ ln γ (Eq. 26–27).

    Parameters
    ----------
    labeled_rate : float in [0, 1]
        r_l = N_l / N (ignored when ``field_values`` is given).
    n_classes : int
        q ≥ 2.
    gamma : float in (1/q, 1] or "midpoint"
        Target per-node mode probability; "midpoint" is (1+q)/(2q).
    field_values, field_weights : arrays, optional
        Distinct label-field strengths and their node fractions (for fractional θ).

    Returns
    -------
    float
        The unique positive root (g is increasing and convex on β ≥ 0).
    """
    q = int(n_classes)
    if q < 2:
        raise ValueError(f"n_classes must be at least 2, got {n_classes}")
    g_target = np.log(_gamma_value(gamma, q))
    if field_values is None:
        check_interval("labeled_rate", labeled_rate, 0, 1)
        field_values, field_weights = [0.0, 1.0], [1.0 - labeled_rate, labeled_rate]

    def f(b):
        return float(log_mode_probability_approx(b, field_values, field_weights, q)) - g_target

    hi = 1.0
    while f(hi) < 0.0:  # a bracket: f(0) = ln(1/q) - ln γ < 0 and f grows without bound
        hi *= 2.0
        if hi > 1e12:
            raise ValueError("no β* found: the labelled field is too weak for this γ")
    return float(brentq(f, 0.0, hi, xtol=1e-12, rtol=1e-14))


def _gamma_value(gamma, q: int) -> float:
    """γ of Eq. 27 for q classes: a number in (1/q, 1], or "midpoint" = (1+q)/(2q) (NMF-A)."""
    check("gamma", gamma, [Options(GAMMAS), Interval(Real, 1.0 / q, 1, closed="right")])
    return (1.0 + q) / (2.0 * q) if isinstance(gamma, str) else float(gamma)


def _softmax_rows(h: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Row softmax with the max subtracted (log-sum-exp), safe at any β; into ``out``
    (which may be ``h``) when given."""
    out = np.subtract(h, h.max(axis=1, keepdims=True), out=out)
    np.exp(out, out=out)
    out /= out.sum(axis=1, keepdims=True)
    return out


def trivial_mode(W: sp.spmatrix, variant: str = "symmetric"):
    """The whole-graph eigenvector pair (eigenvalue 1) of ``normalise(W, variant)`` of each
    connected component (each has its own): ``(right, left_sum, component)`` as
    ``mean_field``'s ``deflate`` takes them, ``left_sum`` the sparse component × node matrix
    of the left vectors.

    Symmetric: D^½1/‖D^½1‖ on both sides; row (D⁻¹W): the constant vector on the right and
    the degrees over the volume on the left.
    """
    d = np.asarray(sp.csr_matrix(W).sum(axis=1)).ravel()
    comp = graph_components(W)
    volume = np.bincount(comp, d)[comp]
    safe = np.where(volume > 0, volume, 1.0)
    if variant == "row":
        right, left = np.where(d > 0, 1.0, 0.0), d / safe
    else:
        right = left = np.sqrt(d / safe)
    n = len(d)
    left_sum = sp.csr_matrix((left, (comp, np.arange(n))), shape=(comp.max() + 1, n))
    return right, left_sum, comp


def mean_field(A: sp.csr_matrix, theta: np.ndarray | sp.spmatrix, beta: float, *, tol: float = TOL,
               max_iter: int = MAX_ITER, criterion: str = "coupling", damping: float | str = "auto",
               deflate: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None, budget: Budget = UNLIMITED):
    """Iterate the synchronous NMF update (Eq. 15–16, Alg. 3.1) from φ = 1/q.

    Parameters
    ----------
    A : csr_matrix, shape (n, n)
        Normalised couplings (see ``normalise``).
    theta : array or sparse matrix, shape (n, q)
        Label field (nonzero on the labelled nodes' rows only).
    beta : float
    tol, max_iter, criterion, damping
        See ``nmf``.
    deflate : (right, left_sum, component), optional
        Remove the trivial mode from the couplings: ``A @ φ`` becomes
        ``A @ φ − right ⊗ (left_sum @ φ)[component]`` (``trivial_mode``; item 29).
    budget : Budget, optional
        The calling solver's time budget, checked before every iteration (no limit by default).

    Returns
    -------
    phi : array, shape (n, q)
    n_iter : int
    delta : float
        The last convergence measure.
    damped_from : int or None
        The iteration ``damping="auto"`` first switched damping on at (None: never).
    """
    n, q = theta.shape
    # the field on the labelled rows only (the rest is 0), and the iteration's n × q arrays
    # in four buffers it reuses: φ, m and the m before it, and h (the next φ), each step's
    # scratch whichever of them is spent. Why: the call peaked at 18.5 float32 blocks of n × q
    # (tracemalloc, 20,000 nodes of 200 classes, 5% labelled), the iteration making an n × q
    # float64 anew at each step (β θ, β m, the softmax, the damping's λ φ, the criterion's
    # (m − m')², the deflation's two); 8 blocks hold the loop now.
    labels = sp.csr_matrix(theta)
    rows = np.flatnonzero(np.diff(labels.indptr))
    field = beta * labels[rows].toarray()
    phi = np.full((n, q), 1.0 / q)
    m, prev = np.empty((n, q)), np.zeros((n, q))  # m⁽⁰⁾ = 0 (code) or h⁽⁰⁾ = 0 (paper)
    h = np.empty((n, q))
    delta = np.inf
    auto = isinstance(damping, str)
    lam = 0.0 if auto else float(damping)
    step = 1.0  # the current update moves φ by 1−λ of the undamped step
    switched = None
    # A @ φ with A's rows split over threads, the same values as A @ φ: the whole solve on the
    # 20k-node "overlap" set of bench/hard_data.py (1% labelled, 2 cores) took 0.24 against 0.31 s
    couplings = RowSplitProduct(A)
    for it in range(1, max_iter + 1):
        budget.check(f"mean-field iteration {it}")
        if auto and it > AUTO_PATIENCE and (it - 1) % AUTO_PATIENCE == 0:
            lam = min(1.0 - (1.0 - lam) / 2.0, AUTO_MAX_DAMPING)
            switched = switched or it
        couplings.product(phi, out=m)
        if deflate is not None:
            right, left_sum, comp = deflate  # left_sum: sparse, component × node, the left vector
            np.take(left_sum @ phi, comp, axis=0, out=h)  # h is not made yet
            h *= right[:, None]
            m -= h
        np.multiply(m, beta, out=h)
        h[rows] += field
        if criterion == "field":  # h before its softmax (the paper's criterion)
            delta = float(np.max(np.abs(np.subtract(h, prev, out=prev), out=prev))) / step
            np.copyto(prev, h)
        new = _softmax_rows(h, out=h)
        if lam:
            new *= 1.0 - lam
            phi *= lam  # spent after this step
            new += phi
        phi, h = new, phi  # the old φ is the next h
        # The change of m (or h) made by the step just before, rescaled to an undamped one.
        # Not tested at the first iteration: the labels reach the couplings at the second
        # (item 8).
        if criterion == "coupling":
            delta = float(np.max(np.square(np.subtract(m, prev, out=prev), out=prev))) / step**2
            m, prev = prev, m  # the spent m' is the next m
            if delta <= tol and it > 1:
                break
        elif delta < tol and it > 1:
            break
        step = 1.0 - lam
    return phi, it, delta, switched


def nmf(problem: LabelProblem, *, variant: str = "symmetric", gamma: float | str = 1.0,
        beta: float | str = "auto", tol: float = TOL, max_iter: int = MAX_ITER,
        criterion: str = "coupling", damping: float | str = "auto",
        deflate: bool | str = "auto", noise_threshold: float = 0.35, calibrate: bool = True,
        time_limit: float | str | None = "auto") -> Prediction:
    """Label nodes with the naive mean-field Potts model, β from the Γ criterion.

    Parameters
    ----------
    problem : LabelProblem
    variant : {"symmetric", "row"}, default="symmetric"
        Normalisation of W: D^-1/2 W D^-1/2 (the authors' code, reproduces their
        numbers) or D^-1 W (the paper's Eq. 9).
    gamma : float in (1/q, 1] or "midpoint", default=1.0
        Target of the β criterion (Eq. 27): 1 (NMF-B) or (1+q)/(2q) (NMF-A).
        Ignored when ``beta`` is a number.
    beta : "auto" or float > 0, default="auto"
        Inverse temperature; "auto" solves Eq. 26–27 for β* from r_l and q.
    tol : float > 0, default=1e-3
        Convergence tolerance ε (Alg. 3.1).
    max_iter : int ≥ 1, default=10000
        t_max (Alg. 3.1).
    criterion : {"coupling", "field"}, default="coupling"
        Convergence measure: squared change of Wφ (the authors' code) or absolute
        change of h (the paper's text). See the module docstring, item 8.
    damping : float in [0, 1) or "auto", default="auto"
        φ ← (1−λ) softmax(h) + λ φ; 0 is the paper's update; "auto" is the paper's
        update for 100 iterations, then λ = 0.5, 0.75, ... while it has not converged
        (module docstring, item 28).
    deflate : bool or "auto", default="auto"
        Remove each component's trivial (whole-graph) mode from the couplings, so that no
        class can take a whole component by the dynamics alone (module docstring, item
        29). False is the paper's model; "auto" runs the paper's model and, when one class
        has taken the graph (its predicted share exceeds its share of the given labels by
        more than ``COLLAPSE_SHARE``), runs again deflated.
    noise_threshold : float in (0, 1), default=0.35
        A given label is flagged when the best other class beats it by this margin in
        the node's neighbour-only marginal (module docstring, item 27).
    calibrate : bool, default=True
        Read the confidences from φ sharpened by a temperature fitted on the given labels'
        cross-fitted marginals (up to ``CALIBRATION_FOLDS`` more runs, as many as the
        time target allows; module docstring, item 26); False: φ_i(ŷ_i) as it is.
    time_limit : "auto", float > 0, None or "none", default "auto"
        Seconds the call may take (``SolverTimeLimit`` when spent), checked before every
        mean-field iteration. "auto": 10× an estimate of the harmonic solve of this graph,
        at least 30 s (solvers/_budget.py); None or "none": no limit.

    Returns
    -------
    Prediction
        ``scores`` are the marginals φ (n × q), sharpened by the fitted temperature;
        ``confidence`` is their value at ŷ_i; ``info`` holds ``beta``, ``beta_star`` (None
        for a fixed β), ``gamma``, ``labeled_rate``, ``n_iter``, ``damped_from``,
        ``converged``, ``delta``, ``log_mode_probability`` (of the unsharpened φ),
        ``temperature`` (1 when not calibrated), ``calibration_labels`` (the labels it was
        fitted on), ``calibration_skipped`` (why not, or None) and ``seconds``.

    Raises
    ------
    SolverOutOfMemory
        Before anything is allocated, when ``PEAK_BLOCKS`` blocks of n × q float32 and the
        graph's copies exceed the memory the process may take (``solvers/_memory.py``).

    References
    ----------
    Bergamim & Breve (2022), Sec. 3 (Eq. 15–17, Alg. 3.1) and Sec. 5.1 (Eq. 21–27).
    """
    validate_params({"variant": variant, "beta": beta, "tol": tol, "max_iter": max_iter, "criterion": criterion,
                     "damping": damping, "deflate": deflate, "noise_threshold": noise_threshold,
                     "calibrate": calibrate, "time_limit": time_limit}, PARAMETER_CONSTRAINTS)
    q = problem.n_classes
    if q < 2:
        raise ValueError(f"the Potts model needs at least 2 classes, got {q}")
    gamma_value = _gamma_value(gamma, q)  # validated even for a fixed β
    n = problem.n_nodes
    check_blocks("nmf", n, q, PEAK_BLOCKS, problem.W.nnz, GRAPH_COPIES, "a marginal")

    clock = Stopwatch()
    budget = Budget("nmf", time_limit, problem.W, q)
    labeled = problem.labeled
    A = normalise(problem.W, variant)
    settings = dict(beta=beta, gamma_value=gamma_value, variant=variant, deflate=deflate, tol=tol,
                    max_iter=max_iter, criterion=criterion, damping=damping, budget=budget)
    field = _marginals(problem, problem.y, A, **settings)
    phi, beta_value, mode, delta = field.phi, field.beta, field.mode, field.delta
    labeled_rate = float(labeled.sum()) / n

    no_label = field.unreachable
    noise_score, cavity = _noise_scores(A, phi, problem.y, labeled, beta_value, mode)
    noisy = labeled & (noise_score >= noise_threshold) & ~problem.lone_labels  # decision 27
    temperature, skipped, calibration_labels = 1.0, None, 0
    if calibrate:  # decision 26
        held_out, held, skipped = _calibration_marginals(problem, A, {**settings, "beta": beta_value}, budget)
        if held_out is not None and held is not None:
            calibration_labels = int(held.sum())
            temperature = fit_held_out_temperature(held_out, problem.y[labeled], noisy[labeled],
                                                   held & ~problem.lone_labels[labeled])
    if temperature != 1.0:
        # the scores too, so that a node's score of its label is its confidence (labelling/scores.py)
        marginals, cavity = sharpen(phi, temperature), sharpen(cavity, temperature)
    else:
        marginals = phi
    labels, confidence = finish_labels(phi, marginals.max(axis=1), no_label)
    # a flagged label's node is predicted as its neighbours say without it (decision 27)
    predict_flagged(labels, confidence, noisy, labeled, cavity)
    reach = ~no_label
    log_gamma = float(np.mean(np.log(np.maximum(phi.max(axis=1)[reach], 1e-300)))) if reach.any() else 0.0
    converged = delta <= tol if criterion == "coupling" else delta < tol
    degenerate = one_class_takes_all(labels, problem.y, q)
    if degenerate:
        tried = "; deflating the whole-graph mode did not stop it" if mode is not None else ""
        warn_degenerate("nmf", degenerate, (
            f"β = {beta_value:.3g} is above q = {q}, where the uniform state is unstable and the model can order into "
            f"one class whatever the labels say{tried} (solvers/nmf.py, item 29). Try a fixed beta well below q, "
            "or another solver." if beta_value > q
            else "The mean field ordered into one class (solvers/nmf.py, item 29)."))
    no_better = None if degenerate else no_better_than_majority(noise_score, problem.y)
    if no_better:
        warn_degenerate("nmf", no_better, (
            "The check holds each label's own field out of its node's marginal (the cavity of the noise score, item "
            "27). Give more labels, or compare another solver's labelling."))
    info = {
        "collapsed": field.collapsed,
        "deflated": mode is not None,
        "degenerate": degenerate,
        "no_better_than_majority": no_better,
        "beta": beta_value,
        "beta_star": field.beta_star,
        "gamma": gamma_value if field.beta_star is not None else None,
        "labeled_rate": labeled_rate,
        "n_iter": int(field.n_iter),
        "damped_from": field.damped_from,
        "converged": bool(converged),
        "delta": float(delta),
        "log_mode_probability": log_gamma,
        "temperature": temperature,
        "calibration_skipped": skipped,
        "calibration_labels": calibration_labels,
        "seconds": clock.elapsed,
        "time_limit_seconds": budget.limit,
    }
    params = {"variant": variant, "gamma": gamma, "beta": beta_value, "tol": tol,
              "max_iter": int(max_iter), "criterion": criterion, "damping": damping, "deflate": deflate,
              "noise_threshold": noise_threshold, "calibrate": calibrate}
    return Prediction(labels, confidence, noisy, marginals, "nmf", params, info, noise_score)


class MeanField(NamedTuple):
    """What ``_marginals`` found: the marginals and how they were reached."""

    phi: np.ndarray  # n × q marginals φ
    beta: float  # the β used
    beta_star: float | None  # β* when tuned from the labelled rate, None for a fixed β
    mode: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # the whole-graph mode deflated (item 29), or None
    n_iter: int  # iterations, of both runs when deflated again
    delta: float  # the last iteration's δ
    damped_from: int | None  # the iteration damping began at
    collapsed: bool  # the undeflated field collapsed into one class
    unreachable: np.ndarray  # the nodes no given label reaches (``_graph.unreachable``)


def _marginals(problem: LabelProblem, y: np.ndarray, A: sp.csr_matrix, *, beta, gamma_value, variant, deflate, tol,
               max_iter, criterion, damping, budget) -> MeanField:
    """The converged marginals φ of the mean field with the given labels ``y`` (β* from their
    rate when ``beta`` is "auto"; deflated again when one class took the graph, item 29)."""
    q = problem.n_classes
    n = problem.n_nodes
    labeled = y >= 0
    conf = np.ones(n) if problem.label_confidence is None else problem.label_confidence
    field = np.where(labeled, conf, 0.0)
    at = np.flatnonzero(labeled)  # θ: each given label's confidence at its class, sparse
    theta = sp.csr_matrix((field[at], (at, y[at])), shape=(n, q))
    if isinstance(beta, str):
        values, counts = np.unique(field, return_counts=True)
        beta_value = beta_star(float(labeled.sum()) / n, q, gamma_value, values, counts / n)
        tuned = beta_value
    else:
        beta_value, tuned = float(beta), None
    mode = trivial_mode(problem.W, variant) if deflate is True else None
    phi, n_iter, delta, damped_from = mean_field(A, theta, beta_value, tol=tol, max_iter=max_iter,
                                                 criterion=criterion, damping=damping, deflate=mode, budget=budget)
    no_label = unreachable(problem.W, labeled)
    collapsed = _collapsed(phi, y, problem.n_classes, no_label)
    if deflate == "auto" and collapsed:
        mode = trivial_mode(problem.W, variant)
        phi, more_iter, delta, damped_from = mean_field(A, theta, beta_value, tol=tol, max_iter=max_iter,
                                                        criterion=criterion, damping=damping, deflate=mode,
                                                        budget=budget)
        n_iter += more_iter
    return MeanField(phi, beta_value, tuned, mode, n_iter, delta, damped_from, collapsed, no_label)


def _calibration_marginals(problem: LabelProblem, A: sp.csr_matrix, settings: dict,
                           budget: Budget) -> tuple[np.ndarray | None, np.ndarray | None, str | None]:
    """``_cross_fitted_marginals`` at the run's β (the temperature reads the marginals of
    that field) of as many of the ``CALIBRATION_FOLDS`` folds as keep the call within its
    time limit and, with the default limit, within 10× the harmonic time at its fastest
    estimate (``Budget.strict_target``) or ``CALIBRATION_SECONDS``: (held-out rows, which
    labels they hold, None); none, and why, when not one fits (item 26: the labels stand,
    uncalibrated)."""
    within = budget.limit
    strict = budget.strict_target
    if strict is not None and budget.limit is not None:
        within = min(budget.limit, max(strict, CALIBRATION_SECONDS))
    first_run = budget.elapsed

    def fits(seconds: float) -> bool:
        return within is None or budget.elapsed + seconds <= within

    try:
        held_out, held = _cross_fitted_marginals(problem, A, settings, fits, first_run)
    except SolverTimeLimit as reached:
        return None, None, f"the time limit came during its runs ({reached.budget:.0f} s)"
    if held is not None and not held.any():
        return None, None, (f"one more run of about {FOLD_RUN_MARGIN * first_run:.2g} s would take the call past "
                            f"{within:.2g} s (10× the harmonic time as fast as estimated, at least "
                            f"{CALIBRATION_SECONDS:g} s, or the time limit)")
    return held_out, held, None


def _cross_fitted_marginals(problem: LabelProblem, A: sp.csr_matrix, settings: dict,
                            fits: Callable[[float], bool] = lambda seconds: True,
                            first_run: float = 0.0) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Given labels' marginals from runs that did not see them (one row per label, in node
    order) and which labels those are: the labels split into ``CALIBRATION_FOLDS`` folds,
    stratified by class, each fold's labels hidden from a run of its own (item 26), while
    ``fits`` holds the next run's expected seconds (``FOLD_RUN_MARGIN`` × the longest run
    so far, ``first_run`` the call's own). None, None with fewer than two labels."""
    labeled = np.flatnonzero(problem.labeled)
    y_l = problem.y[labeled]
    n_splits = min(CALIBRATION_FOLDS, len(labeled))
    if n_splits < 2:
        return None, None
    # Stratified by hand: the labels grouped by class, in a seeded random order within each,
    # dealt to the folds in turn, so each class spreads over the folds and the folds differ
    # in size by at most one. scikit-learn's StratifiedKFold does about the same but warns of
    # a class with fewer labels than folds (common at 5% labelled), and silencing that would
    # change the process-wide warning filters under the flow's other threads.
    order = np.random.default_rng(0).permutation(len(labeled))
    order = order[np.argsort(y_l[order], kind="stable")]
    fold = np.empty(len(labeled), dtype=np.int64)
    fold[order] = np.arange(len(labeled)) % n_splits
    held_out = np.zeros((len(labeled), problem.n_classes))
    longest, ran = first_run, 0
    for k in range(n_splits):  # a loop over folds
        if not fits(FOLD_RUN_MARGIN * longest):
            break
        started = time.perf_counter()
        held = fold == k
        y_fold = problem.y.copy()
        y_fold[labeled[held]] = -1
        # the fold's marginals kept for its rows only, not beside the next fold's run
        held_out[held] = _marginals(problem, y_fold, A, **settings).phi[labeled[held]]
        longest, ran = max(longest, time.perf_counter() - started), ran + 1
    return held_out, fold < ran


def _collapsed(phi, y: np.ndarray, n_classes: int, no_label) -> bool:
    """One class has taken the graph: its share of the predictions exceeds its share of
    the given labels ``y`` by more than ``COLLAPSE_SHARE`` (item 29)."""
    reach = ~no_label
    if not reach.any():
        return False
    predicted = np.bincount(phi.argmax(axis=1)[reach], minlength=n_classes) / reach.sum()
    given = np.bincount(y[y >= 0], minlength=n_classes) / np.count_nonzero(y >= 0)
    return bool(np.max(predicted - given) > COLLAPSE_SHARE)


def _noise_scores(A, phi, y, labeled, beta, deflate) -> tuple[np.ndarray, np.ndarray]:
    """Margin of the best other class over the given label in the cavity marginal ψ (item
    27), per node, and ψ of the labelled nodes (l × q, in node order)."""
    idx = np.flatnonzero(labeled)
    A_l = A[idx]
    m = A_l @ phi
    if deflate is not None:
        right, left_sum, comp = deflate
        m -= right[idx, None] * (left_sum @ phi)[comp[idx]]
    psi = _softmax_rows(beta * m)
    margin = margin_scores(psi, y[idx])
    margin[np.diff(A_l.indptr) == 0] = -1.0  # no neighbours: no evidence against the label
    return per_label(len(y), labeled, margin), psi
