"""Scheduled labelling: a TOML file of jobs, served as Prefect deployments on cron or
interval schedules.

``graphlabel serve --config graphlabel.toml`` and the compose ``labeller`` container
(``docker/serve_labelling.py``) both go through ``deployments(jobs)`` and
``prefect.serve``; the container builds its one job from environment variables
(``jobs_from_env``) unless ``GRAPHLABEL_SCHEDULE`` names a file.

The file (see ``graphlabel.example.toml``)::

    store = "neo4j://localhost:7687"      # optional: else $GRAPHLABEL_STORE at run time;
                                          # a relative folder is taken beside the file

    [[jobs]]
    dataset = "products"                  # required
    cron = "0 3 * * *"                    # a schedule is required: cron (UTC) ...
    # interval = 600                      # ... or seconds between runs
    solver = "harmonic"                   # default "harmonic"
    solver_params = { gamma_g = 0.1 }     # default {}
    k = 10                                # default 10
    graph = "knn"                         # default "knn"; "delta" needs delta = ...; also mincut3,
                                          # delta0, delta_half, sgt, mutual_knn; the user's own
                                          # edges: "edges:CO_PURCHASED[:count]", or added to a
                                          # graph: "knn+edges:CO_PURCHASED[:count]"
    # edges_weight = 0.5                  # factor of the user's edges in "knn+edges:..." (default 1)
    metric = "euclidean"                  # default "euclidean"; or "cosine"
    weights = "gaussian"                  # default "gaussian"; or "cosine", "binary"
    sigma = 0.5                           # optional Gaussian bandwidth; default from the data
    scale = "standard"                    # optional feature scaling when the graph is (re)built:
                                          # "standard" (default), "robust" or "none"
    search = "auto"                       # optional kNN search when the graph is (re)built: "auto"
                                          # (default), "exact", "hnsw", "ivf", "hnswlib", "pynndescent"
    full = true                           # optional; passed only when given
    name = "products-nightly"             # optional, default "label-DATASET-SOLVER"

Every field is checked when the file is loaded, so a typo fails at start-up with the file,
the job and the field named, not at three in the morning; every problem in the file is
reported at once, not only the first.
"""

from __future__ import annotations

import difflib
import inspect
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from graphstore.schemas import check_dataset_name
from similarity.spec import GraphRequest, graph_problems

TOP_LEVEL_KEYS = {"store", "jobs"}
JOB_KEYS = {"name", "dataset", "solver", "solver_params", "cron", "interval", "k", "graph", "delta", "metric",
            "weights", "sigma", "full", "store", "keep_runs", "holdout", "edges_weight", "scale", "search"}
DEPLOYMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")  # fullmatch: `$` accepts a final "\n"


