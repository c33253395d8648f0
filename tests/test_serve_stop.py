"""Stopping ``graphlabel serve`` while a scheduled run is in progress, on a real Prefect
server with its scheduler on and a real embedded store (graphlabel/serving.py):

- SIGTERM to serve's process group, as a shell's ``kill -- -PGID`` sends it: the run is
  cancelled, its deployment's slot freed, and serve ends with one line and no traceback
  (Prefect's own ``serve`` printed an asyncio traceback and left the run Running, holding
  the slot); the run's process, in a session of its own, gets no signal but serve's cancel;
- a second signal: serve leaves at once and kills the run's process;
- ``kill -9`` of serve and its runs and a restart of the Prefect server, as a machine that
  goes down: the run is left Running, holding its slot with no lease left to run out, and the
  next serve ends it as Crashed, says so, and the job's next run starts at once (it never
  would otherwise: checked by hand, the slot was still held 360 s after the restart); of
  the runs that came due meanwhile, only the newest runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prefect_server import PrefectServer, stop
from test_progress import blobs

from flows.labelling import STOPPED
from graphlabel.serving import UNRECORDED_SECONDS, why_over
from graphstore import open_store
from labelling.liveness import INTERRUPTED_PREFIX

GRAPHLABEL = Path(sys.executable).with_name("graphlabel")
JOB = "blobs-often"


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory):
    with PrefectServer(tmp_path_factory.mktemp("prefect-server")) as server:
        yield server


@pytest.fixture(scope="module")
def served(prefect_server, tmp_path_factory):
    """A store with 60,000 nodes (a full run takes seconds: long enough to be stopped in)
    and a schedule running its job every 5 s."""
    folder = tmp_path_factory.mktemp("served")
    store = str(folder / "store")
    done = subprocess.run([str(GRAPHLABEL), "ingest", str(blobs(folder / "blobs.parquet", 60_000)), "--dataset",
                           "blobs", "--key", "id", "--features", "x*", "--label", "label", "--store", store, "-q"],
                          cwd=folder, env=prefect_server.env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    config = folder / "schedule.toml"
    config.write_text(f'store = "{store}"\n\n[[jobs]]\nname = "{JOB}"\ndataset = "blobs"\ninterval = 5\n'
                      'full = true\n')
    return folder, config, store


def start_serve(server: PrefectServer, folder: Path, config: Path, log: Path) -> subprocess.Popen:
    with log.open("ab") as out:
        return subprocess.Popen([str(GRAPHLABEL), "serve", "--config", str(config)], cwd=folder,
                                env=server.env(PREFECT_RUNNER_POLL_FREQUENCY="1", COLUMNS="200"), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def job_runs(server: PrefectServer) -> list[dict]:
    return server.deployment_runs(JOB)


def job_slots(server: PrefectServer) -> int:
    deployment = server.post("/deployments/filter", {"deployments": {"name": {"any_": [JOB]}}})[0]
    limits = server.post("/v2/concurrency_limits/filter", {})  # a deployment's limit is named after it
    return next(limit["active_slots"] for limit in limits if limit["name"] == f"deployment:{deployment['id']}")


def wait_for(what, seconds: float, serve: subprocess.Popen, log: Path):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        assert serve.poll() is None, log.read_text()[-4000:]
        time.sleep(0.2)
    raise AssertionError(f"not within {seconds} s; serve log:\n{log.read_text()[-4000:]}")


def running_run(server: PrefectServer) -> dict | None:
    return next((run for run in job_runs(server) if run["state_type"] == "RUNNING"), None)


def due_runs(server: PrefectServer) -> list[dict]:
    """The job's runs the scheduler made that are due and not started, oldest first."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    return [run for run in job_runs(server) if run["state_type"] == "SCHEDULED" and run["auto_scheduled"]
            and run["expected_start_time"][:19] < now]


def running_task(server: PrefectServer, flow_run_id: str) -> bool:
    tasks = server.post("/task_runs/filter", {"flow_runs": {"id": {"any_": [flow_run_id]}}})
    return any(task["state_type"] == "RUNNING" for task in tasks)


