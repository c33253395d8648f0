"""A Ctrl-C during the solve stage stops the solver batches in progress at their next step
(``solvers.stop_when``), with and without a Prefect server: a server run's thread runner
waits for its task threads before the command can end, and with only the time limit a
Ctrl-C on a 130k-row file waited 27 s for mincut; without a server the command ended at
once but the batches ran on in the process."""

from __future__ import annotations

import os
import signal
import threading
import time

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
    # unstopped, each batch runs on for 25 s or more; stopped, within a max flow or two
    assert max(at for at, _ in solves.ended) - ctrl_c_at < 5
    assert returned - ctrl_c_at < 10
