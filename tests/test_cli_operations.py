"""The operating commands (report, prune-runs, explain, serve --check) on a real Kùzu
store; none of them starts a flow, so no Prefect server is needed."""

import pandas as pd
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from graphlabel.cli import app
from graphstore import LabelRunRecord, open_store
from graphstore.base import EDGE_SCHEMA, NODE_SCHEMA, PREDICTION_SCHEMA

runner = CliRunner()
T0 = pd.Timestamp("2026-03-01 02:00", tz="UTC")


def invoke(*args):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


@pytest.fixture
def store_with_runs(store_path):
    with open_store(store_path, create=True) as store:
        store.write_nodes("toy", pa.table({"key": ["a", "b", "c"], "features": [[0.0], [1.0], [2.0]],
                                           "label": [None, "x", "y"]}).cast(NODE_SCHEMA))
        store.replace_edges("toy", pa.table({"source": ["a", "a"], "target": ["b", "c"],
                                             "weight": [0.75, 0.25]}).cast(EDGE_SCHEMA))
        store.write_predictions("toy", pa.table({
            "key": ["a", "b", "c"], "predicted_label": ["x", "x", "y"], "label_confidence": [0.6, 1.0, 1.0],
            "label_noise": [None, False, False], "label_run_id": ["run-3"] * 3, "label_solver": ["harmonic"] * 3,
            "labelled_at": [T0.tz_localize(None).to_pydatetime()] * 3}).cast(PREDICTION_SCHEMA))
        for i, status in enumerate(["completed", "failed", "completed", "completed"]):
            store.write_run(LabelRunRecord(
                f"run-{i}", "toy", "harmonic", {"k": 5}, {"class_counts": {"x": 2, "y": 1}, "mean_confidence": 0.8,
                                                          "holdout_accuracy": 0.75},
                {"solve": 0.125}, T0 + pd.Timedelta(hours=i), T0 + pd.Timedelta(hours=i, seconds=30), 3, 2, 0,
                status=status, versions={"kuzu": "0.11.3"}, error="boom" if status == "failed" else None))
    return store_path


def test_report_lists_a_datasets_runs_newest_first(store_with_runs):
    result = invoke("report", "--dataset", "toy", "--store", store_with_runs)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "run-" in line]
    assert [line.split()[1] for line in lines] == ["run-3", "run-2", "run-1", "run-0"]
    assert "failed" in lines[2] and "0.750" in lines[0]


def test_report_of_one_run_in_the_terminal_and_as_markdown(store_with_runs):
    result = invoke("report", "--run", "run-3", "--store", store_with_runs)
    assert result.exit_code == 0, result.output
    for text in ("run run-3: toy, harmonic, completed", "accuracy on the held-out slice", "0.750",
                 "unlabeled", "1 (33.3% of nodes)", "0.125", "0.11.3", "30.0 s"):
        assert text in result.output, text
    result = invoke("report", "--run", "run-1", "--markdown", "--store", store_with_runs)
    assert result.exit_code == 0, result.output
    assert "| status | failed |" in result.output and "| error | boom |" in result.output


def test_report_errors_are_one_clear_line(store_with_runs):
    result = invoke("report", "--store", store_with_runs)
    assert result.exit_code == 1 and "give --run ID" in result.output
    result = invoke("report", "--run", "nope", "--store", store_with_runs)
    assert result.exit_code == 1 and "no run 'nope' in the store" in result.output
    result = invoke("report", "--run", "run-3", "--dataset", "other", "--store", store_with_runs)
    assert result.exit_code == 1 and "belongs to dataset 'toy'" in result.output
    result = invoke("report", "--dataset", "other", "--store", store_with_runs)
    assert result.exit_code == 1 and "no runs of dataset 'other'" in result.output


def test_prune_runs_command(store_with_runs):
    result = invoke("prune-runs", "--dataset", "toy", "--keep-last", "1", "--store", store_with_runs)
    assert result.exit_code == 0, result.output
    # run-3 is kept (newest completed, and the nodes' current run); run-2, run-1, run-0 go
    assert "deleted 3 LabelRun nodes of 'toy'" in result.output
    with open_store(store_with_runs, create=True) as store:
        assert store.read_runs("toy")["run_id"].tolist() == ["run-3"]
    result = invoke("prune-runs", "--dataset", "toy", "--keep-last", "-1", "--store", store_with_runs)
    assert result.exit_code != 0


def test_explain_command_shows_the_neighbours_and_class_shares(store_with_runs):
    result = invoke("explain", "a", "--dataset", "toy", "--limit", "1", "--store", store_with_runs)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "node 'a' of dataset 'toy'" in out and "run-3" in out and "0.600" in out
    assert "x ← predicted" in out and "75.0%" in out and "25.0%" in out  # shares of the weighted degree
    assert "strongest 1 of 2 neighbours" in out and " b " in out and " c " not in out
    result = invoke("explain", "zz", "--dataset", "toy", "--store", store_with_runs)
    assert result.exit_code == 1 and "no node with key 'zz' in dataset 'toy'" in result.output


def test_serve_check_validates_and_lists_without_serving(tmp_path):
    good = tmp_path / "good.toml"
    good.write_text('[[jobs]]\ndataset = "toy"\ncron = "0 3 * * *"\nk = 5\n')
    result = invoke("serve", "--config", str(good), "--check")
    assert result.exit_code == 0, result.output
    assert "label-toy-harmonic" in result.output and "0 3 * * *" in result.output
    bad = tmp_path / "bad.toml"
    bad.write_text('[[jobs]]\ndataset = "toy"\ncron = "0 3 * * *"\nk = "five"\n')
    result = invoke("serve", "--config", str(bad))
    assert result.exit_code == 1 and "k must be a positive integer, got 'five'" in result.output
    result = invoke("serve", "--config", str(tmp_path / "missing.toml"))
    assert result.exit_code == 1 and "missing.toml" in result.output
