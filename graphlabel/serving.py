"""``graphlabel serve``: the jobs' deployments on Prefect's runner, a stop that ends the
runs in progress, and the runs a serve stopped the hard way left behind.

A stop (SIGTERM or Ctrl-C)
--------------------------
``prefect.serve`` (Prefect 3.8.8) answers SIGTERM, what ``systemctl stop`` and ``kill``
send, by calling its runner's asynchronous ``stop()`` without awaiting it and raising
``SystemExit`` inside the event loop. Measured with a label run in progress and SIGTERM
sent to serve's process group, as systemd does: a ``RuntimeWarning`` ("coroutine
'Runner.astop' was never awaited") and an asyncio traceback; the run's process died
without a word, and its flow run stayed *Running* on the server for good, holding its
deployment's one concurrency slot (``deployments`` sets a limit of 1) until the slot's
lease ran out 300 s later: the job's next runs waited five minutes ("Aborted submission
... non-pending state 'SCHEDULED'"). ``serve`` here builds the same runner and lets a
signal start the runner's own ``astop()``, which cancels the runs in progress (their flow
runs end, their slots are freed) and pauses the schedules, then ends with one line. A
second signal kills the runs' processes and leaves at once. A run that has already ended
keeps its state (``cancel_runs_in_progress``).

Each run's process runs in a session of its own, so a signal sent to serve's process
group (a terminal's Ctrl-C, ``kill -- -PGID``) reaches serve alone and serve's cancel is
the run's one ending. Under systemd, ``KillMode=mixed`` does the same for
``systemctl stop``; its default, ``control-group``, sends SIGTERM to every process of
the unit at once, runs included, which races serve's cancel as a group signal did
(``StoppingRunner._start_runs_in_their_own_session``).

Runs left behind
----------------
A serve killed outright (``kill -9``, an out-of-memory kill, a machine that went down)
cannot end its runs. Their flow runs stay *Pending* or *Running*, and when the Prefect
server restarted meanwhile they hold their slot for ever: the server keeps the slots'
leases in memory (``prefect.server.concurrency.lease_storage.memory``), so no lease
expires to free it. Before it serves, ``serve`` therefore ends each such flow run of its
jobs as *Crashed*, which frees the slot (Prefect's ``ReleaseFlowConcurrencySlots``),
when it is sure the run is over:

1. its ``LabelRun`` (whose id is the flow run's) names a process of this host that is
   gone (``graphstore.processes``), or says it was interrupted (``labelling.liveness``:
   on Neo4j, a run of another host no longer holding its dataset's lease); or
2. it has no ``LabelRun`` and has been in its state for more than
   ``UNRECORDED_SECONDS``: a served run records its ``LabelRun`` in its first task, a
   second after it starts.

Any other run may still be going, on this host or another serving the same jobs, and is
left alone.

Runs missed meanwhile
---------------------
While no serve runs (killed, or a machine down), the server's scheduler goes on creating
a job's runs, and the next serve ran every one that was due, one after another: 21 runs
of an every-20-s job after 15 minutes, and a day's hourly runs after a day. A labelling
run labels the dataset as it is, so each of them repeats the one after it. Before it
serves, ``serve`` cancels the runs the scheduler made that were due before it started,
all but the newest, which runs at once; a run someone started by hand is kept.

Runs waiting for their job's slot
---------------------------------
A job runs one run at a time (``deployments``: a concurrency limit of 1), so a run that
comes due while the one before it is still going waits. Prefect's runner asks the server
to start it at every poll (10 s) and logs each refusal: "Aborted submission of flow run
'…': Server returned a non-pending state 'SCHEDULED'", 360 times an hour for each
waiting run, in words that read like a failure. Serve's output says it once per run, as
what it is, with the job's name (``_SlotWaitOnce``).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from typing import Any

import pandas as pd

from graphlabel.schedule import Job, deployments
from graphstore.processes import gone_from_this_host
from graphstore.runs import naive_utc
from labelling.liveness import INTERRUPTED_PREFIX, mark_interrupted_runs
from labelling.wording import counted

#: A flow run without a ``LabelRun`` that has been Pending or Running this long is over
#: (a served run writes its ``LabelRun`` in its first task, about a second in).
UNRECORDED_SECONDS = 120.0
#: How long a left run's store may take to open (an embedded store another process holds
#: means a run may still be using it: its runs are then left alone).
STORE_OPEN_SECONDS = 5.0
#: The flow run states a run a serve started is in until it ends.
UNFINISHED_STATES = ("PENDING", "RUNNING", "CANCELLING")


@dataclass(frozen=True)
class LeftRun:
    """A flow run of a served job that a stopped serve left unfinished, and why it is over."""

    job: str
    flow_run_id: str
    name: str
    state: str
    reason: str


def why_over(state_since: pd.Timestamp, record: dict[str, Any] | None, now: pd.Timestamp,
             host: str | None = None) -> str | None:
    """Why an unfinished flow run is over (the rule of the module docstring), or None
    while it may still be going. ``record`` is its ``LabelRun`` row, None when it has none;
    times are UTC without a zone."""
    host = socket.gethostname() if host is None else host
    if record is None:
        age = (now - state_since).total_seconds()
        if age > UNRECORDED_SECONDS:
            return f"it never recorded its run in the store, and has been in its state for {age:.0f} s"
        return None
    process = record.get("process") or {}
    if gone_from_this_host(process, host):
        return f"its process (pid {process['pid']} on {host}) is gone"
    error = record.get("error")
    if record.get("status") == "failed" and isinstance(error, str) and error.startswith(INTERRUPTED_PREFIX):
        return error[len(INTERRUPTED_PREFIX):].strip()
    return None


def _open(job: Job):
    """The job's store, opened without a long wait (``STORE_OPEN_SECONDS`` for an embedded
    store another process holds)."""
    from graphstore import NEO4J_SCHEMES, default_store_uri, open_store

    uri = job.store_uri or default_store_uri()
    options: dict[str, Any] = {} if uri.startswith(NEO4J_SCHEMES) else {"lock_timeout": STORE_OPEN_SECONDS}
    return open_store(uri, **options)


def _records(job: Job, run_ids: Iterable[str]) -> dict[str, dict[str, Any]] | str:
    """The ``LabelRun`` rows of ``run_ids`` in the job's store (runs whose process is gone
    marked interrupted first), or why the store cannot be read now."""
    from graphstore import StoreConnectionError, StoreNotFound

    try:
        with _open(job) as store:
            mark_interrupted_runs(store, job.dataset)
            return {run_id: rows.iloc[0].to_dict() for run_id in run_ids
                    if not (rows := store.read_runs(dataset=job.dataset, run_id=run_id, limit=1)).empty}
    except StoreNotFound:
        return {}
    except (StoreConnectionError, ValueError) as error:  # held by a process that may be one of these runs,
        return str(error)                                 # not answering, or no credentials (messages redacted)


def mark_stopped_runs(jobs: list[Job]) -> None:
    """Mark the ``LabelRun`` of each run a stop cancelled ``failed`` (``labelling.liveness``:
    its process is gone now), for the runs whose process had no time to say so itself (a
    cancelled run's own mark raced its end: 1 of 2 stops in ``tests/test_serve_stop.py``
    left it ``running``). A store that cannot be opened is left to the next run, ``report``
    or serve, which apply the same rule. (serve's last line counts the runs its stop
    cancelled, ``StoppingRunner.stopped_runs``, not these.)"""
    from graphstore import StoreConnectionError, StoreNotFound

    for dataset_job in {(job.store_uri, job.dataset): job for job in jobs}.values():
        try:
            with _open(dataset_job) as store:
                mark_interrupted_runs(store, dataset_job.dataset)
        except (StoreNotFound, StoreConnectionError, ValueError):
            continue


def _deployment_runs(client, jobs: list[Job], states: Iterable[str], **filters: Any):
    """``(job, its flow runs in one of states)`` for each job served before (one never
    served has none), newest expected start first; ``filters`` are more
    ``FlowRunFilter`` fields."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterDeploymentId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.client.schemas.sorting import FlowRunSort
    from prefect.exceptions import ObjectNotFound

    from flows.labelling import labelling_flow

    in_states = FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType(state) for state in states]))
    for job in jobs:
        try:
            deployment = client.read_deployment_by_name(f"{labelling_flow.name}/{job.name}")
        except ObjectNotFound:
            continue
        yield job, client.read_flow_runs(
            flow_run_filter=FlowRunFilter(deployment_id=FlowRunFilterDeploymentId(any_=[deployment.id]),
                                          state=in_states, **filters),
            sort=FlowRunSort.EXPECTED_START_TIME_DESC)


