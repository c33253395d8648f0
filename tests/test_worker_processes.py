"""Independent tasks on worker processes (``solvers/_worker_processes.py``): results in the
tasks' order, the first task timed here and the rest sent to workers only when worth it, a
time budget that drops the tasks queued, and no children from a daemonic process."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from solvers import _worker_processes
from solvers._worker_processes import in_order, worker_count


class Stop(Exception):
    pass


def test_the_results_come_in_the_tasks_order_from_the_workers(monkeypatch, executors):
    monkeypatch.setattr(_worker_processes, "MIN_SECONDS", 0.0)
    checked: list[int] = []
    results = list(in_order(abs, abs, ((-i,) for i in range(40)), 40, 2, checked.append))
    assert results == list(range(40))
    assert checked == list(range(40))  # before each task, here or on a worker
    assert executors == [2]


def test_the_workers_run_in_other_processes(monkeypatch, executors):
    monkeypatch.setattr(_worker_processes, "MIN_SECONDS", 0.0)
    pids = list(in_order(os.getpid, os.getpid, [()] * 6, 6, 2, lambda _: None))
    assert pids[0] == os.getpid()  # the first task, timed here
    assert os.getpid() not in pids[1:]


def test_little_work_stays_in_this_process(executors):
    # the first task's time × the tasks left is far below MIN_SECONDS
    assert list(in_order(abs, abs, ((-i,) for i in range(5)), 5, 4, lambda _: None)) == list(range(5))
    assert executors == []


def test_one_process_never_starts_workers(monkeypatch, executors):
    monkeypatch.setattr(_worker_processes, "MIN_SECONDS", 0.0)
    assert list(in_order(abs, abs, ((-i,) for i in range(5)), 5, 1, lambda _: None)) == list(range(5))
    assert executors == []


@pytest.mark.parametrize(("processes", "shared"), [(1, 1), (2, 2)])
def test_the_rest_is_projected_at_the_first_tasks_pace(monkeypatch, executors, processes, shared):
    """After the first task (a nap of 0.2 s) ``project`` hears the other 9's seconds at its pace
    on the processes they would run on; a budget that stops there starts no worker."""
    monkeypatch.setattr(_worker_processes, "MIN_SECONDS", 0.0)  # with two processes the rest would be shared
    heard = []

    def project(seconds):
        heard.append(seconds)
        raise Stop

    with pytest.raises(Stop):
        list(in_order(time.sleep, time.sleep, [(0.2,)] * 10, 10, processes, lambda _: None, project))
    assert len(heard) == 1
    assert 9 * 0.2 / shared <= heard[0] < 3 * 9 * 0.2 / shared
    assert executors == []
    heard.clear()
    assert list(in_order(abs, abs, [(-1,)], 1, processes, lambda _: None, heard.append)) == [1]
    assert heard == []  # one task: nothing left to project


def test_a_spent_budget_drops_the_tasks_queued(monkeypatch):
    monkeypatch.setattr(_worker_processes, "MIN_SECONDS", 0.0)

    def check(i):
        if i == 3:
            raise Stop

    start = time.perf_counter()
    with pytest.raises(Stop):
        for _ in in_order(time.sleep, time.sleep, [(1.0,)] * 20, 20, 2, check):
            pass
    # 20 naps of 1 s on two workers take 10 s; the stop comes before the fourth is handed out,
    # with none of the workers' naps waited for
    assert time.perf_counter() - start < 5.0


def test_a_daemonic_process_uses_itself_only(monkeypatch):
    class Daemonic:
        daemon = True

    assert worker_count(3) == 3
    monkeypatch.setattr(multiprocessing, "current_process", lambda: Daemonic())
    assert worker_count(None) == 1
    assert worker_count(3) == 1


def test_the_default_is_the_product_threads_rule(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert worker_count(None) == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert worker_count(None) == 1


def _alive(pid: int) -> bool:
    """A process that runs (a zombie whose parent is gone counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_workers_of_a_killed_process_end_after_their_idle_time(tmp_path):
    """A ``graphlabel label`` killed with SIGKILL leaves its workers without a parent: they
    end after their idle time and loky's 30 s wait for the parent's word (10 + 30 s with
    the default IDLE_SECONDS, here 1 + 30), where loky's default idle time left them for
    minutes."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "parent.py"
    script.write_text(
        "import os, sys, time\n"
        "from solvers import _worker_processes\n"
        "_worker_processes.MIN_SECONDS = 0.0\n"
        "_worker_processes.IDLE_SECONDS = 1.0\n"
        "pids = set(_worker_processes.in_order(os.getpid, os.getpid, [()] * 9, 9, 2, lambda _: None))\n"
        "print(' '.join(str(p) for p in pids - {os.getpid()}), flush=True)\n"
        "time.sleep(600)\n")
    repo = Path(__file__).resolve().parents[1]
    # its stderr to a file: the killed parent's loky resource tracker says what it cleaned up
    # there, after this test
    with (tmp_path / "parent.err").open("w") as err:
        parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=err, text=True,
                                  env={**os.environ, "PYTHONPATH": str(repo)})
    workers = [int(pid) for pid in parent.stdout.readline().split()]
    assert workers, (tmp_path / "parent.err").read_text()
    assert all(_alive(pid) for pid in workers)
    parent.send_signal(signal.SIGKILL)
    parent.wait(10)
    deadline = time.monotonic() + 1.0 + 30 + 15
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not any(_alive(pid) for pid in workers)
