"""Max-margin graph cuts (Kveton et al. 2010) against dense references and the paper's limits."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.datasets import load_digits, make_blobs, make_moons
from sklearn.svm import SVC

from labelling.evaluation import expected_calibration_error, noise_scores
from labelling.sampling import flip_labels, keep_per_class
from similarity.knn import knn_graph
from solvers.maxmargin import MaxMarginGraphCut, induce_labels, maxmargin, paper_bandwidth
from solvers.problem import LabelProblem
from solvers.registry import solve


def _paper_graph(X):
    return knn_graph(X, 5, weights="gaussian", sigma=paper_bandwidth(X))


@pytest.fixture(scope="module")
def moons():
    """Two moons plus a far blob that no label reaches (its ℓ is 0, so it must be dropped)."""
    rng = np.random.default_rng(3)
    X, y = make_moons(240, noise=0.08, random_state=3)
    blob = rng.normal([6.0, 6.0], 0.1, size=(12, 2))
    X = np.vstack([X, blob])
    y = np.concatenate([y, np.zeros(12, dtype=int)])
    given = np.zeros(len(y), dtype=bool)
    given[keep_per_class(y[:240], 3, rng).nonzero()[0]] = True
    return X, y, np.where(given, y, -1)


@pytest.fixture(scope="module")
def digits_split():
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(y))
    train, test = perm[:1200], perm[1200:]
    return X[train], y[train], X[test], y[test], _paper_graph(X[train]), rng


def _dense_ell(W, y_pm, labeled, gamma_g):
    """(L_uu + γ_g I) ℓ_u = W_ul y_l solved densely, ℓ_l = y_l (eq. 6)."""
    A = W.toarray()
    L = np.diag(A.sum(axis=1)) - A
    u, l = np.flatnonzero(~labeled), np.flatnonzero(labeled)
    ell = np.zeros(len(y_pm))
    ell[l] = y_pm[l]
    M = L[np.ix_(u, u)] + gamma_g * np.eye(len(u))
    # lstsq: the unlabeled-only component makes L_uu singular when γ_g = 0 (ℓ is 0 there)
    ell[u] = np.linalg.lstsq(M, A[np.ix_(u, l)] @ y_pm[l], rcond=None)[0]
    return ell


@pytest.mark.parametrize("gamma_g", [0.0, 0.3, 5.0])
def test_binary_induced_labels_match_dense_solve(moons, gamma_g):
    X, _, yg = moons
    W = _paper_graph(X)
    labeled = yg >= 0
    ell = _dense_ell(W, np.where(yg == 1, 1.0, -1.0), labeled, gamma_g)
    eps = 1e-3
    model = MaxMarginGraphCut(gamma_g=gamma_g, epsilon=eps, cv=0).fit(LabelProblem(W, yg, X=X))
    np.testing.assert_allclose(model.margin_, np.abs(ell), atol=1e-9)
    expected = np.where(np.abs(ell) >= eps, (ell > 0).astype(int), -1)
    np.testing.assert_array_equal(model.induced_labels_, expected)
    assert np.all(model.induced_labels_[-12:] == -1)  # the unreachable blob: ℓ = 0
    assert np.all(model.induced_labels_[labeled] == yg[labeled])


@pytest.mark.parametrize("kernel", ["linear", "cubic", "rbf"])
def test_binary_model_is_the_papers_svm_on_the_kept_points(moons, kernel):
    """Eq. (7): the fitted SVM equals libsvm on {i: |ℓ_i| ≥ ε} with labels sgn ℓ_i."""
    X, _, yg = moons
    W = _paper_graph(X)
    gamma_g, eps, C = 0.5, 1e-2, 3.0
    ell = _dense_ell(W, np.where(yg == 1, 1.0, -1.0), yg >= 0, gamma_g)
    kept = np.abs(ell) >= eps
    s = paper_bandwidth(X)
    params = {"linear": dict(kernel="linear"),
              "cubic": dict(kernel="poly", degree=3, gamma=1 / s**2, coef0=1.0),
              "rbf": dict(kernel="rbf", gamma=1 / (2 * s**2))}[kernel]
    reference = SVC(C=C, **params).fit(X[kept], np.sign(ell[kept]))
    model = MaxMarginGraphCut(gamma_g=gamma_g, epsilon=eps, kernel=kernel, C=C, cv=0)
    model.fit(LabelProblem(W, yg, X=X))
    grid = np.random.default_rng(0).uniform([-1.5, -1.0], [2.5, 1.5], size=(300, 2))
    np.testing.assert_allclose(model.decision_function(grid), reference.decision_function(grid),
                               rtol=1e-6, atol=1e-6)


def test_multiclass_induced_labels_are_argmax_and_top_two_gap(digits_split):
    X, y, _, _, W, rng = digits_split
    given = keep_per_class(y, 4, rng)
    yg = np.where(given, y, -1)
    gamma_g = 0.2
    # the factorised solve, to compare the equations with a dense solve at 1e-9 (the default
    # on these 1,200 unknowns is CG, within 3e-9)
    induced, margin = induce_labels(W, yg, 10, gamma_g=gamma_g, epsilon=1e-6, solver="direct")
    A = W.toarray()
    L = np.diag(A.sum(axis=1)) - A
    u, l = np.flatnonzero(~given), np.flatnonzero(given)
    Y = np.eye(10)[y[l]]
    F = np.zeros((len(y), 10))
    F[l] = Y
    F[u] = np.linalg.solve(L[np.ix_(u, u)] + gamma_g * np.eye(len(u)), A[np.ix_(u, l)] @ Y)
    top = np.sort(F, axis=1)
    np.testing.assert_allclose(margin, top[:, -1] - top[:, -2], atol=1e-9)
    kept = induced >= 0
    np.testing.assert_array_equal(induced[kept], F[kept].argmax(axis=1))
    np.testing.assert_array_equal(kept, margin >= 1e-6)


def test_two_class_gap_rule_equals_the_papers_abs_ell(moons):
    """The multi-class rule (top-two gap of one-hot absorption scores) is |ℓ| when C = 2."""
    X, _, yg = moons
    W = _paper_graph(X)
    labeled = yg >= 0
    ell = _dense_ell(W, np.where(yg == 1, 1.0, -1.0), labeled, 0.7)
    F = np.column_stack([_dense_ell(W, (yg == c).astype(float), labeled, 0.7) for c in (0, 1)])
    np.testing.assert_allclose(F[:, 1] - F[:, 0], ell, atol=1e-9)
    _, margin = induce_labels(W, yg, 2, gamma_g=0.7)
    np.testing.assert_allclose(margin, np.abs(F[:, 1] - F[:, 0]), atol=1e-9)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_large_gamma_g_is_the_supervised_svm(digits_split, kernel):
    """γ_g → ∞: every unlabelled |ℓ| falls below ε, leaving the SVM on the labelled points."""
    X, y, X_test, _, W, rng = digits_split
    given = keep_per_class(y, 5, rng)
    yg = np.where(given, y, -1)
    model = MaxMarginGraphCut(gamma_g=1e10, kernel=kernel, C=2.0, cv=0).fit(LabelProblem(W, yg, X=X))
    assert np.array_equal(model.induced_labels_ >= 0, given)
    s = paper_bandwidth(X)
    params = dict(kernel="linear") if kernel == "linear" else dict(kernel="rbf", gamma=1 / (2 * s**2))
    supervised = SVC(C=2.0, decision_function_shape="ovo", **params).fit(X[given], y[given])
    np.testing.assert_array_equal(model.predict(X_test), supervised.predict(X_test))
    np.testing.assert_allclose(model.svm_.decision_function(X_test),
                               supervised.decision_function(X_test), rtol=1e-6, atol=1e-6)


def test_predicts_new_digits_well_above_chance_and_beats_supervised(digits_split):
    X, y, X_test, y_test, W, rng = digits_split
    given = keep_per_class(y, 3, rng)
    yg = np.where(given, y, -1)
    model = MaxMarginGraphCut(gamma_g=0.1, C=10.0, cv=0).fit(LabelProblem(W, yg, X=X))
    accuracy = np.mean(model.predict(X_test) == y_test)
    s = paper_bandwidth(X)
    supervised = SVC(C=10.0, gamma=1 / (2 * s**2)).fit(X[given], y[given])
    assert accuracy > 0.1 + 0.6  # chance is 0.1 on ten balanced classes
    assert accuracy > np.mean(supervised.predict(X_test) == y_test)  # the paper's GC-vs-SVM claim


def test_maxmargin_prediction_covers_nodes_without_edges(digits_split):
    X, y, X_test, y_test, W, rng = digits_split
    # append held-out digits as nodes with no edges: entities ingested after the graph build
    m = 50
    W_big = sp.block_diag([W, sp.csr_matrix((m, m))], format="csr")
    X_big = np.vstack([X, X_test[:m]])
    given = np.concatenate([keep_per_class(y, 10, rng), np.zeros(m, dtype=bool)])
    yg = np.where(given, np.concatenate([y, y_test[:m]]), -1)
    problem = LabelProblem(W_big, yg, n_classes=10, X=X_big)
    pred = solve(problem, "maxmargin", gamma_g=0.1, C=10.0)
    new = np.arange(len(y), len(y) + m)
    assert pred.method == "maxmargin"
    assert pred.info["graph_unreachable"][new].all()
    _, comp = connected_components(W_big, directed=False)
    reached = np.isin(comp, comp[given & ~pred.noisy])
    np.testing.assert_array_equal(pred.info["graph_unreachable"], ~reached)
    model = pred.info["model"]
    np.testing.assert_array_equal(pred.labels[new], model.predict(X_test[:m]))
    assert np.mean(pred.labels[new] == y_test[:m]) > 0.7
    assert np.all(pred.confidence[new] > 0)
    np.testing.assert_allclose(pred.scores.sum(axis=1), 1.0)
    assert np.all((pred.confidence >= 0) & (pred.confidence <= 1))
    strict = maxmargin(problem, gamma_g=0.1, C=10.0, predict_unreachable=False)
    assert np.all(strict.labels[~reached] == -1)
    assert np.all(strict.confidence[~reached] == 0)
    np.testing.assert_array_equal(strict.labels[reached], pred.labels[reached])


def test_pickle_round_trip(digits_split):
    X, y, X_test, _, W, rng = digits_split
    yg = np.where(keep_per_class(y, 6, rng), y, -1)
    model = MaxMarginGraphCut(gamma_g=0.1, kernel="cubic").fit(LabelProblem(W, yg, X=X))
    assert model.calibrator_ is not None
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.predict(X_test), model.predict(X_test))
    np.testing.assert_allclose(clone.predict_proba(X_test), model.predict_proba(X_test))
    np.testing.assert_allclose(clone.decision_function(X_test), model.decision_function(X_test))
    assert clone.get_params() == model.get_params()


def test_noise_flags_and_calibration_on_flipped_digits(digits_split):
    X, y, X_test, y_test, W, rng = digits_split
    given = keep_per_class(y, 15, rng)
    noisy_y, flipped = flip_labels(y, given, 0.1, 10, rng)
    problem = LabelProblem(W, np.where(given, noisy_y, -1), X=X)
    model = MaxMarginGraphCut(gamma_g=0.1, C=1.0, drop_noisy=True).fit(problem)
    scores = noise_scores(model.noisy_[given], flipped[given])
    assert scores["precision"] > 0.4
    assert scores["recall"] > 0.6  # base rate of a flip is 0.1
    assert not model.noisy_[~given].any()
    # drop_noisy: the final fit no longer clamps the flagged labels (|ℓ| = 1 only when clamped)
    assert np.all(model.margin_[model.noisy_] < 1.0 - 1e-9)
    kept = MaxMarginGraphCut(gamma_g=0.1, C=1.0).fit(problem)  # default: flag, keep
    np.testing.assert_array_equal(kept.noisy_, model.noisy_)
    np.testing.assert_allclose(kept.margin_[given], 1.0)
    # noise="svm": a flag needs both SVMs: the cross-fitted one doubts it, the final one (trained with it) errs on it
    svm_rule = MaxMarginGraphCut(gamma_g=0.1, C=1.0, noise="svm").fit(problem)
    assert svm_rule.noisy_.any()
    assert np.all(svm_rule.svm_.predict(X[svm_rule.noisy_]) != noisy_y[svm_rule.noisy_])
    doubted = np.zeros(len(y), dtype=bool)
    doubted[given] = (svm_rule.oof_proba_.max(axis=1)
                      > svm_rule.oof_proba_[np.arange(given.sum()), noisy_y[given]])
    assert np.all(doubted[svm_rule.noisy_])
    P = model.predict_proba(X_test)
    labels = model.predict(X_test)
    conf = P[np.arange(len(labels)), labels]
    raw = MaxMarginGraphCut(gamma_g=0.1, C=1.0, cv=0).fit(problem.with_labels(
        np.where(given & ~model.noisy_, noisy_y, -1)))
    raw_conf = raw.predict_proba(X_test)[np.arange(len(labels)), raw.predict(X_test)]
    ece = expected_calibration_error(conf, labels == y_test)
    assert ece < expected_calibration_error(raw_conf, raw.predict(X_test) == y_test)
    assert ece < 0.1


def test_default_flags_need_the_graph_and_the_svm_to_doubt(digits_split):
    """noise="graph_and_svm": the score is the smaller of the cross-fitted SVM's margin and the
    graph step's leave-one-out margin, and a label is flagged from 0.3 on."""
    from solvers._relaxation import harmonic_loo_margin

    X, y, _, _, W, _ = digits_split
    rng = np.random.default_rng(5)
    given = keep_per_class(y, 10, rng)
    noisy_y, flipped = flip_labels(y, given, 0.1, 10, rng)
    problem = LabelProblem(W, np.where(given, noisy_y, -1), X=X)
    pred = maxmargin(problem)
    graph = harmonic_loo_margin(W, problem.y, 10)[given]
    score = pred.noise_score[given]
    assert np.all(score <= graph + 1e-12)
    assert np.any(score < graph - 1e-3)  # the SVM's margin is the smaller one somewhere
    np.testing.assert_array_equal(pred.noisy[given], score >= 0.3)
    assert not pred.noisy[~given].any()
    assert np.isnan(pred.noise_score[~given]).all()
    caught = noise_scores(pred.noisy[given], flipped[given])
    assert caught["precision"] >= 0.8
    assert caught["recall"] >= 0.5
    looser = maxmargin(problem, noise_threshold=0.1)
    assert looser.noisy.sum() >= pred.noisy.sum()
    np.testing.assert_allclose(looser.noise_score[given], score)