def end_left_runs(jobs: list[Job], now: pd.Timestamp | None = None) -> tuple[list[LeftRun], list[str]]:
    """End, as Crashed, the unfinished flow runs of ``jobs``' deployments that are over.

    Returns the runs ended, and a line for each job whose unfinished runs could not be
    judged (its store could not be opened)."""
    from prefect.client.orchestration import get_client

    now = pd.Timestamp.now(tz="UTC").tz_localize(None) if now is None else now
    ended: list[LeftRun] = []
    unjudged: list[str] = []
    with get_client(sync_client=True) as client:
        for job, runs in _deployment_runs(client, jobs, UNFINISHED_STATES):
            if not runs:
                continue
            records = _records(job, [str(run.id) for run in runs])
            if isinstance(records, str):
                unjudged.append(f"job {job.name!r}: {len(runs)} unfinished run(s) left as they are, since whether"
                                f" they still run cannot be told: {records}")
                continue
            for run in runs:
                since = naive_utc(run.state.timestamp) if run.state is not None else now
                reason = why_over(since, records.get(str(run.id)), now)
                if reason is None:
                    continue
                state = (run.state.name if run.state is not None else None) or "unfinished"
                _crash(client, run.id, f"ended by the next graphlabel serve: {reason}")
                ended.append(LeftRun(job.name, str(run.id), run.name, state, reason))
    return ended, unjudged


