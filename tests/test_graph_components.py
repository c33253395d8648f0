"""``solvers.graph_components``: scipy's ``connected_components(W, directed=False)``, the same
numbering, by a cheaper route (one breadth-first search when the graph is one component,
the strong components of a symmetric W otherwise)."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.datasets import make_blobs

from similarity import knn_graph
from solvers import graph_components


def scipys(W):
    return connected_components(W, directed=False)[1]


@pytest.mark.parametrize("seed", range(5))
def test_a_graph_of_many_components_is_numbered_as_scipy_numbers_it(seed):
    # about 0.6 edges per node: hundreds of components, isolated nodes among them
    A = sp.random(3000, 3000, density=0.6 / 3000, random_state=seed, format="csr")
    W = A.maximum(A.T).tocsr()
    expected = scipys(W)
    assert expected.max() > 100
    for symmetric in (True, False):
        assert np.array_equal(graph_components(W, symmetric=symmetric), expected)


def test_a_knn_graph_in_one_piece_is_one_component():
    X, _ = make_blobs(2000, centers=3, cluster_std=3.0, random_state=0)
    W = knn_graph(X, 10)
    assert scipys(W).max() == 0
    component = graph_components(W, symmetric=True)
    assert component.dtype == np.int32
    assert np.array_equal(component, np.zeros(2000))


def test_an_asymmetric_graph_is_read_in_both_directions():
    # 0 → 1 ← 2: node 0's search does not reach node 2, yet the three are one component
    W = sp.csr_matrix((np.ones(2), ([0, 2], [1, 1])), shape=(4, 4))
    assert np.array_equal(graph_components(W), [0, 0, 0, 1])
    assert np.array_equal(graph_components(W), scipys(W))
    # 0 → 1 → 2: the search from 0 reaches every node of the three
    W = sp.csr_matrix((np.ones(2), ([0, 1], [1, 2])), shape=(3, 3))
    assert np.array_equal(graph_components(W), [0, 0, 0])


def test_an_empty_graph_has_no_component():
    assert graph_components(sp.csr_matrix((0, 0))).size == 0
