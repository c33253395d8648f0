"""Spectral graph transducer (SGT): constrained ratio cuts on a fixed spectrum.

Joachims, T. (2003). Transductive learning via spectral graph partitioning. ICML.

The graph's spectrum is computed once (`graph_spectrum`, Sec. 5 "preprocessing") and
kept in an explicit, frozen `GraphSpectrum`; every new set of labels then costs
O(l·d² + d³ + n·d) per class (`spectral`, Sec. 4 eqs. 17-21 and the per-training-set
steps of Sec. 5). Several classes are handled one-vs-rest on the shared spectrum.

Open decisions (paper silent or ambiguous) and what this module chooses
-------------------------------------------------------------------------
1. Normalised Laplacian B⁻¹(B−A) is not symmetric (notes §8.1). ``laplacian="rw"``
   (default) solves the generalised problem (B−A)v = λBv and uses its B-orthonormal
   eigenvectors as they are (option (a) of the notes, closest to the paper's wording).
   ``"rw_unit"`` rescales those columns to unit length, ``"sym"`` uses the eigenvectors
   of I − B^-1/2 A B^-1/2, ``"unnormalized"`` the eigenvectors of B − A (Sec. 4's
   derivation). The bench reports all four on digits.
2. Dropping the trivial eigenvector (Sec. 4, "w₁ = 0"): instead of dropping the first
   computed vector, the d+1 smallest eigenvectors are projected off the trivial vector
   (1 for rw/unnormalized, B^1/2·1 for sym, in the problem's own inner product) and a
   Rayleigh-Ritz step on that d-dimensional space gives V. On a connected graph this is
   exactly "drop the smallest"; on a disconnected graph (several null vectors, the
   constant vector not singled out) it still removes only the constant direction.
   Nodes of components without any given label get label -1 / confidence 0.
3. Spectrum normalisation: D_ii = i², i = 1..d (Sec. 5), the first non-trivial vector
   getting 1.
4. Graph: `sgt_graph` builds eq. 22 from a directed kNN similarity matrix (rows scaled
   to sum 1 *before* symmetrising by A = A' + A'ᵀ, which `similarity.knn_graph`'s
   max/mean/mutual rules cannot express). Negative cosines are clipped to 0 (the paper
   is silent; negative weights would make L indefinite). A row with no positive
   similarity is linked to k random other nodes with weight 1/k (Sec. 6), the draws
   come from ``random_state``; a repeated draw is merged into one edge.
5. γ̂ and C need at least one given label on each side of every one-vs-rest task
   (notes §8.5). A class with no given label gets the score column −inf (never
   predicted); a class whose every labelled node is positive for it cannot happen
   because `solve` requires two labelled classes.
6. ``label_confidence`` scales the cost C_ii (the paper: "C is a diagonal cost matrix
   that allows different misclassification costs for each example"); γ̂₊, γ̂₋ and the
   l/(2l±) factors still count labels, not confidences.
7. Closed form on the sphere (eq. 21, Gander et al. 1989). ``root="secular"``
   (default) solves Σ_j β_j²/(Γ_j − λ)² = n for λ < Γ₁ on the eigen-decomposition of G
   (the notes found it equal to the eigenvalue route; the tests check it);
   ``root="block"`` takes the smallest real eigenvalue of the 2d×2d matrix of eq. 21.
   The "hard case" (β₁ = 0, no root below Γ₁) is handled by λ = Γ₁ and a component along
   the first eigenvector of G that makes ‖w‖² = n.
8. Hard labels: the paper thresholds z at Θ = (γ̂₊ + γ̂₋)/2 (Sec. 5). For several
   classes each class's score is its normalised margin (z − Θ)/(γ̂₊ − γ̂₋) (0.5 at the
   positive target, −0.5 at the negative one, so classes are comparable), and the label
   is the arg-max; with two classes this is exactly the paper's sign(z − Θ).
9. Confidence (not in the paper): the gap between the best and the second-best
   normalised margin, mapped to [0, 1] by Platt's sigmoid fitted on leave-one-out
   predictions of the given labels (``calibration="loo"``, the default; each held-out
   label costs one more solve of every class's task, no O(n) work). Labels whose class has no
   other given label cannot be predicted when held out and are left out of the fit.
   The fit is against the *given* labels, so label noise makes it conservative.
   Cost: 2·C eigendecompositions of d × d and O(C·d²) per given label: a held-out
   label changes each task by a rank-one term once the task's scaling is fixed, and that
   takes two values per task (``_leave_one_out``, ``_downdated_sphere``).
   With fewer than ``min_calibration`` usable held-out labels (or ``calibration=
   "none"``) the confidence is min(gap, 1) (gap 1 = both targets hit exactly).
10. Noise flags: a given label's ``noise_score`` is the margin of the best other class
    over the given one in the normalised margins (decision 8) of the fitted labelling
    (``noise="fit"``, default) or of its leave-one-out prediction (``noise="loo"``);
    it is flagged at ``noise_threshold`` = 0.1 (a tenth of the distance between the two
    targets). c does not pin labels absolutely (the sphere ‖z‖² = n bounds z), so the
    fit already disagrees with most flipped labels. Threshold 0, i.e. "the fit
    disagrees" (this module's rule before), flagged 14% of the clean labels of segment
    (10 per class, seeds 0-9); 0.1 flags 2.4% there, 0.4% on digits and 1.1% on WDBC
    (28 per class), and finds digits' 10% flips at precision / recall 0.96 / 0.85
    (0.87 / 0.95 at 0). ``noise="loo"`` has higher recall, lower precision. A label that
    is the only one of its class in the run (``LabelProblem.lone_labels``) is never
    flagged: held out, its class has no other evidence (the harmonic solver's reason).
11. The objective reported per class (for the k criterion of Sec. 6/Fig. 5) is the
    value of eq. 19 at the solution, constant term cγᵀCγ included. The notes could not
    make it pick k = 10 on digits; `select_k` implements the normalisation
    o_ik / min_k o_ik and the average the paper describes.
12. Eigensolver: ``eigen_method`` "arpack" (eigsh shift-invert: SuperLU of K − σM,
    σ slightly below 0), "lanczos" (eigsh on the normalised adjacency B^-1/2 A B^-1/2,
    largest algebraic, no factorisation, predictable memory) or "lobpcg" (scipy LOBPCG
    in the complement of the trivial vector, pyamg smoothed-aggregation preconditioner).
    Measured on digits-like cosine 10-NN graphs on 2 shared cores (bench/spectral.py
    and its graphs): d = 80 at 10k nodes lanczos 1.9 s, arpack 3.2 s, lobpcg 4.5 s; at
    100k arpack 96 s, lanczos 156 s (an earlier, busier run: 358 / 465 s, lobpcg 666 s
    and short of its tolerance); d = 10 at 1M lanczos 210 s (1.5 GB) while arpack had
    not finished its LU after 20 min (4 GB). Hence "auto" = dense LAPACK up to 3000
    nodes, "lanczos" above: at most ~1.6x the best measured, and no fill-in risk.
13. d is capped at n − 2 (notes §8.15) with a ValueError rather than a silent cap.
14. Degenerate labellings. The class ratio comes from the given labels only (γ̂₊ =
    √(l₋/l₊), notes §1.5: "the estimate need not be precise"), so with a handful of labels
    the predicted shares can be far from the truth: on ``bench/hard_data.py``'s ionosphere
    at 1% labelled (3-4 labels; seeds 0 and 1 with one label of one class) the SGT put
    98.8% and 99.4% of the nodes in the other class (accuracy 0.35 and 0.36, chance
    0.64), diabetes at 1% (seed 1, 1 and 4 labels) 100% (0.35, chance 0.65). That is
    the method's answer, so the labels stay; when one class takes at least 95% of the
    unlabelled nodes while holding less of the given labels, a
    ``DegenerateLabelingWarning`` says so with the label counts, and
    ``info["degenerate"]`` holds the shares. Not caught: vote at 1% (seed 2, 1 and 2
    labels) put 82% in the minority class (accuracy 0.32, chance 0.62).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ._budget import UNLIMITED, Budget
from ._graph import finish_labels, margin_scores, one_class_takes_all, per_label, unreachable, warn_degenerate
from ._timing import Stopwatch
from ._validation import TIME_LIMIT, Integral, Interval, Options, Real, check, check_choice, validate_params
from .problem import LabelProblem, Prediction

LAPLACIANS = ("rw", "rw_unit", "sym", "unnormalized")
EIGEN_METHODS = ("auto", "lobpcg", "arpack", "lanczos")
ROOTS = ("secular", "block")
CALIBRATIONS = ("loo", "none")
NOISE_RULES = ("fit", "loo")
# "auto": dense LAPACK up to _AUTO_EXACT nodes, plain Lanczos above (decision 12).
_AUTO_EXACT = 3000
# The dense eigen step (``eigen_method="dense"``, up to _AUTO_EXACT nodes) cannot be
# interrupted: its seconds are estimated as this × n³ before it starts and it is refused when
# that passes the time budget (solvers/_budget.py, decision 4). Measured (scipy's generalized
# eigh of the "rw" pencil of a 10-NN graph, the lowest 81 pairs, 2 shared cores at load 9):
# 1.4 s at 1,000 nodes, 4.8 s at 2,000 and 36 s at 3,000, i.e. 0.6-1.4e-9 × n³. 1e-9 is
# within that range: a step refused was likely to take at least about that long.
DENSE_EIGEN_SECONDS_PER_N3 = 1e-9
# Held-out labels × tasks × d floats the leave-one-out holds per array (2 MiB of float64):
# its rank-one problems are solved that many at a time, whatever the number of labels. About
# 20 such arrays are alive at once: on 20,000 random labels of 10 classes (d = 80) the traced
# peak was 38 MiB and 2.2 s with this, 210 MiB and 3.3 s with 16 MiB arrays, 16 MiB and 2.5 s
# with 0.5 MiB ones.
LOO_BLOCK_FLOATS = 2**18
# `_downdated_sphere` stops a Newton iteration when its step is under 4e-16 relative (as
# `_secular_root` does) or when its equation holds within this relative residual, a few
# units in the last place: its evaluation through Sherman-Morrison rounds more than the
# secular root's eigenbasis does, and on weka's segment 239 of 1,736 of its problems
# (10% labelled) went on stepping by 1e-15 at |r/‖w‖ − 1| ≈ 3e-16 until the iteration cap.
ROOT_RESIDUAL = 1e-15
# The paper's settings (Sec. 6): d = 80 eigenvectors, c = 3200.
D_PAPER = 80
C_PAPER = 3200.0
PARAMETER_CONSTRAINTS = {
    "d": [Interval(Integral, 1, None)],
    "c": [Interval(Real, 0, None, closed="neither")],
    "laplacian": [Options(LAPLACIANS)],
    "eigen_method": [Options(EIGEN_METHODS)],
    "root": [Options(ROOTS)],
    "calibration": [Options(CALIBRATIONS)],
    "min_calibration": [Interval(Integral, 2, None)],
    "noise": [Options(NOISE_RULES)],
    "noise_threshold": [Interval(Real, 0, None)],
    "check_spectrum": [Options((True, False))],
    "random_state": [None, Interval(Integral)],
    "time_limit": TIME_LIMIT,
}


# --------------------------------------------------------------------------- graph


def sgt_graph(similarities, k: int | None = None, random_state: int = 0) -> sp.csr_matrix:
    """The SGT's graph A = A' + A'ᵀ from a directed kNN similarity matrix (eq. 22).

    Parameters
    ----------
    similarities : sparse matrix, shape (n, n)
        Row i holds sim(x_i, x_j) for the k nearest neighbours j of i (e.g. cosines);
        not symmetric. The diagonal is ignored; negative values are clipped to 0.
    k : int, optional
        Neighbours per row for rows with no positive similarity (linked to k random
        nodes with uniform weight, Sec. 6); default the largest row count of
        ``similarities``.
    random_state : int
        Seed of those random links.

    Returns
    -------
    A : scipy.sparse.csr_matrix, shape (n, n)
        Symmetric, non-negative, zero diagonal; A'_ij = sim_ij / Σ_m sim_im.

    References
    ----------
    Joachims (2003), Sec. 5, eq. 22 and the symmetrisation A = A' + A'ᵀ.
    """
    S = sp.csr_matrix(similarities, dtype=np.float64)
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise ValueError(f"similarities must be square, got shape {S.shape}")
    n = S.shape[0]
    if n < 2:
        raise ValueError("need at least two nodes")
    if not np.all(np.isfinite(S.data)):
        raise ValueError("similarities has non-finite entries")
    S = S.copy()
    S.setdiag(0)
    S.data = np.clip(S.data, 0.0, None)
    S.eliminate_zeros()
    counts = np.diff(S.indptr)
    if k is None:
        k = max(int(counts.max(initial=0)), 1)
    check("k", k, [Interval(Integral, 1, n - 1)])
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        rng = np.random.default_rng(random_state)
        # Uniform over the other n-1 nodes: draw in 0..n-2 and step over the row itself.
        cols = rng.integers(0, n - 1, size=(empty.size, k))
        cols += cols >= empty[:, None]
        rows = np.repeat(empty, k)
        S = S + sp.csr_matrix((np.full(rows.size, 1.0 / k), (rows, cols.ravel())), shape=(n, n))
    row_sum = np.asarray(S.sum(axis=1)).ravel()
    A_dir = sp.diags(1.0 / row_sum) @ S
    A = sp.csr_matrix(A_dir + A_dir.T)
    A.sum_duplicates()
    A.sort_indices()
    return A


# ------------------------------------------------------------------------ spectrum


def graph_fingerprint(W: sp.spmatrix) -> str:
    """Hash of a sparse matrix's structure and weights (canonical CSR form)."""
    W = sp.csr_matrix(W, dtype=np.float64, copy=True)
    W.setdiag(0)
    W.eliminate_zeros()
    W.sum_duplicates()
    W.sort_indices()
    h = hashlib.blake2b(digest_size=16)
    h.update(np.asarray(W.shape, dtype=np.int64).tobytes())
    h.update(W.indptr.astype(np.int64).tobytes())
    h.update(W.indices.astype(np.int64).tobytes())
    h.update(W.data.tobytes())
    return h.hexdigest()


