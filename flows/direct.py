"""How a flow runs: recorded by a Prefect server when one is configured, directly otherwise.

With a Prefect API configured (``PREFECT_API_URL`` in the environment or the active Prefect
profile), ``run_flow`` runs the flow as Prefect does: a flow run with its task runs, logs
and artifacts in the UI. Without one, Prefect would start a temporary server for every
command and wait for it: 9 to 15 s on this 2-core VM for a flow whose work takes one
second, and a command that fails outright when the server is slow to start ("Timed out
while attempting to connect to ephemeral Prefect API server"). So without a server the
flow's function is called directly and each stage runs as its plain function, with the
same retries on transient store errors; the run is recorded where it always is, on the
store's ``LabelRun`` node (``graphlabel report``), and nothing is sent to Prefect.

Importing Prefect alone takes about 1 s, a third of a command's budget (bench/cli.py), so
the flows and tasks are declared with ``flow`` and ``task`` below: the same options as
Prefect's decorators, and the Prefect object is made on first use (a flow called, served
or deployed; a task called inside a flow run). A run without a server never imports Prefect.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import functools
import logging
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from multiprocessing.pool import ThreadPool
from pathlib import Path
from typing import Any

from .stops import keep_lost_stops, raise_lost_stop

#: The logger of stages run without a flow run (warnings reach the terminal).
LOGGER = logging.getLogger("graphlabel")
#: (task run name, task run id) of the stages a flow run ran, in order, when the flow asks
#: for them (``record_stages``): the run report links each, without asking the server.
STAGE_RUNS: ContextVar[list[tuple[str, str]] | None] = ContextVar("graphlabel_stage_runs", default=None)
#: The Dask client a run without a server sends its solve batches to
#: (``flows.runners.dask_client``); None: they run in this process.
DIRECT_CLIENT: ContextVar[Any] = ContextVar("graphlabel_dask_client", default=None)


# -- is there a server? -------------------------------------------------------------------


def _settings_files() -> list[Path]:
    """Files besides the environment that can set Prefect's API URL (Prefect 3's settings
    sources): the profiles file, and prefect.toml, .env or pyproject.toml in this folder."""
    home = Path(os.environ.get("PREFECT_HOME", "~/.prefect")).expanduser()
    profiles = Path(os.environ.get("PREFECT_PROFILES_PATH", home / "profiles.toml")).expanduser()
    return [path for path in (profiles, Path("prefect.toml"), Path(".env"), Path("pyproject.toml"))
            if path.is_file()]


def prefect_api_configured() -> bool:
    """A Prefect server is configured: ``PREFECT_API_URL`` in the environment, or in a
    settings file (then Prefect's own settings decide, at the cost of importing it)."""
    if "prefect.settings" in sys.modules:  # already imported: its settings (and their context) decide
        from prefect.settings import PREFECT_API_URL

        return bool(PREFECT_API_URL.value())
    if "PREFECT_API_URL" in os.environ:
        return bool(os.environ["PREFECT_API_URL"].strip())
    if not any("PREFECT_API_URL" in path.read_text(errors="replace") for path in _settings_files()):
        return False
    from prefect.settings import PREFECT_API_URL

    return bool(PREFECT_API_URL.value())


def in_flow_run() -> bool:
    """Running inside a Prefect flow (or task) run, which has a server to report to."""
    if "prefect.context" not in sys.modules:  # Prefect not even imported: no run
        return False
    from prefect.context import FlowRunContext, TaskRunContext

    return FlowRunContext.get() is not None or TaskRunContext.get() is not None


def run_logger() -> logging.Logger | logging.LoggerAdapter:
    """The flow run's logger inside a run (its lines reach the UI), else ``graphlabel``'s."""
    if in_flow_run():
        from prefect import get_run_logger

        return get_run_logger()
    return LOGGER


class _ToRunLog(logging.Handler):
    """Passes a record of the store's own logger (``graphstore``: waiting for a store
    another process holds, for one) to the flow run's logger, so the run's log in the UI
    says why it sat still."""

    def emit(self, record: logging.LogRecord) -> None:
        run_logger().log(record.levelno, "%s", record.getMessage())


@contextlib.contextmanager
def store_log_in_run() -> Iterator[None]:
    """Inside a flow run, the ``graphstore`` logger's records at INFO and above reach the
    run's log while the block runs (Prefect keeps only its own loggers' lines otherwise)."""
    if not in_flow_run():
        yield
        return
    handler, store_logger = _ToRunLog(logging.INFO), logging.getLogger("graphstore")
    store_logger.addHandler(handler)
    try:
        yield
    finally:
        store_logger.removeHandler(handler)


# -- tasks and flows, made on first use ---------------------------------------------------


def _importable_as_attribute(fn: Callable) -> None:
    """The module attribute ``fn.__name__`` becomes the wrapper; pickle finds a function by
    its qualified name, so ``fn`` is named as the wrapper's ``fn`` attribute (``solve_problem.fn``).
    Pickle then sends it by reference, as it did the decorated function (a Dask worker
    imports it), not by value with everything its globals reach."""
    fn.__qualname__ = f"{fn.__qualname__}.fn"


class Task:
    """A pipeline stage: its plain function ``fn``, and ``prefect``, the Prefect task it runs
    as inside a flow run (made on first use, so a run without a server never imports Prefect).

    ``retry_delays`` (seconds) and ``retry_if`` (a predicate on the error) declare retries:
    Prefect's ``retries``/``retry_delay_seconds``/``retry_condition_fn`` (with 50% jitter)
    inside a flow run, the same delays without jitter outside one. ``prefect_options``
    returns further options of Prefect's ``@task`` that need Prefect (cache policies).
    """

    def __init__(self, fn: Callable, name: str, retry_delays: Iterable[float] = (),
                 retry_if: Callable[[BaseException], bool] | None = None,
                 prefect_options: Callable[[], dict[str, Any]] | None = None) -> None:
        functools.update_wrapper(self, fn)
        _importable_as_attribute(fn)
        self.fn, self.name = fn, name
        self.retry_delays, self.retry_if = tuple(retry_delays), retry_if
        self._prefect_options = prefect_options

    @functools.cached_property
    def prefect(self) -> Any:  # cached: one Prefect task per stage, as the decorator would make
        from prefect import task

        # task runs named by what they do ("export"), not "export-1a7"
        options: dict[str, Any] = {"name": self.name, "task_run_name": self.name,
                                   "description": (self.fn.__doc__ or "").strip() or None}
        if self.retry_delays:
            retry_if = self.retry_if or (lambda error: True)

            def retry_condition(task, task_run, state) -> bool:
                error = state.data if isinstance(state.data, BaseException) else state.result(raise_on_failure=False)
                return retry_if(error)

            # one number when the delays are equal: the UI shows a list as "NaNs"
            delays = self.retry_delays
            delay = delays[0] if len(set(delays)) == 1 else list(delays)
            options.update(retries=len(delays), retry_delay_seconds=delay, retry_jitter_factor=0.5,
                           retry_condition_fn=retry_condition)
        options.update(self._prefect_options() if self._prefect_options else {})
        return task(**options)(self.fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise_lost_stop()
        if in_flow_run():
            state = self.prefect(*args, return_state=True, **kwargs)
            _record_stage(self.name, state.state_details.task_run_id)
            return state.result()
        for attempt, delay in enumerate((*self.retry_delays, None)):
            try:
                return self.fn(*args, **kwargs)
            except Exception as error:
                if delay is None or self.retry_if is None or not self.retry_if(error):
                    raise
                LOGGER.warning("%s failed (%s), retry %d of %d in %g s", self.name, error, attempt + 1,
                               len(self.retry_delays), delay)
                time.sleep(delay)

    def map_named(self, items: Iterable[Any], names: Iterable[str], *args: Any) -> list[Any]:
        """``self(item, *args)`` for every item: inside a flow run, one task run each named
        from ``names``, run by the flow's task runner (threads, or a Dask cluster); outside,
        here on one thread per usable CPU, as the flows' thread runner runs them
        (``flows.runners``), or on the cluster of ``flows.runners.dask_client``.

        The results come in the items' order; the first item to fail raises its error as it
        fails, and the items not started by then never start (those in progress end their work:
        a solve stops at the end of its current step, on threads or on a Dask cluster,
        ``flows.cluster_stop``)."""
        items = list(items)
        if in_flow_run():
            from prefect.futures import as_completed

            futures = []
            try:  # as they end: the first to fail raises as it fails
                for item, name in zip(_scattered_to_the_flows_cluster(items), names):
                    futures.append(self.prefect.with_options(task_run_name=name).submit(item, *args))
                    _record_stage(name, futures[-1].task_run_id)
                ended = {id(future): future.result() for future in as_completed(futures)}
            except BaseException as error:  # a Ctrl-C may come while the first batches already run
                _stop_not_ended(futures, isinstance(error, KeyboardInterrupt), self.name)
                raise
            return [ended[id(future)] for future in futures]
        client, fn = DIRECT_CLIENT.get(), self.fn
        if client is not None:
            from .cluster_stop import new_stop_name, stop_batches, with_stop_name

            name = new_stop_name()
            # the items (solver batches: a graph each) go to the workers as data, not inside the
            # task graph: Dask warned of every batch over 10 MB ("Sending large graph")
            on_cluster = client.map(lambda item: with_stop_name(name, fn, item, *args),
                                    client.scatter(items, hash=False), pure=False)
            try:  # Dask's gather raises at the first error (not after the other items end)
                return client.gather(on_cluster)
            except BaseException as error:
                stop_batches(on_cluster, name, _waiting_line(isinstance(error, KeyboardInterrupt), self.name))
                raise
        threads = min(len(items), usable_cpus())
        if threads < 2:
            return [fn(item, *args) for item in items]

        def numbered(place_context_item: tuple[int, contextvars.Context, Any]) -> tuple[int, Any]:
            place, context, item = place_context_item
            return place, context.run(fn, item, *args)

        # daemon threads (multiprocessing's ThreadPool, not concurrent.futures'): Ctrl-C, or an
        # item's error, ends the command at once instead of waiting for the items in progress,
        # and leaving the block drops the items not started
        results: list[Any] = [None] * len(items)
        with ThreadPool(threads) as pool:
            # each item in a copy of this thread's context, as Prefect's thread runner runs a
            # task (copied here, not in a generator the pool's feeder thread would run: a
            # copy made on another thread holds none of this one's)
            placed = [(place, contextvars.copy_context(), item) for place, item in enumerate(items)]
            for place, result in pool.imap_unordered(numbered, placed, chunksize=1):
                results[place] = result
        return results


def _scattered_to_the_flows_cluster(items: list[Any]) -> list[Any]:
    """The items as data on the flow run's Dask cluster (``distributed`` futures, which Dask
    hands to the task runs as the items), when its task runner is a ``DaskTaskRunner``; else
    the items. Why: the runner sends a task run's parameters inside the task graph, and Dask
    warned of every solver batch over 10 MB ("Sending large graph of size 10.90 MiB" for a
    20k-node batch). ``hash=False``: a batch need not be hashed (pickled once more) for a key."""
    from prefect.context import FlowRunContext
    from prefect.task_runners import ThreadPoolTaskRunner

    context = FlowRunContext.get()
    runner = context.task_runner if context is not None else None
    if runner is None or isinstance(runner, ThreadPoolTaskRunner):
        return items
    from prefect_dask import DaskTaskRunner

    return runner.client.scatter(items, hash=False) if isinstance(runner, DaskTaskRunner) else items


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity on Linux; the CPU count elsewhere)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _record_stage(name: str, task_run_id: Any) -> None:
    stages = STAGE_RUNS.get()
    if stages is not None and task_run_id is not None:
        stages.append((name, str(task_run_id)))


def _waiting_line(interrupted: bool, name: str) -> Callable[[int], None]:
    """What says, after a Ctrl-C, that the run waits for its task runs in progress to stop:
    without the line a Ctrl-C looked ignored for as long as they ran."""

    def waiting(in_progress: int) -> None:
        if interrupted and in_progress:
            run_logger().warning("interrupted: waiting for the %d %s task run(s) in progress to stop (a solve stops"
                                 " at the end of its current step)", in_progress, name)

    return waiting


def _stop_not_ended(futures: list[Any], interrupted: bool, name: str) -> None:
    """After a Ctrl-C or a failed task run: cancel the task runs not started and forget their
    stages (such a task run never reaches the server, and a failed run's report linked to it:
    the UI showed an empty page). Those in progress end their work and keep their stage: on
    threads Prefect's runner waits for them (the solves stop at their next step,
    ``flows.solving``); on a Dask runner the run asks them to stop and waits here
    (``flows.cluster_stop``)."""
    waiting = _waiting_line(interrupted, name)
    # a thread runner's futures wrap concurrent.futures', a Dask runner's distributed's
    threads = [future for future in futures if isinstance(future.wrapped_future, concurrent.futures.Future)]
    on_cluster = [future for future in futures if not isinstance(future.wrapped_future, concurrent.futures.Future)]
    cancelled = [future for future in threads if future.wrapped_future.cancel()]
    waiting(sum(not future.wrapped_future.done() for future in threads))
    if on_cluster:
        from .cluster_stop import flow_run_stop_name, stop_batches

        stop_name = flow_run_stop_name()
        if stop_name is not None:
            wrapped = {id(future.wrapped_future): future for future in on_cluster}
            stopped = stop_batches([future.wrapped_future for future in on_cluster], stop_name, waiting)
            cancelled += [wrapped[id(future)] for future in stopped]
    stages = STAGE_RUNS.get()
    if stages is not None and cancelled:
        ids = {str(future.task_run_id) for future in cancelled}
        stages[:] = [stage for stage in stages if stage[1] not in ids]


def task(name: str, **options: Any) -> Callable[[Callable], Task]:
    """``@task(name, retry_delays=..., retry_if=..., prefect_options=...)``: see ``Task``."""
    return lambda fn: Task(fn, name, **options)


class _DataErrorsInOneLine(logging.Filter):
    """Drops the traceback from a run's log records about an error of the data (no given
    label, one class, no valid record): the Logs tab of a scheduled run that met one showed
    80 lines of Prefect's internals under the one line that says what is wrong with the
    data. The record keeps its message (the error's type and text); a bug keeps its
    traceback. The engine's ``ENGINE_EXIT_LINE`` about the same error is dropped. On
    Prefect's flow and task run loggers, so the server and the console get the same record."""

    def __init__(self) -> None:
        super().__init__()
        self.expected: tuple[type[BaseException], ...] = ()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], self.expected):
            if record.getMessage() == ENGINE_EXIT_LINE:
                return False
            record.exc_info, record.exc_text = None, None
            setattr(record, EXPECTED_ERROR_MARK, True)  # for the console's filter, which no longer sees the error
        return True


