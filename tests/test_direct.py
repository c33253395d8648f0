"""Commands without a Prefect server: the flows' functions run directly, no temporary
server is started (nor Prefect imported), and the run is recorded on the store."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import flows.direct
from flows.direct import Task
from graphstore import open_store

GRAPHLABEL = str(Path(sys.executable).with_name("graphlabel"))


def no_server_env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "GRAPHLABEL_"))}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), COLUMNS="80", **extra)
    return env


def graphlabel(tmp_path, *args, env=None):
    return subprocess.run([GRAPHLABEL, *args, "--store", str(tmp_path / "store")], cwd=tmp_path,
                          env=env or no_server_env(tmp_path), capture_output=True, text=True, timeout=300)


def test_every_command_runs_without_a_server_and_starts_none(tmp_path):
    from sklearn.datasets import make_blobs

    X, y = make_blobs(300, centers=3, random_state=0)
    frame = pd.DataFrame(X, columns=["x0", "x1"])
    frame.insert(0, "key", [f"k{i}" for i in range(300)])
    frame.insert(1, "label", np.where(np.arange(300) < 30, np.array(["a", "b", "c"])[y], None))
    frame.to_csv(tmp_path / "blobs.csv", index=False)
    steps = [["ingest", "blobs.csv", "--dataset", "blobs", "--key", "key", "--features", "x0,x1", "--label", "label"],
             ["build-graph", "--dataset", "blobs", "--k", "8"],
             ["label", "--dataset", "blobs", "--full"],
             ["label", "--dataset", "blobs"]]
    for step in steps:
        done = graphlabel(tmp_path, *step)
        assert done.returncode == 0, (step, done.stdout, done.stderr)
    # no temporary server: it would have made its database in PREFECT_HOME
    assert not (tmp_path / "prefect-home").exists() or not list((tmp_path / "prefect-home").glob("*.db"))
    with open_store(str(tmp_path / "store")) as store:
        runs = store.read_runs(dataset="blobs")
        written = store.query("MATCH (e:Entity) RETURN count(e.predicted_label) AS n")
    assert list(runs["status"]) == ["completed", "completed"]
    assert written["n"][0] == 300
    # the second run was incremental (nothing changed), and kept the graph it was given
    assert runs["metrics"].iloc[0]["incremental"] is True
    # both record the graph they used (built with k 8), not the label command's default
    assert [parameters["k"] for parameters in runs["parameters"]] == [8, 8]
    assert runs["metrics"].iloc[1]["full_run_reason"] == ("asked for (--full, --rebuild-graph, a schedule job's "
                                                          "full = true, or the demo)")


def test_a_command_without_a_server_never_imports_prefect(tmp_path):
    code = ("import sys\nfrom graphlabel.cli import app\ntry:\n    app(['label', '--dataset', 'nothing',"
            f" '--store', {str(tmp_path / 'store')!r}])\nexcept SystemExit as stop:\n"
            "    print(stop.code, 'prefect' in sys.modules, 'sklearn' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], env=no_server_env(tmp_path), capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.stdout.split()[-3:] == ["1", "False", "False"], done.stdout + done.stderr


def test_stages_retry_transient_errors_without_a_server():
    calls = []

    def flaky(error):
        calls.append(error)
        if len(calls) < 3:
            raise error
        return len(calls)

    stage = Task(flaky, "flaky", retry_delays=(0, 0, 0), retry_if=lambda e: isinstance(e, ConnectionError))
    assert stage(ConnectionError("down")) == 3
    calls.clear()
    with pytest.raises(ValueError):
        stage(ValueError("bad input"))  # not transient: one attempt
    assert len(calls) == 1
    calls.clear()
    always = Task(lambda: calls.append(1) or (_ for _ in ()).throw(ConnectionError("down")), "down",
                  retry_delays=(0, 0, 0), retry_if=lambda e: True)
    with pytest.raises(ConnectionError):
        always()
    assert len(calls) == 4  # the first attempt and three retries, as in a flow run


BUSY_BATCHES = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # a shell's background job ignores it
from flows.direct import Task

def busy(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        sum(range(10_000))

try:
    print("started", flush=True)
    Task(busy, "solve").map_named([60] * 4, ["a", "b", "c", "d"])
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_ends_batches_side_by_side_without_waiting_for_them(tmp_path):
    # without a server the batches run on threads; a thread pool that joins its threads at
    # exit would keep the command for the minute its batches take
    process = subprocess.Popen([sys.executable, "-c", BUSY_BATCHES], env=no_server_env(tmp_path), cwd=tmp_path,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline() == "started\n"
    time.sleep(1)
    process.send_signal(signal.SIGINT)
    start = time.perf_counter()
    stdout, _ = process.communicate(timeout=120)
    assert (stdout, process.returncode) == ("interrupted\n", 0)
    assert time.perf_counter() - start < 15


def failing_batches(gate_seconds):
    """A batch function whose item "bad" fails at once and whose other items each hold on
    (``gate_seconds``, or until the gate opens); ``started`` lists the items it began."""
    started, lock, gate = [], threading.Lock(), threading.Event()

    def batch(item):
        with lock:
            started.append(item)
        if item == "bad":
            raise ValueError("batch 'bad' failed")
        gate.wait(gate_seconds)
        return item

    return batch, started, gate


ITEMS = ["slow 1", "bad", "slow 2", "slow 3", "slow 4"]


def test_without_a_server_the_first_batch_to_fail_raises_at_once_and_no_later_batch_starts(monkeypatch):
    # the pool's map raised a batch's error only once every batch had run: a solver that
    # stopped at its time limit in the first batch kept the run going through all the others
    monkeypatch.setattr("flows.direct.usable_cpus", lambda: 2)
    batch, started, gate = failing_batches(120)
    start = time.perf_counter()
    try:
        with pytest.raises(ValueError, match="batch 'bad' failed"):
            Task(batch, "solve").map_named(ITEMS, ITEMS)
        assert time.perf_counter() - start < 60
        time.sleep(0.5)  # a batch the pool would still start has started
        assert {"bad", "slow 1"} <= set(started)
        assert {"slow 3", "slow 4"}.isdisjoint(started), started
    finally:
        gate.set()


@pytest.mark.usefixtures("prefect_harness")
def test_in_a_flow_run_the_first_batch_to_fail_raises_as_it_fails(monkeypatch):
    # results in the items' order waited for "slow 1" before "bad" said it had failed,
    # and meanwhile the runner started "slow 3"; taken as they end, the failure ends the flow
    # run and the runner starts no batch after it. The run's report links only to the batches
    # that ran: a batch never started has no task run, and its link showed an empty page
    from prefect import flow
    from prefect.client.orchestration import get_client

    from flows.direct import STAGE_RUNS
    from flows.runners import thread_runner

    monkeypatch.setattr("flows.runners.usable_cpus", lambda: 2)
    # the batches in progress hold on until the run has cancelled those not started (a fixed
    # hold could end first on a loaded machine, and a freed thread start "slow 3")
    batch, started, gate = failing_batches(60)
    stop_not_ended = flows.direct._stop_not_ended
    monkeypatch.setattr("flows.direct._stop_not_ended", lambda *args: (stop_not_ended(*args), gate.set()))
    solve, stages = Task(batch, "solve"), []

    @flow(task_runner=thread_runner())
    def batches():
        STAGE_RUNS.set(stages)
        return solve.map_named(ITEMS, ITEMS)

    with pytest.raises(ValueError, match="batch 'bad' failed"):
        batches()
    assert {"bad", "slow 1"} <= set(started)
    assert {"slow 3", "slow 4"}.isdisjoint(started), started
    assert sorted(name for name, _ in stages) == sorted(started)
    with get_client(sync_client=True) as client:
        states = {name: client.read_task_run(run_id).state_type.value for name, run_id in stages}
    assert states["bad"] == "FAILED"
    assert states["slow 1"] == "COMPLETED"


@pytest.mark.usefixtures("prefect_harness")
def test_ctrl_c_in_a_flow_run_says_it_waits_for_the_batches_in_progress(monkeypatch):
    # Prefect's thread runner waits for its task threads: a Ctrl-C during a server run sat
    # silent for as long as the batches took (27 s with mincut's default budget on a 130k-row
    # file, before the solves stopped at a Ctrl-C: tests/test_solve_stop.py)
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    from flows.runners import thread_runner

    monkeypatch.setattr("flows.runners.usable_cpus", lambda: 2)
    # hand the batches out slowly, as a loaded machine may: the Ctrl-C comes while the first two
    # run and the rest are still being handed out (a Ctrl-C there went past the line)
    record_stage = flows.direct._record_stage
    monkeypatch.setattr("flows.direct._record_stage", lambda *a: (record_stage(*a), time.sleep(0.5)))
    # the batches run until the run has counted those in progress: with a fixed sleep, on a
    # loaded machine the first batch had ended before the second began (CI counted 1, not 2)
    waiting_line, counted = flows.direct._waiting_line, threading.Event()

    def counting_line(*args):
        line = waiting_line(*args)
        return lambda in_progress: (line(in_progress), counted.set())

    monkeypatch.setattr("flows.direct._waiting_line", counting_line)
    started, both_running, run_ids = [], threading.Event(), set()

    def batch(item):
        from prefect.runtime import flow_run

        started.append(item)
        run_ids.add(flow_run.id)
        if len(started) == 2:
            both_running.set()
        counted.wait(60)
        return item

    solve = Task(batch, "solve")

    @flow(task_runner=thread_runner())
    def batches():
        return solve.map_named(ITEMS, ITEMS)

    def ctrl_c():
        if both_running.wait(60):
            os.kill(os.getpid(), signal.SIGINT)  # Python's handler raises KeyboardInterrupt in the main thread

    # a shell's background job (CI's, say) starts Python with SIGINT ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=ctrl_c, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            batches()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(started) == 2  # the three batches not started never start
    # the line is in the flow run's log on the server, where the UI shows it (and the console)
    (run_id,) = run_ids
    with get_client(sync_client=True) as client:
        deadline, said = time.monotonic() + 30, []
        while not said and time.monotonic() < deadline:
            logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])))
            said = [log.message for log in logs if log.message.startswith("interrupted")]
            time.sleep(0.5)
    assert said == ["interrupted: waiting for the 2 solve task run(s) in progress to stop (a solve stops at the"
                    " end of its current step)"]


def configured(tmp_path, **env):
    """``prefect_api_configured()`` in a fresh process (Prefect reads its settings once)."""
    code = ("import sys\nfrom flows.direct import prefect_api_configured\n"
            "print(prefect_api_configured(), 'prefect' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], env={**no_server_env(tmp_path), **env},
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    return tuple(word == "True" for word in done.stdout.split())


def test_a_server_is_configured_by_the_environment_or_a_profile(tmp_path):
    url = "http://127.0.0.1:4200/api"
    assert configured(tmp_path, PREFECT_API_URL=url) == (True, False)
    assert configured(tmp_path, PREFECT_API_URL="") == (False, False)
    # no settings file at all: no server, and Prefect is not even imported to ask
    assert configured(tmp_path) == (False, False)
    # a profile that sets the URL: Prefect's own settings decide
    (tmp_path / "prefect-home").mkdir()
    (tmp_path / "prefect-home" / "profiles.toml").write_text(
        f'active = "local"\n\n[profiles.local]\nPREFECT_API_URL = "{url}"\n')
    assert configured(tmp_path) == (True, True)
    assert configured(tmp_path, PREFECT_PROFILE="other") == (False, True)


def test_the_console_leaves_an_expected_errors_records_to_the_command():
    """With a server, a newcomer read an expected error three times: Prefect's "Encountered
    exception", its "Finished in state Failed(...)" and the command's own line. The console
    keeps the last two; a bug's record and a retry's notice stay."""
    import logging

    from flows.direct import _DATA_ERRORS_IN_ONE_LINE, _ExpectedErrorsLeftToTheCaller, _log_in_one_line
    from labelling.problems import NotEnoughLabels

    _log_in_one_line((NotEnoughLabels,))
    console = _ExpectedErrorsLeftToTheCaller((FileNotFoundError, NotEnoughLabels))

    def record(message: str, error: BaseException | None, level: int = logging.ERROR) -> logging.LogRecord:
        return logging.LogRecord("prefect.flow_runs", level, __file__, 1, message, None,
                                 None if error is None else (type(error), error, None))

    assert not console.filter(record("Encountered exception during execution", FileNotFoundError("no such file")))
    data_error = record("Task run failed with exception: NotEnoughLabels('one class')", NotEnoughLabels("one class"))
    assert _DATA_ERRORS_IN_ONE_LINE.filter(data_error)  # the run's logger takes its error off first
    assert data_error.exc_info is None
    assert not console.filter(data_error)  # and marks it
    assert console.filter(record("Encountered exception during execution", ZeroDivisionError("a bug")))
    assert console.filter(record("Task run failed with exception: StoreUnavailable() - Retry 1/3 will start in 2 s",
                                 None, logging.INFO))
    assert console.filter(record("Finished in state Failed('...')", None, logging.INFO))


def test_a_renamed_runs_last_line_carries_its_new_name():
    """Prefect's engine fixes a run's name in its logger when the run begins: a run named
    "d · harmonic · full" on its way ended with "Flow run 'd · harmonic' - Finished in
    state ..." on the console."""
    import logging

    from flows.direct import _RunsByTheirLastName

    console = _RunsByTheirLastName()

    def record(run: str, name: str) -> logging.LogRecord:
        made = logging.LogRecord("prefect.flow_runs", logging.INFO, __file__, 1, "a line", None, None)
        made.flow_run_id, made.flow_run_name = run, name
        return made

    lines = [record("r1", "d · harmonic"), record("r1", "d · harmonic · full"), record("r2", "e · nmf"),
             record("r1", "d · harmonic"), record("r2", "e · nmf"), record("r1", "other")]
    assert all(console.filter(line) for line in lines)  # it drops nothing
    assert [line.flow_run_name for line in lines] == [
        "d · harmonic", "d · harmonic · full", "e · nmf", "d · harmonic · full", "e · nmf", "other"]