@dataclass(frozen=True, eq=False)
class GraphSpectrum:
    """The d smallest non-trivial eigenpairs of a graph's Laplacian (Sec. 5, preprocessing).

    Attributes
    ----------
    vectors : array, shape (n, d)
        V: eigenvectors 2..d+1 (normalised as ``laplacian`` says).
    eigenvalues : array, shape (d,)
        Their true eigenvalues (the SGT replaces them by i²; kept for inspection).
    laplacian : str
    fingerprint : str
        `graph_fingerprint` of the graph they belong to.
    method : str
        The eigensolver that produced them.
    info : dict
        Timings and solver diagnostics.
    """

    vectors: np.ndarray
    eigenvalues: np.ndarray
    laplacian: str
    fingerprint: str
    method: str
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n_nodes(self) -> int:
        return self.vectors.shape[0]

    @property
    def d(self) -> int:
        return self.vectors.shape[1]


def _pencil(W: sp.csr_matrix, laplacian: str):
    """(K, mass, trivial): the problem K v = λ·diag(mass) v and its trivial eigenvector."""
    deg = np.asarray(W.sum(axis=1)).ravel()
    if np.any(deg <= 0):
        raise ValueError(
            "every node needs an edge for the normalised Laplacian (isolated node found); "
            "build the graph with sgt_graph, which links them"
        )
    if laplacian == "unnormalized":
        return (sp.diags(deg) - W).tocsr(), np.ones_like(deg), np.ones_like(deg)
    if laplacian == "sym":
        s = 1.0 / np.sqrt(deg)
        K = (sp.eye(W.shape[0]) - sp.diags(s) @ W @ sp.diags(s)).tocsr()
        return K, np.ones_like(deg), np.sqrt(deg)
    return (sp.diags(deg) - W).tocsr(), deg, np.ones_like(deg)  # rw / rw_unit


