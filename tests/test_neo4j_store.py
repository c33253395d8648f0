"""The Neo4j adapter against a recording fake driver.

The fake stands in for the server in these unit tests only; the same paths run against a
live Neo4j 5.26 + GDS 2.13 in tests/test_neo4j_live.py. It records the Cypher text, its
parameters, routing and database (auto-commit GDS calls with routing "auto"), and
answers with the columns a server would return. What is checked: which query files are
sent, identifier quoting and refusal of hostile names, batch sizes, parameters, the GDS
calls and their configuration, and the conversion of the returned columns into a
SubGraph against a dense reference on real data (scikit-learn's digits).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field

import neo4j
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from graphstore import LabelRunRecord, open_store
from graphstore.errors import StoreUnavailable
from graphstore.identifiers import Fragment, check_identifier, quote, render
from graphstore.neo4j_store import Neo4jGraphConfig, Neo4jStore
from graphstore.port import BuiltGraph
from graphstore.schemas import EDGE_SCHEMA, NODE_SCHEMA, PREDICTION_SCHEMA, SubGraph, one_row_per_pair
from similarity.spec import GraphSpec

HOSTILE_NAMES = [
    "Entity`) DETACH DELETE e //",
    "Entity` {x: 1}",
    "a b",
    "1abc",
    "",
    "x;y",
    "weight}) RETURN 1",
    "Entität",
    "a`b",
    "$param",
    "a" * 129,
    None,
    5,
]


@dataclass
class Call:
    query: str
    parameters: dict
    routing: str
    database: str | None


@dataclass
class FakeDriver:
    """Records every ``execute_query`` call; ``answers[query]`` says what to return.

    An answer is a list of row dicts or a function of the parameters returning one. Write
    batches (``$rows``) answer ``written = len(rows)`` unless told otherwise; other
    queries answer no rows.
    """

    answers: dict = field(default_factory=dict)
    calls: list = field(default_factory=list)
    closed: bool = False

    def execute_query(self, query_, parameters_=None, routing_="w", database_=None, **kwargs):
        parameters = dict(parameters_ or {})
        self.calls.append(Call(query_, parameters, routing_, database_))
        answer = self.answers.get(query_)
        if callable(answer):
            rows = answer(parameters)
        elif answer is not None:
            rows = answer
        elif "rows" in parameters:
            rows = [{"written": len(parameters["rows"])}]
        else:
            rows = []
        keys = list(rows[0]) if rows else []
        return neo4j.EagerResult([neo4j.Record(row) for row in rows], None, keys)

    def session(self, database=None, **kwargs):
        return FakeSession(self, database)

    def close(self):
        self.closed = True

    def sent(self, query):
        return [call for call in self.calls if call.query == query]


@dataclass
class FakeSession:
    """An auto-commit session of the fake driver: ``run`` records the call (routing "auto")
    and answers as ``execute_query`` does; an answer that is an exception is raised."""

    driver: FakeDriver
    database: str | None

    def run(self, query, parameters=None):
        self.driver.calls.append(Call(query, dict(parameters or {}), "auto", self.database))
        answer = self.driver.answers.get(query)
        rows = answer(dict(parameters or {})) if callable(answer) else (answer or [])
        if isinstance(rows, BaseException):
            raise rows
        return _Rows(rows)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@dataclass
class _Rows:
    rows: list

    def data(self):
        return [dict(row) for row in self.rows]


def make_store(config=None, answers=None, database="graphs"):
    driver = FakeDriver(answers=dict(answers or {}))
    store = Neo4jStore(driver, config, database=database)
    return store, driver


def node_table(n, dim=3, labelled_every=3, seed=0):
    rng = np.random.default_rng(seed)
    return pa.table({
        "key": [f"k{i}" for i in range(n)],
        "features": rng.normal(size=(n, dim)).tolist(),
        "label": [str(i % 2) if i % labelled_every == 0 else None for i in range(n)],
    }).cast(NODE_SCHEMA)


# -- identifiers --------------------------------------------------------------------------


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_identifiers_are_refused_in_every_setting(name):
    with pytest.raises(ValueError, match="invalid"):
        check_identifier(name)
    for setting in ("node_label", "key", "dataset", "given_label", "relationship", "weight", "run_label",
                    "predicted_label", "labelled_at", "previous_label_run_id"):
        if setting == "dataset" and name is None:
            continue  # dataset=None is the "no dataset property" setting
        with pytest.raises(ValueError, match=setting):
            Neo4jGraphConfig(**{setting: name})
    with pytest.raises(ValueError, match="features"):
        Neo4jGraphConfig(features=("x", name))


def test_identifiers_are_backtick_quoted_and_templates_take_only_fragments():
    assert quote("Person") == "`Person`"
    assert isinstance(quote("Person"), Fragment)
    assert render("MATCH (e:${label}) RETURN $p", {"label": quote("Person")}) == "MATCH (e:`Person`) RETURN $p"
    with pytest.raises(TypeError):
        render("MATCH (e:${label})", {"label": "Person) DETACH DELETE (e"})
    with pytest.raises(KeyError):
        render("MATCH (e:${label})", {})


def test_custom_names_reach_every_query_quoted():
    config = Neo4jGraphConfig(node_label="Person", key="pid", dataset=None, features=("age", "income"),
                              given_label="segment", relationship="LOOKS_LIKE", weight="score",
                              run_label="Run", predicted_label="segment_guess")
    store, _ = make_store(config)
    for name in ("upsert_nodes", "read_nodes", "read_edges", "write_predictions", "insert_edges",
                 "delete_edges", "gds_project", "gds_set_weights", "write_run"):
        text = store.cypher(name)
        assert "${" not in text
        assert ":Entity" not in text
        assert "SIMILAR" not in text
    assert "MERGE (e:`Person` {`pid`: row.key})" in store.cypher("upsert_nodes")
    assert "e.`age` = row.features[0], e.`income` = row.features[1]" in store.cypher("upsert_nodes")
    assert "[toFloat(e.`age`), toFloat(e.`income`)]" in store.cypher("gds_project")
    assert "-[r:`LOOKS_LIKE`]->" in store.cypher("read_edges")
    assert "r.`score`" in store.cypher("read_edges")
    assert "e.`segment_guess` = row.predicted_label" in store.cypher("write_predictions")
    # no dataset property: the dataset filter is gone, the key alone is unique
    assert "$dataset" not in store.cypher("read_nodes")
    assert "REQUIRE e.`pid` IS UNIQUE" in store.cypher("schema")


def test_duplicate_property_settings_and_bad_options_are_refused():
    with pytest.raises(ValueError, match="distinct"):
        Neo4jGraphConfig(predicted_label="given_label")
    with pytest.raises(ValueError, match="batch_size"):
        Neo4jGraphConfig(batch_size=0)
    with pytest.raises(ValueError, match="edge_builder"):
        Neo4jGraphConfig(edge_builder="faiss")
    with pytest.raises(ValueError, match="unknown"):
        Neo4jGraphConfig.from_env({}, node_lable="Person")


# -- schema, writes -----------------------------------------------------------------------


def test_schema_is_created_idempotently_on_opening():
    store, driver = make_store()
    statements = [call.query for call in driver.calls]
    assert len(statements) == schema_statements(store) == 3
    assert all("IF NOT EXISTS" in s for s in statements)
    assert "FOR (e:`Entity`) REQUIRE (e.`dataset`, e.`key`) IS UNIQUE" in statements[0]
    assert "FOR (r:`LabelRun`) REQUIRE r.run_id IS UNIQUE" in statements[1]
    assert "FOR (l:`GraphlabelLease`) REQUIRE l.dataset IS UNIQUE" in statements[2]
    assert all(call.database == "graphs" and call.routing == "w" for call in driver.calls)


def test_write_nodes_sends_unwind_batches_of_the_configured_size():
    store, driver = make_store(Neo4jGraphConfig(batch_size=10))
    nodes = node_table(25)
    assert store.write_nodes("toy", nodes) == 25
    calls = driver.sent(store.cypher("upsert_nodes"))
    assert [len(c.parameters["rows"]) for c in calls] == [10, 10, 5]
    assert all(c.parameters["dataset"] == "toy" for c in calls)
    sent = [row for c in calls for row in c.parameters["rows"]]
    # each row also carries its content hash, for change tracking (graphstore/changes.py)
    # and the optional columns (graphstore.schemas.NODE_OPTIONAL_FIELDS), null when not given
    assert [{k: v for k, v in row.items() if k not in ("content_hash", "categories", "label_confidence")}
            for row in sent] == nodes.to_pylist()
    assert all(row["categories"] is None and row["label_confidence"] is None for row in sent)
    from graphstore.changes import content_hashes
    assert [row["content_hash"] for row in sent] == content_hashes(nodes).tolist()
    assert all(isinstance(c.parameters["now"], dt.datetime) for c in calls)
    assert store.cypher("upsert_nodes").startswith("UNWIND $rows AS row\nMERGE (e:`Entity` {`dataset`: $dataset,")


def test_multi_property_features_must_match_the_configured_properties():
    store, driver = make_store(Neo4jGraphConfig(features=("f1", "f2", "f3")))
    store.write_nodes("toy", node_table(4, dim=3))
    assert len(driver.sent(store.cypher("upsert_nodes"))) == 1
    with pytest.raises(ValueError, match="3 values"):
        store.write_nodes("toy", node_table(4, dim=2))


def test_invalid_dataset_names_never_reach_the_server():
    store, driver = make_store()
    before = len(driver.calls)
    for bad in ("", "a:b", "x' OR 1=1", "1st"):
        with pytest.raises(ValueError, match="dataset"):
            store.write_nodes(bad, node_table(2))
    assert len(driver.calls) == before


def test_replace_edges_deletes_its_own_by_batches_of_nodes_then_inserts_in_batches():
    config = Neo4jGraphConfig(batch_size=40)  # 40 relationships at ~10 per node: 4 nodes a batch
    store, driver = make_store(config)
    keys = [f"k{i}" for i in range(9)]
    driver.answers[store.cypher("node_keys")] = [{"keys": keys}]
    driver.answers[store.cypher("unowned_edges")] = [{"unowned": 0}]
    driver.answers[store.cypher("delete_edges")] = lambda p: [{"deleted": 10 * len(p["keys"])}]
    edges = pa.table({"source": ["k0", "k1", "k2", "k3", "k4"], "target": ["k1", "k2", "k3", "k4", "k0"],
                      "weight": [0.5, 0.25, 1.0, 0.75, 0.1]}).cast(EDGE_SCHEMA)
    assert store.replace_edges("toy", edges) == 5
    deletes = driver.sent(store.cypher("delete_edges"))
    assert [c.parameters["keys"] for c in deletes] == [keys[:4], keys[4:8], keys[8:]]
    inserts = driver.sent(store.cypher("insert_edges"))
    assert [len(c.parameters["rows"]) for c in inserts] == [5]
    assert [r["weight"] for c in inserts for r in c.parameters["rows"]] == [0.5, 0.25, 1.0, 0.75, 0.1]
    calls = [c.query for c in driver.calls]
    assert calls.index(store.cypher("unowned_edges")) < calls.index(deletes[0].query) < calls.index(inserts[0].query)


def test_write_predictions_batches_and_counts_matched_nodes():
    store, driver = make_store(Neo4jGraphConfig(batch_size=2))
    now = pd.Timestamp("2026-01-02 03:04:05")
    rows = pa.table({
        "key": ["a", "b", "c"], "predicted_label": ["x", None, "y"], "label_confidence": [0.9, 0.0, 0.6],
        "label_noise": [True, None, False], "label_run_id": ["r1"] * 3, "label_solver": ["harmonic"] * 3,
        "labelled_at": [now.to_pydatetime()] * 3,
    }).cast(PREDICTION_SCHEMA)
    # the server has no node "b": the count says so
    driver.answers[store.cypher("write_predictions")] = lambda p: [
        {"written": sum(row["key"] != "b" for row in p["rows"])}]
    assert store.write_predictions("toy", rows) == 2
    calls = driver.sent(store.cypher("write_predictions"))
    assert [len(c.parameters["rows"]) for c in calls] == [2, 1]
    first = calls[0].parameters["rows"][0]
    assert first["labelled_at"] == dt.datetime(2026, 1, 2, 3, 4, 5)
    assert first["labelled_at"].tzinfo is None
    assert first["label_noise"] is True
    assert calls[0].parameters["rows"][1]["predicted_label"] is None


class PredictionGraph:
    """Plays the server's part for write_predictions.neo4j.cypher on a dict of nodes
    (SET semantics, including the shift of the previous run's prediction), and dies on a
    chosen batch to simulate a crash half way."""

    def __init__(self, keys, die_on_batch=None):
        self.nodes = {k: {} for k in keys}
        self.batches = 0
        self.die_on_batch = die_on_batch

    def __call__(self, params):
        self.batches += 1
        if self.batches == self.die_on_batch:
            raise neo4j.exceptions.ServiceUnavailable("connection lost")
        for row in params["rows"]:
            node = self.nodes[row["key"]]
            if node.get("label_run_id") not in (None, row["label_run_id"]):
                node["previous_predicted_label"] = node.get("predicted_label")
                node["previous_label_run_id"] = node["label_run_id"]
            node.update({k: v for k, v in row.items() if k != "key"})
        return [{"written": len(params["rows"])}]


def predictions(keys, run_id, labels):
    n = len(keys)
    return pa.table({
        "key": keys, "predicted_label": labels, "label_confidence": np.linspace(0.5, 1, n),
        "label_noise": [False] * n, "label_run_id": [run_id] * n, "label_solver": ["harmonic"] * n,
        "labelled_at": [dt.datetime(2026, 1, 1)] * n,
    }).cast(PREDICTION_SCHEMA)


def test_a_run_that_dies_half_way_and_is_rerun_ends_as_one_clean_run():
    keys = [f"k{i}" for i in range(7)]
    first = predictions(keys, "r1", ["a"] * 7)
    second = predictions(keys, "r2", ["a", "b"] * 3 + ["b"])
    config = Neo4jGraphConfig(batch_size=3)

    clean_store, clean_driver = make_store(config)
    clean = PredictionGraph(keys)
    clean_driver.answers[clean_store.cypher("write_predictions")] = clean
    clean_store.write_predictions("toy", first)
    clean_store.write_predictions("toy", second)

    store, driver = make_store(config)
    crashed = PredictionGraph(keys)
    driver.answers[store.cypher("write_predictions")] = crashed
    store.write_predictions("toy", first)
    crashed.die_on_batch = crashed.batches + 2  # second run: batch 1 lands, batch 2 dies
    with pytest.raises(StoreUnavailable) as raised:  # the port's one transient error
        store.write_predictions("toy", second)
    assert isinstance(raised.value.__cause__, neo4j.exceptions.ServiceUnavailable)
    from flows.tasks import is_transient

    assert is_transient(raised.value)
    assert not is_transient(ValueError("bad input"))
    crashed.die_on_batch = None
    assert store.write_predictions("toy", second) == 7
    assert crashed.nodes == clean.nodes
    assert clean.nodes["k1"]["previous_predicted_label"] == "a"
    assert clean.nodes["k1"]["predicted_label"] == "b"
    # the template shifts only when the run id differs (what PredictionGraph plays)
    assert "e.`label_run_id` = row.label_run_id" in store.cypher("write_predictions")


def test_write_run_sends_json_text_and_naive_timestamps():
    store, driver = make_store()
    started = pd.Timestamp("2026-01-02 03:04:05", tz="UTC")
    run = LabelRunRecord("r1", "toy", "harmonic", {"k": 10}, {"class_counts": {"a": 3}}, {"solve": 0.5},
                         started, started + pd.Timedelta(seconds=2), 10, 4, 1)
    store.write_run(run)
    call = driver.sent(store.cypher("write_run"))[0]
    assert json.loads(call.parameters["metrics"]) == {"class_counts": {"a": 3}}
    assert call.parameters["finished_at"] == dt.datetime(2026, 1, 2, 3, 4, 7)
    assert call.parameters["n_flagged"] == 1
    assert call.routing == "w"
    assert store.cypher("write_run").startswith("MERGE (r:`LabelRun` {run_id: $run_id})")


def test_user_query_is_read_routed_and_returns_a_frame():
    store, driver = make_store()
    driver.answers["MATCH (e) RETURN e.key AS key, 1 AS one"] = [{"key": "a", "one": 1}, {"key": "b", "one": 1}]
    frame = store.query("MATCH (e) RETURN e.key AS key, 1 AS one", {"x": 1})
    assert frame.to_dict("list") == {"key": ["a", "b"], "one": [1, 1]}
    assert driver.calls[-1].routing == "r"
    assert driver.calls[-1].parameters == {"x": 1}


# -- export -------------------------------------------------------------------------------


def test_one_row_per_pair_matches_a_dense_maximum():
    rng = np.random.default_rng(3)
    n = 30
    source, target = rng.integers(0, n, 400), rng.integers(0, n, 400)
    weight = rng.random(400)
    graph = one_row_per_pair(SubGraph(np.arange(n), np.full(n, None), None, source, target, weight))
    dense = np.zeros((n, n))
    np.maximum.at(dense, (source, target), weight)
    dense = np.maximum(dense, dense.T)
    np.fill_diagonal(dense, 0)
    got = np.zeros((n, n))
    got[graph.source, graph.target] = graph.weight
    assert np.all(graph.source < graph.target)
    np.testing.assert_allclose(got + got.T, dense)


def test_read_subgraph_turns_columns_into_the_dense_reference(digits):
    X, y = digits
    X, y = X[:120], y[:120]
    n = len(y)
    keys = [f"d{i}" for i in range(n)]
    given = [str(v) if i % 4 == 0 else None for i, v in enumerate(y)]
    rng = np.random.default_rng(0)
    # a kNN-like relationship set as GDS writes it: directed, pairs often in both directions
    from sklearn.neighbors import NearestNeighbors

    _, idx = NearestNeighbors(n_neighbors=6).fit(X).kneighbors(X)
    src = np.repeat(np.arange(n), 5)
    dst = idx[:, 1:].ravel()
    w = rng.random(len(src))
    node_columns = {
        "keys": keys, "keyless": 0, "has_label": [g is not None for g in given],
        "labels": [g or "" for g in given],
        "has_features": [True] * n, "features": X.tolist(),
    }
    edge_columns = {"source": [keys[i] for i in src], "target": [keys[j] for j in dst], "weight": w.tolist()}
    store, driver = make_store()
    driver.answers[store.cypher("read_nodes")] = [node_columns]
    driver.answers[store.cypher("read_edges")] = [edge_columns]
    graph = store.read_subgraph("digits")
    reads = driver.calls[schema_statements(store):]
    assert all(c.routing == "r" and c.parameters == {"dataset": "digits"} for c in reads)
    assert graph.keys.tolist() == keys
    assert graph.labels.tolist() == given
    np.testing.assert_array_equal(graph.features, X)
    dense = np.zeros((n, n))
    np.maximum.at(dense, (src, dst), w)
    dense = np.maximum(dense, dense.T)
    got = np.zeros((n, n))
    got[graph.source, graph.target] = graph.weight
    np.testing.assert_allclose(np.maximum(got, got.T), dense)
    assert len(graph.weight) == np.count_nonzero(np.triu(dense))


def test_read_subgraph_without_features_and_with_incomplete_features():
    store, driver = make_store()
    driver.answers[store.cypher("read_nodes")] = [{
        "keys": ["a", "b"], "keyless": 0, "has_label": [True, False], "labels": ["x", ""],
        "has_features": [True, False], "features": [[1.0, 2.0], []],
    }]
    driver.answers[store.cypher("read_nodes_without_features")] = [{
        "keys": ["a", "b"], "keyless": 0, "has_label": [True, False], "labels": ["x", ""]}]
    driver.answers[store.cypher("read_edges")] = [{"source": ["a"], "target": ["b"], "weight": [0.5]}]
    assert store.read_subgraph("toy").features is None  # one node lacks its vector
    graph = store.read_subgraph("toy", with_features=False)
    assert graph.features is None
    assert graph.labels.tolist() == ["x", None]
    assert driver.calls[-2].query == store.cypher("read_nodes_without_features")


def test_non_string_and_missing_keys_are_refused_when_read():
    store, driver = make_store()
    columns = {"keys": [1, 2], "keyless": 0, "has_label": [False, False], "labels": ["", ""],
               "has_features": [True, True], "features": [[1.0], [2.0]]}
    driver.answers[store.cypher("read_nodes")] = lambda p: [columns]
    driver.answers[store.cypher("read_edges")] = [{"source": [], "target": [], "weight": []}]
    with pytest.raises(ValueError, match="strings"):
        store.read_subgraph("toy")
    columns.update(keys=["a"], keyless=1)  # collect() skipped the node without a key
    with pytest.raises(ValueError, match="1 nodes of dataset 'toy' have no key"):
        store.read_subgraph("toy")


# -- GDS ----------------------------------------------------------------------------------


def gds_store(config=None, version="2.13.9", written=40, keys=("k0", "k1", "k2"), unowned=0):
    """A store whose fake server has GDS ``version`` (None: no GDS) and answers the build's
    reads: the dataset's keys, no unowned relationships, ``written`` from kNN."""
    store, driver = make_store(config)
    from neo4j.exceptions import CypherSyntaxError

    driver.answers[store.cypher("gds_version")] = (
        [{"version": version}] if version else
        lambda p: (_ for _ in ()).throw(CypherSyntaxError("Unknown function 'gds.version' (line 1)")))
    driver.answers[store.cypher("node_keys")] = [{"keys": list(keys)}]
    driver.answers[store.cypher("feature_lengths")] = [{"length": 3, "nodes": len(keys)}]
    driver.answers[store.cypher("unowned_edges")] = [{"unowned": unowned}]
    driver.answers[store.cypher("gds_knn_write")] = [{"written": written}]
    driver.answers[store.cypher("gds_edge_scale")] = [{"sigma": 2.5}]
    return store, driver


def schema_statements(store) -> int:
    """How many calls opening a store makes first (one per schema statement)."""
    from graphstore.queries import split_statements

    return len(split_statements(store.cypher("schema")))


def queries_sent(store, driver, start=None):
    names = {store.cypher(name): name for name in (
        "gds_version", "node_keys", "unowned_edges", "delete_edges", "gds_project", "gds_knn_write", "gds_drop",
        "gds_prune_edges", "gds_edge_scale", "gds_set_weights", "feature_lengths", "add_edges")}
    start = schema_statements(store) if start is None else start
    return [names.get(call.query, call.query) for call in driver.calls[start:]]


def test_gds_knn_write_is_called_with_its_configuration_and_the_projection_dropped():
    store, driver = gds_store(written=40)
    assert store.build_knn_edges("toy", k=4, metric="cosine", weights="similarity",
                                 similarity_cutoff=0.2, deterministic=True) == BuiltGraph(40, None)
    # checks first (nothing deleted before them), then delete, project, kNN, drop, weights
    assert queries_sent(store, driver) == ["gds_version", "node_keys", "feature_lengths", "unowned_edges",
                                           "delete_edges", "gds_project", "gds_knn_write", "gds_drop",
                                           "gds_set_weights"]
    project, knn, drop = (driver.calls[schema_statements(store) + i] for i in (5, 6, 7))
    assert project.routing == knn.routing == drop.routing == "auto"  # not retried by the driver
    assert project.parameters["dataset"] == "toy"
    assert project.parameters["graph_name"].startswith("graphlabel_toy_")
    assert knn.parameters["graph_name"] == drop.parameters["graph_name"] == project.parameters["graph_name"]
    assert knn.parameters["config"] == {
        "writeRelationshipType": "SIMILAR", "writeProperty": "graphlabel_similarity",
        "nodeProperties": {"features": "COSINE"}, "topK": 4, "similarityCutoff": 0.2,
        "randomSeed": 0, "concurrency": 1}
    weights = driver.calls[-1]
    assert weights.parameters["weights"] == "similarity"
    assert weights.parameters["keys"] == ["k0", "k1", "k2"]


def test_gds_seed_forces_concurrency_one_and_conflicts_are_refused():
    store, driver = gds_store()
    store.build_knn_edges("toy", k=3, seed=7)
    config = driver.sent(store.cypher("gds_knn_write"))[-1].parameters["config"]
    assert config["randomSeed"] == 7
    assert config["concurrency"] == 1
    assert config["nodeProperties"] == {"features": "EUCLIDEAN"}
    store.build_knn_edges("toy", k=3, concurrency=4, sample_rate=1.0, delta_threshold=0.0)
    config = driver.sent(store.cypher("gds_knn_write"))[-1].parameters["config"]
    assert "randomSeed" not in config
    assert config["concurrency"] == 4
    assert config["sampleRate"] == 1.0
    assert config["deltaThreshold"] == 0.0
    before = len(driver.calls)
    with pytest.raises(ValueError, match="concurrency=1"):
        store.build_knn_edges("toy", k=3, seed=1, concurrency=2)
    for bad in ({"k": 0}, {"metric": "manhattan"}, {"weights": "heat"}, {"symmetrise": "mutual"},
                {"similarity_cutoff": 2.0}, {"delta": -1.0}, {"weights": "cosine", "metric": "euclidean"},
                {"concurrency": 0}):
        with pytest.raises(ValueError):
            store.build_knn_edges("toy", **bad)
    assert len(driver.calls) == before  # refused before any query


def test_gds_projection_is_dropped_when_knn_fails():
    store, driver = gds_store()
    driver.answers[store.cypher("gds_knn_write")] = lambda p: RuntimeError("out of memory")
    with pytest.raises(RuntimeError, match="out of memory"):
        store.build_knn_edges("toy", k=3)
    assert queries_sent(store, driver)[-2:] == ["gds_knn_write", "gds_drop"]
    assert driver.calls[-1].parameters["graph_name"] == driver.calls[-2].parameters["graph_name"]


def test_gds_gaussian_weights_and_delta_go_in_batches_of_nodes():
    keys = [f"k{i}" for i in range(9)]
    store, driver = gds_store(Neo4jGraphConfig(batch_size=8), written=45, keys=keys)
    driver.answers[store.cypher("gds_prune_edges")] = lambda p: [{"deleted": len(p["keys"])}]
    assert store.build_knn_edges("toy", k=5, weights="gaussian", delta=3.0) == BuiltGraph(45 - 9, 2.5)
    # batch_size 8 relationships at k=5 per node: one node per batch... 8 // 5 = 1
    prunes = driver.sent(store.cypher("gds_prune_edges"))
    assert [c.parameters["keys"] for c in prunes] == [[k] for k in keys]
    assert all(c.parameters["max_distance"] == 3.0 for c in prunes)
    scale = driver.sent(store.cypher("gds_edge_scale"))[-1]
    assert scale.routing == "r"
    weights = driver.sent(store.cypher("gds_set_weights"))
    assert len(weights) == 9
    assert all(c.parameters["sigma"] == 2.5 for c in weights)
    store.build_knn_edges("toy", k=2, weights="gaussian", sigma=0.7)
    last = driver.sent(store.cypher("gds_set_weights"))[-1]
    assert last.parameters["sigma"] == 0.7
    assert len(last.parameters["keys"]) == 1  # 9 keys, 4 per batch
    assert [len(c.parameters["keys"]) for c in driver.sent(store.cypher("gds_set_weights"))[-3:]] == [4, 4, 1]
    assert len(driver.sent(store.cypher("gds_edge_scale"))) == 1  # a given σ is not measured


def test_missing_or_old_gds_fails_clearly_before_anything_is_deleted():
    from graphstore import StoreSetupError

    store, driver = gds_store(version=None)
    with pytest.raises(StoreSetupError, match="Graph Data Science .GDS. plugin is not installed"):
        store.build_knn_edges("toy", k=3)
    assert queries_sent(store, driver) == ["gds_version"]
    store, driver = gds_store(version="2.12.3")
    with pytest.raises(StoreSetupError, match="GDS 2.12.3 is too old"):
        store.build_knn_edges("toy", k=3)
    assert queries_sent(store, driver) == ["gds_version"]


def test_a_relationship_type_holding_a_users_relationships_is_never_built_into():
    from graphstore import StoreSetupError

    store, driver = gds_store(unowned=7)
    edges = pa.table({"source": ["k0"], "target": ["k1"], "weight": [1.0]}).cast(EDGE_SCHEMA)
    for build in (lambda: store.build_knn_edges("toy", k=3), lambda: store.replace_edges("toy", edges)):
        with pytest.raises(StoreSetupError, match="holds 7 relationships .* graphlabel did not create"):
            build()
    assert "delete_edges" not in queries_sent(store, driver)
    assert "insert_edges" not in " ".join(queries_sent(store, driver))
    # graphlabel's own relationships carry the marker; deletes and merges touch only those
    assert "r.`graphlabel_similarity` IS NOT NULL" in store.cypher("delete_edges")
    assert "MERGE (a)-[r:`SIMILAR` {`graphlabel_similarity`: row.weight}]->(b)" in store.cypher("insert_edges")
    with pytest.raises(ValueError, match="edge_marker must differ"):
        Neo4jGraphConfig(edge_marker="weight")


def test_a_half_built_graph_is_refused_on_reading():
    from graphstore import StoreSetupError

    store, driver = make_store()
    driver.answers[store.cypher("read_nodes")] = [{"keys": ["a"], "keyless": 0, "has_label": [True],
                                                   "labels": ["x"], "has_features": [True], "features": [[1.0]]}]
    driver.answers[store.cypher("read_edges")] = [{"source": [], "target": [], "weight": [], "unweighted": 12}]
    with pytest.raises(StoreSetupError, match="half built .12 relationships without a 'weight'"):
        store.read_subgraph("toy")


@pytest.mark.parametrize("config, spec", [
    (Neo4jGraphConfig(edge_builder="local"), GraphSpec(k=1)),
    (Neo4jGraphConfig(), GraphSpec.from_options("delta", delta=5.0)),  # GDS builds kNN graphs only
])
def test_graphs_gds_does_not_build_are_built_locally_through_the_port(config, spec):
    store, driver = make_store(config)
    driver.answers[store.cypher("read_nodes")] = [{"keys": ["a", "b", "c"], "keyless": 0,
                                                   "has_label": [True, False, True], "labels": ["x", "", "y"],
                                                   "has_features": [True] * 3,
                                                   "features": [[0.0], [1.0], [3.0]]}]
    driver.answers[store.cypher("read_edges")] = [{"source": [], "target": [], "weight": [], "unweighted": 0}]
    driver.answers[store.cypher("node_keys")] = [{"keys": ["a", "b", "c"]}]
    start = len(driver.calls)
    store.check_edge_builder(spec)  # no GDS asked for
    store.build_edges("toy", spec)
    sent = [call.query for call in driver.calls[start:]]
    assert not any("gds." in query for query in sent)
    assert store.cypher("insert_edges") in sent


# -- connection ---------------------------------------------------------------------------


def test_open_store_reads_credentials_and_names_from_the_environment(monkeypatch):
    opened = {}

    class Driver(FakeDriver):
        def verify_connectivity(self):
            opened["verified"] = True

    def fake_driver(uri, auth=None, **options):
        opened.update(uri=uri, auth=auth)
        opened["driver"] = Driver()
        return opened["driver"]

    monkeypatch.setattr(neo4j.GraphDatabase, "driver", fake_driver)
    monkeypatch.setenv("NEO4J_USER", "alice")
    monkeypatch.setenv("NEO4J_PASSWORD", "s3cret")
    monkeypatch.setenv("NEO4J_DATABASE", "labels")
    monkeypatch.setenv("GRAPHLABEL_NEO4J_NODE_LABEL", "Person")
    monkeypatch.setenv("GRAPHLABEL_NEO4J_FEATURES", "age, income")
    monkeypatch.setenv("GRAPHLABEL_NEO4J_DATASET", "")
    with open_store("bolt://db.example:7687", batch_size=500) as store:
        assert isinstance(store, Neo4jStore)
        assert store.config.node_label == "Person"
        assert store.config.features == ("age", "income")
        assert store.config.dataset is None
        assert store.config.batch_size == 500
        assert opened["driver"].calls[0].database == "labels"
    assert opened["uri"] == "bolt://db.example:7687"
    assert opened["auth"] == ("alice", "s3cret")
    assert opened["verified"]
    assert opened["driver"].closed
    monkeypatch.setenv("GRAPHLABEL_NEO4J_NODE_LABEL", "Person) DETACH DELETE (x")
    with pytest.raises(ValueError, match="node_label"):
        open_store("neo4j://db.example:7687")


# -- hostile configuration never reaches the server ---------------------------------------

HOSTILE_DATASETS = ["", "a:b", "x' OR 1=1 //", "1st", "a b", "ds`) DETACH DELETE e //", "a" * 65, "../x", None, 7]


@pytest.fixture
def driver_factory(monkeypatch):
    """``neo4j.GraphDatabase.driver`` replaced by a factory recording every driver it makes
    (each one a FakeDriver, recording every query); no Neo4j setting from the machine."""
    import os

    made = []

    class Driver(FakeDriver):
        def verify_connectivity(self):
            pass

    def factory(uri, auth=None, **options):
        made.append(Driver())
        return made[-1]

    monkeypatch.setattr(neo4j.GraphDatabase, "driver", factory)
    for name in list(os.environ):
        if name.startswith(("GRAPHLABEL_NEO4J_", "NEO4J_")):
            monkeypatch.delenv(name)
    return made


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_configuration_is_refused_before_a_driver_or_a_query_exists(name, driver_factory):
    for setting in ("node_label", "key", "features", "given_label", "relationship", "weight", "run_label",
                    "label_noise", "previous_predicted_label"):
        with pytest.raises(ValueError, match=setting):
            open_store("bolt://db.example:7687", **{setting: name})
    assert driver_factory == []  # refused before even connecting
    driver = FakeDriver()
    with pytest.raises(TypeError, match="Neo4jGraphConfig"):
        Neo4jStore(driver, {"node_label": name})  # names only travel inside a validated config
    assert driver.calls == []


@pytest.mark.parametrize("variable, value", [
    ("GRAPHLABEL_NEO4J_NODE_LABEL", "Entity`) DETACH DELETE e //"),
    ("GRAPHLABEL_NEO4J_KEY", "key}) RETURN 1"),
    ("GRAPHLABEL_NEO4J_DATASET", "data set"),
    ("GRAPHLABEL_NEO4J_FEATURES", "age,in`come"),
    ("GRAPHLABEL_NEO4J_FEATURES", "age,,income"),
    ("GRAPHLABEL_NEO4J_GIVEN_LABEL", "label // comment"),
    ("GRAPHLABEL_NEO4J_RELATIONSHIP", "SIMILAR]->() DETACH DELETE a //"),
    ("GRAPHLABEL_NEO4J_WEIGHT", "$weight"),
    ("GRAPHLABEL_NEO4J_RUN_LABEL", "Run;DROP"),
    ("GRAPHLABEL_NEO4J_PREDICTED_LABEL", "Entität"),
    ("GRAPHLABEL_NEO4J_LABELLED_AT", "1st"),
    ("GRAPHLABEL_NEO4J_BATCH_SIZE", "0"),
    ("GRAPHLABEL_NEO4J_BATCH_SIZE", "1e3"),
    ("GRAPHLABEL_NEO4J_EDGE_BUILDER", "gds; rm -rf /"),
])
def test_hostile_environment_values_are_refused_naming_the_variable(variable, value, driver_factory, monkeypatch):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=variable):
        open_store("neo4j://db.example:7687")
    assert driver_factory == []
    # an option given in code wins over the variable, which is then not read at all
    setting = variable.removeprefix("GRAPHLABEL_NEO4J_").lower()
    default = getattr(Neo4jGraphConfig(), setting)
    with open_store("neo4j://db.example:7687", **{setting: default}) as store:
        assert getattr(store.config, setting) == default
    assert len(driver_factory) == 1
    assert driver_factory[0].closed