#: What Prefect's engine logs when a flow run's process ends in the error the run already
#: logged and failed with (``prefect.flow_engine.run_flow``, in a served run's process). For
#: an expected error it is dropped: under the run's one error line it read as a crash of
#: graphlabel, under another name (the run's random one). A bug keeps it, with its traceback.
ENGINE_EXIT_LINE = "Engine execution exited with unexpected exception"

#: The attribute ``_DataErrorsInOneLine`` sets on a record whose error it took off.
EXPECTED_ERROR_MARK = "graphlabel_expected_error"


_DATA_ERRORS_IN_ONE_LINE = _DataErrorsInOneLine()


def _log_in_one_line(data_errors: tuple[type[BaseException], ...]) -> None:
    """Log ``data_errors`` without their traceback in every flow and task run of this
    process (``_DataErrorsInOneLine``). Idempotent."""
    quiet = _DATA_ERRORS_IN_ONE_LINE
    quiet.expected = tuple(dict.fromkeys((*quiet.expected, *data_errors)))
    for name in ("prefect.flow_runs", "prefect.task_runs"):
        logger = logging.getLogger(name)
        if quiet not in logger.filters:
            logger.addFilter(quiet)


def parameter_descriptions(fn: Callable) -> dict[str, str]:
    """The numpydoc ``Parameters`` of ``fn``'s docstring, one line each, by name.

    Prefect reads Google-style ``Args:`` only; the project writes numpydoc, so a flow's
    parameters reached the UI's run form and deployment page without a word."""
    import inspect

    from griffe import Docstring, DocstringSectionKind, Parser, parse

    doc = inspect.getdoc(fn)
    if not doc:
        return {}
    logging.getLogger("griffe").disabled = True  # it warns of every annotation it cannot resolve
    sections = parse(Docstring(doc), Parser.numpy)
    return {parameter.name: " ".join(parameter.description.split())
            for section in sections if section.kind is DocstringSectionKind.parameters
            for parameter in section.value if parameter.description}


