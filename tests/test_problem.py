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


def test_solve_refuses_one_class_and_unknown_methods():
    problem = LabelProblem(path_graph(3), np.array([0, -1, 0]))
    with pytest.raises(ValueError, match="two classes"):
        solve(problem, "harmonic")
    with pytest.raises(ValueError, match="unknown solver"):
        solve(LabelProblem(path_graph(3), np.array([0, -1, 1])), "nope")
