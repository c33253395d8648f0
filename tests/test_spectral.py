"""Spectral graph transducer (Joachims 2003): closed form, spectrum, graph and solver."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as la
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.sparse.csgraph import connected_components
from sklearn.datasets import load_digits

from labelling.evaluation import expected_calibration_error, noise_scores
from labelling.sampling import flip_labels, keep_per_class
from similarity.knn import nearest_neighbors
from solvers.problem import LabelProblem
from solvers.registry import solve
from solvers.spectral import (
    graph_fingerprint,
    graph_spectrum,
    select_k,
    sgt_graph,
    spectral,
    sphere_minimizer,
)


def _cosine_knn(X, k):
    idx, dist = nearest_neighbors(X, k, "cosine", "exact")
    n = len(X)
    return sp.csr_matrix(((1.0 - dist).ravel(), (np.repeat(np.arange(n), k), idx.ravel())), shape=(n, n))


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X, y, sgt_graph(_cosine_knn(X, 10))


@pytest.fixture(scope="module")
def digits_spectrum(digits):
    return graph_spectrum(digits[2], 80)


def _prbep(score, truth):
    order = np.argsort(-score, kind="stable")
    return truth[order[: truth.sum()]].mean()


# ------------------------------------------------------------- closed form (eq. 21)


def _random_sphere_problem(rng, d, scale):
    R = rng.standard_normal((d, d))
    G = R @ R.T + np.diag(np.arange(1, d + 1) ** 2)
    return G, scale * rng.standard_normal(d)


def _objective(G, b, w):
    return w @ G @ w - 2 * b @ w


@pytest.mark.parametrize("scale", [0.05, 3.0, 200.0])
def test_sphere_closed_forms_match_direct_minimisation(scale):
    rng = np.random.default_rng(int(scale * 100))
    d, n = 6, 40.0
    for _ in range(5):
        G, b = _random_sphere_problem(rng, d, scale)
        w_sec, lam_sec = sphere_minimizer(G, b, n, root="secular")
        w_blk, lam_blk = sphere_minimizer(G, b, n, root="block")
        assert lam_sec == pytest.approx(lam_blk, rel=1e-8, abs=1e-8)
        np.testing.assert_allclose(w_sec, w_blk, rtol=1e-6, atol=1e-8)
        assert w_sec @ w_sec == pytest.approx(n, rel=1e-10)
        np.testing.assert_allclose((G - lam_sec * np.eye(d)) @ w_sec, b, atol=1e-8 * max(1, np.abs(b).max()))
        # Direct numerical minimisation on the sphere from many starts (SLSQP).
        best = np.inf
        for _ in range(12):
            x0 = rng.standard_normal(d)
            x0 *= np.sqrt(n) / np.linalg.norm(x0)
            res = minimize(
                lambda w, G=G, b=b: _objective(G, b, w),
                x0,
                jac=lambda w, G=G, b=b: 2 * G @ w - 2 * b,
                constraints=[{"type": "eq", "fun": lambda w: w @ w - n, "jac": lambda w: 2 * w}],
                method="SLSQP",
                options={"ftol": 1e-12, "maxiter": 500},
            )
            if abs(res.x @ res.x - n) < 1e-6:
                best = min(best, res.fun)
        assert _objective(G, b, w_sec) <= best + 1e-6 * max(1.0, abs(best))


def test_sphere_batched_equals_one_by_one():
    rng = np.random.default_rng(1)
    problems = [_random_sphere_problem(rng, 5, s) for s in (0.1, 1.0, 10.0, 100.0)]
    G = np.stack([p[0] for p in problems])
    b = np.stack([p[1] for p in problems])
    w, lam = sphere_minimizer(G, b, 9.0)
    for i, (Gi, bi) in enumerate(problems):
        wi, li = sphere_minimizer(Gi, bi, 9.0, root="block")
        np.testing.assert_allclose(w[i], wi, rtol=1e-7, atol=1e-9)
        assert lam[i] == pytest.approx(li, rel=1e-8, abs=1e-8)


def test_sphere_hard_case_reaches_the_sphere_and_the_minimum():
    # b ⟂ first eigenvector of G and too small to reach the sphere: λ* = Γ₁.
    G = np.diag([1.0, 4.0, 9.0])
    b = np.array([0.0, 0.3, 0.2])
    n = 5.0
    w, lam = sphere_minimizer(G, b, n)
    assert lam == pytest.approx(1.0)
    assert w @ w == pytest.approx(n)
    # Brute force over a fine grid of the sphere (2-D parametrisation).
    t, p = np.meshgrid(np.linspace(0, np.pi, 721), np.linspace(0, 2 * np.pi, 1441))
    pts = np.sqrt(n) * np.stack([np.cos(t), np.sin(t) * np.cos(p), np.sin(t) * np.sin(p)], -1).reshape(-1, 3)
    brute = np.min(np.einsum("ij,jk,ik->i", pts, G, pts) - 2 * pts @ b)
    assert _objective(G, b, w) <= brute + 1e-9


# ---------------------------------------------------------------- graph (eq. 22)


def test_sgt_graph_matches_dense_construction():
    rng = np.random.default_rng(0)
    X = np.abs(rng.standard_normal((60, 5)))
    S = _cosine_knn(X, 4)
    A = sgt_graph(S).toarray()
    Sd = S.toarray()
    Ap = Sd / Sd.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(A, Ap + Ap.T, atol=1e-12)
    np.testing.assert_allclose(A.sum(axis=1), 1.0 + Ap.sum(axis=0), atol=1e-12)


def test_sgt_graph_links_rows_without_similarity():
    X = np.abs(np.random.default_rng(2).standard_normal((30, 4)))
    S = _cosine_knn(X, 3).tolil()
    row = 5
    S[row, :] = 0.0  # a row with zero cosine to every neighbour
    S = S.tocsr()
    A = sgt_graph(S, k=3, random_state=4).toarray()
    assert np.allclose(A, A.T)
    assert np.all(np.diag(A) == 0)
    Sd = S.toarray()
    sums = Sd.sum(axis=1, keepdims=True)
    Ap = np.divide(Sd, sums, out=np.zeros_like(Sd), where=sums > 0)
    R = A - (Ap + Ap.T)  # what the empty row added: its random links, both directions
    links = np.where(np.abs(R[row]) > 1e-12, R[row], 0.0)
    assert links.sum() == pytest.approx(1.0)  # row-normalised like every other row
    assert 1 <= np.count_nonzero(links) <= 3
    assert links[row] == 0
    assert np.allclose(links[links > 0] * 3, np.round(links[links > 0] * 3))  # 1/k per link
    R[row] = 0
    R[:, row] = 0
    assert np.allclose(R, 0)  # nothing else changed
    assert not np.allclose(A, sgt_graph(S, k=3, random_state=5).toarray())  # the seed decides
    with pytest.raises(ValueError):
        sgt_graph(S, k=30)


# -------------------------------------------------------------------- spectrum


@pytest.fixture(scope="module")
def small_graph(digits):
    X, y, _ = digits
    sel = np.flatnonzero(y < 4)[:500]
    W = sgt_graph(_cosine_knn(X[sel], 10))
    assert connected_components(W)[0] == 1  # the checks below assume one component
    return W


@pytest.mark.parametrize("method", ["lanczos", "arpack", "lobpcg"])
def test_sparse_eigensolvers_match_dense(small_graph, method):
    d = 12
    ref = graph_spectrum(small_graph, d, eigen_method="auto")
    assert ref.method == "dense"
    got = graph_spectrum(small_graph, d, eigen_method=method, tol=1e-10 if method != "lobpcg" else 1e-8, maxiter=500)
    np.testing.assert_allclose(got.eigenvalues, ref.eigenvalues, rtol=1e-5, atol=1e-8)
    deg = np.asarray(small_graph.sum(axis=1)).ravel()
    # Same B-orthonormal subspace (principal angles ~ 0).
    Bh = np.sqrt(deg)[:, None]
    cosines = la.svdvals((Bh * ref.vectors).T @ (Bh * got.vectors))
    assert cosines.min() > 1 - 1e-5


def test_spectrum_solves_the_random_walk_problem(small_graph):
    spec = graph_spectrum(small_graph, 10)
    A = small_graph.toarray()
    deg = A.sum(axis=1)
    V, lam = spec.vectors, spec.eigenvalues
    # B⁻¹(B − A)v = λv, B-orthonormal, B-orthogonal to the constant (w₁ = 0).
    np.testing.assert_allclose((np.eye(len(A)) - A / deg[:, None]) @ V, V * lam, atol=1e-9)
    np.testing.assert_allclose(V.T @ (deg[:, None] * V), np.eye(10), atol=1e-9)
    np.testing.assert_allclose(deg @ V, 0.0, atol=1e-9)
    assert np.all(lam > 1e-10)
    assert np.all(np.diff(lam) >= -1e-12)
    # The dense eigenvalues of the non-symmetric B⁻¹(B − A): ours are 2..d+1.
    full = np.sort(np.linalg.eigvals(np.eye(len(A)) - A / deg[:, None]).real)
    np.testing.assert_allclose(lam, full[1:11], atol=1e-8)


def test_disconnected_graph_drops_only_the_constant_direction(digits):
    X, y, _ = digits
    a, b = np.flatnonzero(y == 0)[:80], np.flatnonzero(y == 1)[:80]
    W = sp.block_diag([sgt_graph(_cosine_knn(X[a], 6)), sgt_graph(_cosine_knn(X[b], 6))]).tocsr()
    for method in ("auto", "lanczos"):
        spec = graph_spectrum(W, 8, eigen_method=method)
        deg = np.asarray(W.sum(axis=1)).ravel()
        np.testing.assert_allclose(deg @ spec.vectors, 0.0, atol=1e-8)
        # The second null vector (component indicator ⟂ 1) is kept, with eigenvalue 0.
        assert abs(spec.eigenvalues[0]) < 1e-8
        assert spec.eigenvalues[1] > 1e-6
    # Labels only in the first component: the second gets -1 and confidence 0.
    yy = np.full(160, -1)
    yy[[0, 1]] = [0, 1]
    pred = spectral(LabelProblem(W, yy), d=8, calibration="none")
    assert np.all(pred.labels[80:] == -1)
    assert np.all(pred.confidence[80:] == 0)
    assert np.all(pred.labels[:80] >= 0)


# -------------------------------------------------------------------- the solver


def _paper_sgt_dense(A, labeled_pos, labeled_neg, d=80, c=3200.0):
    """Sec. 5 step by step with dense linear algebra and the block matrix of eq. 21."""
    n = len(A)
    deg = A.sum(axis=1)
    lam, U = la.eigh(np.diag(deg) - A, np.diag(deg))  # B⁻¹(B−A)v = λv, B-orthonormal
    V = U[:, 1 : d + 1]
    D = np.diag(np.arange(1, d + 1) ** 2.0)
    lp, ln = len(labeled_pos), len(labeled_neg)
    gamma = np.zeros(n)
    gamma[labeled_pos], gamma[labeled_neg] = np.sqrt(ln / lp), -np.sqrt(lp / ln)
    Cd = np.zeros(n)
    Cd[labeled_pos], Cd[labeled_neg] = (lp + ln) / (2 * lp), (lp + ln) / (2 * ln)
    G = D + c * V.T @ (Cd[:, None] * V)
    b = c * V.T @ (Cd * gamma)
    M = np.block([[G, -np.eye(d)], [-np.outer(b, b) / n, G]])
    ev = la.eigvals(M)
    lam_star = ev[np.abs(ev.imag) < 1e-8].real.min()
    z = V @ np.linalg.solve(G - lam_star * np.eye(d), b)
    theta = (np.sqrt(ln / lp) - np.sqrt(lp / ln)) / 2
    return z, theta


def test_spectral_matches_the_papers_steps_on_digits(digits, digits_spectrum):
    X, y, A = digits
    rng = np.random.default_rng(3)
    pos = rng.choice(np.flatnonzero(y == 3), 2, replace=False)
    neg = rng.choice(np.flatnonzero(y != 3), 8, replace=False)
    z, theta = _paper_sgt_dense(A.toarray(), pos, neg)
    yy = np.full(len(y), -1)
    yy[pos], yy[neg] = 1, 0
    pred = spectral(LabelProblem(A, yy), spectrum=digits_spectrum, calibration="none")
    span = np.sqrt(8 / 2) + np.sqrt(2 / 8)
    np.testing.assert_allclose(pred.scores[:, 1], (z - theta) / span, atol=1e-6)
    np.testing.assert_allclose(pred.scores[:, 0], -(z - theta) / span, atol=1e-6)
    np.testing.assert_array_equal(pred.labels == 1, z > theta)


def test_digits_protocol_beats_knn_and_reaches_the_paper(digits, digits_spectrum):
    X, y, A = digits
    n = len(y)
    Z = X / np.linalg.norm(X, axis=1, keepdims=True)
    rng = np.random.default_rng(5)
    sgt, knn = [], []
    for cls in range(10):
        for _ in range(3):
            pos = rng.choice(np.flatnonzero(y == cls), 1, replace=False)
            neg = rng.choice(np.flatnonzero(y != cls), 9, replace=False)
            yy = np.full(n, -1)
            yy[pos], yy[neg] = 1, 0
            pred = spectral(LabelProblem(A, yy), spectrum=digits_spectrum, calibration="none")
            test = yy < 0
            truth = y[test] == cls
            sgt.append(_prbep(pred.scores[test, 1], truth))
            knn.append(_prbep(Z[test] @ Z[pos[0]], truth))  # 1-NN-to-the-positive cosine ranking
    assert np.mean(sgt) > 0.80
    assert np.mean(sgt) > np.mean(knn) + 0.1


def test_multiclass_confidence_is_calibrated_by_leave_one_out(digits, digits_spectrum):
    X, y, A = digits
    given = keep_per_class(y, 10, np.random.default_rng(7))
    yy = np.where(given, y, -1)
    # calibration under test, not time: no budget (its leave-one-out overran 5 s on a loaded machine)
    pred = solve(LabelProblem(A, yy), "spectral", spectrum=digits_spectrum, time_limit=None)
    test = ~given
    correct = pred.labels[test] == y[test]
    assert correct.mean() > 0.9
    a, _ = pred.info["platt"]
    assert a > 0
    raw = spectral(LabelProblem(A, yy), spectrum=digits_spectrum, calibration="none")
    assert raw.info["platt"] is None
    ece = expected_calibration_error(pred.confidence[test], correct)
    assert ece < 0.08
    assert ece < expected_calibration_error(raw.confidence[test], correct)
    hi = pred.confidence[test] >= np.quantile(pred.confidence[test], 0.2)
    assert correct[hi].mean() > correct[~hi].mean()
    assert np.all((pred.confidence >= 0) & (pred.confidence <= 1))


def test_leave_one_out_flags_flipped_labels(digits, digits_spectrum):
    X, y, A = digits
    rng = np.random.default_rng(8)
    given = keep_per_class(y, 10, rng)
    y_noisy, flipped = flip_labels(y, given, 0.1, 10, rng)
    yy = np.where(given, y_noisy, -1)
    # flags under test, not time: no budget (the leave-one-out overran 5 s on a loaded machine)
    loo = spectral(LabelProblem(A, yy), spectrum=digits_spectrum, calibration="none", noise="loo", time_limit=None)
    fit = spectral(LabelProblem(A, yy), spectrum=digits_spectrum, calibration="none", noise="fit")
    scores = noise_scores(loo.noisy[given], flipped[given])
    assert scores["recall"] >= 0.7
    assert scores["precision"] >= 0.6
    assert not loo.noisy[~given].any()
    assert not fit.noisy[~given].any()
    # The fitted labelling overrides flipped labels too (the sphere constraint bounds how
    # hard c pins them).
    assert noise_scores(fit.noisy[given], flipped[given])["recall"] >= 0.5
    # The flipped labels do not spoil the rest: most unlabelled nodes stay right.
    assert np.mean(loo.labels[~given] == y[~given]) > 0.9


def test_label_confidence_zero_equals_no_label(digits, digits_spectrum):
    X, y, A = digits
    rng = np.random.default_rng(11)
    given = keep_per_class(y, 5, rng)
    yy = np.where(given, y, -1)
    drop = np.flatnonzero(given)[::7]
    conf = np.ones(len(y))
    conf[drop] = 0.0
    weighted = spectral(LabelProblem(A, yy, label_confidence=conf), spectrum=digits_spectrum, calibration="none")
    y_drop = yy.copy()
    y_drop[drop] = -1
    # Not identical (γ̂ still counts the label) but the dropped labels no longer pin z.
    plain = spectral(LabelProblem(A, yy), spectrum=digits_spectrum, calibration="none")
    assert not np.allclose(weighted.scores, plain.scores)
    assert np.mean(weighted.labels == plain.labels) > 0.9


def test_select_k_normalises_by_the_best_graph(digits):
    X, y, _ = digits
    sel = np.flatnonzero(y < 5)[:400]
    spectra = {k: graph_spectrum(sgt_graph(_cosine_knn(X[sel], k)), 20) for k in (5, 10, 30)}
    rng = np.random.default_rng(0)
    sets = []
    for _ in range(4):
        yy = np.full(len(sel), -1)
        keep = keep_per_class(y[sel], 2, rng)
        yy[keep] = y[sel][keep]
        sets.append(yy)
    k, avg = select_k(spectra, sets)
    assert k in spectra
    assert avg[k] == min(avg.values())
    assert min(avg.values()) >= 1.0
    assert max(avg.values()) > 1.0


def test_validation_and_spectrum_fingerprint(digits, digits_spectrum):
    X, y, A = digits
    yy = np.full(len(y), -1)
    yy[:20] = y[:20]
    problem = LabelProblem(A, yy)
    for bad in ({"c": 0}, {"c": -1.0}, {"root": "newton"}, {"calibration": "isotonic"}, {"noise": "x"}):
        with pytest.raises(ValueError):
            spectral(problem, spectrum=digits_spectrum, **bad)
    with pytest.raises(ValueError):
        graph_spectrum(A, len(y) - 1)
    with pytest.raises(ValueError):
        graph_spectrum(A, 5, laplacian="normalized")
    with pytest.raises(ValueError):
        graph_spectrum(A, 5, eigen_method="svd")
    other = (A + sp.eye(len(y), format="csr") * 0).tolil()
    other[0, 1] = other[1, 0] = A[0, 1] + 0.5
    assert graph_fingerprint(other) != digits_spectrum.fingerprint
    with pytest.raises(ValueError):
        spectral(LabelProblem(other.tocsr(), yy), spectrum=digits_spectrum)
    with pytest.raises(ValueError):
        graph_spectrum(sp.csr_matrix((len(y), len(y))), 5)  # isolated nodes


def test_sphere_zero_first_component_with_a_root_below_the_pole():
    # β₁ = 0 but the other components alone overshoot the sphere: λ* < Γ₁ still.
    G = np.diag([1.0, 4.0, 9.0])
    b = np.array([0.0, 30.0, 20.0])
    w, lam = sphere_minimizer(G, b, 5.0)
    w_blk, lam_blk = sphere_minimizer(G, b, 5.0, root="block")
    assert lam < 1.0
    assert lam == pytest.approx(lam_blk, rel=1e-9)
    assert w @ w == pytest.approx(5.0, rel=1e-10)
    np.testing.assert_allclose(w, w_blk, rtol=1e-7, atol=1e-9)


def test_the_tasks_and_the_leave_one_out_from_class_sums_equal_the_sums_over_labels():
    """_tasks and _leave_one_out build each one-vs-rest task from the classes' sums (the
    leave-one-out less the held-out label's term) rather than summing over the labels anew
    for every held-out label; the reference sums over the labels (Sec. 5's G and b), and
    holds out a class's only label (its task goes) and, with two classes, the only label
    of one (no task is left: every margin -inf)."""
    from solvers.spectral import _leave_one_out, _margins, _solve_labels, _tasks

    rng = np.random.default_rng(0)
    for y_l, n_classes in ((np.array([0, 1, 2, 3] * 9 + [4]), 6), (np.array([0, 0, 0, 1]), 2),
                           (np.array([0, 1, 2] * 5), 3)):
        l, d = len(y_l), 6
        V_l, conf_l, D = rng.normal(size=(l, d)), rng.uniform(0.3, 1.0, l), rng.uniform(0.0, 2.0, d)
        if n_classes == 3:
            conf_l[4] = 0.0  # held out, it changes no task: the explicit route (u = 0)
        classes = np.unique(y_l)
        G, b, g_pos, g_neg, gamma, cost = _tasks(V_l, y_l, conf_l, classes, 3.0, D)
        np.testing.assert_allclose(G, np.diag(D)[None] + 3.0 * np.einsum("li,cl,lj->cij", V_l, cost, V_l),
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(b, 3.0 * np.einsum("li,cl->ci", V_l, cost * gamma), rtol=1e-12, atol=1e-12)
        expected = np.full((l, n_classes), -np.inf)
        for i in range(l):
            kept = np.arange(l) != i
            Wt, theta, span, _, valid = _solve_labels(V_l[kept], y_l[kept], conf_l[kept], n_classes, 3.0, D, 100.0,
                                                      "secular")
            expected[i] = _margins(V_l[i : i + 1], Wt, theta, span, valid)[0]
        got = _leave_one_out(V_l, y_l, conf_l, n_classes, 3.0, D, 100.0, "secular")
        np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
        np.testing.assert_allclose(got[np.isfinite(got)], expected[np.isfinite(expected)], rtol=1e-9, atol=1e-9)
        if n_classes == 2:
            assert np.isinf(got[3]).all()  # the only label of class 1 held out: one class, no task


def test_the_rank_one_sphere_equals_the_sphere_minimizer_of_the_explicit_matrix():
    """_downdated_sphere solves diag(Γ) − u uᵀ without its eigendecomposition; the rows it
    leaves (u₁ = 0, and the hard case: b with no component on the lowest eigenvector) are
    marked, not answered wrongly."""
    from solvers.spectral import _downdated_sphere

    rng = np.random.default_rng(3)
    m, d, n = 200, 12, 50.0
    Gam = np.sort(rng.uniform(0.0, 40.0, (m, d)), axis=1)
    Gam[:20, 1] = Gam[:20, 0]  # a repeated lowest eigenvalue
    u = rng.normal(size=(m, d)) * rng.uniform(0.01, 3.0, (m, 1))
    beta = rng.normal(size=(m, d)) * rng.uniform(0.1, 100.0, (m, 1))
    u[-2, 0] = 0.0  # the change misses Γ₁'s direction
    A = np.einsum("mi,ij->mij", Gam, np.eye(d)) - u[:, :, None] * u[:, None, :]
    lowest = np.linalg.eigh(A[-1])[1][:, 0]
    beta[-1] -= (beta[-1] @ lowest) * lowest  # the hard case
    w, ok = _downdated_sphere(Gam, u, beta, n)
    assert not ok[-2]
    assert not ok[-1]
    assert ok[:-2].all()
    expected, _ = sphere_minimizer(A[:-2], beta[:-2], n)
    np.testing.assert_allclose(w[:-2], expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())
    np.testing.assert_allclose(np.sum(w[:-2] ** 2, axis=1), n, rtol=1e-12)


def test_the_leave_one_out_eigendecomposes_two_matrices_a_class_not_one_a_label(monkeypatch):
    """A held-out label changes each task by a rank-one term once its scaling is fixed, and
    the scaling takes two values per task: 2·C eigendecompositions of d × d for any number of
    labels, where one per label and class made the leave-one-out l·C of them."""
    from solvers import spectral as module

    rng = np.random.default_rng(1)
    C, l, d = 4, 120, 10
    y_l, V_l = rng.integers(0, C, l), rng.normal(size=(l, d))
    decomposed = []
    real = np.linalg.eigh

    def counted(a, *args, **kwargs):
        decomposed.append(1 if np.ndim(a) == 2 else len(a))
        return real(a, *args, **kwargs)

    monkeypatch.setattr(np.linalg, "eigh", counted)
    got = module._leave_one_out(V_l, y_l, np.ones(l), C, 3.0, np.arange(1.0, d + 1) ** 2, 500.0, "secular")
    assert np.isfinite(got).all()
    assert sum(decomposed) <= 2 * C


def _held_out_labels_of_5_classes() -> tuple:
    from solvers import spectral as module

    module.LOO_BLOCK_FLOATS = 2**14  # this interpreter's only (fresh_interpreter.traced_peak)
    rng = np.random.default_rng(2)
    C, l, d = 5, 6000, 40
    return rng.integers(0, C, l), rng.normal(size=(l, d)) / 100, C, d


def _leave_one_out_of(y_l, V_l, C, d) -> np.ndarray:
    from solvers import spectral as module

    return module._leave_one_out(V_l, y_l, np.ones(len(y_l)), C, 3200.0, np.arange(1.0, d + 1) ** 2, 50_000.0,
                                 "secular")


def test_the_leave_one_out_holds_a_block_of_held_out_labels_at_a_time():
    """Its rank-one problems are solved LOO_BLOCK_FLOATS floats per array at a time: with
    6,000 labels the whole of a class's (1,200 labels × 5 tasks × d = 40, 1.8 MiB an array,
    about 20 arrays alive) would pass 30 MiB; in blocks of 128 KiB it stays under 8 MiB,
    the labels' own 1.8 MiB included."""
    from fresh_interpreter import traced_peak

    got, peak = traced_peak(_held_out_labels_of_5_classes, _leave_one_out_of)
    assert np.isfinite(got).all()
    assert peak < 8 * 2**20
