"""SNC / LC-SNC: exact cuts against brute force, the two cut backends against each other,
confidence schemes against dense recomputation, and behaviour on real data."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, load_iris, make_moons
from sklearn.model_selection import train_test_split

from labelling.evaluation import noise_scores
from labelling.sampling import flip_labels_per_class
from similarity.knn import knn_graph
from solvers._parametric_cut import parametric_min_cut
from solvers.lcsnc import _confidence, _features, lcsnc
from solvers.problem import LabelProblem
from solvers.registry import solve

BACKENDS = ["maxflow", "pseudoflow"]


def _random_graph(n, density, rng):
    upper = sp.random(n, n, density=density, random_state=rng, data_rvs=rng.random)
    W = sp.triu(upper, k=1)
    return (W + W.T).tocsr()


def _all_subsets(n):
    return np.array(list(product([False, True], repeat=n)), dtype=bool)


def _cut_values(W, subsets):
    """C(S, S̄) for every row of ``subsets`` (dense, brute force)."""
    A = W.toarray()
    S = subsets.astype(float)
    return np.einsum("si,ij,sj->s", S, A, 1.0 - S)


def _minimal_optimum(values, subsets):
    """The intersection of all optimal sets = the minimal minimum cut source set."""
    best = values <= values.min() + 1e-9 * max(1.0, abs(values.min()))
    return subsets[best].all(axis=0)


# ------------------------------------------------------------------ parametric cut


@pytest.mark.parametrize("backend", BACKENDS)
def test_parametric_cut_matches_brute_force(backend):
    rng = np.random.default_rng(1)
    n = 9
    subsets = _all_subsets(n)
    lambdas = np.array([0.0, 0.05, 0.2, 0.4, 0.8, 1.5, 3.0])
    for trial in range(4):
        W = _random_graph(n, 0.5, rng)
        a, b, t = rng.random(n) * (rng.random(n) < 0.5), rng.random(n), rng.random(n)
        got, _ = parametric_min_cut(W, a, b, t, lambdas, backend=backend)
        cut = _cut_values(W, subsets)
        for q, lam in enumerate(lambdas):
            # s -> i is cut when i is on the sink side, i -> t when i is on the source side.
            values = cut + (~subsets) @ (a + lam * b) + subsets @ t
            expected = _minimal_optimum(values, subsets)
            np.testing.assert_array_equal(got[q], expected, err_msg=f"trial {trial}, lambda {lam}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_parametric_cut_returns_the_minimal_set_under_ties(backend):
    """Integer capacities make many optimal cuts (and isolated nodes are free): the
    answer must be their intersection, the minimal source set."""
    rng = np.random.default_rng(5)
    n = 9
    subsets = _all_subsets(n)
    lambdas = np.array([0.0, 1.0, 2.0, 3.0])
    for trial in range(6):
        W = _random_graph(n, 0.4, rng)
        W.data = np.ceil(3 * W.data)
        keep = sp.diags((np.arange(n) > 0).astype(float))
        W = (keep @ W @ keep).tocsr()  # node 0 isolated
        a, b, t = (rng.integers(0, 3, n).astype(float) for _ in range(3))
        a[0] = b[0] = t[0] = 0.0  # ... and free: any side is optimal, the minimal set excludes it
        got, _ = parametric_min_cut(W, a, b, t, lambdas, backend=backend)
        cut = _cut_values(W, subsets)
        for q, lam in enumerate(lambdas):
            values = cut + (~subsets) @ (a + lam * b) + subsets @ t
            np.testing.assert_array_equal(got[q], _minimal_optimum(values, subsets), err_msg=f"trial {trial}")


def test_pseudoflow_and_maxflow_agree_on_knn_graph():
    X, y = make_moons(400, noise=0.15, random_state=0)
    W = knn_graph(X, 8)
    d = np.asarray(W.sum(axis=1)).ravel()
    rng = np.random.default_rng(0)
    labeled = rng.random(len(y)) < 0.2
    pos, neg = labeled & (y == 1), labeled & (y == 0)
    K = 0.25
    lambdas = K + np.array([-0.25, -0.0625, -0.015625, 0.00390625, 0.0625, 0.25])
    args = (W, np.where(pos, 2.0, 0.0), np.where(labeled, 0.0, d),
            np.where(neg, 2.0, 0.0) + np.where(labeled, 0.0, K * d))
    a, info_a = parametric_min_cut(*args, lambdas, backend="pseudoflow")
    b, info_b = parametric_min_cut(*args, lambdas, backend="maxflow")
    np.testing.assert_array_equal(a, b)
    assert info_a["n_max_flows"] == 1
    assert info_b["n_max_flows"] == len(lambdas)
    # Nested source sets as lambda grows (the parametric property).
    assert np.all(a[1:] >= a[:-1])
    assert a[0].sum() < a[-1].sum()


# ------------------------------------------------------------------ SNC / LC-SNC vs brute force


def _tiny_problem(rng, n=10, n_labeled=5):
    W = _random_graph(n, 0.6, rng)
    y = -np.ones(n, dtype=np.int64)
    who = rng.choice(n, n_labeled, replace=False)
    y[who] = rng.integers(0, 2, n_labeled)
    y[who[:2]] = [0, 1]
    return LabelProblem(W, y)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("lam", [0.05, 0.3, -0.3])
def test_lc_constant_is_the_exact_minimiser(backend, lam):
    """LC-c at fixed (lam, c) minimises C(S,S̄) - lam d(S∩U) + c·#(seeds on the wrong side)
    (section 4.1; a negative lam is the class-balance variant, -|lam| d(S̄∩U))."""
    rng = np.random.default_rng(7)
    for trial in range(5):
        problem = _tiny_problem(rng)
        W, y = problem.W, problem.y
        d = np.asarray(W.sum(axis=1)).ravel()
        free = y < 0
        subsets = _all_subsets(len(y))
        c = 0.6
        values = _cut_values(W, subsets)
        values += c * (~subsets[:, y == 1]).sum(axis=1) + c * subsets[:, y == 0].sum(axis=1)
        if lam > 0:
            values -= lam * (subsets[:, free] @ d[free])
        else:
            values -= -lam * ((~subsets[:, free]) @ d[free])
        expected = _minimal_optimum(values, subsets).astype(np.int64)
        pred = lcsnc(problem, confidence="constant", lam=lam, c=c, class_balance=lam < 0, backend=backend)
        np.testing.assert_array_equal(pred.labels, expected, err_msg=f"trial {trial}")
        np.testing.assert_array_equal(pred.noisy, (y >= 0) & (expected != y))


@pytest.mark.parametrize("lam", [0.02, 0.2])
def test_snc_is_the_exact_minimiser_with_hard_seeds(lam):
    rng = np.random.default_rng(3)
    for trial in range(5):
        problem = _tiny_problem(rng, n=11, n_labeled=4)
        W, y = problem.W, problem.y
        d = np.asarray(W.sum(axis=1)).ravel()
        free = y < 0
        subsets = _all_subsets(len(y))
        feasible = subsets[:, y == 1].all(axis=1) & ~subsets[:, y == 0].any(axis=1)
        subsets = subsets[feasible]
        values = _cut_values(W, subsets) - lam * (subsets[:, free] @ d[free])
        expected = _minimal_optimum(values, subsets).astype(np.int64)
        pred = lcsnc(problem, variant="snc", lam=lam)
        np.testing.assert_array_equal(pred.labels, expected, err_msg=f"trial {trial}")
        assert not pred.noisy.any()


# ------------------------------------------------------------------ confidences


def test_feature_confidences_match_dense_recomputation():
    X, y = load_iris(return_X_y=True)
    y = (y == 2).astype(np.int64)
    rng = np.random.default_rng(0)
    labeled = rng.random(len(y)) < 0.5
    y_obs = np.where(labeled, y, -1)
    k, eps = 5, 0.7
    Z = _features(X, y_obs, feature_weights="uniform", n_trees=1, random_state=0)
    positive = y_obs == 1
    lab = np.flatnonzero(labeled)
    D = ((Z[lab][:, None, :] - Z[lab][None, :, :]) ** 2).sum(axis=2)
    np.fill_diagonal(D, np.inf)
    order = np.argsort(D, axis=1, kind="stable")[:, :k]
    same = positive[lab][order] == positive[lab][:, None]
    got = _confidence("knn", positive, labeled, Z, None, k, eps)
    np.testing.assert_allclose(got[lab], same.mean(axis=1))
    assert np.all(got[~labeled] == 0)

    def local_mean_sq(side):
        Ds = np.where(positive[lab][None, :] == side, D, np.inf)
        nearest = np.argsort(Ds, axis=1, kind="stable")[:, :k]
        return ((Z[lab] - Z[lab][nearest].mean(axis=1)) ** 2).sum(axis=1)

    a = np.exp(-local_mean_sq(True) / (2 * eps**2))
    b = np.exp(-local_mean_sq(False) / (2 * eps**2))
    expected = np.where(positive[lab], a / (a + b), b / (a + b))
    got = _confidence("local_mean", positive, labeled, Z, None, k, eps)
    np.testing.assert_allclose(got[lab], expected, rtol=1e-9)


def test_graph_knn_confidence_without_features():
    W = sp.csr_matrix(np.array([[0, 1, 3, 0], [1, 0, 0, 0], [3, 0, 0, 2], [0, 0, 2, 0]], dtype=float))
    labeled = np.array([True, True, True, False])
    positive = np.array([True, True, False, False])
    got = _confidence("knn", positive, labeled, None, W, 8, 1.0)
    # node 0: same-label weight 1 of labelled weight 4; node 1: 1/1; node 2: 0/3.
    np.testing.assert_allclose(got, [0.25, 1.0, 0.0, 0.0])


# ------------------------------------------------------------------ real data


def _wdbc_split(noise, seed):
    X, y = load_breast_cancer(return_X_y=True)
    n = len(y)
    lab, _ = train_test_split(np.arange(n), train_size=0.6, stratify=y, random_state=seed)
    given = np.zeros(n, dtype=bool)
    given[lab] = True
    y_noisy, flipped = flip_labels_per_class(y, given, noise, np.random.default_rng(seed))
    return X, y, given, np.where(given, y_noisy, -1), flipped


def test_wdbc_lc_knn_flags_injected_noise_and_beats_chance():
    X, y, given, y_obs, flipped = _wdbc_split(0.2, seed=1)
    problem = LabelProblem(sp.csr_matrix((len(y), len(y))), y_obs, X=X)
    pred = solve(problem, "lcsnc", graph="knn", confidence="knn", k_grid=(4, 8), eps_grid=(0.5, 1.0),
                 c_grid=(2.0, 4.0, 8.0), n_trees=30)
    test = ~given
    accuracy = np.mean(pred.labels[test] == y[test])
    assert accuracy > 0.92  # majority class is 0.63
    scores = noise_scores(pred.noisy[given], flipped[given])
    assert scores["precision"] > 0.7
    assert scores["recall"] > 0.5  # 20% of the labels are flipped
    assert not pred.noisy[~given].any()
    assert set(pred.params) >= {"lam", "c", "k", "eps"}


def test_iris_one_vs_rest_and_snc_flags_nothing():
    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(0)
    given = rng.random(len(y)) < 0.4
    y_obs = np.where(given, y, -1)
    W = knn_graph(X, 8)
    problem = LabelProblem(W, y_obs, X=X)
    lc = solve(problem, "lcsnc", confidence="knn", k_grid=(8,), eps_grid=(1.0,), c_grid=(1.0, 4.0))
    snc = solve(problem, "lcsnc", variant="snc")
    for pred in (lc, snc):
        assert pred.scores.shape == (len(y), 3)
        assert np.mean(pred.labels[~given] == y[~given]) > 0.85
        assert np.all((pred.confidence >= 0) & (pred.confidence <= 1))
    assert not snc.noisy.any()
    np.testing.assert_array_equal(snc.labels[given], y[given])


def test_unreachable_component_gets_no_label():
    X, y = make_moons(120, noise=0.1, random_state=0)
    W = knn_graph(X, 6).tolil()
    n = len(y)
    big = sp.block_diag([W, sp.csr_matrix(np.array([[0, 1.0], [1.0, 0]]))]).tocsr()
    y_obs = -np.ones(n + 2, dtype=np.int64)
    y_obs[np.arange(0, n, 7)] = y[np.arange(0, n, 7)]
    pred = lcsnc(LabelProblem(big, y_obs), confidence="constant", lam=0.0625, c=4.0)
    assert np.all(pred.labels[n:] == -1)
    assert np.all(pred.confidence[n:] == 0)
    assert np.all(pred.labels[:n] >= 0)
    assert np.mean(pred.labels[:n] == y) > 0.9


def test_class_balance_sink_side_can_be_chosen_and_is_reported():
    X, y, given, y_obs, _ = _wdbc_split(0.0, seed=2)
    W = knn_graph(X / X.std(axis=0), 8)
    problem = LabelProblem(W, y_obs, X=X)
    pos = lcsnc(problem, confidence="constant", lam=0.25, c=4.0, class_balance=True)
    neg = lcsnc(problem, confidence="constant", lam=-0.25, c=4.0, class_balance=True)
    assert neg.info["sink_side"]
    assert not pos.info["sink_side"]
    # Sink-side lambda-arcs push unlabelled nodes to the negative (class 0) side.
    assert np.sum(neg.labels[~given] == 1) < np.sum(pos.labels[~given] == 1)


def test_bad_options_raise():
    X, y = make_moons(60, noise=0.1, random_state=0)
    y_obs = np.where(np.arange(60) % 3 == 0, y, -1)
    problem = LabelProblem(knn_graph(X, 5), y_obs)
    with pytest.raises(ValueError, match="problem.X is None"):
        lcsnc(problem, confidence="local_mean")
    with pytest.raises(ValueError, match="problem.X is None"):
        lcsnc(problem, graph="knn")
    with pytest.raises(ValueError, match="variant"):
        lcsnc(problem, variant="hnc")
    with pytest.raises(ValueError, match="class_balance"):
        lcsnc(problem, lam=-0.1)
    with pytest.raises(ValueError, match="c_grid"):
        lcsnc(problem, c_grid=())
    with pytest.raises(ValueError, match="backend"):
        lcsnc(problem, backend="networkx")


@pytest.mark.parametrize(("labels_of_class_1", "advice"),
                         [(3, "set cv=3, or give lam, c, k and eps one value each"),
                          (1, r"; give lam, c, k and eps one value each, which skips the tuning \(a class of one label"
                              " has no folds")])
def test_too_few_labels_for_the_tuning_says_what_helps(labels_of_class_1, advice):
    """Lowering cv helps a class of 3 labels, not a class of 1 (100 classes at 1% labelled)."""
    X, y = make_moons(60, noise=0.1, random_state=0)
    y_obs = np.full(60, -1)
    y_obs[np.flatnonzero(y == 0)[:10]] = 0
    y_obs[np.flatnonzero(y == 1)[:labels_of_class_1]] = 1
    with pytest.raises(ValueError, match=f"needs at least cv=5 labels.*smallest has {labels_of_class_1}.*{advice}"):
        lcsnc(LabelProblem(knn_graph(X, 5), y_obs))


def test_ensemble_is_the_majority_of_its_members_on_a_given_graph():
    X, y, given, y_obs, flipped = _wdbc_split(0.2, seed=3)
    W = knn_graph(X / X.std(axis=0), 8)
    problem = LabelProblem(W, y_obs, X=X)
    pred = lcsnc(problem, confidence="ensemble", k_grid=(8,), eps_grid=(1.0,), c_grid=(2.0, 8.0), n_trees=20)
    members = pred.info["members"]
    labels = np.stack([m["labels"] for m in members.values()])
    flags = np.stack([m["noisy"] for m in members.values()])
    np.testing.assert_array_equal(pred.labels, (labels.sum(axis=0) >= 2).astype(int))
    np.testing.assert_array_equal(pred.noisy, flags.sum(axis=0) >= 2)
    # Each member alone must match a separate fit with its own confidence scheme.
    alone = lcsnc(problem, confidence="local_mean", k_grid=(8,), eps_grid=(1.0,), c_grid=(2.0, 8.0), n_trees=20)
    np.testing.assert_array_equal(alone.labels, members["local_mean"]["labels"])
    assert np.mean(pred.labels[~given] == y[~given]) > 0.9


def test_labeled_only_cv_with_random_draws_tunes_within_the_grids():
    X, y = make_moons(300, noise=0.2, random_state=1)
    rng = np.random.default_rng(1)
    given = rng.random(len(y)) < 0.5
    y_noisy, flipped = flip_labels_per_class(y, given, 0.1, rng)
    problem = LabelProblem(sp.csr_matrix((len(y), len(y))), np.where(given, y_noisy, -1), X=X)
    pred = lcsnc(problem, graph="knn", confidence="knn", cv_graph="labeled", n_iter=6,
                 class_balance=True, feature_weights="uniform", random_state=3)
    chosen = pred.info["chosen"]
    assert abs(chosen["lam"]) in {4.0**-4, 4.0**-3, 4.0**-2, 4.0**-1}
    assert chosen["c"] in {0.5, 1, 2, 4, 8, 16}
    assert chosen["k"] in {1, 2, 3, 4, 8, 12, 16, 20}
    assert pred.info["sink_side"] == (chosen["lam"] < 0)
    assert 0.5 < pred.info["cv_score"] <= 1.0
    assert np.mean(pred.labels[~given] == y[~given]) > 0.85
    assert noise_scores(pred.noisy[given], flipped[given])["recall"] > 0.3


@pytest.mark.parametrize(("classes", "class_balance", "n_iter", "settings"),
                         [(2, False, 15, 15), (2, True, 7, 7), (3, False, 60, 24)])
def test_the_default_search_has_the_papers_sixty_candidates(classes, class_balance, n_iter, settings):
    """Section 4.3's randomized search of 60 (λ, c, k, ε) candidates (decision 8): a sweep
    scores each of Table 2's 4 λ (8 signed ones with class balance), so 15 or 7 (k, eps, c)
    draws; the multi-class path tunes no λ, so 60, here more than the grid's 24 settings
    (8 k × 3 eps × one c), which are then all scored. n_iter=None scores all 24."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(150, n_features=4, centers=classes, cluster_std=2.0, random_state=0)
    given = np.random.default_rng(0).random(len(y)) < 0.4
    problem = LabelProblem(knn_graph(X, 8), np.where(given, y, -1), X=X)
    searched = lcsnc(problem, class_balance=class_balance, c_grid=(1.0,), n_trees=10)
    assert searched.params["n_iter"] == n_iter
    assert searched.info["settings_tuned"] == settings
    full = lcsnc(problem, class_balance=class_balance, c_grid=(1.0,), n_trees=10, n_iter=None)
    assert full.params["n_iter"] is None
    assert full.info["settings_tuned"] == 24