@pytest.mark.parametrize("uri", ["neo4j://alice:s3cret-pw@db:7687", "bolt+s://alice:s3cret/pw@db",
                                 "neo4j://s3cret-token@db"])
def test_credentials_in_the_uri_are_refused_without_echoing_them(uri, driver_factory):
    for opener in (open_store, Neo4jStore.from_uri):
        with pytest.raises(ValueError, match="holds credentials") as caught:
            opener(uri)
        assert "s3cret" not in str(caught.value)
        assert "***@db" in str(caught.value)
    assert driver_factory == []


def test_hostile_dataset_names_reach_no_query_and_no_gds_call():
    store, driver = make_store()
    before = len(driver.calls)
    edges = pa.table({"source": ["a"], "target": ["b"], "weight": [1.0]}).cast(EDGE_SCHEMA)
    rows = pa.table({"key": ["a"], "predicted_label": ["x"], "label_confidence": [1.0], "label_noise": [False],
                     "label_run_id": ["r"], "label_solver": ["harmonic"],
                     "labelled_at": [dt.datetime(2026, 1, 1)]}).cast(PREDICTION_SCHEMA)
    for bad in HOSTILE_DATASETS:
        for method, args in (("write_nodes", (node_table(2),)), ("replace_edges", (edges,)), ("read_subgraph", ()),
                             ("count_nodes", ()), ("write_predictions", (rows,)), ("build_knn_edges", ())):
            with pytest.raises(ValueError, match="dataset"):
                getattr(store, method)(bad, *args)
    assert len(driver.calls) == before


