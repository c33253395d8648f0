import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import LabelProblem, solve


def path_graph(n):
    W = sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")
    return W


def test_problem_accepts_a_valid_graph_and_zeroes_the_diagonal():
    W = path_graph(4) + sp.eye(4)
    problem = LabelProblem(W, np.array([0, -1, -1, 1]))
    assert problem.W.diagonal().sum() == 0
    assert problem.n_classes == 2
    assert problem.labeled.tolist() == [True, False, False, True]


@pytest.mark.parametrize(
    "W, y, message",
    [
        (np.ones((3, 2)), np.array([0, 1, -1]), "square"),
        (sp.csr_matrix(np.array([[0, 1.0], [0.5, 0]])), np.array([0, 1]), "symmetric"),
        (sp.csr_matrix(np.array([[0, -1.0], [-1.0, 0]])), np.array([0, 1]), "non-negative"),
        (path_graph(3), np.array([0, 1]), "shape"),
        (path_graph(3), np.array([0.0, 1.0, -1.0]), "integers"),
        (path_graph(3), np.array([0, -2, 1]), "values"),
    ],
)
def test_problem_rejects_bad_input_with_a_clear_message(W, y, message):
    with pytest.raises(ValueError, match=message):
        LabelProblem(W, y)


def test_confidence_outside_unit_interval_is_rejected():
    with pytest.raises(ValueError, match="label_confidence"):
        LabelProblem(path_graph(3), np.array([0, -1, 1]), label_confidence=np.array([1.5, 0, 1]))


def test_lone_labels_count_the_runs_labels_when_given_and_the_problems_otherwise():
    y = np.array([0, 0, 1, -1, 2])
    own = LabelProblem(path_graph(5), y)
    assert own.class_label_counts.tolist() == [2, 1, 1]
    assert own.lone_labels.tolist() == [False, False, True, False, True]
    # a region of a run that holds more labels of class 1 elsewhere
    region = LabelProblem(path_graph(5), y, class_label_counts=np.array([9, 4, 1]))
    assert region.lone_labels.tolist() == [False, False, False, False, True]
    # carried by a copy without features, not by other labels (cross-validation, holdout)
    assert region.without_features().class_label_counts.tolist() == [9, 4, 1]
    assert region.with_labels(np.array([0, 1, 1, -1, 2])).class_label_counts.tolist() == [1, 2, 1]
    for counts in (np.array([1, 1]), np.array([1, -1, 1]), np.array([1.0, 1.0, 1.0])):
        with pytest.raises(ValueError, match="class_label_counts must be 3 non-negative integers"):
            LabelProblem(path_graph(5), y, class_label_counts=counts)


def test_solve_refuses_one_class_and_unknown_methods():
    problem = LabelProblem(path_graph(3), np.array([0, -1, 0]))
    with pytest.raises(ValueError, match="two classes"):
        solve(problem, "harmonic")
    with pytest.raises(ValueError, match="unknown solver"):
        solve(LabelProblem(path_graph(3), np.array([0, -1, 1])), "nope")


def test_a_problem_without_a_given_label_is_said_as_such():
    # numpy's "zero-size array to reduction operation minimum" at LabelProblem (a Python walk)
    for n_classes in (None, 3):
        problem = LabelProblem(path_graph(4), np.full(4, -1), n_classes=n_classes)
        with pytest.raises(ValueError, match=r"^the problem has no given label \(every y is -1\)"):
            solve(problem, "harmonic")


def test_an_unsigned_y_that_wrapped_minus_one_is_refused():
    # -1 in a uint8 array is 255: 256 classes, every node predicted 255 (a Python walk)
    with pytest.raises(ValueError, match=r"^y is uint8, which cannot hold -1 \(unlabelled\): its 255 would be a class"):
        LabelProblem(path_graph(4), np.array([0, 1, -1, -1]).astype(np.uint8))
    assert LabelProblem(path_graph(4), np.array([0, 1, 1, 0], dtype=np.uint8)).n_classes == 2


def test_class_indices_with_gaps_are_warned_of_unless_n_classes_says_so():
    # class ids 5, 7, 9 as they are: ten score columns, seven of them empty (a Python walk)
    with pytest.warns(UserWarning, match=r"indices 0\.\.9, and 7 of them have no given label \(0, 1, 2, 3, 4, 6, 8\)"):
        LabelProblem(path_graph(6), np.array([5, 7, 9, -1, -1, -1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LabelProblem(path_graph(6), np.array([5, 7, 9, -1, -1, -1]), n_classes=10)
        LabelProblem(path_graph(6), np.array([0, 2, 1, -1, -1, -1]))


def test_a_symmetric_graph_given_out_of_order_is_accepted_as_is():
    # unsorted column indices: the check takes the slow path and leaves the caller's arrays alone
    W = sp.csr_matrix((np.array([2.0, 1.0, 1.0, 2.0]), np.array([2, 1, 0, 0]), np.array([0, 2, 3, 4])),
                      shape=(3, 3))
    assert not W.has_canonical_format
    indices = W.indices.copy()
    problem = LabelProblem(W, np.array([0, -1, 1]))
    assert problem.W.nnz == 4
    assert np.array_equal(W.indices, indices)


def test_an_asymmetric_graph_with_a_symmetric_pattern_is_refused():
    W = path_graph(4).tocsr()
    W.data[2] = 1.5  # the same entries both ways, one weight differs
    with pytest.raises(ValueError, match="symmetric"):
        LabelProblem(W, np.array([0, -1, -1, 1]))


def test_without_features_drops_x_and_keeps_the_checked_graph():
    problem = LabelProblem(path_graph(4), np.array([0, -1, -1, 1]), X=np.arange(8.0).reshape(4, 2))
    bare = problem.without_features()
    assert bare.X is None
    assert problem.X is not None
    assert bare.W is problem.W
    assert bare.y is problem.y
    assert bare.has_graph


@pytest.mark.parametrize("method", sorted(__import__("solvers").GRAPH_ONLY_METHODS))
def test_every_graph_only_method_solves_a_problem_without_features(method):
    # two chains of 20 joined by one weak edge, two labels each end: what the flows hand these
    # methods once the features are dropped (flows/labelling.py)
    W = sp.block_diag([path_graph(20), path_graph(20)], format="lil")
    W[19, 20] = W[20, 19] = 0.01
    y = np.full(40, -1)
    y[[0, 19]], y[[20, 39]] = 0, 1
    X = np.vstack([np.zeros((20, 2)), np.ones((20, 2))])
    bare = LabelProblem(W.tocsr(), y, X=X).without_features()
    prediction = solve(bare, method)
    assert (prediction.labels[:20] == 0).mean() >= 0.9
    assert (prediction.labels[20:] == 1).mean() >= 0.9