def skip_missed_runs(jobs: list[Job]) -> list[str]:
    """Cancel the scheduled runs of ``jobs`` that are due, all but each job's newest (the
    module docstring, "Runs missed meanwhile"); a line per job that had any."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilterExpectedStartTime
    from prefect.states import Cancelled

    due_now = FlowRunFilterExpectedStartTime(before_=pd.Timestamp.now(tz="UTC").to_pydatetime())
    lines = []
    with get_client(sync_client=True) as client:
        for job, scheduled in _deployment_runs(client, jobs, ["SCHEDULED"], expected_start_time=due_now):
            due = [run for run in scheduled if run.auto_scheduled]
            if len(due) < 2:
                continue
            newest, missed = due[0], due[1:]
            for run in missed:
                client.set_flow_run_state(run.id, Cancelled(
                    message=f"skipped: missed while graphlabel serve was not running; the run due at"
                            f" {naive_utc(newest.expected_start_time):%Y-%m-%d %H:%M:%S} UTC labels in its place"),
                    force=True)
            first, last = (naive_utc(run.expected_start_time) for run in (missed[-1], missed[0]))
            lines.append(f"job {job.name!r}: skipped {len(missed)} run(s) missed while serve was not running (due"
                         f" {first:%Y-%m-%d %H:%M:%S} to {last:%H:%M:%S} UTC): each would repeat the next; the"
                         f" newest, due {naive_utc(newest.expected_start_time):%H:%M:%S}, runs now")
    return lines


def _crash(client, flow_run_id, message: str) -> None:
    """End a left flow run as Crashed, with its unfinished task runs (the UI drew the task
    a killed run was in as running for good), and say why in its log (the UI's log tab of
    such a run said "This run didn't generate logs")."""
    from datetime import UTC, datetime

    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        TaskRunFilter,
        TaskRunFilterState,
        TaskRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.states import Crashed

    unfinished = TaskRunFilterState(type=TaskRunFilterStateType(any_=[StateType(s) for s in UNFINISHED_STATES]))
    for task_run in client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])),
                                          task_run_filter=TaskRunFilter(state=unfinished)):
        client.set_task_run_state(task_run.id, Crashed(message=message), force=True)
    client.set_flow_run_state(flow_run_id, Crashed(message=message), force=True)
    client.create_logs([{"name": "graphlabel.serve", "level": 40, "message": message,
                         "timestamp": datetime.now(UTC).isoformat(), "flow_run_id": str(flow_run_id)}])


class _SlotWaitOnce(logging.Filter):
    """Prefect's runner's refusal line for a run waiting for its deployment's concurrency
    slot (the module docstring, "Runs waiting for their job's slot"): the first for each
    flow run reworded with its job's name, the repeats dropped; its other lines pass as
    they are. The line carries only the flow run's id: while the runner proposes to start a
    run (``proposing``), its job is known from ``jobs`` (deployment id to job name)."""

    def __init__(self) -> None:
        super().__init__()
        self.said: set[str] = set()
        self.jobs: dict[str, str] = {}
        self.job_of_run: dict[str, str] = {}  # only the runs being proposed: a serve runs for months

    @contextmanager
    def proposing(self, flow_run) -> Iterator[None]:
        run = str(flow_run.id)
        self.job_of_run[run] = self.jobs.get(str(flow_run.deployment_id), "")
        try:
            yield
        finally:
            self.job_of_run.pop(run, None)

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if not (str(record.msg).startswith("Aborted submission") and len(args) == 2 and args[1] == "SCHEDULED"):
            return True
        flow_run_id = str(args[0])
        if flow_run_id in self.said:
            return False
        self.said.add(flow_run_id)
        job = self.job_of_run.get(flow_run_id)
        record.msg, record.args = ("%sflow run '%s' is due and waits for its job's run in progress to end"
                                   " (a job runs one run at a time)"), (f"job {job!r}: " if job else "", flow_run_id)
        return True


#: The message of the state a stop gives the runs it cancels (Prefect's runner's own).
STOP_MESSAGE = "Runner is shutting down."
#: How long a stop waits for the process of a run that has ended to exit by itself
#: (Prefect's runner kills the processes still alive when it leaves).
ENDING_RUN_SECONDS = 30.0
#: How long a stop gives a run it cancelled to end before it signals the run's process
#: itself: the runner's cancel skips the signal when it thinks the run concluded, and once
#: in about 35 stops (tests/test_serve_stop.py) the run went on to its end. The runs that
#: test's stops cancelled ended 0.65-1.0 s after serve's SIGTERM (4 serve logs read).
CANCELLED_RUN_SECONDS = 10.0

#: The logger of the runner's state proposals (prefect/runner/_state_proposer.py, 3.8.8).
STATE_PROPOSER_LOGGER = "prefect.runner.state_proposer"


def _runner(proposing: Callable[[Any], AbstractContextManager] | None = None):
    """Prefect's runner, whose SIGTERM (and SIGINT) starts its own ``astop()``; with
    ``proposing``, the context each proposal to start a flow run is made in."""
    from prefect.runner import Runner

    class StoppingRunner(Runner):
        stop_signal: str | None = None
        _stopping: asyncio.Task | None = None  # the loop keeps only a weak reference to a task
        #: the flow runs the stop cancelled (serve's last line counts them)
        stopped_runs: set[str]

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.stopped_runs = set()

        async def __aenter__(self):
            entered = await super().__aenter__()
            self._start_runs_in_their_own_session()
            if proposing is not None:  # the runner's own proposer (3.8.8), which its poller holds too
                propose_pending = self._state_proposer.propose_pending

                async def noted(flow_run):
                    with proposing(flow_run):
                        return await propose_pending(flow_run)

                self._state_proposer.propose_pending = noted
            return entered

        def _start_runs_in_their_own_session(self) -> None:
            """Start each run's process in a session of its own, as Prefect's workspace
            starter does (``isolate_process_group``), so that a signal to serve's process
            group reaches serve alone, which cancels each run once. In serve's group the
            run's process got the signal too, and its own ending raced the runner's cancel:
            in 3 of 6 stops, measured with ``tests/test_serve_stop.py``'s SIGTERM, the
            process printed a traceback (the runner's SIGTERM came while it drained its
            logs at exit), or the runner skipped the cancel of a run that had just
            concluded, which stayed *Cancelling*."""
            from prefect.runner._starter_engine import EngineCommandStarter

            resolve_starter = self._scheduled_run_poller._resolve_starter  # 3.8.8, set by __aenter__

            def in_own_session(flow_run):
                starter = resolve_starter(flow_run)
                if isinstance(starter, EngineCommandStarter):
                    starter._isolate_process_group = True
                return starter

            self._scheduled_run_poller._resolve_starter = in_own_session

        def handle_sigterm(self, *args: Any, **kwargs: Any) -> None:
            self.stop_on("SIGTERM")

        def stop_on(self, name: str) -> None:
            if self.stop_signal is not None:  # asked again: leave now
                self.kill_runs()
                raise KeyboardInterrupt
            self.stop_signal = name
            self._logger.info(f"{name}: stopping; runs in progress are cancelled")
            # a signal handler runs between two steps of the loop: start the stop in the loop
            assert self._loop is not None  # set by _run before any handler is installed
            self._loop.call_soon_threadsafe(self._start_stopping)

        def _start_stopping(self) -> None:
            if not self.started:  # not serving yet: nothing to stop gently
                raise KeyboardInterrupt
            self._stopping = asyncio.ensure_future(self.astop())

        async def cancel_all(self) -> None:
            await cancel_runs_in_progress(self)

        def kill_runs(self) -> None:
            """Kill the runs' processes (in sessions of their own, no signal to serve
            reaches them) and what they started, as a second Ctrl-C to serve's group did."""
            for flow_run_id in self._process_manager.flow_run_ids():
                handle = self._process_manager.get(flow_run_id)
                if handle is not None:
                    with suppress(ProcessLookupError):
                        handle.hard_kill()

    # as prefect.serve builds it: limit=None, where the constructor's default is
    # PREFECT_RUNNER_PROCESS_LIMIT (5), which held back runs waiting for their job's slot
    # ("scheduled runs skipped (at capacity)"): 2 of 3 runs of an every-2-s job in 240 s
    return StoppingRunner(pause_on_shutdown=True, limit=None)


