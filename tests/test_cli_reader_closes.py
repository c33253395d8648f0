"""A reader that stops reading does not stop the command (graphlabel/streams.py):
``graphlabel label ... 2>&1 | head -1`` completes the run, writes its labels and exits 0, on
the embedded store without a server and as a flow run of a real Prefect server; an error
still exits non-zero."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from prefect_server import PrefectServer, prefect_env
from test_progress import blobs

from graphstore import open_store

REPO = Path(__file__).resolve().parents[1]


def read_one_line_and_close(args: tuple[str, ...], env: dict[str, str], cwd: Path) -> tuple[str, int]:
    """``graphlabel ARGS 2>&1 | head -1``: stdout and stderr in one pipe, closed by its
    reader after the first line; the line and the command's exit status."""
    process = subprocess.Popen([sys.executable, "-m", "graphlabel", *args], cwd=cwd, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    first = process.stdout.readline()
    process.stdout.close()
    return first, process.wait(timeout=300)


def ingested(tmp_path: Path, env: dict[str, str]) -> str:
    """A store holding 2,000 rows of blobs (60 labelled), ingested in full."""
    store = str(tmp_path / "store")
    done = subprocess.run([sys.executable, "-m", "graphlabel", "ingest", str(blobs(tmp_path / "blobs.parquet", 2_000)),
                           "--dataset", "blobs", "--key", "id", "--features", "x*", "--label", "label",
                           "--store", store], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return store


def the_run_completed_and_labelled_every_node(store: str) -> None:
    with open_store(store) as opened:
        runs = opened.read_runs("blobs")
        predictions = opened.read_export("blobs").to_pandas()
    assert list(runs["status"]) == ["completed"], runs[["status", "error"]]
    run_id = runs["run_id"].iloc[0]
    assert (predictions["label_run_id"] == run_id).all()
    assert predictions["predicted_label"].notna().sum() == 2_000


def test_a_closed_pipe_neither_fails_the_run_nor_its_exit_status(tmp_path):
    env = prefect_env(tmp_path / "prefect-home", None, PYTHONPATH=str(REPO))
    store = ingested(tmp_path, env)
    # progress lines and the summary follow the first line: each write meets a closed pipe
    first, status = read_one_line_and_close(("label", "--dataset", "blobs", "--store", store), env, tmp_path)
    assert first.startswith("read features: ")  # the graph is built first: the dataset has none
    assert status == 0
    the_run_completed_and_labelled_every_node(store)

    # stdout alone: a query's rows cut after the header
    first, status = read_one_line_and_close(
        ("query", "MATCH (n:Entity) RETURN n.key AS key", "--format", "csv", "--store", store), env, tmp_path)
    assert (first, status) == ("key\n", 0)
    # an expected error keeps its status when nobody reads the line that says it
    first, status = read_one_line_and_close(("report", "--dataset", "nowhere", "--store", store), env, tmp_path)
    assert status == 1


def test_a_closed_pipe_leaves_the_flow_run_completed_on_a_prefect_server(tmp_path):
    with PrefectServer(tmp_path / "server") as server:
        env = server.env(PYTHONPATH=str(REPO))
        store = ingested(tmp_path, env)
        # with a server the first line is Prefect's ("Beginning flow run ..."); its log
        # handler writes to the closed pipe too
        first, status = read_one_line_and_close(("label", "--dataset", "blobs", "--store", store), env, tmp_path)
        assert "Beginning flow run" in first
        assert status == 0
        the_run_completed_and_labelled_every_node(store)
        runs = server.post("/flow_runs/filter", {"flow_runs": {"tags": {"all_": ["blobs", "harmonic"]}}})
        assert [run["state_type"] for run in runs] == ["COMPLETED"]
        logs = server.post("/logs/filter", {"logs": {"flow_run_id": {"any_": [runs[0]["id"]]}}})
        assert "wrote 2,000 predictions" in [log["message"] for log in logs]  # the server has the whole log
