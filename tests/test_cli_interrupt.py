"""Ctrl-C during ``graphlabel label``: the command ends with exit status 130 and one line,
and the run it started is recorded failed as interrupted, not as "KeyboardInterrupt: "."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from prefect_server import prefect_env
from test_progress import blobs

from flows.labelling import INTERRUPTED
from graphstore import open_store

REPO = Path(__file__).resolve().parents[1]


def test_ctrl_c_ends_the_command_in_one_line_and_records_the_run_interrupted(tmp_path):
    env = prefect_env(tmp_path / "prefect-home", None, PYTHONPATH=str(REPO))
    store = str(tmp_path / "store")
    graphlabel = [sys.executable, "-m", "graphlabel"]
    subprocess.run([*graphlabel, "ingest", str(blobs(tmp_path / "blobs.parquet", 100_000)), "--dataset", "blobs",
                    "--key", "id", "--features", "x*", "--label", "label", "--store", store, "--quiet"],
                   cwd=tmp_path, env=env, check=True, timeout=300)
    process = subprocess.Popen([*graphlabel, "label", "--dataset", "blobs", "--store", store], cwd=tmp_path,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    # the run is recorded running before its first stage says so, and the graph's build
    # (100,000 nodes) takes seconds after that: the signal comes mid-run
    for line in process.stderr:
        if line.startswith("export: "):
            break
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)

    assert process.returncode == 130
    assert stderr.splitlines()[-1] == ("interrupted: running the command again is safe (a label run it had started"
                                       " is recorded as failed)")
    assert "Traceback" not in stderr
    with open_store(store) as opened:
        runs = opened.read_runs("blobs")
    assert list(runs["status"]) == ["failed"]
    assert runs["error"].iloc[0] == INTERRUPTED
