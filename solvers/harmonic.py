"""Harmonic function solution, in the regularised form of max-margin graph cuts.

Zhu, Ghahramani & Lafferty (2003) label the unlabeled nodes with the harmonic
function that equals the given labels on labeled nodes; Kveton et al. (2010, Sec. 3,
eq. 4) regularise it with γ_g I, which adds an absorbing sink to the random walk:

    ℓ_u = (L_uu + γ_g I)⁻¹ W_ul y_l,        L = D − W.

Multi-class: one column per class, ``y_l`` the one-hot rows of the given labels, so
row i of the solution is the probability that a walk from i is absorbed at a label
of each class (Zhu et al., Sec. 2).

Decisions the papers leave open, and what this module does
-----------------------------------------------------------
- Per-label confidence: a label of trust c enters its class column with value c
  (its walk mass is partly lost), so doubtful labels pull less.
- Confidence of a prediction: the normalised absorption probability of the chosen
  class, p_iŷ = F_iŷ / Σ_c F_ic, sharpened by a temperature: p ∝ p^(1/T). The raw p is
  under-confident on kNN graphs (mass leaks to every class through a few hops), so T
  is fitted, when ``calibrate=True``, by maximising the likelihood of the given labels
  under their leave-one-out distributions (labels only, no hidden data; flagged labels
  left out). The sink (γ_g > 0) shrinks all columns alike and does not change p; a
  node no label can reach has F_i = 0 and gets label -1, confidence 0.
- Linear solver: SuperLU (``splu``) up to ``direct_max_nodes`` unknowns (10,000); above,
  conjugate gradients with the Jacobi preconditioner, falling back to pyamg's
  smoothed-aggregation AMG for a slowly converging right-hand side (``_spd_solver`` says
  why, with the measurements). Both grow about linearly with the edges (a sparse LU's
  fill-in does not); SuperLU stays the default below 10k, where its one factorisation
  also serves the leave-one-out solves of the noise flags.
- Cost of the noise flags: one extra solve per given label (``_leave_one_out``), in
  chunks; cheap with a factorisation, one CG per label with AMG. Many labels on a large
  graph make it the dominant cost: pass ``detect_noise=False`` there.
- Noise flags (the rule): for each given label i, the solution at i is recomputed
  *as if i were unlabeled* (exact leave-one-out, see ``_leave_one_out``). The label is
  flagged noisy when that leave-one-out distribution puts at least ``noise_threshold``
  of its mass on one other class. Flagged labels are then dropped and the problem is
  solved again (``drop_noisy=True``), so a wrong label does not spread; flagged nodes
  get the leave-one-out class as their prediction.

References
----------
Zhu, X., Ghahramani, Z., Lafferty, J. (2003). Semi-supervised learning using Gaussian
fields and harmonic functions. ICML.
Kveton, B., Valko, M., Rahimi, A., Huang, L. (2010). Semi-supervised learning with
max-margin graph cuts. AISTATS. Section 3, eq. (4).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, cg, splu
from threadpoolctl import threadpool_limits

from ._graph import finish_labels, laplacian, one_hot, unreachable
from .problem import LabelProblem, Prediction

SOLVERS = ("auto", "direct", "cg", "amg")
# Jacobi-CG iterations allowed per right-hand side before AMG takes over (see _spd_solver).
JACOBI_MAX_ITERATIONS = 300


def _spd_solver(A: sp.csr_matrix, method: str, direct_max_nodes: int, rtol: float):
    """A function B ↦ A⁻¹B for the SPD matrix A, factorised or preconditioned once.

    "cg" is scipy's conjugate gradients with the Jacobi (diagonal) preconditioner, and
    pyamg's smoothed-aggregation AMG as a fallback for a right-hand side that has not
    converged after ``JACOBI_MAX_ITERATIONS`` (CG restarts from where Jacobi stopped).
    Why Jacobi first: with labels on 1% of a kNN graph, L_uu is diagonally dominant and
    well conditioned; on 100k nodes (10-NN, 32-d, bench/e2e.py) Jacobi-CG needed ~45
    iterations per class at 2.7 ms each (1.7 s for 10 classes) where AMG spent 7.6 s on
    its set-up and 13 s on 60 cheaper-converging but far costlier iterations. AMG stays
    for the ill-conditioned cases (few labels on a long, chain-like graph).

    The returned function has ``cg_iterations`` (None for the factorisation): the total
    of CG iterations so far, one product with A each, and ``amg_fallbacks``.
    """
    if method == "auto":
        method = "direct" if A.shape[0] <= direct_max_nodes else "cg"
    if method == "direct":
        lu = splu(A.tocsc())

        def solve_direct(B):
            return lu.solve(np.asarray(B, dtype=np.float64))

        solve_direct.cg_iterations = None  # no CG: a factorisation
        solve_direct.amg_fallbacks = 0
        return solve_direct

    A = A.tocsr()
    diagonal = A.diagonal()
    inverse_diagonal = 1.0 / np.where(diagonal > 0, diagonal, 1.0)
    # a plain elementwise product: a sparse diagonal matrix goes through scipy's sparse
    # matvec machinery on every iteration (with contiguous right-hand sides, below, CG on
    # 100k nodes went from 25.6 to 6.7 ms per iteration; one SpMV is 3.1 ms)
    jacobi = LinearOperator(A.shape, matvec=lambda v: inverse_diagonal * v.ravel(), dtype=np.float64)
    amg = []  # built on first need: its set-up costs more than most Jacobi solves

    def amg_preconditioner():
        if not amg:
            import pyamg  # only ill-conditioned problems need it

            amg.append(pyamg.smoothed_aggregation_solver(A, symmetry="symmetric").aspreconditioner())
        return amg[0]

    def count(_x):
        # scipy's cg calls back once per iteration, and each iteration is one product
        # with A (plus one preconditioner application).
        solve.cg_iterations += 1

    def solve(B):
        # column-major, so that each right-hand side B[:, j] is a contiguous vector
        B = np.asfortranarray(np.asarray(B, dtype=np.float64).reshape(A.shape[0], -1))
        out = np.empty_like(B)
        # CG's dot products are level-1 BLAS on single vectors: OpenBLAS's threads only add
        # synchronisation, and on a loaded 2-core machine made an iteration on 100k nodes
        # take 24 ms instead of 3.1 ms (one SpMV: 2.5 ms). One BLAS thread for the loop.
        with threadpool_limits(limits=1, user_api="blas"):
            for j in range(B.shape[1]):  # one CG per right-hand side (classes or labels)
                x, info = None, 1
                if method == "cg":
                    x, info = cg(A, B[:, j], rtol=rtol, maxiter=JACOBI_MAX_ITERATIONS, M=jacobi, callback=count)
                if info != 0:
                    solve.amg_fallbacks += method == "cg"
                    x, info = cg(A, B[:, j], x0=x, rtol=rtol, maxiter=1000, M=amg_preconditioner(),
                                 callback=count)
                if info != 0:
                    raise RuntimeError(f"CG did not converge (info={info}) on column {j}")
                out[:, j] = x
        return out

    solve.cg_iterations = 0  # over every right-hand side solved so far
    solve.amg_fallbacks = 0
    return solve


def harmonic_scores(
    W: sp.csr_matrix,
    Y: np.ndarray,
    labeled: np.ndarray,
    *,
    gamma_g: float = 0.0,
    solver: str = "auto",
    direct_max_nodes: int = 10_000,
    rtol: float = 1e-8,
):
    """Regularised harmonic solution F (n × C) with F_l = Y_l, F_u = (L_uu + γ_g I)⁻¹ W_ul Y_l.

    Nodes that no labeled node reaches are left out of the system and get F = 0.

    Returns
    -------
    F : array, shape (n, C)
    solve_uu : callable B ↦ (L_uu + γ_g I)⁻¹ B on the kept unlabeled nodes
    unlabeled : array of int, the kept unlabeled node indices (the rows solve_uu works on)
    """
    n = W.shape[0]
    cut_off = unreachable(W, labeled)
    u = np.flatnonzero(~labeled & ~cut_off)
    l = np.flatnonzero(labeled)
    F = np.zeros((n, Y.shape[1]))
    F[l] = Y[l]
    L = laplacian(W)
    A = L[u][:, u] + gamma_g * sp.eye(len(u), format="csr")
    solve_uu = _spd_solver(A, solver, direct_max_nodes, rtol) if len(u) else (lambda B: B)
    if len(u):
        F[u] = solve_uu(W[u][:, l] @ Y[l])
    return F, solve_uu, u


def _leave_one_out(W, Y, labeled, F, solve_uu, u, gamma_g, chunk: int = 256) -> np.ndarray:
    """Exact leave-one-out solution at each labeled node, shape (l, C).

    Unclamping labeled node i adds it to the unknowns; by the Schur complement of the
    block system [[A, -w], [-wᵀ, d_i + γ_g]] with A = L_uu + γ_g I and w = W_ui:

        f_i = (b_i + wᵀ A⁻¹ b_u) / (d_i + γ_g − wᵀ A⁻¹ w),

    where b = W_{·,l∖i} Y_{l∖i}. Since A⁻¹ b_u = F_u − A⁻¹ w Y_i, all labels need only
    the solves A⁻¹ W_ul, done in chunks of columns.
    """
    l = np.flatnonzero(labeled)
    d = np.asarray(W.sum(axis=1)).ravel()
    W_ll = W[l][:, l]
    b_l = W_ll @ Y[l]  # b_i for the labeled rows (W_ii = 0, so i's own label is excluded)
    W_ul = W[u][:, l].tocsc()
    F_u = F[u]
    out = np.zeros((len(l), Y.shape[1]))
    for start in range(0, len(l), chunk):  # chunks of labels bound the n_u × chunk memory
        cols = slice(start, min(start + chunk, len(l)))
        w = W_ul[:, cols].toarray()  # n_u × m
        Aw = solve_uu(w).reshape(len(u), -1) if len(u) else w  # every node labeled: w is 0 × m
        wAw = np.einsum("ij,ij->j", w, Aw)
        Yi = Y[l[cols]]
        wAb = w.T @ F_u - wAw[:, None] * Yi  # wᵀ A⁻¹ b_u, one row per label
        denom = d[l[cols]] + gamma_g - wAw
        with np.errstate(divide="ignore", invalid="ignore"):
            out[cols] = np.where(denom[:, None] > 1e-12, (b_l[cols] + wAb) / denom[:, None], 0.0)
    return out


def _normalise(F: np.ndarray) -> np.ndarray:
    F = np.clip(F, 0.0, None)
    total = F.sum(axis=1, keepdims=True)
    return np.divide(F, total, out=np.zeros_like(F), where=total > 0)


def _sharpen(P: np.ndarray, temperature: float) -> np.ndarray:
    # CG may leave -1e-17 where the exact value is 0; a fractional power of it is NaN.
    return _normalise(np.power(np.clip(P, 0.0, None), 1.0 / temperature))


def _fit_temperature(loo: np.ndarray, given: np.ndarray) -> float:
    """Temperature T minimising the negative log-likelihood of the given labels under
    their sharpened leave-one-out distributions (bounded search over log T)."""
    from scipy.optimize import minimize_scalar

    rows = np.arange(len(given))

    def nll(log_t: float) -> float:
        p = _sharpen(loo, np.exp(log_t))[rows, given]
        return -np.mean(np.log(np.clip(p, 1e-12, None)))

    return float(np.exp(minimize_scalar(nll, bounds=(np.log(0.05), np.log(5.0)), method="bounded").x))


def harmonic(
    problem: LabelProblem,
    *,
    gamma_g: float = 0.0,
    noise_threshold: float = 0.5,
    drop_noisy: bool = True,
    detect_noise: bool = True,
    calibrate: bool = True,
    solver: str = "auto",
    direct_max_nodes: int = 10_000,
    rtol: float = 1e-8,
) -> Prediction:
    """Label nodes with the (regularised) harmonic function and flag doubtful given labels.

    Parameters
    ----------
    problem : LabelProblem
    gamma_g : float, default 0
        Laplacian regulariser γ_g ≥ 0 of Kveton et al. (2010), eq. (4); 0 is the plain
        harmonic function of Zhu et al. (2003).
    noise_threshold : float in (0, 1], default 0.5
        A given label is flagged when its leave-one-out solution puts at least this
        share of its mass on one other class.
    drop_noisy : bool, default True
        Solve again without the flagged labels.
    detect_noise : bool, default True
        Skip the leave-one-out step (and flag nothing) when False.
    calibrate : bool, default True
        Fit the confidence temperature on the leave-one-out distributions of the
        given labels (needs ``detect_noise``; otherwise T = 1).
    solver : {"auto", "direct", "cg", "amg"}
        "cg": Jacobi-preconditioned CG, switching to AMG for a right-hand side that
        converges slowly; "amg": AMG-preconditioned CG throughout.
    direct_max_nodes : int
        "auto" uses SuperLU up to this many unknowns, "cg" above.
    rtol : float
        Relative tolerance of CG.

    Returns
    -------
    Prediction
        ``scores`` are the absorption probabilities F (n × C); ``info["loo_scores"]``
        the normalised leave-one-out distributions of the given labels.
    """
    if gamma_g < 0:
        raise ValueError(f"gamma_g must be >= 0, got {gamma_g}")
    if not 0 < noise_threshold <= 1:
        raise ValueError(f"noise_threshold must lie in (0, 1], got {noise_threshold}")
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    W, y, C = problem.W, problem.y, problem.n_classes
    labeled = problem.labeled
    trust = problem.label_confidence if problem.label_confidence is not None else np.ones(len(y))
    Y = one_hot(y, C) * np.where(labeled, trust, 0.0)[:, None]
    kw = dict(gamma_g=gamma_g, solver=solver, direct_max_nodes=direct_max_nodes, rtol=rtol)

    F, solve_uu, u = harmonic_scores(W, Y, labeled, **kw)
    used = [solve_uu]  # every linear solver of this call, for the CG iteration count
    noisy = np.zeros(len(y), dtype=bool)
    info: dict = {"n_unknowns": int(len(u))}
    loo_label = None
    if detect_noise:
        l = np.flatnonzero(labeled)
        loo = _normalise(_leave_one_out(W, Y, labeled, F, solve_uu, u, gamma_g))
        other = loo.copy()
        other[np.arange(len(l)), y[l]] = -np.inf
        best_other = other.argmax(axis=1)
        flagged = other[np.arange(len(l)), best_other] >= noise_threshold
        noisy[l[flagged]] = True
        loo_label = (l[flagged], best_other[flagged])
        info["loo_scores"] = loo
        if drop_noisy and flagged.any():
            kept = labeled & ~noisy
            if len(set(y[kept].tolist())) >= 2:
                F, solve_kept, u = harmonic_scores(W, Y * kept[:, None], kept, **kw)
                used.append(solve_kept)
                info["n_unknowns"] = int(len(u))
    # CG iterations over all solves (classes, leave-one-out columns, the re-solve): each is
    # one product with L_uu + γ_g I. None when SuperLU solved instead (no iterations).
    counts = [getattr(linear, "cg_iterations", None) for linear in used]
    info["cg_iterations"] = None if all(c is None for c in counts) else int(sum(c or 0 for c in counts))
    info["amg_fallbacks"] = int(sum(getattr(linear, "amg_fallbacks", 0) for linear in used))
    temperature = 1.0
    if detect_noise and calibrate:
        trusted = ~noisy[np.flatnonzero(labeled)]
        temperature = _fit_temperature(info["loo_scores"][trusted], y[labeled][trusted])
        info["loo_scores"] = _sharpen(info["loo_scores"], temperature)
    info["temperature"] = temperature
    P = _sharpen(_normalise(F), temperature)
    no_label = F.sum(axis=1) <= 0
    labels, confidence = finish_labels(P, P.max(axis=1), no_label)
    if loo_label is not None and len(loo_label[0]):
        idx, cls = loo_label
        labels[idx] = cls
        confidence[idx] = info["loo_scores"][np.searchsorted(np.flatnonzero(labeled), idx), cls]
    params = dict(gamma_g=gamma_g, noise_threshold=noise_threshold, drop_noisy=drop_noisy,
                  detect_noise=detect_noise, calibrate=calibrate, solver=solver)
    return Prediction(labels, confidence, noisy, F, "harmonic", params, info)
