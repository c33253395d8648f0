"""Graph-based transductive labelling solvers on scipy.sparse matrices; they import nothing
of the project (the bottom layer).

    >>> from solvers import LabelProblem, solve
    >>> prediction = solve(LabelProblem(W, y), method="harmonic")

The slower solvers (spectral, mincut, lcsnc, maxmargin, nmf) stop themselves with
``SolverTimeLimit`` when their ``time_limit`` runs out, and with ``SolverStopped`` when
their caller asks them to (``stop_when``; solvers/_budget.py). ``harmonic`` and ``nmf``
refuse a problem whose arrays would not fit in the memory the process may take, before they
allocate them, with ``SolverOutOfMemory`` (solvers/_memory.py).
"""

from ._budget import SolverStopped, SolverTimeLimit, stop_when
from ._graph import degenerate_text, graph_components
from ._memory import SolverOutOfMemory
from .problem import UNLABELED, LabelProblem, Prediction
from .registry import GRAPH_ONLY_METHODS, METHODS, check_params, solve

__all__ = ["LabelProblem", "Prediction", "solve", "check_params", "METHODS", "GRAPH_ONLY_METHODS", "UNLABELED",
           "SolverTimeLimit", "SolverStopped", "SolverOutOfMemory", "stop_when", "graph_components",
           "degenerate_text"]
