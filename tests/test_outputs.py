"""Issue 17's outputs on the embedded store: the readable scores' arithmetic, and the whole
scenario of tests/outputs_scenario.py (export, review, accept/correct, drop-dataset) on
wine through the command line, in-process."""

from __future__ import annotations

import numpy as np
import pytest
from outputs_scenario import Ran, run_scenario, wine_csv
from typer.testing import CliRunner

from graphlabel.cli import app
from labelling.scores import readable_scores, runner_up

runner = CliRunner()


def test_readable_scores_keep_probabilities_and_map_signed_margins_to_a_distribution():
    scores = np.array([[0.7, 0.2, 0.1],       # a class distribution: unchanged
                       [2.0, 1.0, 1.0],       # votes: divided by their sum
                       [0.5, -0.5, -np.inf],  # signed margins, a class nobody reaches
                       [0.3, 0.3, 0.4],       # no prediction (label -1): no scores
                       [0.0, 0.0, 0.0]])      # nothing at all: no scores
    labels = np.array([0, 0, 0, -1, 1])
    given = scores.copy()
    readable = readable_scores(scores, labels)
    np.testing.assert_array_equal(scores, given)  # worked on a copy: the solver's scores are left alone
    np.testing.assert_allclose(readable[0], [0.7, 0.2, 0.1])
    np.testing.assert_allclose(readable[1], [0.5, 0.25, 0.25])
    np.testing.assert_allclose(readable[2], [np.e / (np.e + 1), 1 / (np.e + 1), 0.0])
    assert np.isnan(readable[3:]).all()
    shown = readable.copy()
    runner_class, margin = runner_up(readable, labels)
    np.testing.assert_array_equal(readable, shown)  # the own class set aside for the argmax is put back
    np.testing.assert_array_equal(runner_class, [1, 1, 1, -1, -1])
    np.testing.assert_allclose(margin[:3], [0.5, 0.25, (np.e - 1) / (np.e + 1)])
    assert np.isnan(margin[3:]).all()


def test_the_runner_up_is_the_best_class_other_than_the_predicted_one():
    # a label that is not its scores' arg-max (maxmargin's one-vs-one vote can do that)
    runner_class, margin = runner_up(np.array([[0.6, 0.3, 0.1]]), np.array([1]))
    assert runner_class.tolist() == [0]
    assert margin[0] == pytest.approx(-0.3)


def test_readable_scores_refuse_a_wrong_shape():
    with pytest.raises(ValueError, match="shape"):
        readable_scores(np.zeros((3, 2)), np.zeros(4, int))


def test_outputs_scenario_on_the_embedded_store(tmp_path, store_path):
    from graphstore import open_store

    def invoke(*args: str, ok: bool = True) -> Ran:
        result = runner.invoke(app, [*map(str, args), "--store", store_path])
        ran = Ran(result.exit_code, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit), result.output
        if ok:
            assert ran.exit_code == 0, ran.output
        else:
            assert ran.exit_code == 1, ran.output
            assert ran.output.count("error: ") == 1, ran.output
            ran.output = " ".join(ran.output[ran.output.rindex("error: "):].split())
        return ran

    def query(cypher: str, parameters: dict):
        with open_store(store_path) as store:
            return store.query(cypher, parameters)

    other_csv, _ = wine_csv(tmp_path / "other.csv", flipped=0, seed=1)
    run_scenario(invoke, query, tmp_path, "wine", "wine2", other_csv)


def test_review_and_export_before_any_labelling_run_say_so(tmp_path, store_path):
    """Before a run, review's "no flagged given label left" read as "all reviewed" and export
    wrote the ingested data back without a word: both say the dataset is not labelled yet."""
    csv, _ = wine_csv(tmp_path / "wine.csv")
    store = ["--store", store_path]
    assert runner.invoke(app, ["ingest", csv, "--dataset", "wine", "--key", "id", "--label", "label",
                               "--features", "f*", *store]).exit_code == 0
    review = runner.invoke(app, ["review", "--dataset", "wine", *store], env={"COLUMNS": "300"})
    assert review.exit_code == 1, review.output
    assert ("error: dataset 'wine' has no finished labelling run, so no label was judged: graphlabel label"
            f" --dataset wine --store {store_path} flags the doubtful ones") in " ".join(review.output.split())
    export = runner.invoke(app, ["export", "--dataset", "wine", "--output", str(tmp_path / "wine.parquet"), *store],
                           env={"COLUMNS": "300"})
    assert export.exit_code == 0, export.output
    assert (f"note: no node of 'wine' has a prediction yet: graphlabel label --dataset wine --store {store_path}"
            " labels them") in " ".join(export.output.split())
    assert runner.invoke(app, ["label", "--dataset", "wine", "-q", *store]).exit_code == 0
    assert runner.invoke(app, ["review", "--dataset", "wine", *store]).exit_code == 0
    export = runner.invoke(app, ["export", "--dataset", "wine", "--output", str(tmp_path / "wine.parquet"),
                                 "--overwrite", *store])
    assert export.exit_code == 0, export.output
    assert "has a prediction yet" not in export.output