# -- runs: provenance, reading, retention; explain ----------------------------------------


def test_write_run_sends_status_versions_and_error():
    store, driver = make_store()
    started = pd.Timestamp("2026-01-02 03:04:05", tz="UTC")
    running = LabelRunRecord("r1", "toy", "harmonic", {}, {}, {}, started, None, 10, 4, 0, status="running",
                             versions={"neo4j": "5.28.1", "graphlabel": "0.1.0"})
    store.write_run(running)
    store.write_run(LabelRunRecord(**{**running.__dict__, "status": "failed", "error": "solver diverged",
                                      "finished_at": started + pd.Timedelta(seconds=2)}))
    first, second = driver.sent(store.cypher("write_run"))
    assert first.parameters["status"] == "running"
    assert first.parameters["finished_at"] is None
    assert first.parameters["error"] is None
    assert json.loads(first.parameters["versions"]) == {"neo4j": "5.28.1", "graphlabel": "0.1.0"}
    assert second.parameters["status"] == "failed"
    assert second.parameters["error"] == "solver diverged"
    assert second.parameters["finished_at"] == dt.datetime(2026, 1, 2, 3, 4, 7)
    for assignment in ("r.status = $status", "r.versions = $versions", "r.error = $error"):
        assert assignment in store.cypher("write_run")