async def cancel_runs_in_progress(runner) -> None:
    """Cancel the runs whose process ``runner`` started and that have not ended, as the UI
    cancels a run; wait for the processes of the runs that have ended to exit.

    The runs are ended all at once, so a stop takes as long as its slowest run, not their
    sum: each may take up to ``CANCELLED_RUN_SECONDS`` and then ``ENDING_RUN_SECONDS`` more
    (Prefect 3.8.8's own ``cancel_all`` ends them one after another).

    Prefect 3.8.8's ``Runner.cancel_all`` (what ``astop`` calls) forces *Cancelled* onto
    every run whose process is alive, also a run that has just ended and whose process is
    still exiting: its *Completed* became *Cancelled* while its ``LabelRun`` said completed
    (1 stop in 3 with the machine loaded, ``tests/test_schedule_server.py``). A run is
    therefore first asked to cancel with a *Cancelling* state, not forced, which the server
    refuses for a run that has ended (``HandleFlowTerminalStateTransitions``); only the runs
    it accepted it for go through the runner's kill and *Cancelled*.

    A run asked to cancel ends *Cancelled* here even when the runner's own cancel did not
    get that far, which left it *Cancelling* in 1 stop of 5 with SIGTERM to serve alone
    (``tests/test_serve_stop.py``). Two ways led there in 3.8.8's runner. Its watch for
    *Cancelling* states starts the same cancel on the state proposed here, and when that
    one started first, ``_cancel_run`` returned at once and the stop closed the runner
    under it; when both went ahead (``_cancel_run`` reads the run between its check and
    its mark), the run's process got two SIGTERMs, the second while it recorded its
    failure (``RuntimeError: Database is closed``). The run is therefore marked as being
    cancelled before its Cancelling state exists, and cancelled here alone. And the runner
    skips the cancel of a run whose process has just reported its end
    (``ALREADY_CONCLUDED``)."""
    await asyncio.gather(*(_cancel_run_in_progress(runner, flow_run_id)
                           for flow_run_id in runner._process_manager.flow_run_ids()))