def test_drop_dataset_asks_on_a_terminal(tmp_path, store_path):
    """On a terminal drop-dataset asks first: "n" keeps the dataset, "y" deletes it (a
    pseudo-terminal as stdin, the command a process of its own)."""
    import os
    import pty
    import subprocess
    import sys
    from pathlib import Path

    csv, _ = wine_csv(tmp_path / "wine.csv")
    result = runner.invoke(app, ["ingest", csv, "--dataset", "wine", "--key", "id", "--label", "label",
                                 "--features", "f*", "--store", store_path])
    assert result.exit_code == 0, result.output
    graphlabel = Path(sys.executable).parent / "graphlabel"

    def answer(reply: str) -> tuple[int, str]:
        leader, follower = pty.openpty()
        try:
            os.write(leader, reply.encode())
            done = subprocess.run([str(graphlabel), "drop-dataset", "wine", "--store", store_path], stdin=follower,
                                  capture_output=True, text=True, timeout=120)
        finally:
            os.close(leader)
            os.close(follower)
        return done.returncode, done.stdout + done.stderr

    code, output = answer("n\n")
    assert code == 1, output
    assert "delete dataset 'wine': 178 nodes" in output
    assert "nothing deleted" in output
    code, output = answer("y\n")
    assert code == 0, output
    assert "deleted dataset 'wine': 178 nodes, 0 runs, 0 review decisions" in output


def test_export_maps_each_runs_scores_to_its_classes(embedded_store):
    """Nodes labelled by two runs with different classes (a class the later run knew): each
    node's scores go to its own run's classes, and a class its run did not know is empty."""
    import pandas as pd
    import pyarrow as pa

    from graphstore import LabelRunRecord
    from graphstore.schemas import NODE_SCHEMA
    from labelling.export import export_frame

    embedded_store.write_nodes("toy", pa.table({"key": ["a", "b"], "features": [[0.0], [1.0]],
                                            "label": ["x", "z"]}).cast(NODE_SCHEMA))
    at = pd.Timestamp("2026-03-01").to_pydatetime()
    for run_id, key, scores, classes in (("r1", "a", [0.8, 0.2], ["x", "y"]),
                                         ("r2", "b", [0.1, 0.3, 0.6], ["x", "y", "z"])):
        embedded_store.write_predictions("toy", pa.table({
            "key": [key], "predicted_label": [classes[int(np.argmax(scores))]], "label_confidence": [0.5],
            "label_noise": [False], "label_run_id": [run_id], "label_solver": ["harmonic"], "labelled_at": [at],
            "label_scores": [scores], "label_runner_up": ["y"], "label_margin": [0.1]}))
        embedded_store.write_run(LabelRunRecord(run_id, "toy", "harmonic", {}, {}, {}, pd.Timestamp(at, tz="UTC"),
                                            pd.Timestamp(at, tz="UTC"), 1, 1, 0, classes=classes))
    frame = export_frame(embedded_store, "toy").set_index("key")
    scores = frame[["score_x", "score_y", "score_z"]]
    np.testing.assert_allclose(scores.loc["a"].to_numpy(), [0.8, 0.2, np.nan])
    np.testing.assert_allclose(scores.loc["b"].to_numpy(), [0.1, 0.3, 0.6])
    only = export_frame(embedded_store, "toy", run="r1")
    assert only["key"].tolist() == ["a"]
    assert [c for c in only.columns if c.startswith("score_")] == ["score_x", "score_y"]


def test_prediction_rows_built_a_slice_at_a_time_equal_the_whole():
    import pandas as pd
    import pyarrow as pa
    import scipy.sparse as sp

    from labelling.problems import ExportedProblem, prediction_rows
    from solvers import LabelProblem, solve

    n = 30
    W = sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")
    y = np.full(n, -1)
    y[[0, 1, 2]], y[[27, 28, 29]], y[15] = 0, 1, 2
    exported = ExportedProblem(LabelProblem(W, y), np.array([f"k{i:02d}" for i in range(n)], dtype=object),
                               np.array(["a", "b", "c"], dtype=object))
    prediction = solve(exported.problem, "harmonic")
    now = pd.Timestamp("2026-11-27", tz="UTC")
    whole = prediction_rows(exported, prediction, "run", now)
    sliced = pa.concat_tables([prediction_rows(exported, prediction, "run", now, slice(start, start + 7))
                               for start in range(0, n, 7)])
    assert whole.num_rows == n
    assert sliced.equals(whole)