def _eig_dense(K, mass, m):
    vals, vecs = la.eigh(K.toarray(), np.diag(mass), subset_by_index=[0, m - 1])
    return vals, vecs, {}


def _checked(A: sp.spmatrix, budget: Budget) -> spla.LinearOperator:
    """``A`` as an operator whose every product first checks ``budget``: ARPACK's reverse
    communication calls it from Python, so a spent budget stops eigsh between two products."""
    def matvec(x):
        budget.check("the Lanczos iteration of the eigen step")
        return A @ x

    return spla.LinearOperator(A.shape, matvec=matvec, dtype=A.dtype)


def _eig_lanczos(W, K, mass, laplacian, m, tol, seed, budget: Budget = UNLIMITED):
    """Largest eigenpairs of the normalised adjacency B^-1/2 A B^-1/2 (= smallest of K)."""
    deg = np.asarray(W.sum(axis=1)).ravel()
    v0 = np.random.default_rng(seed).standard_normal(W.shape[0])
    if laplacian == "unnormalized":
        shift = 2.0 * deg.max()  # Gershgorin bound on the spectrum of B − A
        op = (shift * sp.eye(W.shape[0]) - K).tocsr()
        mu, U = spla.eigsh(_checked(op, budget), k=m, which="LA", tol=tol, v0=v0)
        vals, vecs = shift - mu, U
    else:
        s = 1.0 / np.sqrt(deg)
        S = (sp.diags(s) @ W @ sp.diags(s)).tocsr()
        mu, U = spla.eigsh(_checked(S, budget), k=m, which="LA", tol=tol, v0=v0)
        vals = 1.0 - mu
        vecs = U if laplacian == "sym" else U * s[:, None]  # B-orthonormal for rw
    order = np.argsort(vals)
    return vals[order], vecs[:, order], {}


def _eig_arpack(K, mass, m, tol, seed):
    """Shift-invert Lanczos: sparse LU of K − σM, then the eigenvalues nearest σ."""
    v0 = np.random.default_rng(seed).standard_normal(K.shape[0])
    M = sp.diags(mass).tocsc() if not np.all(mass == 1.0) else None
    sigma = -1e-3 * float(np.max(np.abs(K.diagonal())) / np.max(mass))
    vals, vecs = spla.eigsh(K.tocsc(), k=m, M=M, sigma=sigma, which="LM", tol=tol, v0=v0)
    order = np.argsort(vals)
    return vals[order], vecs[:, order], {}


def _eig_lobpcg(K, mass, trivial, m, tol, maxiter, seed):
    """LOBPCG in the M-orthogonal complement of the trivial vector, pyamg-preconditioned."""
    import pyamg  # only this path needs it

    n = K.shape[0]
    M = sp.diags(mass).tocsr()
    # K is singular (constant null vector); a small shift keeps the AMG hierarchy SPD.
    shift = 1e-6 * float(np.mean(K.diagonal()))
    ml = pyamg.smoothed_aggregation_solver((K + shift * M).tocsr(), symmetry="hermitian")
    precond = ml.aspreconditioner(cycle="V")
    X0 = np.random.default_rng(seed).standard_normal((n, m))
    Y = trivial[:, None]
    vals, vecs, residual_history = spla.lobpcg(
        K, X0, B=M, M=precond, Y=Y, tol=tol, maxiter=maxiter, largest=False, retResidualNormsHistory=True
    )
    order = np.argsort(vals)
    return vals[order], vecs[:, order], {"iterations": len(residual_history)}


def _drop_trivial(K, mass, trivial, vals, vecs, d):
    """Rayleigh-Ritz on span(vecs) projected M-orthogonally off the trivial vector."""
    Mt = mass * trivial
    P = vecs - np.outer(trivial, (Mt @ vecs) / (Mt @ trivial))
    # M-orthonormal basis of span(P) (rank d when the trivial vector lies in span(vecs)).
    Ms = np.sqrt(mass)[:, None]
    _, sv, Vt = np.linalg.svd(Ms * P, full_matrices=False)
    Q = P @ (Vt[:d].T / sv[:d])
    H = Q.T @ (K @ Q)
    theta, Z = np.linalg.eigh((H + H.T) / 2.0)
    return theta, Q @ Z


