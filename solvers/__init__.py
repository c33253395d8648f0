"""Graph-based transductive labelling solvers on scipy.sparse matrices; they import nothing
of the project (the bottom layer).

    >>> from solvers import LabelProblem, solve
    >>> prediction = solve(LabelProblem(W, y), method="harmonic")
"""

from .problem import UNLABELED, LabelProblem, Prediction
from .registry import METHODS, solve

__all__ = ["LabelProblem", "Prediction", "solve", "METHODS", "UNLABELED"]