def children(pid: int) -> list[int]:
    """The processes ``pid`` started that still run: serve's runs."""
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie left for init to reap has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def signal_mid_run(server: PrefectServer, served, log: Path, sent: signal.Signals, in_task: bool = False,
                   times: int = 1, with_runs: bool = False) -> tuple[dict, int, dict[int, int]]:
    """Serve the job and send ``sent`` ``times`` times (the next once serve said it stops) to
    serve's whole process group once a run is Running; with ``in_task``, once its LabelRun
    is written and the server has a later task of it running; ``with_runs``, to the runs'
    process groups too.
    Returns that run, serve's exit status and the process group of each run process serve
    had started, by process."""
    folder, config, _ = served
    serve = start_serve(server, folder, config, log)
    try:
        run = wait_for(lambda: running_run(server), 180, serve, log)
        if in_task:
            wait_for(lambda: "Task run 'record-run: running' - Finished" in log.read_text()
                     and running_task(server, run["id"]), 60, serve, log)
        runs = {process: os.getpgid(process) for process in children(serve.pid)}
        for time_ in range(times):
            if time_:  # the next once serve has taken the last: two close together merge into one
                wait_for(lambda: f"{sent.name}: stopping; runs in progress are cancelled" in log.read_text(), 60,
                         serve, log)
            os.killpg(serve.pid, sent)
        for process in runs if with_runs else ():
            os.killpg(process, sent)
        serve.wait(90)
    finally:
        stop(serve)
    return run, serve.returncode, runs


def test_sigterm_to_serve_cancels_the_run_in_progress_and_ends_in_one_line(prefect_server, served):
    folder, _, store = served
    log = folder / "sigterm.log"
    # once its LabelRun is written, so that the record's error can be read
    run, status, runs = signal_mid_run(prefect_server, served, log, signal.SIGTERM, in_task=True)
    assert runs
    assert all(group == process for process, group in runs.items())  # sessions of their own
    output = log.read_text()
    assert status == 0, output[-4000:]
    # the run it stopped is counted, whoever recorded its failure (its own process, mostly)
    assert output.rstrip().splitlines()[-1] == (
        "stopped (SIGTERM): the jobs' schedules are paused until serve starts again; it stopped 1 run in"
        " progress, recorded as failed"), output[-4000:]
    assert "Traceback" not in output, output[-4000:]
    assert "RuntimeWarning" not in output, output[-4000:]
    ended = next(r for r in job_runs(prefect_server) if r["id"] == run["id"])
    assert ended["state_type"] in ("CANCELLED", "CRASHED"), ended["state"]
    assert job_slots(prefect_server) == 0
    with open_store(store) as graph_store:
        record = graph_store.read_runs(dataset="blobs", run_id=run["id"])
    assert list(record["status"]) == ["failed"]
    # said as a stop, where the report read "failed: TerminationSignal" alone (a walk through the UI);
    # or, when the run's process had no time to record it, as serve's mark of an interrupted run
    error = record["error"].iloc[0]
    assert error == STOPPED.format(signal="SIGTERM") or error.startswith(INTERRUPTED_PREFIX), error


def test_the_next_serve_ends_a_run_a_killed_serve_left_running(prefect_server, served):
    folder, config, _ = served
    # killed once its LabelRun names the process to check, in a task the server has as
    # running; nothing gets to clean up
    run, _, _ = signal_mid_run(prefect_server, served, folder / "kill.log", signal.SIGKILL, in_task=True,
                               with_runs=True)
    time.sleep(1)
    left = next(r for r in job_runs(prefect_server) if r["id"] == run["id"])
    assert left["state_type"] == "RUNNING"  # what a killed serve leaves: the scenario holds
    assert job_slots(prefect_server) == 1
    # the machine went down: the Prefect server restarts too (same port and database), and
    # forgets the slot's lease, so no lease would ever run out to free the slot
    prefect_server.__exit__(None, None, None)
    prefect_server.__enter__()
    assert job_slots(prefect_server) == 1

    # the scheduler goes on making the job's runs meanwhile: let three come due
    deadline = time.monotonic() + 60
    while len(missed := due_runs(prefect_server)) < 3:
        assert time.monotonic() < deadline, job_runs(prefect_server)
        time.sleep(1)

    log = folder / "restart.log"
    serve = start_serve(prefect_server, folder, config, log)
    try:
        completed = wait_for(lambda: next((r for r in job_runs(prefect_server) if r["state_type"] == "COMPLETED"
                                           and r["id"] != run["id"] and r["start_time"] > left["start_time"]),
                                          None), 150, serve, log)
    finally:
        stop(serve)
    output = log.read_text()
    ended = next(r for r in job_runs(prefect_server) if r["id"] == run["id"])
    assert ended["state_type"] == "CRASHED", ended["state"]
    assert ended["state"]["message"].startswith("ended by the next graphlabel serve: ")
    # what the UI shows of it: no task drawn running for good, and the reason in its log
    tasks = prefect_server.post("/task_runs/filter", {"flow_runs": {"id": {"any_": [run["id"]]}}})
    assert tasks
    assert not {task["state_type"] for task in tasks} & {"PENDING", "RUNNING"}, tasks
    logs = prefect_server.post("/logs/filter", {"logs": {"flow_run_id": {"any_": [run["id"]]}}})
    assert ended["state"]["message"] in [log["message"] for log in logs]
    said = next(line for line in output.splitlines() if line.startswith("ended run "))
    assert run["id"] in said
    assert f"of job {JOB!r}, left Running by a serve that was stopped: " in said
    assert completed["state_type"] == "COMPLETED"
    # the runs missed meanwhile were skipped but for the newest: each would repeat the next
    states = {r["id"]: r for r in job_runs(prefect_server)}
    for skipped in missed[:-1]:
        assert states[skipped["id"]]["state_type"] == "CANCELLED", states[skipped["id"]]["state"]
        assert states[skipped["id"]]["state"]["message"].startswith(
            "skipped: missed while graphlabel serve was not running; the run due at ")
    said = next(line for line in output.splitlines() if line.startswith(f"job {JOB!r}: skipped "))
    assert f" run(s) missed while serve was not running (due {missed[0]['expected_start_time'][:10]} " in said