async def _cancel_run_in_progress(runner, flow_run_id) -> None:
    """``cancel_runs_in_progress`` for one run; a failure is logged, as in Prefect's
    ``cancel_all``, so that it does not keep the other runs going."""
    from prefect.client.schemas.responses import SetStateStatus
    from prefect.states import Cancelling

    try:
        # held from before the Cancelling state exists: the runner's watch for Cancelling
        # states, which starts its own cancel, then finds the run being cancelled
        runner._cancelling_flow_run_ids.add(flow_run_id)
        try:
            asked = await runner._client.set_flow_run_state(flow_run_id, Cancelling(message=STOP_MESSAGE))
            if asked.status != SetStateStatus.ACCEPT:  # the run has ended: its process exits by itself
                await runner._process_manager.wait_for_exit(flow_run_id, grace_seconds=ENDING_RUN_SECONDS)
                return
            runner.stopped_runs.add(str(flow_run_id))
            flow_run = await runner._client.read_flow_run(flow_run_id)
            await runner._cancellation_manager.cancel(flow_run, STOP_MESSAGE)
            if not await runner._process_manager.wait_for_exit(flow_run_id, grace_seconds=CANCELLED_RUN_SECONDS):
                # the runner's cancel did not end it: SIGTERM now, SIGKILL after ENDING_RUN_SECONDS
                await runner._process_manager.kill(flow_run_id, grace_seconds=ENDING_RUN_SECONDS)
        finally:
            runner._cancelling_flow_run_ids.discard(flow_run_id)
        await _end_cancelling(runner, flow_run_id)
    except Exception:
        runner._logger.exception(f"could not cancel flow run '{flow_run_id}'")