class ScheduleError(ValueError):
    """A schedule file (or environment) that cannot be served: ``problems`` lists every
    problem found, each naming the file, the job and the field; the message has one a line."""

    def __init__(self, problems: str | list[str]) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class Job:
    """One scheduled labelling run: ``labelling_flow`` parameters and a cron or interval schedule.

    Parameters
    ----------
    name : str
        Deployment name, unique within a schedule.
    dataset : str
    cron : str or None
        Five-field cron expression, evaluated in UTC.
    interval : float or None
        Seconds between runs (exactly one of ``cron`` and ``interval`` is set).
    solver : str
        One of ``solvers.METHODS``.
    solver_params : dict
        The solver's own parameters.
    k : int
        Neighbours per node of the kNN graph.
    graph : str
        One of ``similarity.spec.GRAPH_KINDS``.
    delta : float or None
        Distance threshold of a δ-graph (``graph="delta"``).
    full : bool or None
        Passed to the flow only when set (``None``: the flow's default).
    keep_runs : int or None
        Retention: after each run, keep this many completed LabelRun nodes of the dataset
        (``GraphStore.prune_runs``); None keeps them all.
    holdout : float
        Fraction of the given labels hidden to score each run (0: none).
    scale : str or None
        Feature scaling when the graph is (re)built (``similarity.encoding``); passed only
        when set (``None``: the flow's default, "standard").
    search : str or None
        How a (re)built kNN graph's neighbours are found (``similarity.spec.SEARCHES``);
        passed only when set (``None``: "auto").
    store_uri : str or None
        The store; None means ``$GRAPHLABEL_STORE`` (else ``.graphlabel``) when the run starts.
    """

    name: str
    dataset: str
    cron: str | None = None
    interval: float | None = None
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
    edges_weight: float | None = None
    scale: str | None = None
    search: str | None = None

    @property
    def schedule(self) -> str:
        """The schedule as a person reads it: ``cron 0 3 * * * (UTC)`` or ``every 10 min``."""
        if self.cron is not None:
            return f"cron {self.cron} (UTC)"
        seconds = self.interval or 0
        for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
            if seconds >= size and seconds % size == 0:
                return f"every {seconds / size:g} {unit}"
        return f"every {seconds:g} s"

    @property
    def next_run(self) -> str | None:
        """When the Prefect server's scheduler starts this job's next run, as a person reads
        it (``Mon 2026-12-07 03:00 UTC``); None for an interval job, whose runs count from
        when ``serve`` registers it."""
        if self.cron is None:
            return None
        (first,) = next_cron_runs(self.cron, 1)  # a cron that never fires is refused when the file is read
        return f"{first:%a %Y-%m-%d %H:%M} UTC"

    @property
    def tags(self) -> list[str]:
        """The tags of the job's flow runs, as the CLI gives its own runs, and ``scheduled``
        (an incremental job's runs tag themselves: ``asked_kind_tags``)."""
        from labelling.options import asked_kind_tags, run_tags

        return run_tags(self.dataset, self.solver, *asked_kind_tags(bool(self.full), self.holdout or 0.0), "scheduled")

    def graph_request(self) -> GraphRequest:
        """The graph this job's runs ask for (``labelling_flow`` makes the same of its
        parameters)."""
        return GraphRequest(self.graph, self.k, self.metric, self.weights, self.delta, self.sigma,
                            edges_weight=self.edges_weight, scale=self.scale, search=self.search)

    def parameters(self) -> dict[str, Any]:
        """The ``labelling_flow`` parameters of this job's runs."""
        parameters: dict[str, Any] = {"dataset": self.dataset, "store_uri": self.store_uri, "solver": self.solver,
                      "solver_params": dict(self.solver_params), "graph": self.graph, "k": self.k,
                      "metric": self.metric, "weights": self.weights}
        if self.sigma is not None:
            parameters["sigma"] = self.sigma
        if self.scale is not None:
            parameters["scale"] = self.scale
        if self.search is not None:
            parameters["search"] = self.search
        if self.delta is not None:
            parameters["delta"] = self.delta
        if self.edges_weight is not None:
            parameters["edges_weight"] = self.edges_weight
        if self.full is not None:
            parameters["full"] = self.full
        if self.keep_runs is not None:
            parameters["keep_runs"] = self.keep_runs
        if self.holdout:
            parameters["holdout_fraction"] = self.holdout
        return parameters


# -- validation ---------------------------------------------------------------------------


#: The five fields of a cron expression, as a person names them, with the values each takes.
CRON_FIELDS = (("minute", "0-59"), ("hour", "0-23"), ("day of the month", "1-31"),
               ("month", "1-12 or jan-dec"), ("weekday", "0-7 or sun-sat, 0 and 7 both Sunday"))


