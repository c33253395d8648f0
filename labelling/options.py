"""``RunOptions``: how a labelling run goes (solver, full or incremental, batches, holdout),
validated once when the flow starts and passed whole to every stage below it.

The graph the run uses is a ``similarity.spec.GraphRequest`` beside it: the options the
caller gave, which an incremental run compares with the recorded build.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from solvers import check_params

from .components import BATCH_NODES


def run_kind(full: bool, holdout_fraction: float) -> str:
    """``full`` or ``incremental``: a run with a holdout is always full (it needs every
    label in play)."""
    return "full" if full or holdout_fraction else "incremental"


def run_tags(dataset: str, *what: str) -> list[str]:
    """The tags of a run's flow run, wherever it starts (the CLI, a schedule):
    ``graphlabel``, the dataset, then what the run does (solver, full or incremental)."""
    return ["graphlabel", dataset, *what]


def asked_kind_tags(full: bool, holdout_fraction: float) -> tuple[str, ...]:
    """The kind tag a labelling run starts with: ``full`` when asked for, none otherwise.
    Whether a run asked to be incremental is one is known only once it has read the store
    (a first run, or a changed graph, falls back to full): the run tags itself then
    (``flows.labelling._name_the_run``), and a run that failed before never claims to have
    been incremental (a misspelt dataset's failed run was tagged so)."""
    return ("full",) if run_kind(full, holdout_fraction) == "full" else ()


@dataclass(frozen=True)
class RunOptions:
    """The options of one labelling run.

    Parameters
    ----------
    solver : str, default "harmonic"
        One of ``solvers.METHODS``.
    solver_params : dict
        The solver's own parameters (its docstring lists them): names and values checked here
        (``solvers.check_params``), what depends on the problem by the solver.
    build_graph : bool, default True
        A full run rebuilds the similarity graph first.
    full : bool, default False
        Relabel every node; otherwise only what changed since the last run (a run with a
        holdout is always full: it needs every label in play).
    hops : int, default 2
        How far around the changed nodes an incremental run relabels.
    split_components : bool, default True
        Solve per batch of connected components (``labelling.components``).
    batch_nodes : int, default ``BATCH_NODES``
        About how many nodes a solver batch holds.
    holdout_fraction : float, default 0.0
        The share of given labels hidden from the solver to score the run on, in [0, 1).
    holdout_seed : int, default 0
    """

    solver: str = "harmonic"
    solver_params: dict[str, Any] = field(default_factory=dict)
    build_graph: bool = True
    full: bool = False
    hops: int = 2
    split_components: bool = True
    batch_nodes: int = BATCH_NODES
    holdout_fraction: float = 0.0
    holdout_seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.solver_params, dict):
            raise ValueError(f"solver_params must be a mapping of names to values, got {self.solver_params!r}")
        check_params(self.solver, self.solver_params)  # the solver, its parameters' names and values
        for name in ("hops", "batch_nodes", "holdout_seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if name == "batch_nodes" else 0):
                raise ValueError(f"{name} must be a {'positive' if name == 'batch_nodes' else 'non-negative'}"
                                 f" integer, got {value!r}")
        fraction = self.holdout_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0.0 <= fraction < 1.0:
            raise ValueError(f"holdout_fraction must lie in [0, 1), got {fraction!r}")
        # a copy: the caller's dict can change after the run started, the run's cannot
        object.__setattr__(self, "solver_params", dict(self.solver_params))
        object.__setattr__(self, "full", run_kind(self.full, fraction) == "full")
