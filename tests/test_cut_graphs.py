"""Mincut-3 and the δ₀ / δ½ graphs against brute force on small point sets."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import cdist
from sklearn.datasets import load_digits, make_moons

from similarity.cut_graphs import _pairs_from_condensed, delta_rule, delta_rule_graph, mincut3_graph


def _components(A):
    return connected_components(sp.csr_matrix(A), directed=False)[1]


@pytest.mark.parametrize("n", [2, 3, 7, 50, 401])
def test_condensed_positions_map_back_to_pairs(n):
    i, j = np.triu_indices(n, 1)
    got_i, got_j = _pairs_from_condensed(np.arange(n * (n - 1) // 2), n)
    assert np.array_equal(got_i, i)
    assert np.array_equal(got_j, j)


@pytest.mark.parametrize("seed", range(5))
def test_mincut3_matches_brute_force_neighbours(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 3))
    labeled = np.zeros(40, dtype=bool)
    labeled[rng.choice(40, 6, replace=False)] = True
    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)
    expected = np.zeros((40, 40))
    for i in range(40):  # brute-force reference, one node at a time
        to_labeled = np.where(labeled, D[i], np.inf)
        forced = int(np.argmin(to_labeled))
        others = D[i].copy()
        others[forced] = np.inf
        expected[i, forced] = 1
        expected[i, np.argsort(others)[:2]] = 1
    expected = np.maximum(expected, expected.T)
    W = mincut3_graph(X, labeled)
    assert np.array_equal(W.toarray(), expected)


def test_mincut3_on_moons_leaves_no_component_without_a_label():
    X, _ = make_moons(300, noise=0.08, random_state=0)
    labeled = np.zeros(300, dtype=bool)
    labeled[[0, 1, 2, 3]] = True
    W = mincut3_graph(X, labeled)
    comp = _components(W)
    assert np.all(np.isin(comp, comp[labeled]))
    A = W.toarray()
    assert np.array_equal(A, A.T)
    assert np.all(np.diag(A) == 0)
    assert set(np.unique(A)) == {0.0, 1.0}
    assert A.sum(axis=1).min() >= 3


def _brute_delta_zero(D, y):
    """Largest candidate δ (a pairwise distance) with no path between two classes, strict <."""
    best = 0.0
    for delta in np.unique(D[np.triu_indices(len(D), 1)]):  # reference sweep over every δ
        comp = _components(D < delta)
        lab = y >= 0
        mixed = any(len(np.unique(y[lab & (comp == c)])) > 1 for c in np.unique(comp[lab]))
        if not mixed:
            best = delta
    return best


def _brute_delta_half(D):
    """Smallest δ (just above a pairwise distance) whose largest component has >= n/2 nodes."""
    n = len(D)
    for d in np.unique(D[np.triu_indices(n, 1)]):
        delta = np.nextafter(d, np.inf)
        if np.bincount(_components(D < delta)).max() >= np.ceil(n / 2):
            return delta
    raise AssertionError("unreachable")


@pytest.mark.parametrize("seed", range(4))
def test_delta_rules_match_a_sweep_over_all_thresholds(seed):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(25, 2)), rng.normal(size=(20, 2)) + 3.0])
    y = np.full(45, -1)
    y[rng.choice(25, 3, replace=False)] = 0
    y[25 + rng.choice(20, 3, replace=False)] = 1
    y[rng.integers(45)] = 2  # a third class anywhere
    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)

    d0 = delta_rule(X, "zero", y)
    assert d0 == _brute_delta_zero(D, y)
    W0 = delta_rule_graph(X, "zero", y)
    assert np.array_equal(W0.toarray(), (D < d0).astype(float))

    dh = delta_rule(X, "half")
    assert dh == _brute_delta_half(D)
    Wh = delta_rule_graph(X, "half")
    assert np.array_equal(Wh.toarray(), (D < dh).astype(float))
    assert np.bincount(_components(Wh)).max() >= 23


def test_delta_zero_on_digits_keeps_classes_apart_and_is_maximal():
    X, y_true = load_digits(return_X_y=True)
    rng = np.random.default_rng(1)
    y = np.full(len(y_true), -1)
    given = rng.choice(len(y_true), 60, replace=False)
    y[given] = y_true[given]
    delta = delta_rule(X, "zero", y)
    comp = _components(delta_rule_graph(X, "zero", y))
    # No component holds two classes at δ₀ ...
    pairs = {(c, k) for c, k in zip(comp[given], y[given])}
    assert len(pairs) == len({c for c, _ in pairs})
    # ... and one more step (every pair with d <= δ₀) joins two classes.
    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)
    comp_next = _components(D <= delta)
    assert len({(c, k) for c, k in zip(comp_next[given], y[given])}) > len({c for c in comp_next[given]})


def test_differently_labeled_duplicates_give_an_empty_delta_zero_graph():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    y = np.array([0, 1, -1, -1])
    assert delta_rule(X, "zero", y) == 0.0
    assert delta_rule_graph(X, "zero", y).nnz == 0


def test_hamming_metric_for_categorical_codes():
    rng = np.random.default_rng(3)
    X = rng.integers(0, 3, size=(30, 6)).astype(float)
    D = cdist(X, X, metric="hamming")
    np.fill_diagonal(D, np.inf)
    dh = delta_rule(X, "half", metric="hamming")
    assert dh == _brute_delta_half(D)


def test_validation():
    X = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(ValueError, match="rule"):
        delta_rule_graph(X, "third")
    with pytest.raises(ValueError, match="y must"):
        delta_rule_graph(X, "zero")
    with pytest.raises(ValueError, match="two classes"):
        delta_rule_graph(X, "zero", np.array([0, 0] + [-1] * 8))
    with pytest.raises(ValueError, match="at least 2 labelled"):
        mincut3_graph(X, np.eye(10, dtype=bool)[0])
    with pytest.raises(ValueError, match="NaN"):
        mincut3_graph(np.full((5, 2), np.nan), np.ones(5, dtype=bool))