def _check_cron(cron: str) -> str | None:
    """The reason ``cron`` is no cron expression Prefect schedules, or None.

    A field Prefect refuses is named with the values it takes (Prefect's own message,
    ``Invalid cron string``, named none: ``0 25 * * *`` left a person to find the hour),
    and an expression no date matches (``0 3 31 2 *``, the 31st of February) is refused:
    Prefect accepts it, and its scheduler would never start a run."""
    from prefect.client.schemas.schedules import CronSchedule
    from pydantic import ValidationError

    fields = cron.split()
    if len(fields) != 5:  # croniter also takes 6 fields (seconds) and macros
        return "must have 5 fields (minute hour day month weekday)"
    try:
        CronSchedule(cron=cron)
    except ValidationError as exc:
        for i, (name, values) in enumerate(CRON_FIELDS):
            # each field alone (the others "*"), as Prefect checks the whole expression
            alone = " ".join(field if j == i else "*" for j, field in enumerate(fields))
            try:
                CronSchedule(cron=alone)
            except ValidationError:
                return f"has {fields[i]!r} in its {name} field, which takes {values}"
        return exc.errors()[0]["msg"].removeprefix("Value error, ")
    if next_cron_runs(cron, 1) == []:
        return ("matches no date (that day never falls in that month): Prefect's scheduler would never start"
                " a run; check the day and month fields")
    return None


def next_cron_runs(cron: str, n: int, after: datetime | None = None) -> list[datetime]:
    """The next ``n`` times (UTC) the scheduler of a Prefect server starts a run of ``cron``,
    after ``after`` (default: now); fewer, or none, when it finds no more (it looks at
    1,000 candidate dates: ``0 3 29 2 *`` is found, the 31st of February never)."""
    import asyncio

    from prefect.server.schemas.schedules import CronSchedule

    # the server's schedule, whose dates its scheduler creates runs on; it computes them
    # without waiting on anything, so a loop of its own costs nothing
    schedule = CronSchedule(cron=cron, timezone="UTC")
    try:
        return list(asyncio.run(schedule.get_dates(n=n, start=after)))
    except ValueError:  # croniter's "failed to find next date" (its CroniterBadDateError)
        return []


def _store_problem(uri: Any) -> str | None:
    """Why ``uri`` cannot be a job's store, or None."""
    from graphstore.secrets import check_store_uri, redact_uri

    if not isinstance(uri, str) or not uri.strip():
        return (f"store must be a store URI (a folder, neo4j:// or bolt://),"
                f" got {redact_uri(uri) if isinstance(uri, str) else uri!r}")
    try:
        # a password in the URI would be kept in every deployment's parameters on the server
        check_store_uri(uri)
    except ValueError as exc:
        return str(exc)
    return None


