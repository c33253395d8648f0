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
    with pytest.warns(DegenerateWeightsWarning, match="below 0.001"):  # judged before the zeros are dropped
        assert delta_graph(X, 2.0, weights="gaussian", sigma=1e-3).nnz == 0
    with pytest.warns(DegenerateWeightsWarning, match="above 0.999"):
        delta_graph(X, 2.0, weights="gaussian", sigma=1e4)
    assert weights_problem(knn_graph(X, 5).data, 1.0) is None
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        knn_graph(X, 5)  # the default σ never warns on ordinary data


def test_collected_findings_are_this_threads_and_not_warned(rng):
    """A build inside ``collected_findings`` hands its findings over instead of warning
    them; a build in another thread meanwhile still warns (the store collects its own
    build's findings for the run, graphstore.port)."""
    import threading
    import warnings

    from similarity import DegenerateWeightsWarning, collected_findings

    X = rng.normal(size=(60, 3))
    elsewhere: list[type] = []

    def other_thread() -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            knn_graph(X, 5, sigma=1e-3)
        elsewhere.extend(warning.category for warning in caught)

    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateWeightsWarning)  # warned here, it would raise
        with collected_findings() as found:
            knn_graph(X, 5, sigma=1e4)
            thread = threading.Thread(target=other_thread)
            thread.start()
            thread.join()
    assert [type(finding) for finding in found] == [DegenerateWeightsWarning]
    assert "above 0.999" in str(found[0])
    assert DegenerateWeightsWarning in elsewhere  # not taken into this thread's list


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


# The approximate backends (similarity.knn.KNN_BACKENDS besides "exact"): each against the
# exact search on small generated sets. Recall bounds sit well below what each reaches here
# (0.99-1.00) and far above what a wrong row mapping gives (about k/n).

APPROXIMATE = ("hnsw", "ivf", "hnswlib", "pynndescent")


@pytest.fixture(scope="module")
def clustered():
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(3000, n_features=8, centers=6, cluster_std=2.0, random_state=0)
    return X


def _recall(found, truth):
    return (found[:, :, None] == truth[:, None, :]).any(axis=2).mean()


def test_the_backends_are_named_and_an_unknown_one_is_refused(rng):
    from similarity.knn import DEFAULT_BACKEND, INDEXES, KNN_BACKENDS

    assert set(KNN_BACKENDS) == {"exact", *INDEXES}
    assert DEFAULT_BACKEND in INDEXES
    with pytest.raises(ValueError, match="hnswlib"):
        nearest_neighbors(rng.normal(size=(20, 2)), 3, backend="annoy")