def test_knn_graph_needs_no_dummy_w():
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    given = np.where(rng.random(len(y)) < 0.2, y, -1)
    features_only = LabelProblem(None, given, X=X)
    assert not features_only.has_graph
    assert features_only.W.nnz == 0
    kw = dict(graph="knn", k=8, eps=1.0, lam=4.0**-4, c=16.0)
    pred = solve(features_only, "lcsnc", **kw)
    with_dummy = solve(LabelProblem(sp.csr_matrix((len(y), len(y))), given, X=X), "lcsnc", **kw)
    np.testing.assert_array_equal(pred.labels, with_dummy.labels)
    assert np.mean(pred.labels[given < 0] == y[given < 0]) > 0.85
    with pytest.raises(ValueError, match="needs a graph"):
        solve(features_only, "harmonic")
    with pytest.raises(ValueError, match="needs a graph W, or features"):
        LabelProblem(None, given)


def test_multiclass_path_rule_on_digits_beats_the_cut_rule():
    # The protocol: digits, 10 labels per class, 10% flipped, a 10-NN graph.
    from sklearn.datasets import load_digits

    from labelling.sampling import flip_labels, keep_per_class

    X, y = load_digits(return_X_y=True)
    W = knn_graph(X, 10)
    rng = np.random.default_rng(0)
    kept = keep_per_class(y, 10, rng)
    noisy, _ = flip_labels(y, kept, 0.1, 10, rng)
    problem = LabelProblem(W, np.where(kept, noisy, -1))
    hidden = ~kept
    path = solve(problem, "lcsnc", c_grid=(8.0, 16.0))
    cut = solve(problem, "lcsnc", c_grid=(8.0, 16.0), multiclass="cut")
    assert "lam" not in path.params
    assert path.params["multiclass"] == "path"
    assert np.mean(path.labels[hidden] == y[hidden]) > 0.88
    assert np.mean(path.labels[hidden] == y[hidden]) > np.mean(cut.labels[hidden] == y[hidden]) + 0.05
    np.testing.assert_allclose(path.confidence[hidden], path.scores[hidden].max(axis=1))


