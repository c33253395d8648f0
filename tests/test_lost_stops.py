"""A stop that lands where Python cannot raise it (a finaliser, a weakref callback) is not
lost: it is said in one line and raised again as the run's next task starts
(flows/stops.py). A real signal in a real process: the finaliser sends SIGINT to its own
process, so the KeyboardInterrupt is raised inside it, as the garbage collector ran a
``WeakValueDictionary`` callback when serve's SIGTERM came (tests/test_serve_stop.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = """
import os, signal
from flows.direct import Task
from flows.stops import keep_lost_stops

if {keep}:
    keep_lost_stops()


class Finalised:
    def __del__(self):
        {finaliser}
        for _ in range(1000):  # Python runs the signal's handler at one of these steps
            pass


def probe():
    return "ran"


task = Task(probe, "probe")
Finalised()
print("went on")
try:
    print(task())
except KeyboardInterrupt:
    print("raised again")
"""
SIGINT = "os.kill(os.getpid(), signal.SIGINT)"


def run(keep: bool, finaliser: str = SIGINT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROGRAM.format(keep=keep, finaliser=finaliser)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_a_ctrl_c_in_a_finaliser_is_raised_again_as_the_next_task_starts():
    done = run(keep=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["went", "on", "raised", "again"]
    assert "Traceback" not in done.stderr
    (said,) = done.stderr.strip().splitlines()
    assert said.startswith("a stop (KeyboardInterrupt) came while Python ran <function Finalised.__del__")
    assert said.endswith("it is raised again as the run's next task starts")


def test_without_it_the_ctrl_c_is_lost_and_the_task_runs():
    done = run(keep=False)  # what happened before: Python's traceback, and the run went on
    assert done.stdout.split() == ["went", "on", "ran"]
    assert "Exception ignored in" in done.stderr
    assert "KeyboardInterrupt" in done.stderr


def test_another_error_a_finaliser_raises_goes_to_pythons_own_hook():
    done = run(keep=True, finaliser="raise ValueError('not a stop')")
    assert done.stdout.split() == ["went", "on", "ran"]
    assert "Exception ignored in" in done.stderr
    assert "ValueError: not a stop" in done.stderr
