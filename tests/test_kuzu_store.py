"""The embedded store on a real Kùzu database (a fresh one per test)."""

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from graphstore import LabelRunRecord, open_store
from graphstore.base import NODE_SCHEMA, PREDICTION_SCHEMA


def nodes(keys, labels, dim=3, offset=0.0):
    feats = [[float(i) + offset] * dim for i in range(len(keys))]
    return pa.table({"key": keys, "features": feats, "label": labels}).cast(NODE_SCHEMA)


def edges(pairs):
    return pa.table({"source": [a for a, _, _ in pairs], "target": [b for _, b, _ in pairs],
                     "weight": [w for _, _, w in pairs]})


def test_nodes_edges_round_trip(kuzu_store):
    kuzu_store.write_nodes("toy", nodes(["a", "b", "c"], ["x", None, "y"]))
    kuzu_store.replace_edges("toy", edges([("a", "b", 0.5), ("b", "c", 0.25)]))
    graph = kuzu_store.read_subgraph("toy")
    order = np.argsort(graph.keys)
    assert graph.keys[order].tolist() == ["a", "b", "c"]
    assert graph.labels[order].tolist() == ["x", None, "y"]
    assert graph.features.shape == (3, 3)
    stored = {(graph.keys[s], graph.keys[t]): w for s, t, w in zip(graph.source, graph.target, graph.weight)}
    assert stored == {("a", "b"): 0.5, ("b", "c"): 0.25}


def test_upsert_is_idempotent_and_datasets_are_separate(kuzu_store):
    kuzu_store.write_nodes("one", nodes(["a", "b"], ["x", "y"]))
    kuzu_store.write_nodes("one", nodes(["a", "b"], ["x", "z"], offset=1.0))
    kuzu_store.write_nodes("two", nodes(["a"], ["q"]))
    assert kuzu_store.count_nodes("one") == 2
    assert kuzu_store.count_nodes("two") == 1
    graph = kuzu_store.read_subgraph("one")
    assert dict(zip(graph.keys, graph.labels)) == {"a": "x", "b": "z"}
    assert graph.features[list(graph.keys).index("b")].tolist() == [2.0, 2.0, 2.0]


def test_replace_edges_removes_only_that_datasets_old_edges(kuzu_store):
    for dataset in ("one", "two"):
        kuzu_store.write_nodes(dataset, nodes(["a", "b", "c"], [None] * 3))
        kuzu_store.replace_edges(dataset, edges([("a", "b", 1.0), ("a", "c", 1.0)]))
    kuzu_store.replace_edges("one", edges([("b", "c", 2.0)]))
    assert len(kuzu_store.read_subgraph("one").weight) == 1
    assert len(kuzu_store.read_subgraph("two").weight) == 2


def test_predictions_and_run_node_are_written(kuzu_store):
    kuzu_store.write_nodes("toy", nodes(["a", "b"], ["x", None]))
    now = pd.Timestamp("2026-01-02 03:04:05")
    rows = pa.table({
        "key": ["a", "b"], "predicted_label": ["x", None], "label_confidence": [0.9, 0.0],
        "label_noise": [False, None], "label_run_id": ["r1", "r1"], "label_solver": ["harmonic"] * 2,
        "labelled_at": [now.to_pydatetime()] * 2,
    }).cast(PREDICTION_SCHEMA)
    assert kuzu_store.write_predictions("toy", rows) == 2
    frame = kuzu_store.query(
        "MATCH (e:Entity) WHERE e.dataset = $d RETURN e.key AS key, e.predicted_label AS p,"
        " e.label_confidence AS c, e.label_noise AS n, e.labelled_at AS t ORDER BY key", {"d": "toy"})
    assert frame["p"].tolist()[0] == "x" and pd.isna(frame["p"].tolist()[1])
    assert frame["c"].tolist() == [0.9, 0.0]
    assert frame["t"].iloc[0] == now
    run = LabelRunRecord("r1", "toy", "harmonic", {"gamma_g": 0.0}, {"accuracy": 0.5}, {"solve": 0.1},
                         now, now, 2, 1, 0)
    kuzu_store.write_run(run)
    kuzu_store.write_run(run)  # idempotent
    runs = kuzu_store.query("MATCH (r:LabelRun) RETURN r.run_id AS id, r.metrics AS m")
    assert runs["id"].tolist() == ["r1"]
    assert json.loads(runs["m"][0]) == {"accuracy": 0.5}


def test_store_reopens_with_its_data(store_path):
    with open_store(store_path) as store:
        store.write_nodes("toy", nodes(["a"], ["x"]))
    with open_store(f"kuzu://{store_path}") as store:
        assert store.count_nodes("toy") == 1


@pytest.mark.parametrize("name", ["", "1abc", "a:b", "a b", "x" * 65, "a'; DROP"])
def test_bad_dataset_names_are_refused(kuzu_store, name):
    with pytest.raises(ValueError, match="invalid dataset name"):
        kuzu_store.write_nodes(name, nodes(["a"], ["x"]))


def test_missing_columns_are_named(kuzu_store):
    with pytest.raises(ValueError, match=r"lacks columns \['label'\]"):
        kuzu_store.write_nodes("toy", pa.table({"key": ["a"], "features": [[1.0]]}))