@pytest.mark.parametrize("backend", APPROXIMATE)
def test_approximate_backends_find_the_exact_neighbours(backend, clustered):
    k = 10
    truth, _ = nearest_neighbors(clustered, k, backend="exact")
    idx, dist = nearest_neighbors(clustered, k, backend=backend)
    assert idx.shape == dist.shape == (len(clustered), k)
    assert _recall(idx, truth) > 0.9
    assert not (idx == np.arange(len(clustered))[:, None]).any()  # the self match is dropped
    assert (np.diff(dist, axis=1) >= 0).all()  # nearest first
    # each distance is the one of its own pair (float32 search: 1e-5 relative)
    pair = np.linalg.norm(clustered[:, None, :] - clustered[idx], axis=2)
    np.testing.assert_allclose(dist, pair, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", APPROXIMATE)
def test_duplicate_rows_find_their_twin_never_themselves(backend, clustered):
    X = np.vstack([clustered[:500], clustered[:500]])  # row i and row i + 500 are equal
    idx, dist = nearest_neighbors(X, 3, backend=backend)
    rows = np.arange(1000)
    assert not (idx == rows[:, None]).any()
    twin = (rows + 500) % 1000
    assert ((idx == twin[:, None]).any(axis=1)).mean() > 0.95
    assert (dist[:, 0] == 0).mean() > 0.95


@pytest.mark.parametrize("backend", ["hnsw", "ivf", "hnswlib"])
def test_small_query_chunks_give_the_same_neighbours(backend, clustered, monkeypatch):
    """Queries go KNN_QUERY_CHUNK at a time, grouped by cell (and the HNSW rows stored by
    k-means cell, LAYOUT_ROWS_PER_CELL rows a cell): chunks of 7 rows over 30 cells must map
    every answer back to its own row."""
    import similarity.knn as knn

    truth, _ = nearest_neighbors(clustered, 5, backend="exact")
    monkeypatch.setattr(knn, "LAYOUT_ROWS_PER_CELL", 100)
    monkeypatch.setattr(knn, "KNN_QUERY_CHUNK", 7)
    idx, dist = nearest_neighbors(clustered, 5, backend=backend)
    assert _recall(idx, truth) > 0.9
    pair = np.linalg.norm(clustered[:, None, :] - clustered[idx], axis=2)
    np.testing.assert_allclose(dist, pair, rtol=1e-4, atol=1e-5)


def test_the_hnsw_layout_groups_nearby_rows(clustered, monkeypatch):
    import similarity.knn as knn

    monkeypatch.setattr(knn, "LAYOUT_ROWS_PER_CELL", 100)
    order = knn._locality_order(clustered)
    np.testing.assert_array_equal(np.sort(order), np.arange(len(clustered)))
    stored = clustered[order]
    consecutive = np.linalg.norm(np.diff(stored, axis=0), axis=1).mean()
    shuffled = np.linalg.norm(np.diff(clustered[np.random.default_rng(0).permutation(3000)], axis=0), axis=1).mean()
    assert consecutive < 0.5 * shuffled
    monkeypatch.setattr(knn, "LAYOUT_ROWS_PER_CELL", 10**6)  # fewer rows than one cell: input order
    np.testing.assert_array_equal(knn._locality_order(clustered), np.arange(3000))


@pytest.mark.parametrize("backend", ["ivf", "pynndescent"])
def test_seeded_backends_are_deterministic(backend, clustered):
    """faiss's k-means and IVF scan, and pynndescent with its random_state, repeat
    themselves (the HNSW builds insert from several threads at once: not promised)."""
    first = nearest_neighbors(clustered, 6, backend=backend)
    second = nearest_neighbors(clustered, 6, backend=backend)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])


def test_rows_an_index_answers_short_are_searched_exactly(clustered, monkeypatch):
    """One probed IVF list of ~60 rows may not hold 60 neighbours: faiss pads with -1, and
    those rows are searched again exactly."""
    import similarity.knn as knn

    monkeypatch.setattr(knn, "IVF_NPROBE", 1)
    _, padded = knn.INDEXES["ivf"](clustered).search(np.arange(3000), 61)
    short = (padded < 0).any(axis=1)
    assert 0 < short.sum() < 3000
    idx, dist = nearest_neighbors(clustered, 60, backend="ivf")
    truth, truth_dist = nearest_neighbors(clustered, 60, backend="exact")
    assert (idx >= 0).all()
    np.testing.assert_allclose(dist[short], truth_dist[short], rtol=1e-4, atol=1e-5)
    assert _recall(idx[short], truth[short]) > 0.999  # ties aside, the exact neighbours


@pytest.mark.parametrize("backend", APPROXIMATE)
def test_the_backends_reach_knn_graph_and_knn_edges_for(backend, clustered):
    from similarity import knn_edges_for

    W = knn_graph(clustered, 5, backend=backend, weights="binary")
    exact = knn_graph(clustered, 5, backend="exact", weights="binary")
    assert abs(W - exact).sum() / exact.sum() < 0.1
    new = np.arange(0, 3000, 7)
    source, target, _ = knn_edges_for(clustered[new], clustered, new, 5, weights="binary", backend=backend)
    src_exact, tgt_exact, _ = knn_edges_for(clustered[new], clustered, new, 5, weights="binary", backend="exact")
    pairs = set(zip(np.minimum(source, target), np.maximum(source, target)))
    expected = set(zip(np.minimum(src_exact, tgt_exact), np.maximum(src_exact, tgt_exact)))
    assert len(pairs & expected) > 0.9 * len(expected)
    assert np.isin(source, new).all()


