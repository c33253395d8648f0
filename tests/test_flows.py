"""The whole pipeline as Prefect flows on a real Kùzu store, scored from what the store holds."""

import json

import numpy as np
import pandas as pd
import pytest

from flows.demo import demo_flow
from flows.labelling import build_graph_flow, ingest_flow, labelling_flow
from graphstore import open_store
from labelling.problems import NotEnoughLabels

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_demo_flow_labels_digits_end_to_end(store_path):
    result = demo_flow(store_uri=store_path, per_class=10, flip_fraction=0.1, seed=1)
    assert result["n_nodes"] == 1797
    assert result["n_given"] == 100
    assert result["n_flipped"] == 10
    assert result["accuracy_hidden"] > 0.9
    assert result["noise"]["caught"] >= 4
    assert result["noise"]["precision"] >= 0.6
    assert set(result["timings"]) >= {"ingest", "build_edges", "export", "solve", "write_back"}
    shown = [row["label_confidence"] for row in result["least_confident"]]
    assert len(shown) == 10
    assert shown == sorted(shown)
    with open_store(store_path, create=True) as store:
        written = store.query(
            "MATCH (e:Entity) WHERE e.dataset = 'digits' RETURN count(e.predicted_label) AS p,"
            " count(e.label_noise) AS n, count(DISTINCT e.label_run_id) AS runs,"
            " min(e.label_confidence) AS lo, max(e.label_confidence) AS hi")
        assert written.to_dict("records") == [
            {"p": 1797, "n": 100, "runs": 1, "lo": written["lo"][0], "hi": written["hi"][0]}]
        assert 0 <= written["lo"][0] <= written["hi"][0] <= 1
        assert shown[0] == pytest.approx(written["lo"][0])  # the store's least confident come first
        run = store.query("MATCH (r:LabelRun) RETURN r.run_id AS id, r.metrics AS m, r.solver AS s")
    assert run["id"].tolist() == [result["run_id"]]
    assert run["s"][0] == "harmonic"
    assert json.loads(run["m"][0])["accuracy_hidden"] == pytest.approx(result["accuracy_hidden"])


def test_rerun_rewrites_the_same_nodes(store_path):
    first = demo_flow(store_uri=store_path, seed=2)
    second = demo_flow(store_uri=store_path, seed=2)
    assert first["accuracy_hidden"] == second["accuracy_hidden"]
    with open_store(store_path, create=True) as store:
        counts = store.query("MATCH (e:Entity) RETURN count(e) AS n, count(DISTINCT e.label_run_id) AS runs")
        assert counts.to_dict("records") == [{"n": 1797, "runs": 1}]
        assert len(store.query("MATCH (r:LabelRun) RETURN r.run_id")) == 2
        assert len(store.query("MATCH ()-[r:SIMILAR]->() RETURN r.weight")) == first["metrics"]["n_edges"]


def moons_csv(tmp_path, labels):
    from sklearn.datasets import make_moons

    X, y = make_moons(300, noise=0.08, random_state=0)
    frame = pd.DataFrame({"id": [f"m{i}" for i in range(300)], "x": X[:, 0], "y": X[:, 1]})
    frame["label"] = labels(y)
    path = tmp_path / "moons.csv"
    frame.to_csv(path, index=False)
    return path, y


@pytest.mark.parametrize(("per_class", "held", "note"), [(1, 0, True), (6, 1, False)])
def test_a_holdout_takes_its_share_of_few_labels_or_says_it_cannot(tmp_path, store_path, per_class, held, note):
    """With 1 label per class nothing can be held out (each class keeps one): said; with 6 per
    class, 10% held out 1 label (⌊0.6⌋ per class held out none, with no word)."""
    def labels(y):
        out = np.full(len(y), "", dtype=object)
        for c, name in enumerate(("lower", "upper")):
            out[np.flatnonzero(y == c)[:per_class]] = name
        return out

    path, _ = moons_csv(tmp_path, labels)
    ingest_flow(str(path), "moons", "id", "x,y", "label", store_uri=store_path)
    summary = labelling_flow("moons", store_uri=store_path, k=8, holdout_fraction=0.1, publish=False)
    assert summary["metrics"].get("n_holdout", 0) == held  # no held-out label: no holdout metrics
    said = any(w.startswith("held out none of the given labels: every class has a single one")
               for w in summary["warnings"])
    assert said is note