def test_sample_induced_keeps_the_given_labels_and_reweights_the_drawn_ones():
    """A fold's SVM: every given label, ``size`` induced ones drawn without repeats, each drawn
    one weighted (induced count / size) so their hinge losses sum to the full set's estimate."""
    from solvers.maxmargin import _sample_induced

    y = np.full(1000, -1)
    y[:40] = np.arange(40) % 4
    train = np.flatnonzero((np.arange(1000) % 5 != 4) | (y >= 0))  # the 40 given and 768 unlabelled nodes
    weight = np.where(y >= 0, 0.5, 1.0)  # trusted given labels weigh their trust
    drawn, w = _sample_induced(train, y, weight, 190, np.random.default_rng(0))
    assert np.isin(np.flatnonzero(y >= 0), drawn).all()
    assert np.isin(drawn, train).all()
    assert np.all(np.diff(drawn) > 0)
    induced = drawn[y[drawn] < 0]
    assert len(induced) == 190
    pool = np.count_nonzero(y[train] < 0)  # 768
    np.testing.assert_allclose(w[induced], pool / 190)
    np.testing.assert_allclose(w[induced].sum(), pool)
    np.testing.assert_array_equal(w[y >= 0], 0.5)
    np.testing.assert_array_equal(weight[y < 0], 1.0)  # the caller's weights are not changed
    same, w_same = _sample_induced(train, y, weight, pool, np.random.default_rng(0))
    assert same is train
    assert w_same is weight