def describe_parameters(schema: Any, fn: Callable) -> Any:
    """``schema`` (Prefect's ``ParameterSchema`` of ``fn``) with each parameter's numpydoc
    description filled in where Prefect found none."""
    for name, text in parameter_descriptions(fn).items():
        field = schema.properties.get(name)
        if field is not None and not field.get("description"):
            field["description"] = text
    return schema


class Flow:
    """A flow: its plain function ``fn`` and ``prefect``, the Prefect flow (made on first
    use). Calling it runs the Prefect flow, as calling a ``@flow`` function does; every
    other attribute (``with_options``, ``to_deployment``, ...) is the Prefect flow's.
    ``data_errors``: the exception types that are the data's fault, logged by its runs
    without a traceback (``_DataErrorsInOneLine``). ``task_runner``: a function that makes
    the flow's task runner, called with the Prefect flow (a runner imports Prefect)."""

    def __init__(self, fn: Callable, name: str, data_errors: tuple[type[BaseException], ...] = (),
                 task_runner: Callable[[], Any] | None = None, **options: Any) -> None:
        functools.update_wrapper(self, fn)
        _importable_as_attribute(fn)
        self.fn, self.name, self._options = fn, name, options
        self.data_errors, self._task_runner = data_errors, task_runner

    @functools.cached_property
    def prefect(self):  # cached: one Prefect flow, as the decorator would make
        from prefect import flow

        _log_in_one_line(self.data_errors)
        options = {**self._options, **({"task_runner": self._task_runner()} if self._task_runner else {})}
        made = flow(name=self.name, **options)(self.fn)
        describe_parameters(made.parameters, self.fn)
        return made

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from prefect import tags

        # a set of tags of the run's own: a labelling run adds its kind once it knows it
        # (flows.labelling._name_the_run), and the caller's ``with tags(...)`` is left as it
        # was for the runs after it
        with tags():
            return self.prefect(*args, **kwargs)

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") or attribute in ("fn", "name", "_options", "data_errors", "_task_runner"):
            raise AttributeError(attribute)
        return getattr(self.prefect, attribute)