def _job(raw: Any, where: str, store: str | None, solvers: tuple[str, ...],
         problems: list[str]) -> Job | None:
    """The job of one ``[[jobs]]`` table; every problem found is appended to ``problems``
    (named by ``where`` and the field) and the job is then None."""
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: a job must be a table ([[jobs]]), got {type(raw).__name__}")
        return None
    found: list[str] = []
    unknown = sorted(set(raw) - JOB_KEYS)
    # a misspelt field ('intervall') is named with the field it is close to, and said once: not
    # again as the required field it leaves missing
    meant = {name: close[0] for name in unknown if (close := difflib.get_close_matches(name, JOB_KEYS, n=1))}
    if unknown:
        guess = f" (did you mean {', '.join(f'{close!r} for {name!r}' for name, close in meant.items())}?)" \
            if meant else ""
        found.append(f"unknown field(s) {unknown}{guess}; a job takes {sorted(JOB_KEYS)}")
    if "dataset" not in raw and "dataset" not in meant.values():
        found.append("missing required field 'dataset'")
    if "cron" not in raw and "interval" not in raw and not {"cron", "interval"} & set(meant.values()):
        found.append("needs a schedule: cron = \"0 3 * * *\" (UTC) or interval = SECONDS")
    elif "cron" in raw and "interval" in raw:
        found.append("has both cron and interval; give one")

    def bad(name: str, message: str) -> None:
        found.append(f"{name} {message}, got {raw[name]!r}")

    dataset = raw.get("dataset")
    if "dataset" in raw:
        try:
            dataset = check_dataset_name(raw["dataset"])
            # its name too, when it has one: three jobs of one dataset read alike by dataset alone
            named = f"name {raw['name']!r}, " if isinstance(raw.get("name"), str) else ""
            where = f"{where} ({named}dataset {dataset!r})"
        except ValueError as exc:
            found.append(str(exc))
    cron = raw.get("cron")
    if cron is not None:
        if not isinstance(cron, str):
            bad("cron", "must be a string such as \"0 3 * * *\"")
        elif reason := _check_cron(cron):
            found.append(f"cron {cron!r} {reason}")
    interval = raw.get("interval")
    if interval is not None and (isinstance(interval, bool) or not isinstance(interval, (int, float))
                                 or not interval >= 1):
        bad("interval", "must be a number of seconds >= 1")
    solver = raw.get("solver", "harmonic")
    if solver not in solvers:
        bad("solver", f"must be one of {list(solvers)}")
    solver_params = raw.get("solver_params", {})
    if not isinstance(solver_params, Mapping):
        bad("solver_params", "must be a table such as { gamma_g = 0.1 }")
    elif solver in solvers:
        from solvers import check_params

        for name, value in solver_params.items():  # each on its own: every problem at once
            try:  # names and values, as the run would check them at its start
                check_params(solver, {name: value})
            except ValueError as exc:
                found.append(f"solver_params: {exc}")
    k, graph, metric, weights = raw.get("k", 10), raw.get("graph", "knn"), raw.get("metric", "euclidean"), \
        raw.get("weights", "gaussian")
    delta, sigma, scale, search = raw.get("delta"), raw.get("sigma"), raw.get("scale"), raw.get("search")
    edges_weight = raw.get("edges_weight")
    # the GraphSpec's own checks, all of them
    found += graph_problems(graph, k, metric, weights, delta, sigma, edges_weight=edges_weight,
                            scale=scale or "standard", search=search)
    full = raw.get("full")
    if full is not None and not isinstance(full, bool):
        bad("full", "must be true or false")
    keep_runs = raw.get("keep_runs")
    if keep_runs is not None and (isinstance(keep_runs, bool) or not isinstance(keep_runs, int) or keep_runs < 1):
        bad("keep_runs", "must be a positive integer")
    holdout = raw.get("holdout", 0.0)
    if isinstance(holdout, bool) or not isinstance(holdout, (int, float)) or not 0 <= holdout < 1:
        bad("holdout", "must be a number in [0, 1)")
    if "store" in raw and (reason := _store_problem(raw["store"])):
        found.append(reason)
    name = raw.get("name", f"label-{dataset}-{solver}")
    if not isinstance(name, str) or not DEPLOYMENT_NAME.fullmatch(name):
        found.append(f"name must be 1-100 letters, digits, '_', '.' or '-', got {name!r}")
    if found:
        problems.extend(f"{where}: {problem}" for problem in found)
        return None
    return Job(name=name, dataset=str(dataset), cron=cron, interval=None if interval is None else float(interval),
               solver=solver, solver_params=dict(solver_params), k=k, graph=graph,
               delta=None if delta is None else float(delta), metric=metric, weights=weights,
               sigma=None if sigma is None else float(sigma), full=full, store_uri=raw.get("store", store),
               keep_runs=keep_runs, holdout=float(holdout),
               edges_weight=None if edges_weight is None else float(edges_weight), scale=scale, search=search)