def test_folds_train_on_a_sample_of_the_induced_labels(digits_split, monkeypatch):
    """cv_sample: the folds' SVMs see a sample, the final one every induced label; the flags and
    the calibration survive a sample of a quarter of the graph, and a sample no smaller than
    the graph changes nothing."""
    X, y, X_test, y_test, W, _ = digits_split
    rng = np.random.default_rng(5)
    given = keep_per_class(y, 10, rng)
    noisy_y, flipped = flip_labels(y, given, 0.1, 10, rng)
    problem = LabelProblem(W, np.where(given, noisy_y, -1), X=X)
    fits: list[int] = []
    fit = SVC.fit
    monkeypatch.setattr(SVC, "fit", lambda svm, X_fit, *a, **k: fits.append(len(X_fit)) or fit(svm, X_fit, *a, **k))
    probes: list[int] = []
    probe = MaxMarginGraphCut._probe_seconds
    monkeypatch.setattr(MaxMarginGraphCut, "_probe_seconds", lambda self, *a: probes.append(1) or probe(self, *a))
    full = MaxMarginGraphCut(cv_sample=None).fit(problem)
    assert len(fits) == 6
    assert min(fits) > 1000
    assert len(probes) == 1  # only the first fold probes: the final fit expects a fold's seconds
    fits.clear()
    probes.clear()
    sampled = MaxMarginGraphCut(cv_sample=300).fit(problem)
    folds_given = given.sum() - given.sum() // 5  # the training folds' given labels (10 per class)
    assert fits[:5] == [300 + folds_given] * 5
    assert fits[5] == np.count_nonzero(sampled.induced_labels_ >= 0) == np.count_nonzero(full.induced_labels_ >= 0)
    assert len(probes) == 2  # a sampled fold's seconds are no estimate of the final fit: it probes
    np.testing.assert_array_equal(sampled.predict(X_test), full.predict(X_test))
    assert not np.allclose(sampled.noise_score_, full.noise_score_)  # the folds did change
    caught = noise_scores(sampled.noisy_[given], flipped[given])
    assert caught["precision"] >= 0.8
    assert caught["recall"] >= 0.5
    for model in (full, sampled):  # calibrated on the folds' scores, both close to the hidden labels' accuracy
        P = model.predict_proba(X_test)
        labels = model.predict(X_test)
        assert expected_calibration_error(P[np.arange(len(labels)), labels], labels == y_test) < 0.1
    monkeypatch.undo()
    same = MaxMarginGraphCut(cv_sample=len(y)).fit(problem)
    np.testing.assert_allclose(same.noise_score_, full.noise_score_)
    np.testing.assert_array_equal(same.noisy_, full.noisy_)