def test_lcsnc_on_segments_gaussian_graph_finishes():
    """Segment (Weka, z-scored), 10-NN Gaussian graph, 10 labels a class: its weights reach
    1e-160, and libhpf ran away on the tuning's networks (a segmentation fault that killed
    the process) until the negligible arcs were left out (``NEGLIGIBLE_CAPACITY``). The
    draw of seed 101 was one that failed."""
    from labelling.datasets import load, standardise
    from labelling.sampling import keep_per_class
    from similarity import knn_graph

    X, y, _ = load("segment")
    W = knn_graph(standardise(X), 10)
    kept = keep_per_class(y, 10, np.random.default_rng(101))
    p = solve(LabelProblem(W, np.where(kept, y, -1)), "lcsnc", n_iter=6, time_limit=None)
    assert np.mean(p.labels[~kept] == y[~kept]) > 0.5


def test_lcsnc_with_features_on_wine_finishes_where_libhpf_ran_away_at_the_paths_end():
    """Wine (z-scored), the README's ``LabelProblem(None, y, X=X)`` with ``graph="knn"``, 10
    labels a class: the path rule's range ends at λ = 1, a tie of every unlabelled node, and
    libhpf recursed there until the process died of a segmentation fault (seeds 0, 1 and 2;
    ``RANGE_END_MARGIN``). In a child process: the failure kills the process that meets it."""
    import subprocess
    import sys

    code = """
import numpy as np
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler
from solvers import LabelProblem, solve
X, y = load_wine(return_X_y=True)
X = StandardScaler().fit_transform(X)
rng = np.random.default_rng(0)
given = np.full(len(y), -1)
for c in np.unique(y):
    picked = rng.choice(np.flatnonzero(y == c), 10, replace=False)
    given[picked] = c
p = solve(LabelProblem(None, given, X=X), "lcsnc", graph="knn", time_limit=None)
print(np.mean(p.labels[given < 0] == y[given < 0]))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert float(done.stdout) > 0.9


def test_the_cuts_on_worker_processes_are_the_cuts_in_this_process(monkeypatch, executors):
    """The tuning's fold × setting runs and the final cut's classes on two worker processes
    (sent there whatever their time): the same labels, scores, flags and choice as in one."""
    from sklearn.datasets import load_digits

    from labelling.sampling import keep_per_class
    from solvers import _worker_processes

    X, y = load_digits(return_X_y=True)
    X, y = X[:600], y[:600]
    W = knn_graph(X, 10)
    given = keep_per_class(y, 10, np.random.default_rng(1))
    problem = LabelProblem(W, np.where(given, y, -1))
    alone = solve(problem, "lcsnc", c_grid=(4.0, 16.0), n_jobs=1)
    assert executors == []  # one process: no workers asked for
    monkeypatch.setattr(_worker_processes, "MIN_SECONDS", 0.0)
    shared = solve(problem, "lcsnc", c_grid=(4.0, 16.0), n_jobs=2)
    assert executors == [2, 2]  # the tuning, then the final cut
    np.testing.assert_array_equal(shared.labels, alone.labels)
    np.testing.assert_array_equal(shared.scores, alone.scores)
    np.testing.assert_array_equal(shared.noisy, alone.noisy)
    assert (shared.info["chosen"], shared.info["cv_score"]) == (alone.info["chosen"], alone.info["cv_score"])
    assert (shared.info["n_jobs"], alone.info["n_jobs"]) == (2, 1)
    assert np.mean(shared.labels[~given] == y[~given]) > 0.9