# -- the rule, without a server -----------------------------------------------------------


def test_why_over_reads_the_run_record_or_the_time_without_one():
    import pandas as pd

    now = pd.Timestamp("2026-11-29 12:00:00")
    young, old = now - pd.Timedelta(seconds=10), now - pd.Timedelta(seconds=UNRECORDED_SECONDS + 1)
    assert why_over(young, None, now, host="here") is None
    assert why_over(old, None, now, host="here").startswith("it never recorded its run in the store")
    gone = {"host": "here", "pid": 2 ** 22 + 12345, "started": 0.0}
    assert why_over(young, {"status": "running", "process": gone}, now, host="here") == (
        f"its process (pid {gone['pid']} on here) is gone")
    from graphstore.processes import this_process

    alive = this_process()
    assert why_over(old, {"status": "running", "process": alive}, now, host=alive["host"]) is None
    elsewhere = {**alive, "host": "another-host"}
    assert why_over(old, {"status": "running", "process": elsewhere}, now, host=alive["host"]) is None
    interrupted = {"status": "failed", "process": elsewhere, "error": "interrupted: no sign of life on another-host"}
    assert why_over(old, interrupted, now, host=alive["host"]) == "no sign of life on another-host"


# -- the rule on a real server, with flow runs made through its API -------------------------


def test_left_runs_are_ended_only_when_over_and_a_held_store_is_said(prefect_server, served):
    """A flow run of a registered job set Running through the server's API, without a
    LabelRun: left alone while it is young, ended once UNRECORDED_SECONDS have passed
    (``now`` moved on); while another process holds the store it is not judged, and a line
    says why."""
    import pandas as pd
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.states import Running
    from store_lock import hold_lock

    from graphlabel.schedule import deployments, parse_schedule
    from graphlabel.serving import end_left_runs

    _, _, store = served
    (job,) = parse_schedule({"store": store, "jobs": [{"name": "blobs-by-hand", "dataset": "blobs",
                                                       "cron": "0 3 1 1 *"}]}, "test")
    with temporary_settings(updates={PREFECT_API_URL: prefect_server.api_url}), \
            get_client(sync_client=True) as client:
        run = client.create_flow_run_from_deployment(deployments([job])[0].apply())
        client.set_flow_run_state(run.id, Running(), force=True)
        later = pd.Timestamp.now(tz="UTC").tz_localize(None) + pd.Timedelta(seconds=UNRECORDED_SECONDS + 30)

        holder = hold_lock(store, 60)
        try:
            ended, unjudged = end_left_runs([job], now=later)
        finally:
            holder.kill()
            holder.wait()
        assert ended == []
        assert len(unjudged) == 1
        assert unjudged[0].startswith("job 'blobs-by-hand': 1 unfinished run(s) left as they are, since whether"
                                      " they still run cannot be told: ")

        assert end_left_runs([job]) == ([], [])  # young: it may be starting
        ended, unjudged = end_left_runs([job], now=later)
        assert [left.flow_run_id for left in ended] == [str(run.id)]
        assert ended[0].reason.startswith("it never recorded its run in the store")
        assert unjudged == []
        assert client.read_flow_run(run.id).state.type.value == "CRASHED"