def test_pynndescent_builds_as_many_neighbours_as_asked(clustered):
    import similarity.knn as knn

    assert knn.PYNNDESCENT_N_NEIGHBORS < 25
    idx, _ = nearest_neighbors(clustered[:600], 25, backend="pynndescent")
    truth, _ = nearest_neighbors(clustered[:600], 25, backend="exact")
    assert _recall(idx, truth) > 0.9


def test_auto_checks_its_recall_and_searches_wider_when_it_is_low(rng, monkeypatch):
    """"auto" above EXACT_MAX_NODES estimates its recall on sampled rows searched exactly;
    below MIN_RECALL it rebuilds with WIDE_HNSW and says so (isotropic noise in 32
    dimensions, the hard case, with the narrowest HNSW)."""
    import warnings

    from similarity import knn

    X = rng.normal(size=(3000, 32))
    truth, _ = nearest_neighbors(X, 10, backend="exact")
    monkeypatch.setattr(knn, "EXACT_MAX_NODES", 1000)
    monkeypatch.setattr(knn, "HNSW_M", 4)
    monkeypatch.setattr(knn, "HNSW_EF_CONSTRUCTION", 4)
    monkeypatch.setattr(knn, "HNSW_EF_SEARCH", 4)
    narrow, _ = nearest_neighbors(X, 10, backend="hnsw")
    assert _recall(narrow, truth) < knn.MIN_RECALL  # the narrow setting misses neighbours here
    steps = []
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        idx, _ = nearest_neighbors(X, 10, on_progress=lambda step, done, total: steps.append((step, done, total)))
    assert _recall(idx, truth) > _recall(narrow, truth)
    assert _recall(idx, truth) >= 0.9
    low = [w for w in said if issubclass(w.category, knn.LowRecallWarning)]
    assert len(low) == 1
    assert "rebuilt with M=32" in str(low[0].message)
    assert ("kNN index (wider)", 3000, 3000) in steps
    assert steps[-1] == ("kNN search (wider)", 3000, 3000)
    # the estimate is the recall of the sampled rows
    assert knn.sampled_recall(X, np.column_stack([np.arange(3000), truth]), 11) == 1.0


def test_auto_keeps_its_fast_search_when_the_recall_is_enough(clustered, monkeypatch):
    import warnings

    from similarity import knn

    monkeypatch.setattr(knn, "EXACT_MAX_NODES", 100)
    monkeypatch.setattr(knn, "KNN_QUERY_CHUNK", 256)
    steps = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", knn.LowRecallWarning)
        nearest_neighbors(clustered, 10, on_progress=lambda step, done, total: steps.append((step, done, total)))
    n = len(clustered)
    searched = [done for step, done, total in steps if step == "kNN search"]
    assert searched == sorted(searched)
    assert len(searched) >= n // 256  # one report per chunk of queries
    assert searched[-1] == n
    assert not any("wider" in step for step, _, _ in steps)


def test_every_search_a_graph_spec_names_is_a_backend_and_is_used(clustered, monkeypatch):
    """``GraphSpec.search`` (the CLI's --search, a schedule's ``search``) names the
    backends of similarity.knn, and a built graph is searched with it."""
    from similarity import knn
    from similarity.build import build_graph
    from similarity.spec import SEARCHES, GraphSpec

    assert SEARCHES == ("auto", *knn.KNN_BACKENDS)
    assert GraphSpec.from_options("knn", search="auto").search is None
    with pytest.raises(ValueError, match="search must be one of"):
        GraphSpec.from_options("knn", search="annoy")
    with pytest.raises(ValueError, match="a delta graph has none to search"):
        GraphSpec(kind="delta", delta=1.0, weights="binary", symmetrise=None, k=None, search="exact")
    used = []
    monkeypatch.setattr(knn, "_search", lambda Z, rows, k1, backend, on_progress=None:
                        used.append(backend) or knn._exact_search(Z, Z[rows], k1))
    spec = GraphSpec.from_options("knn", k=5, scale="none", search="ivf")
    assert spec.search == "ivf"
    assert "ivf search" in spec.describe()
    assert GraphSpec.from_record(spec.as_record()) == spec
    build_graph(clustered, np.full(len(clustered), None), spec)
    assert used == ["ivf"]