def test_ingest_build_label_as_separate_flows(tmp_path, store_path):
    def few_labels(y):
        out = np.full(len(y), "", dtype=object)
        out[:10] = np.where(y[:10] == 0, "upper", "lower")
        return out

    path, y = moons_csv(tmp_path, few_labels)
    ingested = ingest_flow(str(path), "moons", "id", "x,y", "label", store_uri=store_path)
    assert ingested == {"dataset": "moons", "stored": 300, "rejected": 0, "reject_reasons": {},
                        "rejects_file": None, "dataset_nodes": 300, "missing_like_labels": {}, "labelled": 10,
                        "label_classes": {"lower": 6, "upper": 4}, "removed_rejects_file": None,
                        "given_labels_before": 0, "given_labels_after": 10, "new_single_classes": [],
                        "replaced_reviews": {}}
    built = build_graph_flow("moons", store_uri=store_path, k=8)
    assert built["edges"] > 300 * 8 / 2
    summary = labelling_flow("moons", store_uri=store_path, build_graph=False)
    assert summary["n_labeled"] == 10
    with open_store(store_path, create=True) as store:
        frame = store.query("MATCH (e:Entity) RETURN e.key AS key, e.predicted_label AS p")
    predicted = frame.set_index("key").loc[[f"m{i}" for i in range(300)], "p"].to_numpy()
    assert np.mean(predicted == np.where(y == 0, "upper", "lower")) > 0.95


def test_one_class_stops_before_any_write(tmp_path, store_path):
    path, _ = moons_csv(tmp_path, lambda y: np.where(np.arange(len(y)) < 5, "only", ""))
    ingest_flow(str(path), "moons", "id", "x,y", "label", store_uri=store_path)
    with pytest.raises(NotEnoughLabels, match="one class only"):
        labelling_flow("moons", store_uri=store_path)
    with open_store(store_path, create=True) as store:
        assert store.query("MATCH (e:Entity) RETURN count(e.predicted_label) AS p")["p"][0] == 0
        assert not store.has_edges("moons")  # said before the graph the run would have built
        assert store.read_graph_build("moons") is None
        runs = store.read_runs("moons")
    # the run is on record, as failed, with the reason; never as completed
    assert runs["status"].tolist() == ["failed"]
    assert "one class only" in runs["error"][0]


def test_no_labels_stops_with_a_clear_message(tmp_path, store_path):
    path, _ = moons_csv(tmp_path, lambda y: np.full(len(y), "", dtype=object))
    ingest_flow(str(path), "moons", "id", "x,y", "label", store_uri=store_path)
    with pytest.raises(NotEnoughLabels, match="no given label"):
        labelling_flow("moons", store_uri=store_path)


@pytest.mark.parametrize("graph, solver", [("mincut3", "mincut"), ("delta_half", "mincut")])
def test_paper_graphs_and_cut_solver_through_the_flow(tmp_path, store_path, graph, solver):
    def few_labels(y):
        out = np.full(len(y), "", dtype=object)
        out[:10] = np.where(y[:10] == 0, "upper", "lower")
        return out

    path, y = moons_csv(tmp_path, few_labels)
    ingest_flow(str(path), "moons", "id", "x,y", "label", store_uri=store_path)
    summary = labelling_flow("moons", store_uri=store_path, graph=graph, solver=solver)
    assert summary["solver"] == solver
    assert summary["n_edges"] > 0
    with open_store(store_path, create=True) as store:
        frame = store.query("MATCH (e:Entity) RETURN e.key AS key, e.predicted_label AS p")
    predicted = frame.set_index("key").loc[[f"m{i}" for i in range(300)], "p"].to_numpy()
    truth = np.where(y == 0, "upper", "lower")
    labelled = pd.notna(predicted)
    assert labelled.mean() > 0.8
    assert np.mean(predicted[labelled] == truth[labelled]) > 0.85


def test_maxmargin_labels_entities_ingested_after_the_graph_build(store_path):
    """Entities added after the last graph build have no edges; the max-margin model labels
    them from their features without a rebuild."""
    from flows.demo import digits_records
    from labelling.records import parse_records

    frame, truth, kept, _ = digits_records(per_class=15, flip_fraction=0.0, seed=3)
    old, new = frame.iloc[:1500], frame.iloc[1500:].assign(label=None)
    for part, build in ((old, True), (new, False)):
        with open_store(store_path, create=True) as store:
            store.write_nodes("digits", parse_records(part, key="key", features="pixel_*", label="label").nodes)
        if build:
            build_graph_flow("digits", store_uri=store_path, k=10)
    summary = labelling_flow("digits", store_uri=store_path, solver="maxmargin", build_graph=False)
    assert summary["metrics"]["n_without_edges"] == len(new)
    with open_store(store_path, create=True) as store:
        written = store.query("MATCH (e:Entity) RETURN e.key AS key, e.predicted_label AS p,"
                              " e.label_confidence AS c").set_index("key")
    new_rows = written.loc[new["key"]]
    assert new_rows["p"].notna().all()
    assert (new_rows["c"] > 0).all()
    assert (new_rows["p"].to_numpy() == truth[1500:]).mean() > 0.85