def test_validation_errors(moons):
    X, _, yg = moons
    W = _paper_graph(X)
    with pytest.raises(ValueError, match="node features"):
        MaxMarginGraphCut().fit(LabelProblem(W, yg))
    problem = LabelProblem(W, yg, X=X)
    for bad in [dict(gamma_g=-1), dict(epsilon=-0.1), dict(kernel="sigmoid"), dict(C=0),
                dict(cv=1), dict(noise_threshold=0), dict(bandwidth=0.0), dict(solver="cholmod"),
                dict(noise="cut"), dict(cv_sample=0), dict(cv_sample=2.5)]:
        with pytest.raises(ValueError):
            MaxMarginGraphCut(**bad).fit(problem)
    with pytest.raises(ValueError, match="not fitted"):
        MaxMarginGraphCut().predict(X)
    model = MaxMarginGraphCut(cv=0).fit(problem)
    with pytest.raises(ValueError, match="shape"):
        model.predict(X[:, :1])


def test_vote_from_decision_values_is_libsvms_predict_with_ties():
    """maxmargin() takes its labels and probabilities from one decision_function call
    (_vote replays libsvm's one-vs-one vote): the labels must be SVC.predict's, with tied
    votes (a 3-class cycle, one vote each, where the first class wins) and for two classes."""
    from solvers.maxmargin import _vote

    X, y = make_blobs(300, centers=[[0, 0], [4, 0], [2, 3.4]], cluster_std=1.5, random_state=0)
    grid = np.stack(np.meshgrid(np.linspace(-2, 6, 200), np.linspace(-2, 5.5, 200)), -1).reshape(-1, 2)
    svm = SVC(C=1.0, gamma=0.5, decision_function_shape="ovo").fit(X, y)
    D = svm.decision_function(grid)
    first, second = np.triu_indices(3, 1)
    votes = np.stack([(np.where(D > 0, first, second) == c).sum(axis=1) for c in range(3)], axis=1)
    assert np.any(votes.max(axis=1) == 1)  # the grid holds cyclic, tied points
    np.testing.assert_array_equal(_vote(svm, D), svm.predict(grid))
    binary = SVC(C=1.0, gamma=0.5).fit(X[y > 0], y[y > 0])
    np.testing.assert_array_equal(_vote(binary, binary.decision_function(grid)), binary.predict(grid))