def flow(name: str, **options: Any) -> Callable[[Callable], Flow]:
    """``@flow(name, data_errors=(...), task_runner=FACTORY, **options of Prefect's @flow)``: see ``Flow``."""
    return lambda fn: Flow(fn, name, **options)


def subflow(flow_: Flow, *args: Any, **kwargs: Any) -> Any:
    """Call ``flow_`` from a flow: a Prefect subflow run inside a run, its function outside."""
    return flow_(*args, **kwargs) if in_flow_run() else flow_.fn(*args, **kwargs)


class _ExpectedErrorsLeftToTheCaller(logging.Filter):
    """Leaves out of a console handler the records of an expected error (bad input, no
    labels: ``expected``, or the data's fault as ``_DataErrorsInOneLine`` marked it): the
    flow engine's "Encountered exception during execution: ..." and a task's "Task run
    failed with exception: ...". The run's "Finished in state Failed(...)" line names the
    error and the caller says it in one line: with a server, a newcomer read the same
    error three times in a row. The server's copy of the log keeps them (the run's Logs
    tab); a bug's records stay, with their traceback; a retry's notice has no error and
    stays."""

    def __init__(self, expected: tuple[type[BaseException], ...]) -> None:
        super().__init__()
        self.expected = expected

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, EXPECTED_ERROR_MARK, False):
            return False
        return not (record.exc_info and isinstance(record.exc_info[1], self.expected))


