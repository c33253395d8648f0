"""The stages' progress artifacts on a real Prefect server (flows/progress.py): the CLI's
`ingest` and `label --rebuild-graph` run as flow runs of a server started from this venv
(tests/prefect_server.py), and what the UI shows is read back through the server's REST
API: a progress artifact per long stage, attached to its flow run (or the task run the
stage ran in), keyed ``label-DATASET-STAGE`` (the UI's title for it), ending at 100 with a
description that names the stage and its counts; and, while an ingest runs, a value
between 0 and 100 (the artifact moves), read on a machine made slow by pausing the CLI."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from prefect_server import PrefectServer, stop
from test_progress import blobs

from flows.progress import ARTIFACT_SECONDS
from labelling.record_batches import BATCH_ROWS

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory):
    with PrefectServer(tmp_path_factory.mktemp("prefect-server")) as server:
        yield server


def cli(*args: str) -> list[str]:
    """The command line, this checkout's code (``PYTHONPATH=REPO`` beside it)."""
    return [sys.executable, "-m", "graphlabel", *args]


def run_cli(server: PrefectServer, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``graphlabel ARGS`` against ``server``, stdout and stderr pipes."""
    done = subprocess.run(cli(*args), cwd=cwd, env=server.env(PYTHONPATH=str(REPO)),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def flow_run(server: PrefectServer, *tags: str) -> dict:
    """The one flow run with these tags (the dataset's name is one, the command's another)."""
    runs = server.post("/flow_runs/filter", {"flow_runs": {"tags": {"all_": list(tags)}}})
    assert len(runs) == 1, [(run["name"], run["tags"]) for run in runs]
    return runs[0]


def progress_artifacts(server: PrefectServer, flow_run_id: str) -> dict[str, dict]:
    """The flow run's progress artifacts by key (its task runs' included)."""
    found = server.post("/artifacts/filter", {"artifacts": {"type": {"any_": ["progress"]},
                                                            "flow_run_id": {"any_": [flow_run_id]}}})
    by_key = {artifact["key"]: artifact for artifact in found}
    assert len(by_key) == len(found), [artifact["key"] for artifact in found]  # one artifact per stage
    return by_key


def task_run_name(server: PrefectServer, task_run_id: str) -> str:
    return server.get(f"/task_runs/{task_run_id}")["name"]


#: Seconds the CLI runs between two pauses in the slow-machine test: less than a batch of
#: BATCH_ROWS rows takes to check (0.2-0.3 s here).
STEP_SECONDS = 0.1

FINISHED = r"{stage}: {count} {unit} in \d+\.\d s \([\d,]+ {unit}/s\)"


def test_each_long_stage_leaves_a_progress_artifact_on_its_run(prefect_server, tmp_path):
    rows = 3_000
    data = blobs(tmp_path / "blobs.parquet", rows)
    store = str(tmp_path / "store")
    run_cli(prefect_server, "ingest", str(data), "--dataset", "blobs", "--key", "id", "--features", "x*",
            "--label", "label", "--store", store, cwd=tmp_path)
    run_cli(prefect_server, "label", "--dataset", "blobs", "--rebuild-graph", "--store", store, cwd=tmp_path)

    ingest = flow_run(prefect_server, "blobs", "ingest")
    assert ingest["state_type"] == "COMPLETED"
    artifacts = progress_artifacts(prefect_server, ingest["id"])
    assert set(artifacts) == {"label-blobs-read-and-check", "label-blobs-store"}
    read, stored = artifacts["label-blobs-read-and-check"], artifacts["label-blobs-store"]
    assert read["data"] == stored["data"] == 100
    assert re.fullmatch(FINISHED.format(stage="read and check", count=f"{rows:,}", unit="rows"), read["description"])
    assert re.fullmatch(FINISHED.format(stage="store", count=f"{rows:,}", unit="nodes"), stored["description"])
    assert read["task_run_id"] is None  # the flow's own stages

    label = flow_run(prefect_server, "blobs", "harmonic")
    assert label["state_type"] == "COMPLETED"
    artifacts = progress_artifacts(prefect_server, label["id"])
    assert set(artifacts) == {"label-blobs-knn-search", "label-blobs-solve-harmonic", "label-blobs-write-back"}
    knn, write = artifacts["label-blobs-knn-search"], artifacts["label-blobs-write-back"]
    solve = artifacts["label-blobs-solve-harmonic"]
    assert knn["data"] == write["data"] == solve["data"] == 100
    assert re.fullmatch(FINISHED.format(stage="kNN search", count=f"{rows:,}", unit="nodes"), knn["description"])
    assert re.fullmatch(FINISHED.format(stage=r"solve \(harmonic\)", count=f"{rows:,}", unit="nodes"),
                        solve["description"])
    assert re.fullmatch(FINISHED.format(stage="write back", count=f"{rows:,}", unit="nodes"), write["description"])
    # the kNN search runs inside the build-edges task: its artifact is on that task run too
    assert task_run_name(prefect_server, knn["task_run_id"]) == "build-edges"
    assert write["task_run_id"] is None


def test_an_ingest_on_a_slow_machine_shows_its_progress_moving(prefect_server, tmp_path):
    # The read-and-check meter moves at the end of each batch of BATCH_ROWS rows; its
    # artifact is sent at most every ARTIFACT_SECONDS (2 s), and at 100 when the stage
    # ends. Whether a value between is ever sent depends on the machine: these 400,000
    # rows are read in about a second here (the stage's 3 s are mostly the store), and none
    # is. 700,000 rows sent one in each of 9 runs (the 500,000 nodes stored half way take
    # seconds), with a margin of 1.5-2x: a faster machine would send none.
    # So the test makes the machine slow instead: once the stage's artifact exists, the CLI
    # runs STEP_SECONDS at a time, frozen (SIGSTOP) for longer than ARTIFACT_SECONDS in
    # between, and the artifact is read while the CLI is frozen. The first batch to end
    # after a pause is sent, and it is not the last of the four (a batch takes longer than
    # a step), so a value between is read every time; then the CLI runs on at full speed.
    rows = 4 * BATCH_ROWS
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.normal(size=(rows, 4)), columns=["x1", "x2", "x3", "x4"])
    frame.insert(0, "id", [f"n{i}" for i in range(rows)])
    frame.to_parquet(tmp_path / "big.parquet", index=False)
    command = cli("ingest", str(tmp_path / "big.parquet"), "--dataset", "big", "--key", "id", "--features", "x*",
                  "--store", str(tmp_path / "store"), "--quiet")
    query = {"artifacts": {"key": {"any_": ["label-big-read-and-check"]}}}

    def artifact() -> tuple[float, str] | None:
        found = prefect_server.post("/artifacts/filter", query)
        return (found[0]["data"], found[0]["description"]) if found else None

    log = (tmp_path / "ingest.log").open("wb")
    process = subprocess.Popen(command, cwd=tmp_path, env=prefect_server.env(PYTHONPATH=str(REPO)), stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    seen: list[tuple[float, str]] = []
    try:
        deadline = time.monotonic() + 180
        while process.poll() is None and time.monotonic() < deadline:
            # the command starts, the flow run begins, the stage's artifact is made; the command
            # waits while it is looked for (a poller slowed by a loaded machine lagged behind it)
            os.killpg(process.pid, signal.SIGSTOP)
            try:
                made = artifact() is not None
            finally:
                os.killpg(process.pid, signal.SIGCONT)
            if made:
                break
            time.sleep(0.05)
        while process.poll() is None and time.monotonic() < deadline and not any(0 < v < 100 for v, _ in seen):
            os.killpg(process.pid, signal.SIGSTOP)
            try:
                now = artifact()
                if now is not None and (not seen or seen[-1] != now):
                    seen.append(now)
                time.sleep(ARTIFACT_SECONDS + 0.2)
            finally:
                os.killpg(process.pid, signal.SIGCONT)
            time.sleep(STEP_SECONDS)
        process.wait(max(deadline - time.monotonic(), 1))  # a value between was read: the rest at full speed
    finally:
        stop(process)
        log.close()
    output = (tmp_path / "ingest.log").read_text(errors="replace")
    assert process.returncode == 0, output[-3000:]
    final = prefect_server.post("/artifacts/filter", query)
    assert len(final) == 1
    assert final[0]["data"] == 100
    assert re.fullmatch(FINISHED.format(stage="read and check", count=f"{rows:,}", unit="rows"),
                        final[0]["description"])
    between = [(share, text) for share, text in seen if 0 < share < 100]
    assert between, f"no value between 0 and 100 read while the ingest ran: {seen}"
    for share, text in between:  # what the card shows: the share, the counts, the rate, the time left
        said = re.fullmatch(rf"read and check: \d+%, ([\d,]+) of {rows:,} rows, [\d,]+ rows/s, about .+ left", text)
        assert said, text
        assert share == pytest.approx(100 * int(said[1].replace(",", "")) / rows)