def test_a_stop_cancels_the_runs_going_and_leaves_a_run_that_ended_as_it_ended(prefect_server, served):
    """Two runs of a job, each with a real process the runner tracks: one Completed whose
    process is still exiting (a 2-s sleep), one Running (a 600-s sleep). Prefect 3.8.8's own
    ``cancel_all`` killed both and forced Cancelled onto both: a run that came to its end as
    serve was stopped was shown Cancelled while its LabelRun said completed (1 stop in 3
    with the machine loaded, tests/test_schedule_server.py)."""
    import asyncio

    import anyio
    from prefect.client.orchestration import get_client
    from prefect.runner._process_manager import ProcessHandle
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.states import Completed, Running

    from graphlabel.schedule import deployments, parse_schedule
    from graphlabel.serving import _runner

    _, _, store = served
    (job,) = parse_schedule({"store": store, "jobs": [{"name": "blobs-stopped", "dataset": "blobs",
                                                       "cron": "0 3 1 1 *"}]}, "test")

    async def stop(sleeps: dict) -> dict:
        runner = _runner()
        async with runner:
            processes = {}
            for run_id, seconds in sleeps.items():
                processes[run_id] = await anyio.open_process(["sleep", str(seconds)])
                await runner._process_manager.add(run_id, ProcessHandle(processes[run_id]))
            await runner.cancel_all()
            with anyio.fail_after(30):
                return {run_id: await process.wait() for run_id, process in processes.items()}

    with temporary_settings(updates={PREFECT_API_URL: prefect_server.api_url}), \
            get_client(sync_client=True) as client:
        deployment = deployments([job])[0].apply()
        ended, going = (client.create_flow_run_from_deployment(deployment) for _ in range(2))
        for run in (ended, going):
            client.set_flow_run_state(run.id, Running(), force=True)
        client.set_flow_run_state(ended.id, Completed(), force=True)

        exits = asyncio.run(stop({ended.id: 2, going.id: 600}))

        assert exits[ended.id] == 0  # left to exit by itself
        assert exits[going.id] < 0   # killed
        assert client.read_flow_run(ended.id).state.type.value == "COMPLETED"
        assert client.read_flow_run(going.id).state.type.value == "CANCELLED"


def test_a_run_the_runner_left_cancelling_ends_cancelled(prefect_server, served):
    """The runner's cancel may end without its Cancelled (it skips a run it takes for
    concluded), and its watch for Cancelling states must not start a second cancel: the
    stop ends the run as Cancelled once its process has exited, and cancels it once."""
    import asyncio

    import anyio
    from prefect.client.orchestration import get_client
    from prefect.runner._process_manager import ProcessHandle
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.states import Running

    from graphlabel.schedule import deployments, parse_schedule
    from graphlabel.serving import STOP_MESSAGE, _runner

    _, _, store = served
    (job,) = parse_schedule({"store": store, "jobs": [{"name": "blobs-watched", "dataset": "blobs",
                                                       "cron": "0 3 1 1 *"}]}, "test")

    cancels = []

    async def stop(run_id) -> None:
        runner = _runner()

        async def skipped(flow_run, state_msg=None) -> None:  # the runner's cancel, ending with no state
            cancels.append(flow_run.id)

        async with runner:
            runner._cancellation_manager.cancel = skipped
            process = await anyio.open_process(["sleep", "1"])
            await runner._process_manager.add(run_id, ProcessHandle(process))
            await runner.cancel_all()
            await asyncio.sleep(2.0)  # the Cancelling state's event reaches the runner's watch

    with temporary_settings(updates={PREFECT_API_URL: prefect_server.api_url}), \
            get_client(sync_client=True) as client:
        run = client.create_flow_run_from_deployment(deployments([job])[0].apply())
        client.set_flow_run_state(run.id, Running(), force=True)
        asyncio.run(stop(run.id))
        state = client.read_flow_run(run.id).state
        assert state.type.value == "CANCELLED", state
        assert state.message == STOP_MESSAGE
        assert cancels == [run.id]


