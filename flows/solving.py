"""The one solve path of every run, full or incremental: one mapped ``solve`` task per
batch of connected components (``labelling.components``), merged into one prediction."""

from __future__ import annotations

import threading
from dataclasses import replace

from labelling.components import batch_problem, merge_predictions
from labelling.options import RunOptions
from labelling.problems import ExportedProblem
from solvers import Prediction, stop_when
from solvers.harmonic import class_mass_rule

from .direct import run_logger
from .tasks import plan_components, solve_problem

#: Solvers that must see the whole graph at once: maxmargin fits one classifier on the
#: features of every node and labels the nodes without edges from it.
WHOLE_GRAPH_SOLVERS = ("maxmargin", "auto")  # auto: one choice per run, not one per batch


def _counted(n: int, thing: str) -> str:
    """``1 solver batch``, ``2 solver batches``, ``1,204 connected components``."""
    plural = thing + ("es" if thing.endswith("ch") else "s")
    return f"{n:,} {thing if n == 1 else plural}"


def solve_by_component(exported: ExportedProblem, options: RunOptions) -> Prediction:
    """The solve stage: one mapped ``solve`` task per batch of connected components (see
    ``labelling.components``), run by the flow's task runner (threads by default, a Dask
    cluster with ``DaskTaskRunner``), merged into one whole-graph prediction; the whole
    graph at once unless ``options.split_components``."""
    problem, solver, params = exported.problem, options.solver, options.solver_params
    if not options.split_components or solver in WHOLE_GRAPH_SOLVERS:
        return solve_problem(problem, solver, params)
    batch_params = params
    if solver == "harmonic":  # one class-mass rule for the run's batches (solvers.harmonic.class_mass_rule)
        batch_params = {**params, "class_mass": class_mass_rule(problem, params.get("class_mass", "auto"))}
    plan = plan_components(problem, options.batch_nodes)
    parts = [batch_problem(problem, nodes) for nodes in plan.batches]
    run_logger().info("%s: %s; %s nodes in one-class components (no solve needed); %s without a label",
                      _counted(plan.n_components, "connected component"), _counted(len(parts), "solver batch"),
                      f"{len(plan.single_class_nodes):,}", _counted(plan.n_unlabeled_components, "component"))
    names = [f"solve[{i}/{len(parts)}: {part.problem.n_nodes:,} nodes]" for i, part in enumerate(parts, 1)]
    with stop_when(threading.Event()) as stop:
        try:
            predictions = solve_problem.map_named([part.problem for part in parts], names, solver, batch_params)
        except BaseException:
            # a Ctrl-C, or the first batch to fail: the batches in progress stop at their next
            # step (solvers.stop_when) instead of running to their end or their time_limit
            stop.set()
            raise
    merged = merge_predictions(problem, plan, list(zip(parts, predictions)), solver)
    if solver != "harmonic":
        return merged
    # the run's parameters are those asked for ("auto"); the rule it resolved to, as a whole solve says it
    return replace(merged, params={**merged.params, "class_mass": params.get("class_mass", "auto")},
                   info={**merged.info, "class_mass": batch_params["class_mass"]})
