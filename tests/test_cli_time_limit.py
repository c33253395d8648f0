"""A solver that stops itself at its time budget ends `graphlabel label` with one clear line
and a non-zero exit, not a traceback (issue 15 §2)."""

import os
import subprocess
import sys

import pandas as pd
import pytest
from typer.testing import CliRunner

from graphlabel.cli import app

pytestmark = pytest.mark.usefixtures("prefect_harness")
runner = CliRunner()


def test_a_solver_out_of_time_ends_the_run_in_one_line(tmp_path, store_path):
    rows = [[f"n{i}", i * 0.1, (i % 5) * 0.2, "p" if i < 3 else ("q" if i < 6 else "")] for i in range(40)]
    csv = tmp_path / "in.csv"
    pd.DataFrame(rows, columns=["id", "a", "b", "label"]).to_csv(csv, index=False)
    result = runner.invoke(app, ["ingest", str(csv), "--dataset", "toy", "--key", "id", "--features", "a,b",
                                 "--label", "label", "--store", store_path])
    assert result.exit_code == 0, result.output
    # the console script, as a user's shell runs it, against the harness's Prefect server
    from prefect.settings import PREFECT_API_URL

    done = subprocess.run(
        [sys.executable, "-m", "graphlabel", "label", "--dataset", "toy", "--rebuild-graph", "--k", "5",
         "--solver", "mincut", "--params", '{"time_limit": 1e-9}', "--store", store_path],
        cwd=tmp_path, env={**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "COLUMNS": "200"},
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    # the run's log lines say it too, one line each (flows.labelling.DATA_ERRORS); the
    # command's own verdict is its last line
    said = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("error:")]
    assert len(said) == 1, done.stderr
    assert said[0].startswith("error: mincut stopped itself after ")
    # in the command line's words, not the Python API's (method='harmonic', time_limit=None)
    assert said[0].endswith("""Use --solver harmonic, or --params '{"time_limit": null}' to let it run"""
                            " (or a number of seconds).")
    assert done.stderr.strip().splitlines()[-1] == said[0]
    # the run's record, as `report` shows it, in words for whoever reads it (not only this
    # command's user): the setting's name, not a flag or a Python keyword
    listed = runner.invoke(app, ["report", "--dataset", "toy", "--store", store_path], env={"COLUMNS": "400"})
    assert listed.exit_code == 0, listed.output
    failure = " ".join(line.strip() for line in listed.output.splitlines() if "failed: SolverTimeLimit" in line)
    assert "mincut stopped itself after " in failure, listed.output
    assert "Use the harmonic solver, or give the solver parameter time_limit more seconds" in failure
    assert "method=" not in failure
    assert "--params" not in failure