def parse_schedule(document: Mapping[str, Any], source: str = "schedule") -> list[Job]:
    """The jobs of a schedule already read into a dict (``load_schedule`` reads a file).

    Raises
    ------
    ScheduleError
        Every problem found (``ScheduleError.problems``, one line each in the message),
        each naming ``source``, the job and the field.
    """
    from solvers.registry import METHODS

    if not isinstance(document, Mapping):
        raise ScheduleError([f"{source}: a schedule must be a table, got {type(document).__name__}"])
    problems: list[str] = []
    unknown = sorted(set(document) - TOP_LEVEL_KEYS)
    if unknown:
        problems.append(f"{source}: unknown top-level field(s) {unknown}; a schedule takes"
                        f" {sorted(TOP_LEVEL_KEYS)}")
    store = document.get("store")
    if store is not None and (reason := _store_problem(store)):
        problems.append(f"{source}: {reason}")
    raw_jobs = document.get("jobs")
    if not isinstance(raw_jobs, list) or not raw_jobs:
        problems.append(f"{source}: no jobs: add at least one [[jobs]] table with dataset and cron or interval")
        raw_jobs = []
    parsed = [_job(raw, f"{source}: jobs[{i}]", store, tuple(METHODS), problems)
              for i, raw in enumerate(raw_jobs)]
    jobs = [job for job in parsed if job is not None]
    names = [job.name for job in jobs]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        problems.append(f"{source}: job names must be unique, {duplicates} repeat(s); set name = \"...\"")
    if problems:
        raise ScheduleError(problems)
    return jobs


