"""Schedules, end to end, with nothing mocked: a real Prefect server started from this
venv, ``graphlabel serve`` with an interval job, and the scheduler's own run labelling a
real Kùzu store. This is the guard that a re-lock cannot bring back a server that
registers deployments but never schedules their runs (SQLAlchemy 2.1 beside Prefect 3.8.8:
"Can't evaluate bulk DML statement" every minute, no run created)."""

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from prefect_server import PrefectServer, stop

from graphstore import open_store

SERVE_SECONDS = 240
GRAPHLABEL = Path(sys.executable).with_name("graphlabel")


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory):
    with PrefectServer(tmp_path_factory.mktemp("prefect-server")) as server:
        yield server


def ingest_moons(tmp_path: Path, store: str) -> None:
    from sklearn.datasets import make_moons

    X, y = make_moons(200, noise=0.08, random_state=0)
    frame = pd.DataFrame({"id": [f"m{i}" for i in range(200)], "x": X[:, 0], "y": X[:, 1]})
    frame["label"] = np.where(np.arange(200) < 12, np.where(y == 0, "upper", "lower"), "")
    frame.to_csv(tmp_path / "moons.csv", index=False)
    done = subprocess.run([str(GRAPHLABEL), "ingest", str(tmp_path / "moons.csv"), "--dataset", "moons",
                           "--key", "id", "--features", "x,y", "--label", "label", "--store", store],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@dataclass(frozen=True)
class Served:
    """A ``graphlabel serve`` process, the file it prints to, and its jobs' store."""

    process: subprocess.Popen
    log: Path
    store: str

    def said(self) -> str:
        return self.log.read_text(errors="replace")


def ingest_one_blob(tmp_path: Path, store: str) -> None:
    """60 nodes of one blob, 4 of them labelled (1 'a', 3 'b'): mincut's labelling of them is
    no better than guessing 'b' (tests/test_bad_input.py's test_09)."""
    from test_bad_input import two_blobs

    two_blobs(labelled=4, gap=0.0).to_csv(tmp_path / "blob.csv", index=False)
    done = subprocess.run([str(GRAPHLABEL), "ingest", str(tmp_path / "blob.csv"), "--dataset", "blob",
                           "--key", "id", "--features", "x*", "--label", "label", "--store", store],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@contextmanager
def serving(server: PrefectServer, tmp_path: Path, jobs: str, ingest=ingest_moons, **env: str) -> Iterator[Served]:
    """``graphlabel serve`` of ``jobs`` (``[[jobs]]`` tables) on a new store that ``ingest``
    fills (the 200 moons), against ``server`` with ``env`` added; stopped (as ``systemctl
    stop`` does) when the block ends."""
    store = str(tmp_path / "store")
    ingest(tmp_path, store)
    config = tmp_path / "schedule.toml"
    config.write_text(f'store = "{store}"\n\n{jobs}')
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(GRAPHLABEL), "serve", "--config", str(config)], cwd=tmp_path,
                                   env=server.env(**env), stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            yield Served(process, log, store)
        finally:
            stop(process)


def flow_runs(server: PrefectServer) -> list[dict]:
    return server.post("/flow_runs/filter", {"sort": "EXPECTED_START_TIME_ASC", "limit": 200})


def test_an_interval_job_runs_on_its_own_and_writes_predictions(prefect_server, tmp_path):
    completed = None
    with serving(prefect_server, tmp_path, '[[jobs]]\nname = "moons-often"\ndataset = "moons"\ninterval = 15\nk = 6\n'
                 'holdout = 0.25\n', PREFECT_RUNNER_POLL_FREQUENCY="2") as served:
        deadline = time.monotonic() + SERVE_SECONDS
        while time.monotonic() < deadline and completed is None:
            time.sleep(2)
            assert served.process.poll() is None, served.said()
            runs = flow_runs(prefect_server)
            completed = next((r for r in runs if r["auto_scheduled"] and r["state_type"] == "COMPLETED"), None)
            failed = [r for r in runs if r["state_type"] in ("FAILED", "CRASHED")]
            assert not failed, (failed[0]["state"], served.said()[-3000:])
    assert completed is not None, (
        f"no scheduled run completed in {SERVE_SECONDS} s; runs: "
        f"{[(r['name'], r['state_type'], r['auto_scheduled']) for r in flow_runs(prefect_server)]}\n"
        f"server log:\n{prefect_server.log_text()}\nserve log:\n{served.said()[-3000:]}")
    deployment = prefect_server.post("/deployments/filter", {"deployments": {"name": {"any_": ["moons-often"]}}})
    assert [d["id"] for d in deployment] == [completed["deployment_id"]]
    assert {"graphlabel", "moons", "harmonic", "full", "scheduled"} <= set(completed["tags"])
    with open_store(served.store) as graph_store:
        written = graph_store.query(
            "MATCH (e:Entity) WHERE e.dataset = 'moons' RETURN e.label_run_id AS run, e.predicted_label AS p")
        runs = graph_store.read_runs(dataset="moons")
    # the run the scheduler made wrote every node's prediction, and its LabelRun says completed
    assert completed["id"] in set(runs["run_id"])
    mine = runs.set_index("run_id").loc[completed["id"]]
    assert mine["status"] == "completed"
    assert mine["n_nodes"] == 200
    assert written["p"].notna().all()
    assert len(written) == 200
    assert set(written["run"]) <= set(runs["run_id"])


def test_runs_of_one_job_wait_their_turn_instead_of_meeting_at_the_store(prefect_server, tmp_path):
    # a job due every 2 s whose runs take longer (a served run's process alone starts in
    # seconds): without the deployment's limit its runs met at the embedded store's lock,
    # waited, and failed with StoreLocked (3 of 8 under a real server, lcsnc on */2 cron)
    def mine() -> list[dict]:
        return prefect_server.deployment_runs("moons-crowded")

    with serving(prefect_server, tmp_path, '[[jobs]]\nname = "moons-crowded"\ndataset = "moons"\ninterval = 2\nk = 6\n'
                 'full = true\n', PREFECT_RUNNER_POLL_FREQUENCY="2", GRAPHLABEL_LOCK_TIMEOUT="5") as served:
        deadline = time.monotonic() + SERVE_SECONDS
        while time.monotonic() < deadline:
            time.sleep(2)
            assert served.process.poll() is None, served.said()
            runs = mine()
            failed = [r for r in runs if r["state_type"] in ("FAILED", "CRASHED")]
            assert not failed, (failed[0]["state"], served.said()[-3000:])
            if sum(r["state_type"] == "COMPLETED" for r in runs) >= 3:
                break
    runs = mine()
    done = sorted((r for r in runs if r["state_type"] == "COMPLETED"), key=lambda r: r["start_time"])
    others = [(r["name"], r["state_name"]) for r in runs if r["state_type"] not in ("SCHEDULED", "COMPLETED")]
    assert len(done) >= 3, (
        f"{len(done)} runs completed in {SERVE_SECONDS} s; the others: {others}"
        f", {sum(r['state_type'] == 'SCHEDULED' for r in runs)} scheduled\n"
        f"server log:\n{prefect_server.log_text()[-3000:]}\nserve log:\n{served.said()[-5000:]}")
    # one at a time: each completed run started after the one before it ended
    for before, after in zip(done, done[1:]):
        assert after["start_time"] >= before["end_time"], (before["name"], after["name"])
    # and the runs were due faster than they ran: the limit had something to hold back
    assert done[-1]["end_time"] > done[0]["expected_start_time"]
    assert any(r["state_name"] in ("AwaitingConcurrencySlot", "Scheduled", "Late") for r in runs) or (
        len(runs) > len(done))
    # a waiting run is said once, as waiting: Prefect's runner logged "Aborted submission of
    # flow run ...: Server returned a non-pending state 'SCHEDULED'" for it at every poll
    said = served.said()
    assert "non-pending state 'SCHEDULED'" not in said
    waiting = re.findall(r"job 'moons-crowded': flow run '([0-9a-f-]+)' is due and waits for its job's run in"
                         r" progress", said)
    assert waiting, said[-3000:]
    assert len(waiting) == len(set(waiting)), waiting


def test_a_cron_jobs_next_run_is_the_one_the_server_schedules_and_a_job_that_cannot_run_is_said(
        prefect_server, tmp_path):
    """``serve`` shows a cron job's next run as the server's scheduler computes it, and says
    at start which job could not run now (served all the same: what it lacks may be
    ingested before it is due)."""
    scheduled: dict[str, list[dict]] = {}
    jobs = ('[[jobs]]\nname = "moons-nightly"\ndataset = "moons"\ncron = "17 4 * * *"\n\n'
            '[[jobs]]\nname = "moons-typo"\ndataset = "moon"\ncron = "17 5 * * 1-5"\n')
    with serving(prefect_server, tmp_path, jobs, COLUMNS="200") as served:
        deadline = time.monotonic() + SERVE_SECONDS
        while time.monotonic() < deadline and not (scheduled and all(scheduled.values())):
            time.sleep(2)
            assert served.process.poll() is None, served.said()
            scheduled = {name: sorted((r for r in prefect_server.deployment_runs(name)
                                       if r["state_type"] == "SCHEDULED"), key=lambda r: r["expected_start_time"])
                         for name in ("moons-nightly", "moons-typo")}
    said = served.said()
    assert all(scheduled.values()), f"the server scheduled no run of a job in {SERVE_SECONDS} s:\n{said[-3000:]}"
    shown = re.findall(r"next run\s+│ (\w{3} \d{4}-\d\d-\d\d \d\d:\d\d) UTC", said)
    firsts = [pd.Timestamp(scheduled[name][0]["expected_start_time"]) for name in ("moons-nightly", "moons-typo")]
    assert shown == [f"{first:%a %Y-%m-%d %H:%M}" for first in firsts], (shown, firsts)
    assert [(first.hour, first.minute) for first in firsts] == [(4, 17), (5, 17)]
    line = " ".join(said.split())
    assert ("warning: job 'moons-typo' cannot run now: no dataset 'moon' in the store (no node belongs to it);"
            " its datasets: 'moons'; served all the same, its runs fail until that changes") in line
    assert "'moons-nightly' cannot run" not in line


def test_a_served_run_that_meets_an_expected_error_logs_it_once_without_a_crash_line(prefect_server, tmp_path):
    """A scheduled run on a dataset the store does not hold fails with one error line in
    its log and in ``serve``'s output: Prefect's engine added "Engine execution exited with
    unexpected exception" under it, which reads as a crash of graphlabel (a newcomer's walk)."""
    def run_logs(run: dict) -> list[str]:
        return [log["message"] for log in prefect_server.post(
            "/logs/filter", {"logs": {"flow_run_id": {"any_": [run["id"]]}}, "sort": "TIMESTAMP_ASC"})]

    ended: list[dict] = []
    with serving(prefect_server, tmp_path, '[[jobs]]\nname = "moons-misspelt"\ndataset = "moon"\ninterval = 15\n',
                 PREFECT_RUNNER_POLL_FREQUENCY="2") as served:
        deadline = time.monotonic() + SERVE_SECONDS
        # until a second run has ended: the job runs one at a time, so the first run's process
        # had exited before it, and every line that process logged was sent
        while time.monotonic() < deadline and len(ended) < 2:
            time.sleep(2)
            assert served.process.poll() is None, served.said()
            ended = [r for r in prefect_server.deployment_runs("moons-misspelt")
                     if r["state_type"] in ("FAILED", "CRASHED", "COMPLETED")]
    said = served.said()
    assert len(ended) >= 2, f"fewer than two runs of the job ended in {SERVE_SECONDS} s:\n{said[-3000:]}"
    failed = min(ended, key=lambda run: run["end_time"])
    assert failed["state_type"] == "FAILED", failed["state"]
    logs = run_logs(failed)
    (error,) = [message for message in logs if message.startswith("Encountered exception")]
    assert "NoSuchDataset(\"no dataset 'moon' in the store" in error, logs
    for text in ("Engine execution", "Traceback"):
        assert not any(text in message for message in logs), logs
        assert text not in said, said[-3000:]


def test_a_served_labelling_no_better_than_a_guess_is_said_once_by_the_run(prefect_server, tmp_path):
    """The run says a labelling no better than a guess in its log and report, its class
    named. The solver's Python warning is left out of a served run's process: serve's output
    showed it a second time, as Python prints it ("solvers/registry.py:96:
    DegenerateLabelingWarning: mincut: class 1 ..." and the source line "return
    function(problem, **params)")."""
    job = '[[jobs]]\nname = "blob-mincut"\ndataset = "blob"\nsolver = "mincut"\nk = 5\ninterval = 15\n'
    with serving(prefect_server, tmp_path, job, ingest=ingest_one_blob, PREFECT_RUNNER_POLL_FREQUENCY="2") as served:
        deadline = time.monotonic() + SERVE_SECONDS
        while time.monotonic() < deadline and "published the run's report" not in served.said():
            time.sleep(2)
            assert served.process.poll() is None, served.said()
        time.sleep(2)  # the run's last lines
    said = served.said()
    assert "published the run's report" in said, said[-3000:]
    lines = [line for line in said.splitlines() if "a labelling no better than guessing" in line]
    assert len(lines) == 1, said[-3000:]
    assert "| WARNING | Flow run 'blob · mincut" in lines[0], lines
    assert "mincut: class 'b' takes 100.0% of the unlabelled nodes" in lines[0], lines
    assert "blob · mincut: no better than guessing 'b'; 0 labels flagged" in said, said[-3000:]  # the headline
    assert "DegenerateLabelingWarning" not in said, said[-3000:]
    assert "return function(" not in said, said[-3000:]