def run_row(run_id, hour, **values):
    row = {"run_id": run_id, "dataset": "toy", "solver": "harmonic", "status": "completed",
           "started_at": neo4j.time.DateTime(2026, 1, 2, hour, 0, 0),
           "finished_at": neo4j.time.DateTime(2026, 1, 2, hour, 5, 0), "n_nodes": 10, "n_labeled": 4,
           "n_flagged": 1, "parameters": '{"k": 10}', "metrics": '{"class_counts": {"a": 3}}',
           "timings": '{"solve": 0.5}', "versions": '{"neo4j": "5.28.1"}', "error": None}
    row.update(values)
    return row


def test_read_runs_is_read_routed_and_decodes_what_the_server_returns():
    store, driver = make_store(Neo4jGraphConfig(run_label="Run"))
    # r1 was written before statuses and versions existed: the properties are missing
    driver.answers[store.cypher("read_runs")] = [
        run_row("r2", 4, status="failed", error="boom", finished_at=None),
        run_row("r1", 3, status=None, versions=None)]
    frame = store.read_runs("toy", limit=5)
    call = driver.sent(store.cypher("read_runs"))[0]
    assert call.routing == "r"
    assert call.parameters == {"dataset": "toy", "run_id": None, "max_rows": 5, "status": None}
    assert frame["run_id"].tolist() == ["r2", "r1"]  # the server's order (newest first)
    assert frame["status"].tolist() == ["failed", "completed"]
    assert frame["error"].tolist() == ["boom", None]
    assert frame["versions"].tolist() == [{"neo4j": "5.28.1"}, {}]
    assert frame["metrics"][0] == {"class_counts": {"a": 3}}
    assert frame["parameters"][0] == {"k": 10}
    assert frame["started_at"][0] == pd.Timestamp("2026-01-02 04:00")
    assert pd.isna(frame["finished_at"][0])
    assert "MATCH (r:`Run`)" in store.cypher("read_runs")
    assert "ORDER BY started_at DESC" in store.cypher("read_runs")
    sent = len(driver.calls)
    for bad in ({"dataset": "x' OR 1=1"}, {"limit": 0}):
        with pytest.raises(ValueError):
            store.read_runs(**bad)
    assert len(driver.calls) == sent


