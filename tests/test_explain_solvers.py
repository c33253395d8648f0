"""`explain` shows what the run's solver used: for the cut solvers the cut edges at the
node (graphstore/explain.py), for the others the neighbours' vote alone."""

from __future__ import annotations

import re
import uuid

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_wine
from typer.testing import CliRunner

from graphlabel.cli import app
from graphstore.explain import explanation

runner = CliRunner()


def node_row(solver, neighbours=None):
    #  a (predicted x) -- b (x) 0.5, c (y) 0.25, d (no label) 0.15, e (z) 0.1
    neighbours = neighbours or [{"key": "b", "label": "x", "weight": 0.5}, {"key": "c", "label": "y", "weight": 0.25},
                                {"key": "d", "label": None, "weight": 0.15}, {"key": "e", "label": "z", "weight": 0.1}]
    return {"key": "a", "given_label": None, "predicted_label": "x", "label_confidence": 0.6, "label_noise": None,
            "label_run_id": "r", "label_solver": solver, "labelled_at": None, "neighbours": neighbours}


def test_the_cut_edges_are_the_weights_to_other_labels_for_the_cut_solvers():
    for solver in ("mincut", "spectral"):
        node, _ = explanation(node_row(solver), [], "toy", "a")
        assert node["cut_weight"] == pytest.approx(0.35)
        assert node["cut_share"] == pytest.approx(0.35)
        assert [edge["key"] for edge in node["cut_edges"]] == ["c", "e"]
    for solver in ("harmonic", "nmf", "maxmargin"):
        node, _ = explanation(node_row(solver), [], "toy", "a")
        assert "cut_edges" not in node
        assert node["class_shares"]["x"] == pytest.approx(0.5)


def test_the_score_vote_spreads_each_unlabelled_neighbour_by_its_scores():
    entries = [{"key": "g", "label": "x", "weight": 0.5, "given": True, "scores": [0.0, 1.0], "run": "r"},
               {"key": "u", "label": "y", "weight": 0.25, "given": False, "scores": [0.25, 0.75], "run": "r"},
               {"key": "v", "label": "y", "weight": 0.125, "given": False, "scores": None, "run": "r"},
               {"key": "w", "label": "y", "weight": 0.125, "given": False, "scores": [1.0, 0.0], "run": "old"},
               {"key": "z", "label": None, "weight": 0.25, "given": False, "scores": None, "run": None}]
    node, _ = explanation(node_row("harmonic", entries), [], "toy", "a", {"r": ["x", "y"]})
    # g given: whole to x; u by its scores; v without scores and w of an unknown run: whole to y
    assert node["score_shares"] == pytest.approx({"x": (0.5 + 0.0625) / 1.25, "y": (0.1875 + 0.25) / 1.25,
                                                  None: 0.25 / 1.25})
    assert node["class_shares"] == pytest.approx({"x": 0.5 / 1.25, "y": 0.5 / 1.25, None: 0.25 / 1.25})


def ingest_wine(tmp_path, store, dataset):
    """Standardised wine, a label on every 5th row."""
    X, y = load_wine(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    frame = pd.DataFrame(X, columns=[f"f{i:02d}" for i in range(X.shape[1])])
    frame.insert(0, "id", [f"w{i:03d}" for i in range(len(y))])
    frame.insert(1, "label", np.where(np.arange(len(y)) % 5 == 0, y.astype(str), ""))
    frame.to_csv(tmp_path / "wine.csv", index=False)
    result = runner.invoke(app, ["ingest", str(tmp_path / "wine.csv"), "--dataset", dataset, "--key", "id",
                                 "--features", "f*", "--label", "label", "--store", store])
    assert result.exit_code == 0, result.output


@pytest.mark.usefixtures("prefect_harness")
def test_explain_after_a_mincut_run_lists_its_cut_edges(tmp_path, store_path):
    explain_cut_edges(tmp_path, store_path, "wine")


def explain_cut_edges(tmp_path, store, dataset):
    ingest_wine(tmp_path, store, dataset)
    s = ["--store", store]
    assert runner.invoke(app, ["build-graph", "--dataset", dataset, *s]).exit_code == 0
    result = runner.invoke(app, ["label", "--dataset", dataset, "--solver", "mincut", *s])
    assert result.exit_code == 0, result.output
    # a node with a neighbour of another predicted class: one the cut passes next to
    found = runner.invoke(app, ["query", "MATCH (a:Entity)-[:SIMILAR]-(b:Entity) WHERE a.dataset = $d AND"
                                " b.dataset = $d AND a.predicted_label <> b.predicted_label AND b.given_label IS"
                                " NULL RETURN a.key AS key ORDER BY key LIMIT 1", "-p", f"d={dataset}",
                                "--format", "csv", *s])
    key = found.output.split()[1]
    result = runner.invoke(app, ["explain", key, "--dataset", dataset, *s])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())  # the table title may wrap at 80 columns
    match = re.search(r"cut edges \(mincut\): weight ([0-9.e-]+) to the other side, ([0-9.]+)% of the", text)
    assert match is not None, result.output
    assert float(match.group(1)) > 0
    result = runner.invoke(app, ["label", "--dataset", dataset, "--solver", "harmonic", *s])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["explain", key, "--dataset", dataset, *s])
    assert "cut edges" not in result.output
    assert "the neighbours' vote" in result.output


@pytest.mark.usefixtures("prefect_harness")
def test_explain_after_a_maxmargin_run_shows_the_support_vectors_share(tmp_path, store_path):
    explain_support_vectors(tmp_path, store_path, "wine")


def explain_support_vectors(tmp_path, store, dataset):
    ingest_wine(tmp_path, store, dataset)
    s = ["--store", store]
    result = runner.invoke(app, ["label", "--dataset", dataset, "--solver", "maxmargin", "--rebuild-graph", *s])
    assert result.exit_code == 0, result.output
    agree = 0
    for key in ("w001", "w060", "w150"):  # one of each class
        result = runner.invoke(app, ["explain", key, "--dataset", dataset, "--limit", "3", *s])
        assert result.exit_code == 0, result.output
        text = " ".join(result.output.split())
        match = re.search(r"strongest 3 of (\d+) support vectors \(per class: ([^)]*)\)", text)
        assert match is not None, result.output
        shares = dict(part.rsplit(" ", 1) for part in match.group(2).split(", "))
        assert sum(float(v.rstrip("%")) for v in shares.values()) == pytest.approx(100, abs=0.2)
        predicted = re.search(r"predicted label │ (\S+)", text).group(1)
        agree += next(iter(shares)) == predicted  # the class pulling most is usually the one predicted
    assert agree >= 2


@pytest.mark.neo4j
@pytest.mark.usefixtures("prefect_harness")
def test_explain_per_solver_on_neo4j(tmp_path, neo4j_env):
    from test_neo4j_live import delete_dataset

    from graphstore import open_store

    datasets = [f"explain{uuid.uuid4().hex[:8]}" for _ in range(2)]
    try:
        explain_cut_edges(tmp_path, neo4j_env, datasets[0])
        explain_support_vectors(tmp_path, neo4j_env, datasets[1])
    finally:
        with open_store(neo4j_env) as store:
            for dataset in datasets:
                delete_dataset(store._driver, dataset, store.database)
