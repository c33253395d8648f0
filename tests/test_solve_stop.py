"""A Ctrl-C during the solve stage stops the solver batches in progress at their next step
(``solvers.stop_when``), with and without a Prefect server: a server run's thread runner
waits for its task threads before the command can end, and with only the time limit a
Ctrl-C on a 130k-row file waited 27 s for mincut; without a server the command ended at
once but the batches ran on in the process. On a Dask cluster (a scheduler the run
connects to, with a server's ``DaskTaskRunner`` or without a server) the batches ran to
their end on the workers after the run had ended (``flows.cluster_stop``). The batches reach
the cluster as data, not inside Dask's task graph."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs

import solvers
from labelling.options import RunOptions
from labelling.problems import ExportedProblem
from similarity import knn_graph
from solvers import LabelProblem

ISLAND = 20_000
#: One leave-one-out cut per given label (1,000 per island, each a max flow of 20k nodes):
#: 25 s a batch on its own on a 2-core machine, each step a few tens of milliseconds.
SLOW_MINCUT = {"noise": "loo", "n_cuts": 0, "time_limit": None}


def two_islands() -> ExportedProblem:
    """Two disconnected 20k-node 10-NN graphs of three blobs each, 5% labelled: two batches."""
    X, truth = make_blobs(ISLAND, 8, centers=3, cluster_std=3.0, random_state=0)
    W = knn_graph(X, 10)
    y = np.full(ISLAND, -1)
    given = np.random.default_rng(0).choice(ISLAND, ISLAND // 20, replace=False)
    y[given] = truth[given]
    problem = LabelProblem(sp.block_diag([W, W], format="csr"), np.concatenate([y, y]), n_classes=3)
    return ExportedProblem(problem, np.array([f"n{i}" for i in range(2 * ISLAND)], dtype=object), np.arange(3))


class Solves:
    """``solvers.solve`` as the solve task calls it, recording when each call ends and how."""

    def __init__(self) -> None:
        self.solve, self.lock = solvers.solve, threading.Lock()
        self.started, self.ended, self.both_running = 0, [], threading.Event()

    def __call__(self, *args, **kwargs):
        with self.lock:
            self.started += 1
            if self.started == 2:
                self.both_running.set()
        try:
            return self.solve(*args, **kwargs)
        except BaseException as error:
            self.ended.append((time.perf_counter(), type(error).__name__))
            raise


@pytest.mark.parametrize("server", [False, True], ids=["without a server", "in a flow run on a server"])
def test_ctrl_c_stops_the_solver_batches_in_progress_at_their_next_step(server, request, monkeypatch):
    from flows.solving import solve_by_component

    if server:
        from prefect import flow

        request.getfixturevalue("prefect_harness")
        solve_stage = flow(solve_by_component)
    else:
        solve_stage = solve_by_component
    monkeypatch.setattr("flows.runners.usable_cpus", lambda: 2)
    monkeypatch.setattr("flows.direct.usable_cpus", lambda: 2)
    exported, solves = two_islands(), Solves()
    monkeypatch.setattr("solvers.solve", solves)
    signalled = []

    def ctrl_c():
        if solves.both_running.wait(120):
            time.sleep(1)  # both well into their leave-one-out cuts
            signalled.append(time.perf_counter())
            os.kill(os.getpid(), signal.SIGINT)  # Python's handler raises KeyboardInterrupt in the main thread

    # a shell's background job (CI's, say) starts Python with SIGINT ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    started = datetime.now(UTC)
    threading.Thread(target=ctrl_c, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            solve_stage(exported, RunOptions(solver="mincut", solver_params=SLOW_MINCUT, batch_nodes=ISLAND))
        returned = time.perf_counter()
    finally:
        signal.signal(signal.SIGINT, previous)
    deadline = time.monotonic() + 60
    while len(solves.ended) < 2 and time.monotonic() < deadline:  # without a server nothing waits for them
        time.sleep(0.1)
    (ctrl_c_at,) = signalled
    assert sorted(name for _, name in solves.ended) == ["SolverStopped", "SolverStopped"]
    if server:  # stopped, not failed: grey in the UI, its last line a warning, not red
        assert _solve_states_since(started) == [("CANCELLED", "the run asked its solves to stop", "WARNING")] * 2
    # unstopped, each batch runs on for 25 s or more; stopped, within a max flow or two (the
    # bounds leave room for a loaded machine and, with a server, Prefect's own API calls)
    assert max(at for at, _ in solves.ended) - ctrl_c_at < 12
    assert returned - ctrl_c_at < 20


def _solve_states_since(started: datetime, expected: int = 2) -> list[tuple[str, str, str]]:
    """(state type, the end of its message, the level of its "Finished in state" line) of the
    solve task runs the server recorded since ``started`` (the server is the session's: earlier
    tests' runs are on it too), once ``expected`` of them are there or 30 s have passed."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterTaskRunId

    def solves() -> list:
        return [run for run in prefect.read_task_runs() if run.name.startswith("solve[") and run.created >= started]

    with get_client(sync_client=True) as prefect:
        # a task run's states reach the server as events, written a moment after the run ends:
        # CI once read one of the two stopped runs before the other had arrived
        deadline, runs = time.monotonic() + 30, solves()
        while not (len(runs) >= expected and all(run.state and run.state.is_final() for run in runs)) \
                and time.monotonic() < deadline:
            time.sleep(0.5)
            runs = solves()
        # a run's log reaches the server in batches, a few seconds after its state
        deadline, levels = time.monotonic() + 30, {}
        while len(levels) < len(runs) and time.monotonic() < deadline:
            logs = prefect.read_logs(LogFilter(task_run_id=LogFilterTaskRunId(any_=[run.id for run in runs])))
            levels = {log.task_run_id: logging.getLevelName(log.level) for log in logs
                      if log.message.startswith("Finished in state")}
            time.sleep(0.5)
    return [(run.state.type.value, run.state.message.rpartition(": ")[2], levels.get(run.id, "no line"))
            for run in runs]


@pytest.fixture(scope="module")
def cluster():
    """A Dask cluster of two single-threaded worker processes, as a run finds one at an address."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as local, Client(local) as client:
        yield client


def _solve_stage_on(cluster, server: bool, request) -> tuple[Callable, contextlib.AbstractContextManager]:
    """The solve stage on ``cluster`` and the block to call it in: in a flow run on a server
    with a ``DaskTaskRunner``, or without a server inside ``dask_client``."""
    from flows.runners import dask_client, dask_runner
    from flows.solving import solve_by_component

    address = cluster.scheduler.address
    if not server:
        return solve_by_component, dask_client(address)
    from prefect import flow

    request.getfixturevalue("prefect_harness")
    return flow(solve_by_component).with_options(task_runner=dask_runner(address)), contextlib.nullcontext()


def _ctrl_c_once_both_run(client, signalled: list[tuple[float, float]]) -> None:
    """SIGINT to this process 6 s after both batches started on the cluster's workers;
    ``signalled`` gets when, by ``perf_counter`` and by the workers' clock (``time.time``)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if sum(len(keys) for keys in client.processing().values()) == 2:
            time.sleep(6)  # both past their harmonic run (2 s on a worker), into the leave-one-out cuts
            signalled.append((time.perf_counter(), time.time()))
            os.kill(os.getpid(), signal.SIGINT)
            return
        time.sleep(0.1)


@pytest.mark.parametrize("server", [False, True], ids=["without a server", "in a flow run on a server"])
def test_ctrl_c_stops_the_solver_batches_on_a_dask_cluster(server, cluster, request, caplog):
    from distributed import get_task_stream

    solve_stage, on_cluster = _solve_stage_on(cluster, server, request)
    signalled: list[tuple[float, float]] = []
    threading.Thread(target=_ctrl_c_once_both_run, args=(cluster, signalled), daemon=True).start()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    started = datetime.now(UTC)
    try:
        with get_task_stream(cluster) as stream, on_cluster, pytest.raises(KeyboardInterrupt):
            solve_stage(two_islands(), RunOptions(solver="mincut", solver_params=SLOW_MINCUT, batch_nodes=ISLAND))
        returned = time.perf_counter()
    finally:
        signal.signal(signal.SIGINT, previous)
    (ctrl_c_at,) = signalled
    # the run waited for its batches to stop: nothing left on the workers, both ended within a
    # few seconds of the Ctrl-C (unstopped: 25 s or more each), each with SolverStopped
    assert returned - ctrl_c_at[0] < 20
    assert sum(len(keys) for keys in cluster.processing().values()) == 0
    assert len(stream.data) == 2
    assert all(max(part["stop"] for part in task["startstops"]) - ctrl_c_at[1] < 12 for task in stream.data)
    if server:  # a stopped batch ends Cancelled (a state Dask holds as the task's result), logged as a warning
        assert _solve_states_since(started) == [("CANCELLED", "the run asked its solves to stop", "WARNING")] * 2
    else:
        assert "interrupted: waiting for the 2 solve task run(s) in progress to stop" in caplog.text
        assert [task["status"] for task in stream.data] == ["error", "error"]
        assert all("SolverStopped" in repr(task["exception"]) for task in stream.data)
    # the run's stop request is cleared from the scheduler once its batches stopped
    assert cluster.run_on_scheduler(lambda dask_scheduler: [
        name for name, event in dask_scheduler.extensions["events"]._events.items() if event.is_set()]) == []


@pytest.mark.parametrize("server", [False, True], ids=["without a server", "in a flow run on a server"])
def test_the_batches_reach_a_dask_cluster_as_data_not_in_the_task_graph(server, cluster, request):
    # Dask warned "Sending large graph of size 10.90 MiB" of each 20k-node batch sent inside
    # the task graph, once per run and batch
    from flows.solving import solve_by_component

    solve_stage, on_cluster = _solve_stage_on(cluster, server, request)
    options = RunOptions(batch_nodes=ISLAND)
    exported = two_islands()
    here = solve_by_component(exported, options)
    with warnings.catch_warnings(record=True) as caught, on_cluster:
        warnings.simplefilter("always")
        there = solve_stage(exported, options)
    assert [str(warning.message) for warning in caught if "large graph" in str(warning.message)] == []
    assert there.info["n_batches"] == 2
    np.testing.assert_array_equal(there.labels, here.labels)


def _slow_or_failing(item: str) -> str:
    """A batch on a Dask worker: "bad" fails after 2 s; any other runs 60 s of budgeted steps
    inside the solve task's stop request (``flows.cluster_stop.stoppable_on_worker``)."""
    from flows.cluster_stop import stoppable_on_worker
    from solvers._budget import Budget

    if item == "bad":
        time.sleep(2)
        raise ValueError("batch 'bad' failed")
    with stoppable_on_worker():
        budget = Budget("slow", None)
        for step in range(600):
            budget.check(f"step {step}")
            time.sleep(0.1)
    return item


def test_without_a_server_the_first_batch_to_fail_stops_the_others_on_the_dask_cluster(cluster):
    from distributed import get_task_stream

    from flows.direct import Task
    from flows.runners import dask_client

    start = time.perf_counter()
    with get_task_stream(cluster) as stream, dask_client(cluster.scheduler.address):
        with pytest.raises(ValueError, match="batch 'bad' failed"):
            Task(_slow_or_failing, "solve").map_named(["slow", "bad"], ["slow", "bad"])
    assert time.perf_counter() - start < 10  # the slow batch alone: 60 s
    assert sum(len(keys) for keys in cluster.processing().values()) == 0
    assert len(stream.data) == 2  # both ended with an error: the bad one's, and the slow one stopped
    (slow,) = [task for task in stream.data if "SolverStopped" in repr(task.get("exception"))]
    assert "slow stopped after" in repr(slow["exception"])
