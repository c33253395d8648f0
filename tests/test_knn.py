"""Similarity graphs against brute-force neighbours."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.datasets import make_moons

from similarity import delta_graph, knn_graph, nearest_neighbors


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_knn_neighbours_match_brute_force(metric, rng):
    X = rng.normal(size=(120, 5))
    idx, dist = nearest_neighbors(X, 6, metric, backend="exact")
    D = cdist(X, X, "euclidean" if metric == "euclidean" else "cosine")
    np.fill_diagonal(D, np.inf)
    np.testing.assert_allclose(np.sort(dist, axis=1), np.sort(D, axis=1)[:, :6], atol=1e-9)
    assert not (idx == np.arange(120)[:, None]).any()


def test_knn_graph_is_symmetric_with_the_requested_weights(rng):
    X = rng.normal(size=(80, 3))
    W = knn_graph(X, 5, weights="gaussian", sigma=1.0)
    assert (abs(W - W.T)).max() < 1e-12
    assert W.diagonal().sum() == 0
    rows, cols = W.nonzero()
    d = np.linalg.norm(X[rows] - X[cols], axis=1)
    np.testing.assert_allclose(W[rows, cols].A1, np.exp(-(d**2) / 2.0))
    # every node keeps at least its k neighbours after the union
    assert (np.diff(W.indptr) >= 5).all()


def test_mutual_knn_is_a_subgraph_of_union(rng):
    X = rng.normal(size=(60, 4))
    union = knn_graph(X, 4, weights="binary")
    mutual = knn_graph(X, 4, weights="binary", symmetrise="mutual")
    assert mutual.nnz < union.nnz
    assert (union.multiply(mutual) != mutual).nnz == 0


def test_hnsw_agrees_with_exact_search(rng):
    X = rng.normal(size=(2000, 8))
    exact, _ = nearest_neighbors(X, 10, backend="exact")
    approx, _ = nearest_neighbors(X, 10, backend="hnsw")
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(exact, approx)])
    assert recall > 0.95


def test_delta_graph_holds_exactly_the_pairs_within_delta():
    X, _ = make_moons(200, noise=0.05, random_state=0)
    W = delta_graph(X, 0.15)
    D = cdist(X, X)
    expected = (D < 0.15) & ~np.eye(200, dtype=bool)
    np.testing.assert_array_equal(W.toarray() > 0, expected)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"k": 0}, "k must"), ({"metric": "manhattan"}, "metric"), ({"weights": "x"}, "weights")],
)
def test_bad_parameters_are_refused(kwargs, message, rng):
    with pytest.raises(ValueError, match=message):
        knn_graph(rng.normal(size=(10, 2)), **{"k": 3, **kwargs})


def test_nan_features_are_refused():
    X = np.ones((5, 2))
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        knn_graph(X, 2)


def test_default_sigma_is_the_median_kth_distance_and_ignores_an_outlier(rng):
    from similarity import median_kth_distance

    X = rng.normal(size=(40, 2))
    _, dist = nearest_neighbors(X, 5)
    _, sigma = knn_graph(X, 5, return_sigma=True)
    assert sigma == pytest.approx(np.median(dist[:, -1]))
    _, with_outlier = knn_graph(np.vstack([X, [[1e6, 1e6]]]), 5, return_sigma=True)
    assert with_outlier == pytest.approx(sigma, rel=0.1)  # the mean would be ~ 1e6 * sqrt(2) / 41
    assert median_kth_distance(np.zeros((5, 3))) == 1.0  # all copies: no scale, weights of 1
    copies = np.vstack([np.zeros((30, 2)), X])  # 30 copies: their zero distances are left out
    assert median_kth_distance(nearest_neighbors(copies, 5)[1]) > 0


def test_weights_without_information_are_named_and_warned_about(rng):
    from similarity import DegenerateWeightsWarning, weights_problem

    X = rng.normal(size=(60, 3))
    with pytest.warns(DegenerateWeightsWarning, match="above 0.999"):
        knn_graph(X, 5, sigma=1e4)
    with pytest.warns(DegenerateWeightsWarning, match="below 0.001"):
        knn_graph(X, 5, sigma=1e-3)
    with pytest.warns(DegenerateWeightsWarning, match="same features"):
        knn_graph(np.ones((20, 3)), 5)
    assert weights_problem(knn_graph(X, 5).data, 1.0) is None
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        knn_graph(X, 5)  # the default σ never warns on ordinary data


@pytest.mark.parametrize("shape", [(300, 16), (250, 64), (40, 2)])
def test_the_numpy_search_finds_scikit_learns_neighbours(shape, rng, monkeypatch):
    """Small exact searches run in numpy (scikit-learn's import cost more than the search):
    the same neighbours as scikit-learn's, the same distances to rounding, below and above
    the pair limit that picks the library."""
    from sklearn.neighbors import NearestNeighbors

    import similarity.knn as knn

    X = rng.normal(size=shape)
    queries = X[::3]
    expected_dist, expected_idx = NearestNeighbors(n_neighbors=8).fit(X).kneighbors(queries)
    found = {}
    for limit in (10**9, 0):  # numpy, then scikit-learn
        monkeypatch.setattr(knn, "BRUTE_FORCE_MAX_PAIRS", limit)
        monkeypatch.setattr(knn, "BRUTE_FORCE_BLOCK", 7 * shape[0])  # several blocks
        found[limit] = knn._exact_search(X, queries, 8)
    np.testing.assert_array_equal(found[10**9][1], expected_idx)
    np.testing.assert_allclose(found[10**9][0][:, 1:], expected_dist[:, 1:], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(found[0][1], expected_idx)