def graph_spectrum(
    W,
    d: int = D_PAPER,
    *,
    laplacian: str = "rw",
    eigen_method: str = "auto",
    tol: float | None = None,
    maxiter: int = 500,
    random_state: int = 0,
    budget: Budget = UNLIMITED,
) -> GraphSpectrum:
    """Compute the SGT's spectrum of a graph once, for any number of label sets.

    Parameters
    ----------
    W : sparse matrix, shape (n, n)
        Symmetric non-negative adjacency (e.g. from `sgt_graph`); every node needs an edge.
    d : int
        Number of non-trivial eigenvectors (the paper uses 80; d ≥ 40 suffices, Fig. 3).
    laplacian : {"rw", "rw_unit", "sym", "unnormalized"}
        See decision 1 of the module docstring. "rw" is the paper's B⁻¹(B−A).
    eigen_method : {"auto", "lobpcg", "arpack", "lanczos"}
        See decision 12. "auto": dense LAPACK up to 3000 nodes, "lanczos" above (the
        fastest or near-fastest at 10k, 100k and 1M nodes in bench/spectral.py).
    tol : float, optional
        Eigensolver tolerance (solver default when None).
    maxiter : int
        LOBPCG iteration cap.
    random_state : int
        Seed of the eigensolvers' start vectors.
    budget : Budget, optional
        The calling solver's time budget (solvers/_budget.py): the dense step is refused
        when its estimate (``DENSE_EIGEN_SECONDS_PER_N3`` × n³) passes it, Lanczos checks
        it before every product, arpack and lobpcg before they start. No limit by default.

    Returns
    -------
    GraphSpectrum

    References
    ----------
    Joachims (2003), Sec. 4 (z = Uw, w₁ = 0) and Sec. 5 (eigenvalues 2..d+1 of L).
    """
    W = sp.csr_matrix(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"W must be square, got shape {W.shape}")
    n = W.shape[0]
    W = W.copy()
    W.setdiag(0)
    W.eliminate_zeros()
    if W.nnz and W.data.min() < 0:
        raise ValueError("W must be non-negative")
    if abs(W - W.T).max() > 1e-9 * max(1.0, W.max()):
        raise ValueError("W must be symmetric")
    check("d", d, [Interval(Integral, 1, n - 2)])
    validate_params({"laplacian": laplacian, "eigen_method": eigen_method}, PARAMETER_CONSTRAINTS)
    method = eigen_method
    if method == "auto":
        method = "dense" if n <= _AUTO_EXACT else "lanczos"
    K, mass, trivial = _pencil(W, laplacian)
    m = d + 1
    clock = Stopwatch()
    with clock("eigen_seconds"):
        if method == "dense":
            budget.check_next("the dense eigen step", DENSE_EIGEN_SECONDS_PER_N3 * float(n) ** 3)
            vals, vecs, extra = _eig_dense(K, mass, m)
        elif method == "lanczos":
            vals, vecs, extra = _eig_lanczos(W, K, mass, laplacian, m, tol or 0.0, random_state, budget)
        elif method == "arpack":
            budget.check("the shift-invert eigen step")
            vals, vecs, extra = _eig_arpack(K, mass, m, tol or 0.0, random_state)
        else:
            budget.check("the LOBPCG eigen step")
            vals, vecs, extra = _eig_lobpcg(K, mass, trivial, d, tol, maxiter, random_state)
    if method == "lobpcg":  # already M-orthogonal to the trivial vector (constraint Y)
        theta, V = vals, vecs
    else:
        theta, V = _drop_trivial(K, mass, trivial, vals, vecs, d)
    if laplacian == "rw_unit":
        V = V / np.linalg.norm(V, axis=0)
    V = V * np.where(V[np.argmax(np.abs(V), axis=0), np.arange(d)] < 0, -1.0, 1.0)  # sign convention
    info = {**clock.seconds, "n": n, "nnz": W.nnz, **extra}
    return GraphSpectrum(np.ascontiguousarray(V), theta, laplacian, graph_fingerprint(W), method, info)


# ------------------------------------------------------------ quadratic on a sphere