class RunGraph:
    """Plays the server's part for run_history and delete_runs on a dict of runs: deletes
    the chosen runs except a running one or one a node's label_run_id points to."""

    def __init__(self, statuses, current):
        self.runs = {f"r{i}": status for i, status in enumerate(statuses)}
        self.current = set(current)

    def history(self, params):
        return [{"run_id": run_id, "status": status, "started_at": neo4j.time.DateTime(2026, 1, 1, i)}
                for i, (run_id, status) in enumerate(self.runs.items())]

    def delete(self, params):
        doomed = [r for r in params["run_ids"]
                  if r in self.runs and r not in self.current and self.runs[r] != "running"]
        for run_id in doomed:
            del self.runs[run_id]
        return [{"deleted": len(doomed)}]


def test_prune_runs_deletes_in_batches_and_the_server_keeps_running_and_current_runs():
    store, driver = make_store(Neo4jGraphConfig(batch_size=2))
    graph = RunGraph(["completed", "failed", "completed", "running", "completed", "completed", "failed"],
                     current={"r0"})
    driver.answers[store.cypher("run_history")] = graph.history
    driver.answers[store.cypher("delete_runs")] = graph.delete
    # newest first: r6 failed, r5 completed, r4 completed (kept) | r3 running, r2, r1, r0
    assert store.prune_runs("toy", keep_last=2) == 2
    deletes = driver.sent(store.cypher("delete_runs"))
    assert [c.parameters["run_ids"] for c in deletes] == [["r2", "r1"], ["r0"]]
    assert all(c.routing == "w" and c.parameters["dataset"] == "toy" for c in deletes)
    assert driver.sent(store.cypher("run_history"))[0].routing == "r"
    assert sorted(graph.runs) == ["r0", "r3", "r4", "r5", "r6"]
    # r0 is chosen again (only the deleting transaction knows the nodes point to it) and kept
    assert store.prune_runs("toy", keep_last=2) == 0
    assert driver.sent(store.cypher("delete_runs"))[-1].parameters["run_ids"] == ["r0"]
    graph.current = set()
    assert store.prune_runs("toy", keep_last=2) == 1
    assert sorted(graph.runs) == ["r3", "r4", "r5", "r6"]
    sent = len(driver.calls)
    assert store.prune_runs("toy", keep_last=2) == 0
    assert len(driver.calls) == sent + 1  # nothing to choose: only the history was read
    text = " ".join(store.cypher("delete_runs").split())
    assert "coalesce(r.status, 'completed') <> 'running'" in text
    assert "NOT r.run_id IN current" in text
    assert "collect(DISTINCT e.`label_run_id`) AS current" in text
    with pytest.raises(ValueError, match="keep_last"):
        store.prune_runs("toy", keep_last=-1)


