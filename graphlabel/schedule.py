"""Scheduled labelling: a TOML file of jobs, served as Prefect deployments on cron schedules.

``graphlabel serve --config graphlabel.toml`` and the compose ``labeller`` container
(``docker/serve_labelling.py``) both go through ``deployments(jobs)`` and
``prefect.serve``; the container builds its one job from environment variables
(``jobs_from_env``) unless ``GRAPHLABEL_SCHEDULE`` names a file.

The file (see ``graphlabel.example.toml``)::

    store = "neo4j://localhost:7687"      # optional: else $GRAPHLABEL_STORE at run time;
                                          # a relative folder is taken beside the file

    [[jobs]]
    dataset = "products"                  # required
    cron = "0 3 * * *"                    # required, UTC
    solver = "harmonic"                   # default "harmonic"
    solver_params = { gamma_g = 0.1 }     # default {}
    k = 10                                # default 10
    graph = "knn"                         # default "knn"; "delta" needs delta = ...; also mincut3,
                                          # delta0, delta_half, sgt, mutual_knn
    metric = "euclidean"                  # default "euclidean"; or "cosine"
    weights = "gaussian"                  # default "gaussian"; or "cosine", "binary"
    sigma = 0.5                           # optional Gaussian bandwidth; default from the data
    full = true                           # optional; passed only when given
    name = "products-nightly"             # optional, default "label-DATASET-SOLVER"

Every field is checked when the file is loaded, so a typo fails at start-up with the file,
the job and the field named, not at three in the morning.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from graphstore.base import check_dataset_name

TOP_LEVEL_KEYS = {"store", "jobs"}
JOB_KEYS = {"name", "dataset", "solver", "solver_params", "cron", "k", "graph", "delta", "metric", "weights",
            "sigma", "full", "store",
            "keep_runs", "holdout"}
DEPLOYMENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


class ScheduleError(ValueError):
    """A schedule file (or environment) that cannot be served; the message says where."""


@dataclass(frozen=True)
class Job:
    """One scheduled labelling run: ``labelling_flow`` parameters and a cron schedule.

    Parameters
    ----------
    name : str
        Deployment name, unique within a schedule.
    dataset : str
    cron : str
        Five-field cron expression, evaluated in UTC.
    solver : str
        One of ``solvers.METHODS``.
    solver_params : dict
        The solver's own parameters.
    k : int
        Neighbours per node of the kNN graph.
    graph : str
        One of ``flows.tasks.GRAPH_KINDS``.
    delta : float or None
        Distance threshold of a δ-graph (``graph="delta"``).
    full : bool or None
        Passed to the flow only when set (``None``: the flow's default).
    keep_runs : int or None
        Retention: after each run, keep this many completed LabelRun nodes of the dataset
        (``GraphStore.prune_runs``); None keeps them all.
    holdout : float
        Fraction of the given labels hidden to score each run (0: none).
    store_uri : str or None
        The store; None means ``$GRAPHLABEL_STORE`` (else ``.graphlabel``) when the run starts.
    """

    name: str
    dataset: str
    cron: str
    solver: str = "harmonic"
    solver_params: dict[str, Any] = field(default_factory=dict)
    k: int = 10
    graph: str = "knn"
    delta: float | None = None
    metric: str = "euclidean"
    weights: str = "gaussian"
    sigma: float | None = None
    full: bool | None = None
    store_uri: str | None = None
    keep_runs: int | None = None
    holdout: float = 0.0

    def parameters(self) -> dict[str, Any]:
        """The ``labelling_flow`` parameters of this job's runs."""
        parameters = {"dataset": self.dataset, "store_uri": self.store_uri, "solver": self.solver,
                      "solver_params": dict(self.solver_params), "graph": self.graph, "k": self.k,
                      "metric": self.metric, "weights": self.weights}
        if self.sigma is not None:
            parameters["sigma"] = self.sigma
        if self.delta is not None:
            parameters["delta"] = self.delta
        if self.full is not None:
            parameters["full"] = self.full
        if self.keep_runs is not None:
            parameters["keep_runs"] = self.keep_runs
        if self.holdout:
            parameters["holdout_fraction"] = self.holdout
        return parameters


# -- validation ---------------------------------------------------------------------------


def _check_cron(cron: str) -> str | None:
    """The reason ``cron`` is not a cron expression Prefect schedules, or None."""
    from pydantic import ValidationError
    from prefect.client.schemas.schedules import CronSchedule

    if len(cron.split()) != 5:  # croniter also takes 6 fields (seconds) and macros
        return "must have 5 fields (minute hour day month weekday)"
    try:
        CronSchedule(cron=cron)
    except ValidationError as exc:
        return exc.errors()[0]["msg"].removeprefix("Value error, ")
    return None


def _check_store(uri: Any, where: str) -> None:
    from graphstore.secrets import check_store_uri, redact_uri

    if not isinstance(uri, str) or not uri.strip():
        raise ScheduleError(f"{where}: store must be a store URI (a folder, neo4j:// or bolt://),"
                            f" got {redact_uri(uri) if isinstance(uri, str) else uri!r}")
    try:
        # a password in the URI would be kept in every deployment's parameters on the server
        check_store_uri(uri)
    except ValueError as exc:
        raise ScheduleError(f"{where}: {exc}") from None


def _job(raw: Any, where: str, store: str | None, solvers: tuple[str, ...], graph_kinds: tuple[str, ...]) -> Job:
    if not isinstance(raw, Mapping):
        raise ScheduleError(f"{where}: a job must be a table ([[jobs]]), got {type(raw).__name__}")
    unknown = sorted(set(raw) - JOB_KEYS)
    if unknown:
        raise ScheduleError(f"{where}: unknown field(s) {unknown}; a job takes {sorted(JOB_KEYS)}")
    for required in ("dataset", "cron"):
        if required not in raw:
            raise ScheduleError(f"{where}: missing required field {required!r}")

    def bad(name: str, message: str) -> ScheduleError:
        return ScheduleError(f"{where}: {name} {message}, got {raw[name]!r}")

    try:
        dataset = check_dataset_name(raw["dataset"])
    except ValueError as exc:
        raise ScheduleError(f"{where}: {exc}") from None
    where = f"{where} (dataset {dataset!r})"
    cron = raw["cron"]
    if not isinstance(cron, str):
        raise bad("cron", "must be a string such as \"0 3 * * *\"")
    reason = _check_cron(cron)
    if reason:
        raise ScheduleError(f"{where}: cron {cron!r} {reason}")
    solver = raw.get("solver", "harmonic")
    if solver not in solvers:
        raise bad("solver", f"must be one of {list(solvers)}")
    solver_params = raw.get("solver_params", {})
    if not isinstance(solver_params, Mapping):
        raise bad("solver_params", "must be a table such as { gamma_g = 0.1 }")
    k = raw.get("k", 10)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise bad("k", "must be a positive integer")
    graph = raw.get("graph", "knn")
    if graph not in graph_kinds:
        raise bad("graph", f"must be one of {list(graph_kinds)}")
    delta = raw.get("delta")
    if delta is not None and (isinstance(delta, bool) or not isinstance(delta, (int, float)) or not delta > 0):
        raise bad("delta", "must be a positive number")
    if graph == "delta" and delta is None:
        raise ScheduleError(f"{where}: graph \"delta\" needs delta = <distance threshold>")
    from similarity.knn import METRICS, WEIGHTS

    metric = raw.get("metric", "euclidean")
    if metric not in METRICS:
        raise bad("metric", f"must be one of {list(METRICS)}")
    weights = raw.get("weights", "gaussian")
    if weights not in WEIGHTS:
        raise bad("weights", f"must be one of {list(WEIGHTS)}")
    sigma = raw.get("sigma")
    if sigma is not None and (isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or not sigma > 0):
        raise bad("sigma", "must be a positive number")
    full = raw.get("full")
    if full is not None and not isinstance(full, bool):
        raise bad("full", "must be true or false")
    keep_runs = raw.get("keep_runs")
    if keep_runs is not None and (isinstance(keep_runs, bool) or not isinstance(keep_runs, int) or keep_runs < 1):
        raise bad("keep_runs", "must be a positive integer")
    holdout = raw.get("holdout", 0.0)
    if isinstance(holdout, bool) or not isinstance(holdout, (int, float)) or not 0 <= holdout < 1:
        raise bad("holdout", "must be a number in [0, 1)")
    job_store = raw.get("store", store)
    if "store" in raw:
        _check_store(raw["store"], where)
    name = raw.get("name", f"label-{dataset}-{solver}")
    if not isinstance(name, str) or not DEPLOYMENT_NAME.match(name):
        raise ScheduleError(f"{where}: name must be 1-100 letters, digits, '_', '.' or '-', got {name!r}")
    return Job(name=name, dataset=dataset, cron=cron, solver=solver, solver_params=dict(solver_params),
               k=k, graph=graph, delta=None if delta is None else float(delta), metric=metric, weights=weights,
               sigma=None if sigma is None else float(sigma), full=full, store_uri=job_store,
               keep_runs=keep_runs, holdout=float(holdout))


def parse_schedule(document: Mapping[str, Any], source: str = "schedule") -> list[Job]:
    """The jobs of a schedule already read into a dict (``load_schedule`` reads a file).

    Raises
    ------
    ScheduleError
        The first problem found, naming ``source``, the job and the field.
    """
    from flows.tasks import GRAPH_KINDS
    from solvers.registry import METHODS

    if not isinstance(document, Mapping):
        raise ScheduleError(f"{source}: a schedule must be a table, got {type(document).__name__}")
    unknown = sorted(set(document) - TOP_LEVEL_KEYS)
    if unknown:
        raise ScheduleError(f"{source}: unknown top-level field(s) {unknown}; a schedule takes"
                            f" {sorted(TOP_LEVEL_KEYS)}")
    store = document.get("store")
    if store is not None:
        _check_store(store, source)
    raw_jobs = document.get("jobs")
    if not isinstance(raw_jobs, list) or not raw_jobs:
        raise ScheduleError(f"{source}: no jobs: add at least one [[jobs]] table with dataset and cron")
    jobs = [_job(raw, f"{source}: jobs[{i}]", store, tuple(METHODS), tuple(GRAPH_KINDS))
            for i, raw in enumerate(raw_jobs)]
    names = [job.name for job in jobs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ScheduleError(f"{source}: job names must be unique, {duplicates} repeat(s); set name = \"...\"")
    return jobs


def load_schedule(path: str | Path) -> list[Job]:
    """The jobs of the TOML schedule file ``path``, every field validated.

    Raises
    ------
    FileNotFoundError
        No such file.
    ScheduleError
        Not TOML, or a field is missing or wrong (the message names the job and field).
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ScheduleError(f"{path}: not valid TOML: {exc}") from None
    # A relative store folder means the folder next to the file, whatever directory the
    # server is started from (flow runs inherit the server's working directory).
    return [replace(job, store_uri=_beside(path, job.store_uri)) for job in parse_schedule(document, str(path))]


def _beside(path: Path, uri: str | None) -> str | None:
    from graphstore import NEO4J_SCHEMES

    if uri is None or uri.startswith(NEO4J_SCHEMES):
        return uri
    folder = Path(uri.removeprefix("kuzu://")).expanduser()
    return uri if folder.is_absolute() else str((path.parent / folder).resolve())


def jobs_from_env(environ: Mapping[str, str] | None = None) -> list[Job]:
    """The compose labeller's jobs: the file ``$GRAPHLABEL_SCHEDULE`` when set, else one job
    named ``scheduled-labelling`` from ``LABEL_DATASET`` (default digits), ``LABEL_SOLVER``
    (harmonic), ``LABEL_SOLVER_PARAMS`` (JSON, {}), ``LABEL_K`` (10), ``LABEL_GRAPH`` (knn),
    ``LABEL_CRON`` (``0 3 * * *``), ``LABEL_FULL`` (true/false, unset: the flow's default)
    and the store ``$GRAPHLABEL_STORE``, validated as a file's job is."""
    environ = os.environ if environ is None else environ
    if environ.get("GRAPHLABEL_SCHEDULE"):
        return load_schedule(environ["GRAPHLABEL_SCHEDULE"])
    job: dict[str, Any] = {"name": "scheduled-labelling",
                           "dataset": environ.get("LABEL_DATASET", "digits"),
                           "solver": environ.get("LABEL_SOLVER", "harmonic"),
                           "graph": environ.get("LABEL_GRAPH", "knn"),
                           "cron": environ.get("LABEL_CRON", "0 3 * * *")}
    try:
        job["k"] = int(environ.get("LABEL_K", "10"))
    except ValueError:
        raise ScheduleError(f"environment: LABEL_K must be an integer, got {environ['LABEL_K']!r}") from None
    try:
        job["solver_params"] = json.loads(environ.get("LABEL_SOLVER_PARAMS") or "{}")
    except json.JSONDecodeError as exc:
        raise ScheduleError(f"environment: LABEL_SOLVER_PARAMS is not valid JSON: {exc}") from None
    if environ.get("LABEL_FULL"):
        flag = environ["LABEL_FULL"].strip().lower()
        if flag not in ("true", "false", "1", "0"):
            raise ScheduleError(f"environment: LABEL_FULL must be true or false, got {environ['LABEL_FULL']!r}")
        job["full"] = flag in ("true", "1")
    document = {"jobs": [job]}
    if environ.get("GRAPHLABEL_STORE"):
        document["store"] = environ["GRAPHLABEL_STORE"]
    return parse_schedule(document, "environment")


# -- Prefect ------------------------------------------------------------------------------


def deployments(jobs: list[Job]) -> list:
    """One ``RunnerDeployment`` of ``labelling_flow`` per job, on the job's cron schedule.

    Raises
    ------
    ScheduleError
        A job passes a parameter this version of the flow does not take (``full`` before
        incremental runs exist): refused here rather than failing every scheduled run.
    """
    from flows.labelling import labelling_flow

    accepted = set(inspect.signature(labelling_flow.fn).parameters)
    out = []
    for job in jobs:
        parameters = job.parameters()
        missing = sorted(set(parameters) - accepted)
        if missing:
            raise ScheduleError(f"job {job.name!r}: the labelling flow takes no parameter(s) {missing}")
        out.append(labelling_flow.to_deployment(
            name=job.name, cron=job.cron, parameters=parameters, tags=["graphlabel", job.dataset],
            description=f"Label dataset {job.dataset!r} with {job.solver} on cron {job.cron!r} (UTC).",
        ))
    return out


def serve(jobs: list[Job]) -> None:  # pragma: no cover - runs until interrupted
    """Serve the jobs' deployments (``prefect.serve``): each runs on its schedule, and can be
    started from the Prefect UI, until the process is stopped."""
    from prefect import serve as prefect_serve

    prefect_serve(*deployments(jobs))