def test_runs_the_runners_cancel_did_not_end_are_signalled_by_the_stop_at_once(prefect_server, served):
    """The runner's cancel may skip its signal (it took the run for concluded): the stop
    sends SIGTERM itself once CANCELLED_RUN_SECONDS have passed, and the run ends Cancelled.
    Two such runs are waited for side by side, not one after the other (before, the second
    got its SIGTERM after twice CANCELLED_RUN_SECONDS)."""
    import asyncio

    import anyio
    from prefect.client.orchestration import get_client
    from prefect.runner._process_manager import ProcessHandle, create_isolated_termination_scope
    from prefect.settings import PREFECT_API_URL, temporary_settings
    from prefect.states import Running

    from graphlabel.schedule import deployments, parse_schedule
    from graphlabel.serving import CANCELLED_RUN_SECONDS, _runner

    _, _, store = served
    (job,) = parse_schedule({"store": store, "jobs": [{"name": "blobs-skipped", "dataset": "blobs",
                                                       "cron": "0 3 1 1 *"}]}, "test")

    async def stop(run_ids) -> list[tuple[int, float]]:
        runner = _runner()

        async def skipped(*args, **kwargs) -> None:  # the runner's cancel, sending no signal
            return None

        async with runner:
            runner._cancellation_manager.cancel = skipped
            processes = []
            for run_id in run_ids:
                process = await anyio.open_process(["sleep", "600"], start_new_session=True)
                await runner._process_manager.add(run_id, ProcessHandle(
                    process, termination_scope=create_isolated_termination_scope(process.pid)))
                processes.append(process)
            started = time.monotonic()
            stopping = asyncio.ensure_future(runner.cancel_all())
            ended = []
            with anyio.fail_after(CANCELLED_RUN_SECONDS * 2 + 10):
                for process in processes:
                    status = await process.wait()
                    ended.append((status, time.monotonic() - started))
                await stopping
            return ended

    with temporary_settings(updates={PREFECT_API_URL: prefect_server.api_url}), \
            get_client(sync_client=True) as client:
        deployment = deployments([job])[0].apply()
        runs = [client.create_flow_run_from_deployment(deployment) for _ in range(2)]
        for run in runs:
            client.set_flow_run_state(run.id, Running(), force=True)
        ended = asyncio.run(stop([run.id for run in runs]))
        for status, seconds in ended:
            assert status == -signal.SIGTERM
            # side by side: under 2 × CANCELLED_RUN_SECONDS, where one after the other ends the
            # second (the slack is for a loaded server's API calls before each wait)
            assert CANCELLED_RUN_SECONDS <= seconds < 1.8 * CANCELLED_RUN_SECONDS, ended
        for run in runs:
            assert client.read_flow_run(run.id).state.type.value == "CANCELLED"


def test_a_second_signal_kills_the_runs_processes(prefect_server):
    """A run's process, in a session of its own, gets none of the signals sent to serve's
    process group: when serve is asked to stop a second time it kills the runs' processes
    before it leaves (a real process the runner tracks, as its starter registers it)."""
    import asyncio
    import uuid

    import anyio
    from prefect.runner._process_manager import ProcessHandle, create_isolated_termination_scope
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from graphlabel.serving import _runner

    async def ask_twice() -> int:
        runner = _runner()
        async with runner:
            process = await anyio.open_process(["sleep", "600"], start_new_session=True)
            await runner._process_manager.add(uuid.uuid4(), ProcessHandle(
                process, termination_scope=create_isolated_termination_scope(process.pid)))
            runner.stop_signal = "SIGINT"  # asked once already
            with pytest.raises(KeyboardInterrupt):
                runner.stop_on("SIGINT")
            with anyio.fail_after(10):
                return await process.wait()

    with temporary_settings(updates={PREFECT_API_URL: prefect_server.api_url}):
        assert asyncio.run(ask_twice()) == -signal.SIGKILL


def test_a_second_signal_leaves_at_once(prefect_server, served):
    folder = served[0]
    log = folder / "twice.log"
    # once the LabelRun names the process: the next serve can tell the run is over
    run, status, runs = signal_mid_run(prefect_server, served, log, signal.SIGINT, in_task=True, times=2)
    output = log.read_text()
    assert status == 1, output[-4000:]
    assert output.rstrip().splitlines()[-1] == (
        "stopped at once (asked twice): runs in progress may be left unfinished; the next serve ends them")
    deadline = time.monotonic() + 10
    while not all(gone(process) for process in runs):
        assert time.monotonic() < deadline, (runs, output[-4000:])
        time.sleep(0.2)
