"""A solve too large for the memory its process may take is refused before it allocates, in
one line (``solvers/_memory.py``), under a real limit: ``ulimit -v`` (RLIMIT_AS) set in a
fresh process, as a container's or a batch system's limit would be."""

import json
import subprocess
import sys

import pytest

from solvers import SolverOutOfMemory
from solvers._memory import available_bytes, check_memory

# 20,000 nodes of 500 classes: a block (n × C float32) is 40 MB; harmonic asks for 8 of them and
# the graph's copies, nmf for 11
SOLVE_UNDER_A_LIMIT = """
import json, resource, sys, time
import numpy as np, psutil
from sklearn.datasets import make_blobs
from similarity import knn_graph
from solvers import LabelProblem, solve
import solvers.harmonic

headroom, checked, method = int(sys.argv[1]), sys.argv[2] == "checked", sys.argv[3]
X, y = make_blobs(n_samples=20_000, centers=500, n_features=8, cluster_std=1.0, random_state=0)
given = np.full(len(y), -1)
given[::10] = y[::10]
problem = LabelProblem(knn_graph(X, 10), given, n_classes=500, X=X)  # maxmargin's SVM needs the features
if not checked:  # the solve as it was before the check
    solvers.harmonic.check_blocks = lambda *args: None
resource.setrlimit(resource.RLIMIT_AS, (psutil.Process().memory_info().vms + headroom, resource.RLIM_INFINITY))
start = time.perf_counter()
try:
    prediction = solve(problem, method)
    outcome = {"solved": float(np.mean(prediction.labels == y))}
except BaseException as error:
    outcome = {"error": type(error).__name__, "message": str(error)}
print(json.dumps({**outcome, "seconds": time.perf_counter() - start}))
"""


def _solve_under_a_limit(headroom: int, checked: bool = True, method: str = "harmonic") -> dict:
    out = subprocess.run([sys.executable, "-c", SOLVE_UNDER_A_LIMIT, str(headroom), "checked" if checked else "not",
                          method], capture_output=True, text=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_solve_beyond_the_address_space_limit_is_refused_before_it_allocates():
    refused = _solve_under_a_limit(150 * 2**20)
    assert refused["error"] == "SolverOutOfMemory"
    assert refused["message"].startswith("harmonic needs about 0.3")
    assert "20,000 nodes of 500 classes" in refused["message"]
    assert "with fewer classes" in refused["message"]
    assert refused["seconds"] < 1  # at the door, before the graph's first pass
    # the limit is real: without the check the same solve fails on its way, as numpy's error
    unchecked = _solve_under_a_limit(150 * 2**20, checked=False)
    assert unchecked.get("error") in {"MemoryError", "_ArrayMemoryError", "RuntimeError"}, unchecked
    # and the check is no stricter than the solve: with room for its peak it labels the nodes
    assert _solve_under_a_limit(1536 * 2**20)["solved"] > 0.9


def test_nmf_asks_for_its_own_peak():
    # its float64 marginals and the mean field's four buffers: 11 blocks where harmonic asks for
    # 8. The check asked for 21 while the mean field made its arrays anew at each step, which
    # refused this solve with 640 MiB of room; it labels the nodes there now, and is refused
    # at the door with 400 MiB
    assert _solve_under_a_limit(640 * 2**20, method="nmf")["solved"] > 0.9
    refused = _solve_under_a_limit(400 * 2**20, method="nmf")
    assert refused["error"] == "SolverOutOfMemory"
    assert refused["message"].startswith("nmf needs about 0.416 GiB for 20,000 nodes of 500 classes")
    assert refused["seconds"] < 1


def test_mincut_is_refused_before_its_cuts():
    # its peak is the harmonic relaxation's with its votes and probabilities beside it (8
    # blocks); unchecked, this solve failed on its way with numpy's MemoryError (a traceback
    # for the user: "Unable to allocate 76.3 MiB for an array with shape (20000, 500)")
    refused = _solve_under_a_limit(150 * 2**20, method="mincut")
    assert refused["error"] == "SolverOutOfMemory"
    assert refused["message"].startswith("mincut needs about 0.3")
    assert "20,000 nodes of 500 classes (8 blocks of a score per node and class, 4 copies" in refused["message"]
    assert refused["seconds"] < 1


def test_maxmargin_is_refused_before_its_harmonic_step():
    # its peak is the harmonic step's (eq. 6, 9 blocks), and libsvm's kernel cache is allocated
    # outside numpy (one class pair's kernel columns: little, with 500 classes); the code before
    # asked nothing and held every row's C(C - 1)/2 one-vs-one decision values at once, 20 GB
    # for these nodes
    refused = _solve_under_a_limit(150 * 2**20, method="maxmargin")
    assert refused["error"] == "SolverOutOfMemory"
    assert refused["message"].startswith("maxmargin needs about 0.34")
    assert "(9 blocks of a score per node and class, 3 copies of the graph, 2 copies of the features and " \
           "libsvm's kernel cache of 0.1" in refused["message"]
    assert refused["seconds"] < 1


def test_the_refusal_travels_between_processes_with_its_fields():
    import pickle

    error = SolverOutOfMemory("harmonic", "1,000 nodes of 10 classes", 3 * 2**30, 2**30)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.method, copy.what, copy.need, copy.available) == (error.method, error.what, error.need,
                                                                   error.available)
    assert str(copy) == str(error)


def test_small_solves_and_an_unlimited_machine_are_not_refused():
    check_memory("harmonic", 2**20, "a small problem")  # below CHECK_FROM_BYTES: nothing read
    available = available_bytes()
    assert available is not None  # this machine's MemAvailable at least
    assert available > 0
    with pytest.raises(SolverOutOfMemory, match="needs about"):
        check_memory("harmonic", available + 2**40, "a problem one TiB too large")


def test_the_proc_files_say_what_psutil_says_and_psutil_answers_where_they_are_missing(monkeypatch, tmp_path):
    # The check reads /proc/meminfo and /proc/self/statm (importing psutil at a solve's door
    # cost 7-27 ms); psutil reads the same files, so the two agree, and psutil is the fallback.
    import psutil

    from solvers import _memory

    def agree():
        assert abs(_memory._machine_available() - psutil.virtual_memory().available) < 256 * 2**20
        assert abs(_memory._virtual_size() - psutil.Process().memory_info().vms) < 64 * 2**20

    agree()
    monkeypatch.setattr(_memory, "MEMINFO", tmp_path / "no-meminfo")
    monkeypatch.setattr(_memory, "STATM", tmp_path / "no-statm")
    agree()