class _RunsByTheirLastName(logging.Filter):
    """Gives a console record of a flow run the name the run's records last carried: a
    run renamed on its way (``flows.labelling._name_the_run``: "d · harmonic · full")
    ended on Prefect's "Flow run 'd · harmonic' - Finished in state ..." under lines of
    its new name, the engine's logger having fixed the name when the run began. A name
    is only ever lengthened there, so only a record whose name the last one extends is
    renamed."""

    def __init__(self) -> None:
        super().__init__()
        self.last_names: dict[Any, str] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        run, name = getattr(record, "flow_run_id", None), getattr(record, "flow_run_name", None)
        if run is not None and isinstance(name, str):
            last = self.last_names.get(run, name)
            if last != name and last.startswith(name):
                record.flow_run_name = last
            else:
                self.last_names[run] = name
        return True


def run_flow(flow_: Flow, run_tags: Iterable[str] = (), expected: tuple[type[BaseException], ...] = (),
             **parameters: Any) -> Any:
    """Run ``flow_``: as a Prefect flow run tagged ``run_tags`` when a server is configured,
    else its function directly (module docstring). Errors of the ``expected`` types are the
    caller's to say in one line: Prefect's console log leaves out its records of them
    (``_ExpectedErrorsLeftToTheCaller``)."""
    keep_lost_stops()
    if not prefect_api_configured():
        return flow_.fn(**parameters)
    from prefect import tags
    from prefect.logging.handlers import PrefectConsoleHandler

    consoles = [handler for handler in logging.getLogger().handlers if isinstance(handler, PrefectConsoleHandler)]
    filters = (_ExpectedErrorsLeftToTheCaller(expected), _RunsByTheirLastName())
    for handler in consoles:
        for console_filter in filters:
            handler.addFilter(console_filter)
    try:
        with tags(*run_tags):
            return flow_(**parameters)
    finally:
        for handler in consoles:
            for console_filter in filters:
                handler.removeFilter(console_filter)