def load_schedule(path: str | Path) -> list[Job]:
    """The jobs of the TOML schedule file ``path``, every field validated.

    Raises
    ------
    ScheduleError
        No such file, not TOML, or a field is missing or wrong (the message names the job
        and field).
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError:
        raise ScheduleError(f"no schedule file {str(path)!r} (graphlabel.example.toml is one to start from)") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScheduleError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:  # TOML is UTF-8 text: a file saved as latin-1 or cp1252
        raise ScheduleError(f"{path}: not valid TOML: a TOML file is UTF-8 text, and byte {exc.object[exc.start]:#04x}"
                            f" at position {exc.start} is not (save the file as UTF-8)") from None
    except OSError as exc:  # a folder, a file it may not read
        raise ScheduleError(f"cannot read the schedule file {str(path)!r}: {exc.strerror or exc}") from None
    # A relative store folder means the folder next to the file, whatever directory the
    # server is started from (flow runs inherit the server's working directory).
    return [replace(job, store_uri=_beside(path, job.store_uri)) for job in parse_schedule(document, str(path))]


def _beside(path: Path, uri: str | None) -> str | None:
    from graphstore import NEO4J_SCHEMES, embedded_folder

    if uri is None or uri.startswith(NEO4J_SCHEMES):
        return uri
    try:
        engine, folder = embedded_folder(uri)
    except ValueError:
        return uri  # not a store URI: open_store says so, naming it
    beside = Path(folder).expanduser()
    if beside.is_absolute():
        return uri
    resolved = str((path.parent / beside).resolve())
    # the scheme stays: it names the engine of a store not created yet (ladybug://)
    return resolved if engine is None else f"{engine}://{resolved}"


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
    document: dict[str, Any] = {"jobs": [job]}
    if environ.get("GRAPHLABEL_STORE"):
        document["store"] = environ["GRAPHLABEL_STORE"]
    return parse_schedule(document, "environment")


def shared_store_warnings(jobs: list[Job]) -> list[str]:
    """A line for each pair of jobs whose runs can get in each other's way, empty when none.

    An embedded store is opened by one process at a time, so two jobs on one store (any
    datasets) wait for each other, and a run that waits longer than the lock timeout fails
    with ``StoreLocked``. On Neo4j, two jobs of one dataset wait for each other in the same
    way (the dataset's lease, ``graphstore.neo4j_lease``) and then write the same nodes. Two jobs of
    one dataset and store with different graph settings rebuild each other's graph. Runs of
    one job never overlap (``deployments`` limits each to one at a time); these are the
    overlaps that limit cannot see. A warning, not an error: schedules that never meet
    (nightly and weekly at other hours) are fine.
    """
    from graphstore import NEO4J_SCHEMES, default_store_uri

    warnings = []
    for i, first in enumerate(jobs):
        for second in jobs[i + 1:]:
            store = first.store_uri or default_store_uri()
            if store != (second.store_uri or default_store_uri()):
                continue
            differ = _graph_differences(first, second) if first.dataset == second.dataset else []
            if differ:  # the example file's two jobs did this: k 10 and 15, scale none and standard
                warnings.append(
                    f"jobs {first.name!r} and {second.name!r} label dataset {first.dataset!r} on different graphs"
                    f" ({'; '.join(differ)}): a scheduled run rebuilds the graph it is given, so each job's runs"
                    " replace the other's graph; give them the same graph settings")
            if not store.startswith(NEO4J_SCHEMES):
                warnings.append(
                    f"jobs {first.name!r} and {second.name!r} share the embedded store {store}, which one process"
                    " at a time can open: when their runs meet, one waits (GRAPHLABEL_LOCK_TIMEOUT, 60 s) and"
                    " then fails; give them schedules that do not meet")
            elif first.dataset == second.dataset:
                warnings.append(
                    f"jobs {first.name!r} and {second.name!r} both label dataset {first.dataset!r}: when their"
                    " runs meet, one waits for the other (GRAPHLABEL_LOCK_TIMEOUT, 60 s) and then fails, and the"
                    " later one's writes replace the other's; give them schedules that do not meet")
    return warnings


def serve_checks(jobs: list[Job]) -> tuple[list[str], list[str]]:
    """``(warnings, cannot_run)`` of ``jobs`` before they are served. ``warnings``: the jobs
    that can meet (``shared_store_warnings``), and each job whose embedded store another
    process holds, so that it could not be looked at. ``cannot_run``: a line for each job
    whose run would stop now before it solves (its store is not there or does not answer,
    no node belongs to its dataset, its given labels hold fewer than two classes, the
    store cannot build its graph: ``flows.readiness``). Each store is opened once, read
    only from; ``serve --check`` fails on ``cannot_run``."""
    from flows.readiness import why_cannot_label
    from graphstore import StoreLocked, StoreNotFound, default_store_uri

    asked: dict[str, dict[str, tuple[str, GraphRequest]]] = {}
    for job in jobs:  # None is what a run opens: $GRAPHLABEL_STORE, else .graphlabel
        asked.setdefault(job.store_uri or default_store_uri(), {})[job.name] = (job.dataset, job.graph_request())
    named = {job.name: job for job in jobs}
    cannot_run, unchecked = [], []
    for store, datasets in asked.items():
        for name, error in why_cannot_label(store, datasets).items():
            if isinstance(error, StoreLocked):
                unchecked.append(f"job {name!r} was not checked: {error}")
            elif isinstance(error, StoreNotFound) and not _store_path_is_a_file(store):
                cannot_run.append(f"job {name!r} cannot run now: {_no_store(named[name], store)}")
            else:
                cannot_run.append(f"job {name!r} cannot run now: {error}")
    return [*shared_store_warnings(jobs), *unchecked], cannot_run


def _store_path_is_a_file(store: str) -> bool:
    """Whether the embedded store's folder is a file: the other ``StoreNotFound``."""
    from graphstore import embedded_folder

    return Path(embedded_folder(store)[1]).is_file()


def _no_store(job: Job, store: str) -> str:
    """What to do when no embedded store is at ``store`` yet, said in the schedule's words
    (the store's own error speaks of --store, an option a schedule has not)."""
    where = "the schedule's store" if job.store_uri else "GRAPHLABEL_STORE (else .graphlabel where serve starts)"
    return (f"no store at {store}: ingest the dataset there first (graphlabel ingest FILE --dataset {job.dataset}"
            f" --store {store}), or check {where}")


def serve_warnings(jobs: list[Job]) -> list[str]:
    """What ``serve`` (and the compose labeller) says before it serves ``jobs``:
    ``serve_checks``'s warnings, then the jobs that could not run now, which are served all
    the same (what a job lacks may be ingested before it is due)."""
    warnings, cannot_run = serve_checks(jobs)
    return [*warnings, *(f"{line}; served all the same, its runs fail until that changes" for line in cannot_run)]


#: The job fields that make the graph a scheduled run rebuilds (``search`` only finds it).
GRAPH_FIELDS = ("graph", "k", "delta", "metric", "weights", "sigma", "edges_weight", "scale")


def _graph_differences(first: Job, second: Job) -> list[str]:
    """``"k 10 and 15"`` for each graph field the two jobs set differently (an unset
    ``scale`` is the rebuild's default, standard)."""
    def value(job: Job, name: str):
        found = getattr(job, name)
        return "standard" if name == "scale" and found is None else found

    return [f"{name} {value(first, name)} and {value(second, name)}" for name in GRAPH_FIELDS
            if value(first, name) != value(second, name)]


# -- Prefect ------------------------------------------------------------------------------


def deployments(jobs: list[Job]) -> list:
    """One ``RunnerDeployment`` of ``labelling_flow`` per job, on the job's cron or interval
    schedule.

    Raises
    ------
    ScheduleError
        A job passes a parameter this version of the flow does not take (``full`` before
        incremental runs exist): refused here rather than failing every scheduled run.
    """
    from prefect.deployments.runner import EntrypointType
    from prefect.schedules import Cron, Interval

    from flows.direct import describe_parameters
    from flows.labelling import labelling_flow

    accepted = set(inspect.signature(labelling_flow.fn).parameters)
    out = []
    for job in jobs:
        parameters = job.parameters()
        missing = sorted(set(parameters) - accepted)
        if missing:
            raise ScheduleError(f"job {job.name!r}: the labelling flow takes no parameter(s) {missing}")
        # UTC named on both kinds: a cron without a timezone was stored with none, and the
        # UI's schedule text then said nothing of the zone the README promises
        when = (Cron(job.cron, timezone="UTC") if job.cron is not None
                else Interval(timedelta(seconds=job.interval or 0.0), timezone="UTC"))
        kind = "every node (full)" if job.full or job.holdout else "what changed since the last run (incremental)"
        deployment = labelling_flow.to_deployment(
            name=job.name, parameters=parameters, tags=job.tags, schedule=when,
            # one run of a job at a time: a run still going when the next is due makes that
            # one wait its turn (Prefect's ENQUEUE) instead of meeting it at the store's lock
            concurrency_limit=1,
            entrypoint_type=EntrypointType.MODULE_PATH,
            description=f"Label dataset {job.dataset!r} with {job.solver}, {job.schedule}: relabels {kind}"
                        f" on the {job.graph} graph (k={job.k})."
                        + (f" Scores each run on {job.holdout:.0%} of each class's given labels (rounded down)."
                           if job.holdout else "")
                        + (f" Keeps the newest {job.keep_runs} runs." if job.keep_runs else ""),
        )
        # the engine that starts a served run imports a Prefect flow from here (flows/served.py)
        deployment.entrypoint = "flows.served.labelling_flow"
        describe_parameters(deployment._parameter_openapi_schema, labelling_flow.fn)  # the UI's run form
        out.append(deployment)
    return out


def server_problem() -> str | None:
    """Why ``serve`` cannot schedule anything, or None: no Prefect server configured (Prefect
    then served the deployments on a temporary server, said "Your deployments are being
    served", and no run ever fired: seen on a newcomer's walk), or none answering at the
    configured URL."""
    from flows.direct import prefect_api_configured

    if not prefect_api_configured():
        return ("serve needs a Prefect server, whose scheduler creates the runs: start one (prefect server start)"
                " and set PREFECT_API_URL=http://127.0.0.1:4200/api; without one no scheduled run would ever start")
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    with get_client(sync_client=True) as client:
        failure = client.api_healthcheck()
    if failure is None:
        return None
    said = " ".join(str(failure).split()) or type(failure).__name__
    return (f"no Prefect server answers at {PREFECT_API_URL.value()} ({said}): start it (prefect server start)"
            " or set PREFECT_API_URL to the one that runs")