def test_the_engines_exit_line_is_dropped_for_an_expected_error_and_kept_for_a_bug():
    """The filter on Prefect's run loggers: an expected error's record loses its traceback,
    and the engine's own line about it goes; a bug's records keep both (the served run's
    whole log is read in tests/test_schedule_server.py)."""
    import logging

    from flows.direct import _DATA_ERRORS_IN_ONE_LINE, ENGINE_EXIT_LINE, _log_in_one_line
    from labelling.problems import NotEnoughLabels

    _log_in_one_line((NotEnoughLabels,))

    def record(message: str, error: BaseException) -> logging.LogRecord:
        return logging.LogRecord("prefect.flow_runs", logging.ERROR, __file__, 1, message, None,
                                 (type(error), error, None))

    expected, bug = NotEnoughLabels("one class"), ZeroDivisionError("a bug")
    assert not _DATA_ERRORS_IN_ONE_LINE.filter(record(ENGINE_EXIT_LINE, expected))
    said = record("Encountered exception during execution", expected)
    assert _DATA_ERRORS_IN_ONE_LINE.filter(said)
    assert said.exc_info is None
    for message in (ENGINE_EXIT_LINE, "Encountered exception during execution"):
        kept = record(message, bug)
        assert _DATA_ERRORS_IN_ONE_LINE.filter(kept)
        assert kept.exc_info is not None