def test_maxmargin_labels_and_probabilities_are_the_models(digits_split):
    X, y, _, _, W, _ = digits_split
    problem = LabelProblem(W, np.where(keep_per_class(y, 10, np.random.default_rng(1)), y, -1), n_classes=10, X=X)
    prediction = solve(problem, "maxmargin")
    model = prediction.info["model"]
    kept = ~prediction.noisy  # a flagged node is the cross-fitted model's (the test above)
    np.testing.assert_array_equal(prediction.labels[kept], model.predict(X)[kept])
    np.testing.assert_allclose(prediction.scores, model.predict_proba(X))


def test_a_flagged_labels_node_is_predicted_by_the_model_that_never_saw_the_label(digits_split):
    """The final SVM trains on every given label, so it predicted a flagged node as the label
    it doubts on some draws; the cross-fitted model held that label out."""
    X, y, _, _, W, _ = digits_split
    rng = np.random.default_rng(5)
    given = keep_per_class(y, 10, rng)
    noisy_y, _ = flip_labels(y, given, 0.1, 10, rng)
    pred = maxmargin(LabelProblem(W, np.where(given, noisy_y, -1), X=X))
    model = pred.info["model"]
    flagged = pred.noisy
    assert flagged.sum() >= 5
    oof = model.oof_proba_[flagged[given]]
    np.testing.assert_array_equal(pred.labels[flagged], oof.argmax(axis=1))
    np.testing.assert_allclose(pred.confidence[flagged], oof.max(axis=1))
    assert (pred.labels[flagged] != noisy_y[flagged]).all()
    assert np.mean(pred.labels[flagged] == y[flagged]) >= 0.8
    unflagged = ~flagged
    np.testing.assert_array_equal(pred.labels[unflagged], model.predict(X)[unflagged])  # the rest is the SVM's