def sphere_minimizer(G, b, n: float, root: str = "secular"):
    """argmin wᵀGw − 2bᵀw subject to wᵀw = n, for one or a stack of problems (eq. 19-21).

    Parameters
    ----------
    G : array, shape (d, d) or (m, d, d)
        Symmetric matrices.
    b : array, shape (d,) or (m, d)
    n : float
        Squared radius of the sphere.
    root : {"secular", "block"}
        "secular": root of Σ_j β_j²/(Γ_j − λ)² = n below the smallest eigenvalue Γ₁ of G;
        "block": smallest real eigenvalue of [[G, −I], [−bbᵀ/n, G]] (eq. 21).

    Returns
    -------
    w : array, shape (d,) or (m, d)
    lam : float or array, shape (m,)
        The Lagrange multiplier λ* with (G − λ*I)w = b.

    References
    ----------
    Joachims (2003), eq. 21; Gander, Golub & von Matt (1989).
    """
    check_choice("root", root, ROOTS)
    G = np.asarray(G, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    single = G.ndim == 2
    G, b = G.reshape((-1,) + G.shape[-2:]), b.reshape(-1, b.shape[-1])
    if root == "block":
        w, lam = _block_root(G, b, n)
    else:
        w, lam = _secular_root(G, b, n)
    return (w[0], float(lam[0])) if single else (w, lam)


def _block_root(G, b, n):
    m, d, _ = G.shape
    w = np.empty((m, d))
    lam = np.empty(m)
    eye = np.eye(d)
    for i in range(m):  # a loop over one-vs-rest tasks, not nodes
        M = np.block([[G[i], -eye], [-np.outer(b[i], b[i]) / n, G[i]]])
        ev = la.eigvals(M)
        real = ev[np.abs(ev.imag) <= 1e-8 * max(1.0, np.abs(ev).max())].real
        lam[i] = real.min()
        w[i] = la.solve(G[i] - lam[i] * eye, b[i], assume_a="sym")
    return w, lam


def _secular_root(G, b, n, iterations: int = 60):
    Gam, Q = np.linalg.eigh(G)  # batched LAPACK
    beta = np.einsum("mji,mj->mi", Q, b)
    r = np.sqrt(n)
    rest = Gam - Gam[:, :1]  # Γ_j − Γ₁ ≥ 0, exact zero for j = 1
    bnorm = np.linalg.norm(beta, axis=1)
    # Parametrise by δ = Γ₁ − λ > 0 so that the small gaps near the pole keep their
    # relative precision. ‖w‖ ≥ r at δ = |β₁|/r and ≤ r at δ = ‖b‖/r (notes §1.7).
    delta_lo = np.abs(beta[:, 0]) / r
    delta_hi = bnorm / r
    ratio = np.divide(beta[:, 1:] ** 2, rest[:, 1:] ** 2, out=np.zeros_like(rest[:, 1:]), where=rest[:, 1:] > 0)
    rest_norm2 = np.sum(ratio, axis=1)
    hard = (np.abs(beta[:, 0]) <= 1e-12 * np.maximum(bnorm, 1e-300)) & (rest_norm2 <= n)
    # Newton on h(δ) = 1/‖w(δ)‖ − 1/r (Reinsch; Moré & Sorensen 1983): h is concave and
    # increasing, so Newton from δ_lo (where h ≤ 0) rises monotonically to the root with
    # no bracketing. Hand-written and vectorised over the one-vs-rest tasks because
    # scipy's root finders take one scalar problem per Python call.
    delta = np.where(hard, 0.0, delta_lo)
    active = ~hard
    for _ in range(iterations):
        if not active.any():
            break
        gap = rest[active] + delta[active, None]
        b2 = beta[active] ** 2
        pos = gap > 0  # δ = 0 only when β₁ = 0, whose term then vanishes
        wn = np.sqrt(np.sum(np.divide(b2, gap**2, out=np.zeros_like(gap), where=pos), axis=1))
        h = 1.0 / wn - 1.0 / r
        dh = np.sum(np.divide(b2, gap**3, out=np.zeros_like(gap), where=pos), axis=1) / wn**3
        old = delta[active]
        new = np.minimum(old - h / dh, delta_hi[active])
        delta[active] = new
        idx = np.flatnonzero(active)
        active[idx[np.abs(new - old) <= 4e-16 * new]] = False
    lam = Gam[:, 0] - delta
    gap = rest + delta[:, None]
    coef = np.divide(beta, gap, out=np.zeros_like(beta), where=gap > 0)
    if hard.any():
        coef[hard, 0] = np.sqrt(np.maximum(n - rest_norm2[hard], 0.0))
    w = np.einsum("mij,mj->mi", Q, coef)
    return w, lam


def _downdated_sphere(Gam, u, beta, n, iterations: int = 100):
    """`sphere_minimizer` of G = diag(Γ) − u uᵀ and b = β, one problem per row, without an
    eigendecomposition of G: O(d) a Newton step where the secular root's ``eigh`` costs O(d³).

    Γ is ascending in each row (an eigendecomposition of the matrix before the rank-one
    change, done once for many u). Two roots, each by Newton from the left on a concave
    increasing function (so no overshoot and no bracket):

    1. G's smallest eigenvalue μ₁ = Γ₁ − g, the root of Σ_j u_j²/(Γ_j − Γ₁ + g) = 1 (the
       secular equation of a rank-one change, Golub 1973), on 1/s(g) − 1, from g = u₁²;
    2. λ* = μ₁ − δ with ‖(G − λ*I)⁻¹β‖² = n, on 1/‖w(δ)‖ − 1/r (as ``_secular_root``), with
       (G − λI)⁻¹ by Sherman-Morrison on diag(e), e = Γ − λ, and 1 − Σ u_j²/e_j written
       δ·Σ u_j²/((Γ_j − μ₁) e_j) so that it keeps its relative precision as δ → 0.

    Returns w (in Γ's basis) and a mask of the rows it solved: a row with u₁ = 0 (the
    change misses G's lowest direction), with β's projection on G's lowest eigenvector zero
    (the hard case) or not converged is left to `sphere_minimizer` on the explicit matrix.
    """
    r = np.sqrt(n)
    rest = Gam - Gam[:, :1]
    u2 = u**2
    unorm2 = u2.sum(axis=1)
    ok = u2[:, 0] > 1e-20 * unorm2
    g = np.where(ok, u2[:, 0], 1.0)  # s(u₁²) ≥ 1, and g ≤ ‖u‖² at the root
    active = ok.copy()
    for _ in range(iterations):
        if not active.any():
            break
        x = rest[active] + g[active, None]
        s = np.sum(u2[active] / x, axis=1)
        ds = np.sum(u2[active] / x**2, axis=1)
        old = g[active]
        new = np.minimum(old + s * (s - 1.0) / ds, unorm2[active])
        g[active] = new
        idx = np.flatnonzero(active)
        active[idx[(np.abs(new - old) <= 4e-16 * new) | (np.abs(s - 1.0) <= ROOT_RESIDUAL)]] = False
    ok &= ~active
    pole = rest + g[:, None]  # Γ_j − μ₁ > 0
    bnorm = np.linalg.norm(beta, axis=1)
    beta1 = np.zeros(len(g))  # β on μ₁'s eigenvector, ∝ diag(Γ − μ₁)⁻¹u
    rows = np.flatnonzero(ok)
    p = pole[rows]
    beta1[rows] = np.sum(u[rows] * beta[rows] / p, axis=1) / np.sqrt(np.sum(u2[rows] / p**2, axis=1))
    ok &= np.abs(beta1) > 1e-12 * np.maximum(bnorm, 1e-300)

    def solution(rows, delta):
        e = pole[rows] + delta[:, None]
        ur, br = u[rows], beta[rows]
        dT = delta * np.sum(u2[rows] / (pole[rows] * e), axis=1)  # 1 − uᵀ diag(e)⁻¹ u
        phi = np.sum(ur * br / e, axis=1) / dT
        return (br + phi[:, None] * ur) / e, e, dT

    delta = np.where(ok, np.abs(beta1) / r, 1.0)
    delta_hi = bnorm / r
    active = ok.copy()
    for _ in range(iterations):
        if not active.any():
            break
        idx = np.flatnonzero(active)
        w, e, dT = solution(idx, delta[idx])
        wn = np.linalg.norm(w, axis=1)
        # wᵀ(G − λI)⁻¹w, Sherman-Morrison again: the derivative of ‖w‖² in δ, over −2
        dh = (np.sum(w**2 / e, axis=1) + np.sum(u[idx] * w / e, axis=1) ** 2 / dT) / wn**3
        old = delta[idx]
        h = 1.0 / wn - 1.0 / r
        new = np.minimum(old - h / dh, delta_hi[idx])
        delta[idx] = new
        active[idx[(np.abs(new - old) <= 4e-16 * new) | (np.abs(h) * r <= ROOT_RESIDUAL)]] = False
    ok &= ~active
    w = np.zeros_like(beta)
    solved = np.flatnonzero(ok)
    w[solved] = solution(solved, delta[solved])[0]
    return w, ok


# ----------------------------------------------------------------------- the solver


def _class_sums(V_l, y_l, conf_l, n_classes):
    """Each class's Σ conf_l v_l v_lᵀ (C × d × d) and Σ conf_l v_l (C × d) over its given
    labels: every one-vs-rest task's G and b are made of them (``_task_system``)."""
    weighted = V_l * conf_l[:, None]
    order = np.argsort(y_l, kind="stable")
    bounds = np.searchsorted(y_l[order], np.arange(n_classes + 1))
    grams = np.zeros((n_classes, V_l.shape[1], V_l.shape[1]))
    sums = np.zeros((n_classes, V_l.shape[1]))
    # a loop over classes, one d × d product each: l·d² in all, where one einsum over a
    # one-hot membership took C·l·d²
    for k in np.flatnonzero(np.diff(bounds)):
        rows = order[bounds[k] : bounds[k + 1]]
        grams[k], sums[k] = weighted[rows].T @ V_l[rows], weighted[rows].sum(axis=0)
    return grams, sums


def _side_costs(l_pos, l, c):
    """c times a label's cost on a task's positive side, l/(2 l₊), and on its negative side,
    l/(2 l₋) (Sec. 5's cost matrix C, before ``label_confidence`` scales it)."""
    return c * l / (2 * l_pos), c * l / (2 * (l - l_pos))


def _task_system(own, own_sum, total, total_sum, l_pos, l, c, D):
    """G, b, γ̂₊, γ̂₋ of one-vs-rest tasks (Sec. 5) from sums over the given labels: ``own``
    and ``own_sum``, each task's class's Σ conf·v vᵀ and Σ conf·v (``_class_sums``); ``total``
    and ``total_sum``, the same over all l labels; ``l_pos``, each class's label count. A
    label costs conf·l/(2 l₊) on the task's positive side and conf·l/(2 l₋) on its negative
    side, so each task's G and b are two scaled sums, its class's and the rest's."""
    l_neg = l - l_pos
    g_pos, g_neg = np.sqrt(l_neg / l_pos), -np.sqrt(l_pos / l_neg)
    a_pos, a_neg = _side_costs(l_pos, l, c)
    G = np.diag(D)[None] + a_pos[:, None, None] * own + a_neg[:, None, None] * (total - own)
    b = (a_pos * g_pos)[:, None] * own_sum + (a_neg * g_neg)[:, None] * (total_sum - own_sum)
    return G, b, g_pos, g_neg


def _tasks(V_l, y_l, conf_l, classes, c, D):
    """G, b, γ̂± of every one-vs-rest task with at least one label on each side (Sec. 5), and
    each label's γ and cost in each task (the objective's training error)."""
    grams, sums = _class_sums(V_l, y_l, conf_l, int(y_l.max()) + 1)
    pos = y_l[None, :] == classes[:, None]  # (C', l)
    l_pos = pos.sum(axis=1).astype(float)
    G, b, g_pos, g_neg = _task_system(grams[classes], sums[classes], grams.sum(axis=0), sums.sum(axis=0), l_pos,
                                      len(y_l), c, D)
    l_neg = len(y_l) - l_pos
    gamma = np.where(pos, g_pos[:, None], g_neg[:, None])
    cost = np.where(pos, len(y_l) / (2 * l_pos[:, None]), len(y_l) / (2 * l_neg[:, None])) * conf_l[None, :]
    return G, b, g_pos, g_neg, gamma, cost


def _solve_labels(V_l, y_l, conf_l, n_classes, c, D, n, root):
    """Weights w (C×d), thresholds and objectives of every class from one label set."""
    d = V_l.shape[1]
    present = np.unique(y_l)
    classes = present if len(present) >= 2 else np.array([], dtype=int)
    Wt = np.zeros((n_classes, d))
    theta = np.zeros(n_classes)
    span = np.ones(n_classes)
    objective = np.full(n_classes, np.nan)
    valid = np.zeros(n_classes, dtype=bool)
    if classes.size == 0:
        return Wt, theta, span, objective, valid
    G, b, g_pos, g_neg, gamma, cost = _tasks(V_l, y_l, conf_l, classes, c, D)
    w, _ = sphere_minimizer(G, b, n, root=root) if G.shape[0] else (np.zeros((0, d)), None)
    w = np.atleast_2d(w)
    resid = w @ V_l.T - gamma
    obj = np.einsum("ci,i,ci->c", w, D, w) + c * np.sum(cost * resid**2, axis=1)
    Wt[classes], theta[classes], span[classes] = w, (g_pos + g_neg) / 2, g_pos - g_neg
    objective[classes], valid[classes] = obj, True
    return Wt, theta, span, objective, valid


def _margins(Vrows, Wt, theta, span, valid):
    s = (Vrows @ Wt.T - theta) / span
    s[:, ~valid] = -np.inf
    return s


def _top_gap(s):
    part = -np.sort(-s, axis=1)[:, :2]
    gap = part[:, 0] - part[:, 1]
    return np.where(np.isfinite(gap), gap, 1.0)


def _leave_one_out(V_l, y_l, conf_l, n_classes, c, D, n, root, budget: Budget = UNLIMITED):
    """Margins of each given label's node when its own label is held out.

    Holding out a label of class k changes each task by that label's term alone, once the
    tasks' scalings are fixed, and these take two values per task: task k's when the label is
    its own class's (l₊ − 1 and l − 1 labels), and every other task's when it is not (l₊ and
    l − 1). So each task's G is one of two matrices less a rank-one term conf·ρ·v vᵀ (ρ the
    label's cost on that side, `_side_costs`), and b one of two vectors less conf·τ·v. The
    2·C matrices are eigendecomposed once, and each held-out label's C problems are solved in
    their bases by `_downdated_sphere`, O(C·d²) a label; its rows that the rank-one route
    leaves (the hard case) are solved on the explicit matrices by `sphere_minimizer`.
    Whatever ``root`` is, the leave-one-out takes the secular route: eq. 21's block matrix
    has no such update, and the minimiser is the same.

    Why: each held-out label's tasks were eigendecomposed anew before, l·C ``eigh`` of
    d × d: 12.4 s of a 15.0 s run on ``bench/hard_data.py``'s "overlap" at 10% labelled
    (20,000 nodes, 10 classes, 2,000 labels; now 0.22 s of 1.9 s). Measured with
    ``solve(problem, "spectral", time_limit=None)`` on its graphs and label seed 0, one
    fresh process each, ad hoc: "30 classes" at 10% 37.6 s → 3.0 s, "overlap" 16.4 →
    2.9 s, "unequal sizes" 10.0 → 2.4 s, digits 1.5 → 0.6 s, segment 2.8 → 1.1 s; blobs
    of 80 classes at 5,000 nodes (5 labels each) 17.1 → 1.4 s. The same labels and noise
    flags in all of them, scores within 2e-10; on segment at 10% labelled 7 of its 1,736
    problems took the explicit route. At 20,000 nodes of 200 classes (5 labels each; ``python -m
    bench solver_memory --against``, ``bench/results/solver_memory_20000_200_spectral_maxmargin.md``)
    99 s → 8.3 s, its traced peak the same 105 MiB: the 2·C
    eigendecompositions keep their eigenvectors only (2·C·d² floats), and each class's tasks
    are read from them, not copied.
    """
    l = len(y_l)
    grams, sums = _class_sums(V_l, y_l, conf_l, n_classes)
    total, total_sum = grams.sum(axis=0), sums.sum(axis=0)
    counts = np.bincount(y_l, minlength=n_classes)
    out = np.full((l, n_classes), -np.inf)
    present = np.flatnonzero(counts)
    if len(present) < 2:
        return out
    # each task as the held-out label's class sees it: "other" (a negative for the task)
    # needs another class's label left, "own" another label of its class. Only the
    # eigenvectors are kept (2·C·d² floats): a task's G, which the explicit route needs for a
    # few rows, is Q diag(Γ) Qᵀ again.
    sides = {}
    for name, tasks, l_pos in (("other", present[counts[present] < l - 1], counts),
                               ("own", present[counts[present] >= 2], counts - 1)):
        G, b, g_pos, g_neg = _task_system(grams[tasks], sums[tasks], total, total_sum, l_pos[tasks].astype(float),
                                          l - 1, c, D)
        a_pos, a_neg = _side_costs(l_pos[tasks].astype(float), l - 1, c)
        rho, tau = (a_pos, a_pos * g_pos) if name == "own" else (a_neg, a_neg * g_neg)
        Gam, Q = np.linalg.eigh(G)  # batched LAPACK
        sides[name] = dict(tasks=tasks, Gam=Gam, Q=Q, b=b, beta=np.einsum("tji,tj->ti", Q, b), rho=rho, tau=tau,
                           theta=(g_pos + g_neg) / 2, span=g_pos - g_neg)
        del G
    other, own = sides["other"], sides["own"]
    d = V_l.shape[1]
    for k in present:  # a loop over classes: the labels of one class share their tasks
        budget.check("the leave-one-out solves of the calibration and noise flags")
        # its tasks: every other class's as a negative (all of them are in "other" whenever
        # two classes are left), then its own class's when it keeps a label
        sel = np.flatnonzero(other["tasks"] != k)
        mine = np.flatnonzero(own["tasks"] == k)
        if len(sel) + len(mine) < 2:
            continue  # one class left: no task, every margin -inf, as _solve_labels leaves them
        classes = np.concatenate([other["tasks"][sel], own["tasks"][mine]])
        task = {key: np.concatenate([other[key][sel], own[key][mine]]) for key in
                ("Gam", "b", "beta", "rho", "tau", "theta", "span")}
        rows = np.flatnonzero(y_l == k)
        step = max(1, LOO_BLOCK_FLOATS // (len(classes) * d))
        for start in range(0, len(rows), step):
            budget.check("the leave-one-out solves of the calibration and noise flags")
            held = rows[start : start + step]
            v, conf = V_l[held], conf_l[held]
            # v in each task's eigenbasis, (m, T, d): over all of "other" (its one unused task
            # costs less than copying the others' eigenvectors out), then its own class's
            z = np.concatenate([np.einsum("tji,mj->mti", other["Q"], v)[:, sel],
                                np.einsum("tji,mj->mti", own["Q"][mine], v)], axis=1)
            u = np.sqrt(task["rho"][None, :] * conf[:, None])[..., None] * z
            beta = task["beta"][None] - (task["tau"][None, :] * conf[:, None])[..., None] * z
            shape = (len(held) * len(classes), d)
            Gam = np.broadcast_to(task["Gam"][None], z.shape).reshape(shape)
            w, ok = _downdated_sphere(Gam, u.reshape(shape), beta.reshape(shape), n)
            wv = np.einsum("ij,ij->i", w, z.reshape(shape))
            if not ok.all():  # the hard case and its kin, on the explicit matrices
                m, t = np.divmod(np.flatnonzero(~ok), len(classes))
                first = t < len(sel)  # the task's eigenvectors, from its side
                Q = np.empty((len(t), d, d))
                Q[first], Q[~first] = other["Q"][sel[t[first]]], own["Q"][mine[t[~first] - len(sel)]]
                vv = v[m]
                G = (Q * task["Gam"][t][:, None, :]) @ Q.transpose(0, 2, 1)
                G -= (task["rho"][t] * conf[m])[:, None, None] * (vv[:, :, None] * vv[:, None, :])
                b = task["b"][t] - (task["tau"][t] * conf[m])[:, None] * vv
                wv[~ok] = np.einsum("ij,ij->i", np.atleast_2d(sphere_minimizer(G, b, n, root=root)[0]), vv)
            margins = (wv.reshape(len(held), len(classes)) - task["theta"]) / task["span"]
            out[held[:, None], classes[None, :]] = margins
    return out


def _platt(gap, correct):
    """Platt (1999) sigmoid P(correct | gap) with the regularised targets of Lin et al. (2007)."""
    from scipy.optimize import minimize

    n_pos, n_neg = correct.sum(), (~correct).sum()
    t = np.where(correct, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))

    def loss(p):
        z = p[0] * gap + p[1]
        return np.sum(np.logaddexp(0.0, z) - t * z)

    def grad(p):
        q = 1.0 / (1.0 + np.exp(-(p[0] * gap + p[1])))
        return np.array([np.sum((q - t) * gap), np.sum(q - t)])

    res = minimize(loss, np.array([1.0, 0.0]), jac=grad, method="L-BFGS-B", bounds=[(0.0, None), (None, None)])
    return float(res.x[0]), float(res.x[1])


def spectral(
    problem: LabelProblem,
    *,
    spectrum: GraphSpectrum | None = None,
    d: int = D_PAPER,
    c: float = C_PAPER,
    laplacian: str = "rw",
    eigen_method: str = "auto",
    root: str = "secular",
    calibration: str = "loo",
    min_calibration: int = 10,
    noise: str = "fit",
    noise_threshold: float = 0.1,
    check_spectrum: bool = True,
    random_state: int = 0,
    time_limit: float | str | None = "auto",
) -> Prediction:
    """Spectral graph transducer, one-vs-rest over classes on one shared spectrum.

    Parameters
    ----------
    problem : LabelProblem
        ``W`` should be the SGT's graph (`sgt_graph` of a cosine kNN graph, eq. 22).
    spectrum : GraphSpectrum, optional
        `graph_spectrum(problem.W, d, ...)` computed earlier; computed here when None.
        Its ``d`` and ``laplacian`` then override the arguments.
    d : int
        Non-trivial eigenvectors (paper: 80); capped at n - 2 on graphs of fewer nodes.
    c : float
        Weight of the training-error penalty (paper: 3200).
    laplacian, eigen_method : str
        Passed to `graph_spectrum` when ``spectrum`` is None.
    root : {"secular", "block"}
        How the problem on the sphere is solved (see `sphere_minimizer`).
    calibration : {"loo", "none"}
        Confidence mapping (module docstring, decision 9).
    min_calibration : int
        Fewest usable held-out labels for the Platt fit.
    noise : {"fit", "loo"}
        Which prediction of a given label's node decides its noise flag (decision 10).
    noise_threshold : float, default 0.1
        A label is flagged when the best other class's normalised margin beats the given
        class's by at least this much (decision 10).
    check_spectrum : bool
        Verify that ``spectrum`` was computed from ``problem.W`` (an O(nnz) hash).
    random_state : int
        Seed of the eigensolver start vectors.
    time_limit : "auto", float > 0, None or "none", default "auto"
        Seconds the call may take (``SolverTimeLimit`` when spent): checked before every
        Lanczos product and leave-one-out solve; the dense eigen step is refused up front
        when its estimate passes it. "auto": 10× an estimate of the harmonic solve of this
        graph, at least 30 s (solvers/_budget.py); None or "none": no limit.

    Returns
    -------
    Prediction
        ``scores[:, k]`` is class k's normalised margin (z_k − Θ_k)/(γ̂₊ − γ̂₋) (−inf for
        classes without a given label); ``info`` holds the per-class objective (eq. 19 at
        the solution), thresholds Θ, the Platt (a, b) or None, and timings.

    References
    ----------
    Joachims (2003), Sec. 4 eqs. 17-21 and Sec. 5.
    """
    validate_params({"d": d, "c": c, "laplacian": laplacian, "eigen_method": eigen_method, "root": root,
                     "calibration": calibration, "min_calibration": min_calibration, "noise": noise,
                     "noise_threshold": noise_threshold, "check_spectrum": check_spectrum,
                     "random_state": random_state, "time_limit": time_limit}, PARAMETER_CONSTRAINTS)
    n = problem.n_nodes
    budget = Budget("spectral", time_limit, problem.W, problem.n_classes)
    clock = Stopwatch()
    with clock("spectrum_seconds"):
        if spectrum is None:
            # a graph smaller than d + 2 nodes (a small connected component solved on its own)
            # has only n - 2 usable non-trivial eigenvectors: use them all
            spectrum = graph_spectrum(
                problem.W, min(d, max(n - 2, 1)), laplacian=laplacian, eigen_method=eigen_method,
                random_state=random_state, budget=budget,
            )
        elif not isinstance(spectrum, GraphSpectrum):
            raise TypeError(f"spectrum must be a GraphSpectrum, got {type(spectrum).__name__}")
        elif spectrum.n_nodes != n or (check_spectrum and spectrum.fingerprint != graph_fingerprint(problem.W)):
            raise ValueError("spectrum was computed from another graph than problem.W")
    V = spectrum.vectors
    d = spectrum.d
    D = np.arange(1, d + 1, dtype=np.float64) ** 2
    C = problem.n_classes
    lab = np.flatnonzero(problem.labeled)
    y_l = problem.y[lab]
    conf_l = np.ones(len(lab)) if problem.label_confidence is None else problem.label_confidence[lab]
    V_l = V[lab]

    with clock("solve_seconds"):
        Wt, theta, span, objective, valid = _solve_labels(V_l, y_l, conf_l, C, c, D, n, root)
        scores = _margins(V, Wt, theta, span, valid)

    gap = _top_gap(scores)
    platt = None
    loo_labels = None
    if calibration == "loo" or noise == "loo":
        loo = _leave_one_out(V_l, y_l, conf_l, C, c, D, n, root, budget)
        loo_labels = np.argmax(loo, axis=1)
        # A label whose class has no other given label cannot come back when held out.
        usable = np.bincount(y_l, minlength=C)[y_l] >= 2
        if calibration == "loo" and usable.sum() >= min_calibration:
            platt = _platt(_top_gap(loo[usable]), loo_labels[usable] == y_l[usable])
    if platt is None:
        confidence = np.minimum(gap, 1.0)
    else:
        confidence = 1.0 / (1.0 + np.exp(-(platt[0] * gap + platt[1])))
    no_label = unreachable(problem.W, problem.labeled)
    labels, confidence = finish_labels(scores, confidence, no_label)
    margin = margin_scores(loo if noise == "loo" else scores[lab], y_l)
    noise_score = per_label(n, problem.labeled, margin)
    noisy = problem.labeled & (noise_score >= noise_threshold) & ~problem.lone_labels  # decision 10
    degenerate = one_class_takes_all(labels, problem.y, C)
    if degenerate:
        counts = np.bincount(y_l, minlength=C).tolist()
        warn_degenerate("spectral", degenerate, (
            f"The SGT sets each class's share of the nodes from the given labels' counts ({counts}; γ̂, "
            "Joachims 2003 Sec. 4) and cuts at the midpoint of the two targets; from this few labels that share "
            "is a rough guess (solvers/spectral.py, decision 14). Give more labels of each class, or use another "
            "solver."))
    params = {
        "d": d,
        "c": float(c),
        "laplacian": spectrum.laplacian,
        "eigen_method": spectrum.method,
        "root": root,
        "calibration": calibration,
        "min_calibration": int(min_calibration),
        "noise": noise,
        "noise_threshold": float(noise_threshold),
    }
    info = {
        "objective": objective,
        "thresholds": theta,
        "platt": platt,
        **clock.seconds,
        "fingerprint": spectrum.fingerprint,
        "degenerate": degenerate,
        "time_limit_seconds": budget.limit,
    }
    return Prediction(labels, confidence, noisy, scores, "spectral", params, info, noise_score)


def select_k(
    spectra: Mapping[int, GraphSpectrum],
    label_sets: Sequence[np.ndarray],
    *,
    c: float = C_PAPER,
    root: str = "secular",
) -> tuple[int, dict[int, float]]:
    """Choose k without labels beyond the given ones: least average normalised objective.

    For every label set i and graph k the objective o_ik (eq. 19 at the solution, summed
    over the one-vs-rest tasks) is normalised to o_ik / min_k o_ik and averaged over i.

    Parameters
    ----------
    spectra : mapping k -> GraphSpectrum
        One spectrum per candidate graph, all over the same nodes.
    label_sets : sequence of int arrays, shape (n,)
        Given labels (-1 for none), each with at least two classes.
    c : float
    root : {"secular", "block"}

    Returns
    -------
    k : int
        The candidate with the least average normalised objective.
    average : dict k -> float

    References
    ----------
    Joachims (2003), Sec. 6, "How sensitive is the SGT to the choice of the graph?", Fig. 5.
    """
    if not spectra:
        raise ValueError("spectra is empty")
    if not label_sets:
        raise ValueError("label_sets is empty")
    ks = list(spectra)
    sizes = {s.n_nodes for s in spectra.values()}
    if len(sizes) != 1:
        raise ValueError("all spectra must cover the same nodes")
    n = sizes.pop()
    obj = np.empty((len(label_sets), len(ks)))
    for i, y in enumerate(label_sets):  # loops over label sets and candidate graphs
        y = np.asarray(y)
        lab = np.flatnonzero(y >= 0)
        y_l = y[lab]
        if y.shape != (n,) or len(np.unique(y_l)) < 2:
            raise ValueError("each label set needs shape (n,) and labels of two classes")
        for j, k in enumerate(ks):
            V = spectra[k].vectors
            D = np.arange(1, V.shape[1] + 1, dtype=np.float64) ** 2
            *_, o, valid = _solve_labels(V[lab], y_l, np.ones(len(lab)), int(y_l.max()) + 1, c, D, n, root)
            obj[i, j] = np.sum(o[valid])
    norm = obj / obj.min(axis=1, keepdims=True)
    average = dict(zip(ks, norm.mean(axis=0).tolist()))
    return ks[int(np.argmin(norm.mean(axis=0)))], average