def test_explain_reads_one_node_and_its_neighbours_with_the_configured_names():
    config = Neo4jGraphConfig(node_label="Person", key="pid", dataset=None, features=("age", "income"),
                              given_label="segment", relationship="LOOKS_LIKE", weight="score",
                              predicted_label="segment_guess")
    store, driver = make_store(config)
    node = {"key": "a", "given_label": None, "predicted_label": "x", "label_confidence": 0.8, "label_noise": None,
            "label_run_id": "r1", "label_solver": "harmonic", "labelled_at": neo4j.time.DateTime(2026, 1, 2, 3),
            "neighbours": [{"key": "b", "label": "x", "weight": 3.0}, {"key": "c", "label": "y", "weight": 0.5},
                           {"key": "d", "label": "x", "weight": 0.5}]}
    driver.answers[store.cypher("explain_node")] = lambda p: [node] if p["key"] in ("a", "alone") else []
    driver.answers[store.cypher("explain_neighbours")] = [
        {"key": "b", "weight": 3.0, "given_label": "x", "predicted_label": "x", "label": "x"},
        {"key": "c", "weight": 0.5, "given_label": None, "predicted_label": "y", "label": "y"}]
    about, neighbours = store.explain("people", "a", limit=2)
    assert about["class_shares"] == {"x": 0.875, "y": 0.125}
    assert about["degree"] == 4.0
    assert about["n_neighbours"] == 3
    assert about["dataset"] == "people"
    assert about["labelled_at"] == pd.Timestamp("2026-01-02 03:00")
    assert neighbours["share"].tolist() == [0.75, 0.125]
    assert neighbours["agrees"].tolist() == [True, False]
    calls = driver.sent(store.cypher("explain_neighbours"))
    assert calls[0].parameters == {"dataset": "people", "key": "a", "max_rows": 2}
    assert calls[0].routing == "r"
    text = store.cypher("explain_node")
    assert "MATCH (a:`Person` {`pid`: $key})" in text
    assert "-[r:`LOOKS_LIKE`]-(b:`Person`)" in text
    assert "r.`score`" in text
    assert "b.`segment_guess`" in text
    assert "toString(b.`segment`)" in text
    assert "$dataset" not in text  # no dataset property: every Person is the dataset
    # a node without relationships: the OPTIONAL MATCH row with no neighbour is dropped
    node["neighbours"] = [{"key": None, "label": None, "weight": 1.0}]
    about, _ = store.explain("people", "alone")
    assert about["n_neighbours"] == 0
    assert about["class_shares"] == {}
    assert about["degree"] == 0.0
    sent = len(driver.calls)
    with pytest.raises(LookupError, match="no node with key 'zz' in dataset 'people'"):
        store.explain("people", "zz")
    assert len(driver.calls) == sent + 1  # the neighbours are not asked for


def test_a_refused_connection_is_told_on_one_line():
    # the driver's own text for a closed port spans two lines; the CLI's error is one line
    from graphstore.secrets import StoreConnectionError

    with pytest.raises(StoreConnectionError) as caught:
        Neo4jStore.from_uri("bolt://127.0.0.1:1", password="x")
    message = str(caught.value)
    assert message.startswith("could not open the Neo4j store at bolt://127.0.0.1:1: ServiceUnavailable:")
    assert "\n" not in message
    assert "Connection refused" in message
    assert message.endswith("is a Neo4j server running and listening there? (`make neo4j-up` starts the local one)")
