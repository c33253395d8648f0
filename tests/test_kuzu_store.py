"""The embedded store on a real Kùzu database (a fresh one per test)."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from graphstore import LabelRunRecord, open_store
from graphstore.schemas import NODE_SCHEMA, PREDICTION_SCHEMA


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
    assert frame["p"].tolist()[0] == "x"
    assert pd.isna(frame["p"].tolist()[1])
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
    with open_store(store_path, create=True) as store:
        store.write_nodes("toy", nodes(["a"], ["x"]))
    with open_store(f"kuzu://{store_path}", create=True) as store:
        assert store.count_nodes("toy") == 1


@pytest.mark.parametrize("name", ["", "1abc", "a:b", "a b", "x" * 65, "a'; DROP"])
def test_bad_dataset_names_are_refused(kuzu_store, name):
    with pytest.raises(ValueError, match="invalid dataset name"):
        kuzu_store.write_nodes(name, nodes(["a"], ["x"]))


def test_missing_columns_are_named(kuzu_store):
    with pytest.raises(ValueError, match=r"lacks columns \['label'\]"):
        kuzu_store.write_nodes("toy", pa.table({"key": ["a"], "features": [[1.0]]}))


# -- runs: provenance, reading, retention -------------------------------------------------

T0 = pd.Timestamp("2026-03-01 00:00", tz="UTC")


def run_record(run_id, hours, status="completed", dataset="toy", **extra):
    started = T0 + pd.Timedelta(hours=hours)
    finished = None if status == "running" else started + pd.Timedelta(minutes=5)
    return LabelRunRecord(run_id, dataset, "harmonic", {"k": 10}, {"class_counts": {"x": 1}}, {"solve": 0.5},
                          started, finished, 2, 1, 0, status=status, **extra)


def test_run_status_versions_and_error_round_trip(kuzu_store):
    versions = {"graphlabel": "0.1.0", "kuzu": "0.11.3"}
    kuzu_store.write_run(run_record("r1", 0, status="running", versions=versions))
    started = kuzu_store.read_runs(run_id="r1").iloc[0]
    assert started["status"] == "running"
    assert pd.isna(started["finished_at"])
    assert started["error"] is None
    # the end of the run replaces the node written at its start
    kuzu_store.write_run(run_record("r1", 0, status="failed", versions=versions, error="solver diverged"))
    runs = kuzu_store.read_runs()
    assert runs["run_id"].tolist() == ["r1"]
    row = runs.iloc[0]
    assert row["status"] == "failed"
    assert row["error"] == "solver diverged"
    assert row["versions"] == versions
    assert row["metrics"] == {"class_counts": {"x": 1}}
    assert row["timings"] == {"solve": 0.5}
    assert row["parameters"] == {"k": 10}
    assert row["started_at"] == pd.Timestamp("2026-03-01 00:00")  # naive UTC
    assert row["finished_at"] == pd.Timestamp("2026-03-01 00:05")
    with pytest.raises(ValueError, match="status"):
        run_record("r2", 1, status="done")


def test_a_store_created_before_run_provenance_gains_the_columns(store_path):
    """A store whose LabelRun table predates status/versions/error opens, reads its old runs
    as completed ones without versions, and takes new runs."""
    import kuzu

    Path(store_path).mkdir(parents=True)
    db = kuzu.Database(str(Path(store_path) / "graph.kuzu"))
    conn = kuzu.Connection(db)
    conn.execute("CREATE NODE TABLE LabelRun(run_id STRING, dataset STRING, solver STRING, parameters STRING,"
                 " metrics STRING, timings STRING, started_at TIMESTAMP, finished_at TIMESTAMP, n_nodes INT64,"
                 " n_labeled INT64, n_flagged INT64, PRIMARY KEY(run_id))")
    conn.execute("CREATE (:LabelRun {run_id: 'old', dataset: 'toy', solver: 'harmonic', parameters: '{}',"
                 " metrics: '{}', timings: '{}', started_at: timestamp('2025-01-01 00:00:00'), n_nodes: 1,"
                 " n_labeled: 1, n_flagged: 0})")
    conn.close()
    db.close()
    with open_store(store_path, create=True) as store:
        old = store.read_runs("toy").iloc[0]
        assert (old["run_id"], old["status"], old["versions"], old["error"]) == ("old", "completed", {}, None)
        store.write_run(run_record("new", 0, versions={"numpy": "2.0"}))
        assert store.read_runs("toy")["run_id"].tolist() == ["new", "old"]
        assert store.read_runs(run_id="new").iloc[0]["versions"] == {"numpy": "2.0"}
    with open_store(store_path, create=True) as store:  # reopening: the ALTERs are no-ops now
        assert len(store.read_runs()) == 2


def test_read_runs_newest_first_filtered_and_limited(kuzu_store):
    for run_id, hours, dataset in (("a1", 0, "a"), ("b1", 1, "b"), ("a2", 2, "a"), ("a3", 3, "a")):
        kuzu_store.write_run(run_record(run_id, hours, dataset=dataset))
    assert kuzu_store.read_runs()["run_id"].tolist() == ["a3", "a2", "b1", "a1"]
    assert kuzu_store.read_runs("a", limit=2)["run_id"].tolist() == ["a3", "a2"]
    assert kuzu_store.read_runs("a", run_id="b1").empty
    assert kuzu_store.read_runs(run_id="b1")["dataset"].tolist() == ["b"]
    assert kuzu_store.read_runs("nothing").empty
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="limit"):
            kuzu_store.read_runs(limit=bad)


def label_nodes_with(store, run_id):
    store.write_nodes("toy", nodes(["a", "b"], ["x", None]))
    store.query("MATCH (e:Entity) WHERE e.dataset = 'toy' SET e.label_run_id = $run RETURN count(e)",
                {"run": run_id}, write=True)


def test_prune_runs_keeps_the_newest_completed_running_and_current_runs(kuzu_store):
    #   r0 completed, r1 failed, r2 completed, r3 running, r4 completed, r5 failed (newest)
    statuses = ["completed", "failed", "completed", "running", "completed", "failed"]
    for hours, status in enumerate(statuses):
        kuzu_store.write_run(run_record(f"r{hours}", hours, status=status))
    kuzu_store.write_run(run_record("other", 0, dataset="other"))
    label_nodes_with(kuzu_store, "r0")  # the nodes still carry r0's predictions
    # keep r4 (the newest completed) and what is newer (r5); r3 runs; r0 is current
    assert kuzu_store.prune_runs("toy", keep_last=1) == 2
    assert kuzu_store.read_runs("toy")["run_id"].tolist() == ["r5", "r4", "r3", "r0"]
    assert kuzu_store.read_runs("other")["run_id"].tolist() == ["other"]
    assert kuzu_store.prune_runs("toy", keep_last=1) == 0  # nothing more beyond


def test_prune_runs_keep_last_zero_and_more_than_there_are(kuzu_store):
    for hours, status in enumerate(["completed", "failed", "running", "completed"]):
        kuzu_store.write_run(run_record(f"r{hours}", hours, status=status))
    assert kuzu_store.prune_runs("toy", keep_last=10) == 0
    assert kuzu_store.prune_runs("nothing", keep_last=0) == 0
    # no node carries a prediction: only the running run is safe
    assert kuzu_store.prune_runs("toy", keep_last=0) == 3
    assert kuzu_store.read_runs("toy")["run_id"].tolist() == ["r2"]
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="keep_last"):
            kuzu_store.prune_runs("toy", keep_last=bad)


def test_explain_reads_the_weights_and_labels_around_a_node(kuzu_store):
    #      b(x, given) --0.5-- a --0.25-- c(predicted y)
    #                          |0.25
    #                          d (no label at all)          e: no relationships
    kuzu_store.write_nodes("toy", nodes(["a", "b", "c", "d", "e"], [None, "x", None, None, "y"]))
    kuzu_store.replace_edges("toy", edges([("a", "b", 0.5), ("c", "a", 0.25), ("a", "d", 0.25)]))
    now = pd.Timestamp("2026-01-02 03:04:05")
    rows = pa.table({
        "key": ["a", "b", "c"], "predicted_label": ["x", "x", "y"], "label_confidence": [0.75, 1.0, 0.5],
        "label_noise": [None, False, None], "label_run_id": ["r1"] * 3, "label_solver": ["harmonic"] * 3,
        "labelled_at": [now.to_pydatetime()] * 3,
    }).cast(PREDICTION_SCHEMA)
    kuzu_store.write_predictions("toy", rows)
    node, neighbours = kuzu_store.explain("toy", "a", limit=2)
    assert node["predicted_label"] == "x"
    assert node["given_label"] is None
    assert node["label_confidence"] == 0.75
    assert node["label_run_id"] == "r1"
    assert node["labelled_at"] == now
    assert node["degree"] == 1.0
    assert node["n_neighbours"] == 3
    assert node["class_shares"] == {"x": 0.5, "y": 0.25, None: 0.25}
    assert neighbours["key"].tolist() == ["b", "c"]  # strongest first, then by key
    assert neighbours["weight"].tolist() == [0.5, 0.25]
    assert neighbours["share"].tolist() == [0.5, 0.25]
    assert neighbours["label"].tolist() == ["x", "y"]
    assert neighbours["agrees"].tolist() == [True, False]
    lonely, none = kuzu_store.explain("toy", "e")
    assert lonely["n_neighbours"] == 0
    assert lonely["class_shares"] == {}
    assert none.empty
    assert lonely["given_label"] == "y"
    assert lonely["predicted_label"] is None
    with pytest.raises(LookupError, match="no node with key 'zz' in dataset 'toy'"):
        kuzu_store.explain("toy", "zz")
    with pytest.raises(LookupError, match="in dataset 'other'"):
        kuzu_store.explain("other", "a")  # keys are per dataset


# -- the embedded engine: kuzu or ladybug, a property of the store -------------------------


def test_the_engine_is_the_stores_and_a_uri_may_name_it(tmp_path):
    from graphstore import StoreNotFound, StoreSetupError
    from graphstore.kuzu_store import KuzuStore

    folder = tmp_path / "store"
    with open_store(str(folder), create=True) as store:  # a new store: the default engine
        assert (store.dialect, store.engine) == ("kuzu", "kuzu")
        store.write_nodes("toy", nodes(["a"], ["x"]))
    assert sorted(p.name for p in folder.iterdir()) == ["graph.kuzu"]
    with open_store(f"kuzu://{folder}") as store:
        assert store.count_nodes("toy") == 1
    # the files are not compatible: a URI naming the other engine is refused, not answered
    # from a second, empty database made beside the first (checked before ladybug loads)
    with pytest.raises(StoreSetupError, match=r"is a kuzu store \(graph.kuzu\), not a ladybug one"):
        open_store(f"ladybug://{folder}", create=True)
    assert sorted(p.name for p in folder.iterdir()) == ["graph.kuzu"]
    with pytest.raises(StoreNotFound, match="no store at"):
        open_store(f"ladybug://{tmp_path / 'none'}")
    (folder / "graph.lbug").write_bytes(b"")  # a folder with both: the URI must say which
    with pytest.raises(StoreSetupError, match="holds a database of each engine"):
        open_store(str(folder))
    with open_store(f"kuzu://{folder}") as store:
        assert store.count_nodes("toy") == 1
    with pytest.raises(ValueError, match="embedded engine must be one of"):
        KuzuStore(folder, engine="sqlite")


ENGINES_IN_ONE_PROCESS = """
import sys
from graphstore import StoreSetupError, open_store
first, second, folder = sys.argv[1:]
with open_store(f"{first}://{folder}/one", create=True) as store:
    store.count_nodes("toy")
try:
    open_store(f"{second}://{folder}/two", create=True)
except StoreSetupError as error:
    print(error)
"""


@pytest.mark.parametrize("first, second", [("kuzu", "ladybug"), ("ladybug", "kuzu")])
def test_the_two_engines_are_never_loaded_in_one_process(tmp_path, first, second):
    """Loading the second engine's native module fails ("type Database is already
    registered") and the process then dies on exit (SIGSEGV, measured with kuzu 0.11.3 and
    ladybug 0.22.0): the store refuses with a message before it gets there."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", ENGINES_IN_ONE_PROCESS, first, second, str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"the {second} engine cannot be loaded next to it" in done.stdout
    file = {"kuzu": "graph.kuzu", "ladybug": "graph.lbug"}[first]
    assert [p.name for p in (tmp_path / "one").iterdir()] == [file]
    assert not (tmp_path / "two").exists()