def test_class_scores_are_the_mean_signed_pairwise_decisions_without_a_pairs_by_classes_matrix():
    """_class_scores sums each class's pairs (no pairs × C matrix of ±1: 4 GB at 1,000 classes);
    the reference is that product, for libsvm's pair order."""
    from solvers.maxmargin import _class_scores

    rng = np.random.default_rng(0)
    for k in (3, 4, 7, 12):
        svm = SVC().fit(rng.normal(size=(4 * k, 2)), np.repeat(np.arange(k), 4))
        D = rng.normal(size=(50, k * (k - 1) // 2))
        first, second = np.triu_indices(k, 1)
        M = np.zeros((len(first), k))
        M[np.arange(len(first)), first] = 1.0
        M[np.arange(len(first)), second] = -1.0
        np.testing.assert_allclose(_class_scores(svm, D), D @ M / (k - 1), rtol=0, atol=1e-12)


def _fitted_on_30_classes() -> tuple:
    import solvers.maxmargin as mm

    X, y = make_blobs(3000, centers=30, n_features=4, cluster_std=1.0, random_state=0)
    given = np.where(keep_per_class(y, 4, np.random.default_rng(0)), y, -1)
    model = MaxMarginGraphCut(cv=0).fit(LabelProblem(knn_graph(X, 10), given, X=X, n_classes=30))
    labels, P = model.predict_with_proba(X)
    mm.DECISION_BLOCK_BYTES = 2**20  # this interpreter's only (fresh_interpreter.traced_peak)
    return model, X, labels, P, model.svm_.predict(X)


def _blocked_predictions(model, X, labels, P, libsvm_labels) -> tuple:
    # the call's results, then what prepare made, passed through (nothing new allocated for them)
    return (*model.predict_with_proba(X), labels, P, libsvm_labels)


def test_the_decision_values_on_the_nodes_are_held_a_block_of_rows_at_a_time():
    """libsvm gives C(C − 1)/2 one-vs-one values per row: predict_with_proba holds at most
    DECISION_BLOCK_BYTES of them (and what is made from them) beside its outputs, and gives the
    labels and probabilities of one call on every row. Before, one call on 3,000 rows of 30
    classes held 10 MB of them and three times that with the votes and scores made from them."""
    from fresh_interpreter import traced_peak

    (blocked_labels, blocked_P, labels, P, libsvm_labels), peak = traced_peak(_fitted_on_30_classes,
                                                                             _blocked_predictions)
    np.testing.assert_array_equal(blocked_labels, labels)
    np.testing.assert_allclose(blocked_P, P, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(blocked_labels, libsvm_labels)
    every_row = 3000 * 30 * 29 // 2 * 8
    assert peak < 5 * 2**20 + 2 * P.nbytes < every_row, peak


def test_the_decision_values_are_made_on_threads_in_the_rows_order(monkeypatch):
    """_decision_blocks splits each block's rows over the threads (libsvm's prediction releases
    the GIL) and yields them in order: the same values as one call on every row, for one thread
    and more, blocks of a few rows included."""
    import solvers.maxmargin as mm

    X, y = make_blobs(1500, centers=12, n_features=4, cluster_std=1.5, random_state=1)
    given = np.where(keep_per_class(y, 5, np.random.default_rng(1)), y, -1)
    model = MaxMarginGraphCut(cv=0).fit(LabelProblem(knn_graph(X, 10), given, X=X, n_classes=12))
    expected = model.svm_.decision_function(X)
    monkeypatch.setattr(mm, "DECISION_BLOCK_BYTES", 66 * 8 * 100)  # 100 rows of 66 pairs a block
    called = []
    real = type(model.svm_).decision_function
    monkeypatch.setattr(type(model.svm_), "decision_function", lambda svm, rows: called.append(len(rows)) or
                        real(svm, rows))
    for threads in (1, 2, 3):
        called.clear()
        blocks = list(mm._decision_blocks(model.svm_, X, threads))
        assert [rows.start for rows, _ in blocks] == list(range(0, len(X), 100 // threads))
        np.testing.assert_array_equal(np.concatenate([D for _, D in blocks]), expected)
        assert max(called) == 100 // threads  # a block's rows shared by the threads