async def _end_cancelling(runner, flow_run_id) -> None:
    """Move a run whose process has exited from *Cancelling* to *Cancelled* if it is still
    there."""
    from prefect.states import Cancelled

    state = (await runner._client.read_flow_run(flow_run_id)).state
    if state is not None and state.is_cancelling():
        await runner._client.set_flow_run_state(flow_run_id, Cancelled(message=STOP_MESSAGE))


async def _run(runner) -> None:
    runner._loop = asyncio.get_running_loop()  # the runner's own start() keeps a loop it was given
    signal.signal(signal.SIGINT, lambda *_: runner.stop_on("SIGINT"))
    await runner.start()


def serve(jobs: list[Job], say=print) -> None:  # pragma: no cover - runs until stopped (tests/test_serve_stop.py)
    """Serve the jobs' deployments until SIGTERM or Ctrl-C: first end the runs a stopped
    serve left and skip the runs missed meanwhile, then run each job on its schedule (and
    from the Prefect UI)."""
    from prefect.settings import PREFECT_UI_URL

    ended, unjudged = end_left_runs(jobs)
    for run in ended:
        say(f"ended run {run.name!r} ({run.flow_run_id}) of job {run.job!r}, left {run.state} by a serve that"
            f" was stopped: {run.reason}; marked Crashed, so the job's schedule runs again")
    for line in unjudged:
        say(f"warning: {line}")
    for line in skip_missed_runs(jobs):
        say(line)
    waiting = _SlotWaitOnce()
    runner = _runner(proposing=waiting.proposing)
    logging.getLogger(STATE_PROPOSER_LOGGER).addFilter(waiting)
    for job, deployment in zip(jobs, deployments(jobs), strict=True):
        waiting.jobs[str(runner.add_deployment(deployment))] = job.name
    where = f": {PREFECT_UI_URL.value()}/deployments" if PREFECT_UI_URL.value() else ""
    say(f"serving {len(jobs)} job(s) on their schedules; they can be started from the Prefect UI{where}."
        " Stop with Ctrl-C or SIGTERM (runs in progress are cancelled).")
    try:
        asyncio.run(_run(runner))
    except KeyboardInterrupt:
        say("stopped at once (asked twice): runs in progress may be left unfinished; the next serve ends them")
        raise SystemExit(1) from None
    mark_stopped_runs(jobs)
    # every run the stop cancelled, whether its process recorded its failure or the line above did
    # (counting only the latter said nothing of a run cut short that had recorded itself, a UI walk)
    stopped = len(runner.stopped_runs)
    recorded = f"; it stopped {counted(stopped, 'run')} in progress, recorded as failed" if stopped else ""
    say(f"stopped ({runner.stop_signal or 'the runner ended'}): the jobs' schedules are paused until serve"
        f" starts again{recorded}")
