"""Parameter checks for the solvers: every parameter validated once, at the door, against
declared constraints, with one message shape ("NAME must be ..., got VALUE").

In the manner of scikit-learn's ``_parameter_constraints`` (``sklearn.utils._param_validation``,
a private module whose API changes between releases, so not imported): a solver declares
what each parameter may be and calls ``validate_params`` once::

    CONSTRAINTS = {"alpha": [Interval(Real, 0, None, closed="left")],
                   "noise": [Options(("cavity", "loo", "none"))],
                   "expansion_hops": [None, Interval(Integral, 0, None)]}
    validate_params({"alpha": alpha, "noise": noise, "expansion_hops": hops}, CONSTRAINTS)

A parameter passes when it satisfies any one of its constraints. ``check_choice`` and
``check_interval`` are the one-parameter forms.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np

__all__ = ["TIME_LIMIT", "Integral", "Interval", "Options", "Real", "check", "check_choice", "check_interval",
           "check_time_limit", "validate_params"]

_CLOSED = ("both", "left", "right", "neither")


@dataclass(frozen=True)
class Interval:
    """Numbers of ``kind`` (``Integral`` or ``Real``) between ``low`` and ``high`` (None: unbounded).

    Booleans are never numbers here, NaN never lies in an interval, and a ``Real`` interval
    holds finite values only (every solver parameter is finite)."""

    kind: type
    low: float | None = None
    high: float | None = None
    closed: str = "both"

    def __post_init__(self) -> None:
        if self.kind not in (Integral, Real):
            raise ValueError(f"kind must be Integral or Real, got {self.kind!r}")
        if self.closed not in _CLOSED:
            raise ValueError(f"closed must be one of {_CLOSED}, got {self.closed!r}")

    def __contains__(self, value: Any) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Integral, Real)):
            return False
        if not isinstance(value, self.kind):
            return False
        number = float(value)
        if not math.isfinite(number):
            return False
        left_open = self.closed in ("right", "neither")
        right_open = self.closed in ("left", "neither")
        if self.low is not None and (number < self.low or (left_open and number == self.low)):
            return False
        if self.high is not None and (number > self.high or (right_open and number == self.high)):
            return False
        return True

    def __str__(self) -> str:
        noun = "an integer" if self.kind is Integral else "a finite number"
        if self.low is None and self.high is None:
            return noun
        if self.high is None:
            return f"{noun} {'>' if self.closed in ('right', 'neither') else '>='} {self.low}"
        if self.low is None:
            return f"{noun} {'<' if self.closed in ('left', 'neither') else '<='} {self.high}"
        left = "(" if self.closed in ("right", "neither") else "["
        right = ")" if self.closed in ("left", "neither") else "]"
        return f"{noun} in {left}{self.low}, {self.high}{right}"


@dataclass(frozen=True)
class Options:
    """One of a fixed set of values, compared by type and value (so ``1`` is not ``True``)."""

    values: tuple

    def __contains__(self, value: Any) -> bool:
        return any(_same(value, option) for option in self.values)

    def __str__(self) -> str:
        # the values as written ('auto', inf), not a Python tuple: "or one of (inf,)" was a
        # newcomer's puzzle in a CLI message
        shown = ", ".join(repr(value) for value in self.values)
        return shown if len(self.values) == 1 else f"one of {shown}"


def _same(value: Any, option: Any) -> bool:
    if isinstance(option, (bool, np.bool_)) or isinstance(value, (bool, np.bool_)):
        return value is option
    if isinstance(value, np.ndarray):
        return False
    if isinstance(option, Real) and isinstance(value, Real):  # 0 == np.int64(0) == 0.0
        return value == option
    return isinstance(value, type(option)) and value == option


def _satisfies(value: Any, constraint: Any) -> bool:
    if constraint is None:
        return value is None
    return value in constraint


def _describe(constraint: Any) -> str:
    return "None" if constraint is None else str(constraint)


def check(name: str, value: Any, constraints: Iterable[Any]) -> Any:
    """``value`` unchanged if it satisfies one of ``constraints`` (``Interval``, ``Options``,
    ``None``), else ``ValueError("NAME must be A or B, got VALUE")``."""
    constraints = list(constraints)
    if any(_satisfies(value, c) for c in constraints):
        return value
    raise ValueError(f"{name} must be {' or '.join(_describe(c) for c in constraints)}, got {value!r}")


def check_choice(name: str, value: Any, choices: Iterable[Any]) -> Any:
    """``value`` if it is one of ``choices``, else a ValueError naming them."""
    return check(name, value, [Options(tuple(choices))])


def check_interval(name: str, value: Any, low: float | None = None, high: float | None = None, *,
                   closed: str = "both", integer: bool = False) -> Any:
    """``value`` if it is a finite number (an integer with ``integer``) in the interval."""
    return check(name, value, [Interval(Integral if integer else Real, low, high, closed)])


def validate_params(params: Mapping[str, Any], constraints: Mapping[str, Any]) -> None:
    """Check every entry of ``params`` against its constraints (every parameter must have some)."""
    for name, value in params.items():
        check(name, value, constraints[name])


#: ``time_limit`` of the solvers that stop themselves (solvers/_budget.py): "auto" (10× an
#: estimate of the harmonic solve, at least a few seconds), seconds > 0, or None or "none"
#: (no limit; "none" is how a schedule's TOML, which has no null, says it).
TIME_LIMIT = [Options(("auto", "none")), None, Interval(Real, 0, None, closed="neither")]


def check_time_limit(value: Any) -> Any:
    """``value`` if it is a valid ``time_limit`` ("auto", a finite number > 0, None or "none")."""
    return check("time_limit", value, TIME_LIMIT)
