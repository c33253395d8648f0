"""`solve(problem, method, **params)`: the one entry point the flows call.

Each method lives in its own module and is imported on first use, so a solver's
compiled dependency is loaded only by the runs that ask for it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

from ._validation import validate_params
from .problem import LabelProblem, Prediction

METHODS: dict[str, str] = {
    "harmonic": "solvers.harmonic:harmonic",
    "mincut": "solvers.mincut:mincut",
    "lcsnc": "solvers.lcsnc:lcsnc",
    "spectral": "solvers.spectral:spectral",
    "maxmargin": "solvers.maxmargin:maxmargin",
    "nmf": "solvers.nmf:nmf",
    # cross-validates a few of the above on the given labels (solvers/auto.py)
    "auto": "solvers.auto:auto",
}

#: The methods that read the graph and never ``problem.X``, whatever their parameters: a
#: caller may hand them a problem without its features (``LabelProblem.without_features``;
#: the flows do, 244 MB at 1M nodes of 32 features). The others read X for some or all of
#: their options (maxmargin's SVM, lcsnc's kNN graph and confidences, mincut's
#: ``unreached="nearest"``).
GRAPH_ONLY_METHODS: frozenset[str] = frozenset({"harmonic", "nmf", "spectral", "auto"})


def check_params(method: str, params: Mapping[str, Any]) -> Callable[..., Prediction]:
    """Refuse an unknown ``method``, a parameter it does not take, and a value its module's
    ``PARAMETER_CONSTRAINTS`` refuse, without a problem: so that a caller can check a run's
    solver and parameters before it starts (a misspelt ``--params`` was a failed run on the
    record). What depends on the problem or on several parameters together the solver
    checks when called. Returns the solver's function.

    Raises
    ------
    ValueError
        Naming the method or the parameter, and what is allowed.
    """
    if method not in METHODS:
        raise ValueError(f"unknown solver {method!r}; choose one of {sorted(METHODS)}")
    module_name, func = METHODS[method].split(":")
    module = import_module(module_name)
    function = getattr(module, func)
    accepted = inspect.signature(function).parameters
    unknown = sorted(set(params) - set(accepted) - {"problem"})
    if unknown and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
        # a ValueError (one line in the CLI), not the TypeError of the call: a renamed or
        # misspelt parameter is the input's fault
        names = ", ".join(name for name in accepted if name != "problem")
        raise ValueError(f"{method} has no parameter {', '.join(map(repr, unknown))}; its parameters: {names}")
    constraints = getattr(module, "PARAMETER_CONSTRAINTS", {})
    validate_params({name: value for name, value in params.items() if name in constraints}, constraints)
    return function


def solve(problem: LabelProblem, method: str = "harmonic", **params) -> Prediction:
    """Label every node of ``problem`` with the solver named ``method``.

    Parameters
    ----------
    problem : LabelProblem
    method : str
        One of ``METHODS``: "harmonic" (the default), "mincut", "lcsnc", "spectral",
        "maxmargin", "nmf" or "auto".
    **params
        The solver's own parameters, in its function's docstring: ``help(solvers.harmonic.harmonic)``,
        ``help(solvers.mincut.mincut)``, ... (``METHODS`` maps each name to its function).

    Returns
    -------
    Prediction
    """
    if not isinstance(problem, LabelProblem):
        raise TypeError(f"problem must be a LabelProblem, got {type(problem).__name__}")
    function = check_params(method, params)
    labeled_classes = set(problem.y[problem.labeled].tolist())
    if not labeled_classes:  # an all -1 y (said apart: "cannot tell classes apart from one" for none misled)
        raise ValueError("the problem has no given label (every y is -1): give labels of at least two classes")
    if len(labeled_classes) < 2:
        raise ValueError(
            f"need given labels of at least two classes, got {len(labeled_classes)}"
            " (a solver cannot tell classes apart from one)"
        )
    if not problem.has_graph and not (method == "lcsnc" and params.get("graph") == "knn"):
        raise ValueError(f"{method} needs a graph: this problem has features only (W=None); only lcsnc with"
                         " graph='knn' builds its own")
    return function(problem, **params)
