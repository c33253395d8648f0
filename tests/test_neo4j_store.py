"""The Neo4j adapter against a recording fake driver and a recording fake GDS client.

The fakes stand in for the server only here (no Neo4j can run on the CI machine): they
record the Cypher text, its parameters, routing and database, and answer with the
columns a server would return. What is checked: which query files are sent, identifier
quoting and refusal of hostile names, UNWIND batch sizes, parameters, the GDS calls and
their configuration, and the conversion of the returned columns into a SubGraph,
against a dense reference on real data (scikit-learn's digits). The live-server
counterpart is tests/test_neo4j_integration.py.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from types import SimpleNamespace

import neo4j
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from graphstore import LabelRunRecord, open_store
from graphstore.base import NODE_SCHEMA, PREDICTION_SCHEMA, EDGE_SCHEMA, SubGraph
from graphstore.identifiers import Fragment, check_identifier, quote, render
from graphstore.neo4j_store import Neo4jGraphConfig, Neo4jStore, one_row_per_pair

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

    def close(self):
        self.closed = True

    def sent(self, query):
        return [call for call in self.calls if call.query == query]


class FakeGds:
    """Records the GDS client calls the adapter makes (graph.project.cypher, knn.write,
    graph.drop, server_version) with their arguments."""

    def __init__(self, version="2.13.2", relationships_written=0, knn_error=None):
        self.log = []
        self.version = version
        self.knn_error = knn_error
        self.relationships_written = relationships_written
        fake = self

        class Project:
            def cypher(self, query, **params):
                fake.log.append(("project.cypher", query, params))
                graph = SimpleNamespace(name=lambda: params["graph_name"])
                return graph, SimpleNamespace(node_count=0)

        class Graph:
            project = Project()

            def drop(self, graph, fail_if_missing=True, **kw):
                fake.log.append(("graph.drop", graph, {"fail_if_missing": fail_if_missing}))
                return []

        class Knn:
            def write(self, G, **config):
                fake.log.append(("knn.write", G.name(), config))
                if fake.knn_error:
                    raise fake.knn_error
                return SimpleNamespace(relationships_written=fake.relationships_written)

        self.graph = Graph()
        self.knn = Knn()

    def server_version(self):
        self.log.append(("server_version",))
        return self.version

    def close(self):
        self.log.append(("close",))


def make_store(config=None, answers=None, gds=None, database="graphs"):
    driver = FakeDriver(answers=dict(answers or {}))
    store = Neo4jStore(driver, config, database=database, gds=gds)
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
    assert quote("Person") == "`Person`" and isinstance(quote("Person"), Fragment)
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
                 "delete_edges", "gds_project", "gds_reweight_edges", "write_run"):
        text = store.cypher(name)
        assert "${" not in text
        assert ":Entity" not in text and "SIMILAR" not in text
    assert "MERGE (e:`Person` {`pid`: row.key})" in store.cypher("upsert_nodes")
    assert "e.`age` = row.features[0], e.`income` = row.features[1]" in store.cypher("upsert_nodes")
    assert "[toFloat(e.`age`), toFloat(e.`income`)]" in store.cypher("gds_project")
    assert "-[r:`LOOKS_LIKE`]->" in store.cypher("read_edges") and "r.`score`" in store.cypher("read_edges")
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
    assert len(statements) == 2
    assert all("IF NOT EXISTS" in s for s in statements)
    assert "FOR (e:`Entity`) REQUIRE (e.`dataset`, e.`key`) IS UNIQUE" in statements[0]
    assert "FOR (r:`LabelRun`) REQUIRE r.run_id IS UNIQUE" in statements[1]
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
    assert [{k: v for k, v in row.items() if k != "content_hash"} for row in sent] == nodes.to_pylist()
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


def test_replace_edges_deletes_in_batches_then_inserts_in_batches():
    config = Neo4jGraphConfig(batch_size=4)
    remaining = {"n": 9}

    def delete(params):
        deleted = min(remaining["n"], params["batch_size"])
        remaining["n"] -= deleted
        return [{"deleted": deleted}]

    store, driver = make_store(config)
    driver.answers[store.cypher("delete_edges")] = delete
    edges = pa.table({"source": ["k0", "k1", "k2", "k3", "k4"], "target": ["k1", "k2", "k3", "k4", "k0"],
                      "weight": [0.5, 0.25, 1.0, 0.75, 0.1]}).cast(EDGE_SCHEMA)
    assert store.replace_edges("toy", edges) == 5
    kinds = ["delete" if c.query == store.cypher("delete_edges") else "insert"
             for c in driver.calls[2:]]
    assert kinds == ["delete"] * 3 + ["insert"] * 2  # 4 + 4 + 1 deleted, then 4 + 1 rows
    inserts = driver.sent(store.cypher("insert_edges"))
    assert [len(c.parameters["rows"]) for c in inserts] == [4, 1]
    assert [r["weight"] for c in inserts for r in c.parameters["rows"]] == [0.5, 0.25, 1.0, 0.75, 0.1]
    assert "MERGE (a)-[r:`SIMILAR`]->(b)" in store.cypher("insert_edges")


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
    assert first["labelled_at"] == dt.datetime(2026, 1, 2, 3, 4, 5) and first["labelled_at"].tzinfo is None
    assert first["label_noise"] is True and calls[0].parameters["rows"][1]["predicted_label"] is None


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
    with pytest.raises(neo4j.exceptions.ServiceUnavailable):
        store.write_predictions("toy", second)
    crashed.die_on_batch = None
    assert store.write_predictions("toy", second) == 7
    assert crashed.nodes == clean.nodes
    assert clean.nodes["k1"]["previous_predicted_label"] == "a" and clean.nodes["k1"]["predicted_label"] == "b"
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
    assert call.parameters["n_flagged"] == 1 and call.routing == "w"
    assert store.cypher("write_run").startswith("MERGE (r:`LabelRun` {run_id: $run_id})")


def test_user_query_is_read_routed_and_returns_a_frame():
    store, driver = make_store()
    driver.answers["MATCH (e) RETURN e.key AS key, 1 AS one"] = [{"key": "a", "one": 1}, {"key": "b", "one": 1}]
    frame = store.query("MATCH (e) RETURN e.key AS key, 1 AS one", {"x": 1})
    assert frame.to_dict("list") == {"key": ["a", "b"], "one": [1, 1]}
    assert driver.calls[-1].routing == "r" and driver.calls[-1].parameters == {"x": 1}


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
    assert all(c.routing == "r" and c.parameters == {"dataset": "digits"} for c in driver.calls[2:])
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
    assert graph.features is None and graph.labels.tolist() == ["x", None]
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


def gds_store(config=None, **fake_options):
    gds = FakeGds(**fake_options)
    store, driver = make_store(config, gds=gds)
    driver.answers[store.cypher("delete_edges")] = [{"deleted": 0}]
    return store, driver, gds


def test_gds_knn_write_is_called_with_its_configuration_and_the_projection_dropped():
    store, driver, gds = gds_store(relationships_written=40)
    gds_calls_at_delete = []
    driver.answers[store.cypher("delete_edges")] = lambda p: gds_calls_at_delete.append(len(gds.log)) or [
        {"deleted": 0}]
    assert store.native_knn
    assert store.build_knn_edges("toy", k=4, metric="cosine", weights="similarity",
                                 similarity_cutoff=0.2, deterministic=True) == 40
    names = [entry[0] for entry in gds.log]
    assert names == ["server_version", "project.cypher", "knn.write", "graph.drop"]
    _, query, params = gds.log[1]
    assert query == store.cypher("gds_project")
    assert params["dataset"] == "toy" and params["graph_name"].startswith("graphlabel_toy_")
    _, graph_name, config = gds.log[2]
    assert graph_name == params["graph_name"]
    assert config == {"write_relationship_type": "SIMILAR", "write_property": "weight",
                      "node_properties": {"features": "COSINE"}, "top_k": 4, "similarity_cutoff": 0.2,
                      "random_seed": 0, "concurrency": 1}
    assert gds.log[3] == ("graph.drop", params["graph_name"], {"fail_if_missing": False})
    # the old relationships go after the version check and before the projection
    assert gds_calls_at_delete == [1]


def test_gds_seed_forces_concurrency_one_and_conflicts_are_refused():
    store, _, gds = gds_store()
    store.build_knn_edges("toy", k=3, seed=7)
    config = gds.log[2][2]
    assert config["random_seed"] == 7 and config["concurrency"] == 1
    assert config["node_properties"] == {"features": "EUCLIDEAN"}
    store.build_knn_edges("toy", k=3, concurrency=4, sample_rate=1.0, delta_threshold=0.0)
    config = gds.log[-2][2]
    assert config["random_seed"] is None and config["concurrency"] == 4
    assert config["sample_rate"] == 1.0 and config["delta_threshold"] == 0.0
    with pytest.raises(ValueError, match="concurrency=1"):
        store.build_knn_edges("toy", k=3, seed=1, concurrency=2)
    for bad in ({"k": 0}, {"metric": "manhattan"}, {"weights": "heat"}, {"symmetrise": "mutual"},
                {"similarity_cutoff": 2.0}, {"delta": -1.0}, {"weights": "cosine", "metric": "euclidean"}):
        with pytest.raises(ValueError):
            store.build_knn_edges("toy", **bad)


def test_gds_projection_is_dropped_when_knn_fails():
    store, _, gds = gds_store(knn_error=RuntimeError("out of memory"))
    with pytest.raises(RuntimeError, match="out of memory"):
        store.build_knn_edges("toy", k=3)
    assert gds.log[-1][0] == "graph.drop"
    assert gds.log[-1][1] == gds.log[1][2]["graph_name"]


def test_gds_gaussian_weights_and_delta_run_the_exact_recomputation():
    store, driver, gds = gds_store(relationships_written=50)
    driver.answers[store.cypher("gds_prune_edges")] = [{"deleted": 8}]
    driver.answers[store.cypher("gds_edge_scale")] = [{"sigma": 2.5}]
    driver.answers[store.cypher("gds_reweight_edges")] = [{"kept": 42}]
    assert store.build_knn_edges("toy", k=5, weights="gaussian", delta=3.0) == 42
    prune, scale, reweight = driver.calls[-3:]
    assert prune.query == store.cypher("gds_prune_edges") and prune.parameters["max_distance"] == 3.0
    assert scale.query == store.cypher("gds_edge_scale") and scale.routing == "r"
    assert reweight.parameters == {"dataset": "toy", "metric": "euclidean", "weights": "gaussian", "sigma": 2.5}
    assert store.build_knn_edges("toy", k=5, weights="binary", sigma=None) == 42
    assert driver.calls[-1].parameters["weights"] == "binary"
    assert store.build_knn_edges("toy", k=5, weights="gaussian", sigma=0.7) == 42
    assert driver.calls[-1].parameters["sigma"] == 0.7 and driver.calls[-2].query != store.cypher("gds_edge_scale")


def test_missing_or_old_gds_fails_clearly_before_anything_is_deleted(monkeypatch):
    import graphdatascience
    from graphdatascience.error.gds_not_installed import GdsNotFound

    def no_gds(*args, **kwargs):
        raise GdsNotFound("The Graph Data Science library is not correctly installed")

    monkeypatch.setattr(graphdatascience, "GraphDataScience", no_gds)
    store, driver = make_store()
    with pytest.raises(RuntimeError, match="Graph Data Science plugin is not installed"):
        store.build_knn_edges("toy", k=3)
    assert len(driver.calls) == 2  # the schema statements only
    store, driver, gds = gds_store(version="2.3.1")
    with pytest.raises(RuntimeError, match="too old"):
        store.build_knn_edges("toy", k=3)
    assert len(driver.calls) == 2 and gds.log == [("server_version",)]


def test_local_edge_builder_leaves_the_graph_to_the_flow():
    store, _ = make_store(Neo4jGraphConfig(edge_builder="local"))
    assert not store.native_knn
    with pytest.raises(NotImplementedError, match="local"):
        store.build_knn_edges("toy", k=3)


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
        assert store.config.node_label == "Person" and store.config.features == ("age", "income")
        assert store.config.dataset is None and store.config.batch_size == 500
        assert opened["driver"].calls[0].database == "labels"
    assert opened["uri"] == "bolt://db.example:7687" and opened["auth"] == ("alice", "s3cret")
    assert opened["verified"] and opened["driver"].closed
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
    assert len(driver_factory) == 1 and driver_factory[0].closed


@pytest.mark.parametrize("uri", ["neo4j://alice:s3cret-pw@db:7687", "bolt+s://alice:s3cret/pw@db",
                                 "neo4j://s3cret-token@db"])
def test_credentials_in_the_uri_are_refused_without_echoing_them(uri, driver_factory):
    for opener in (open_store, Neo4jStore.from_uri):
        with pytest.raises(ValueError, match="holds credentials") as caught:
            opener(uri)
        assert "s3cret" not in str(caught.value) and "***@db" in str(caught.value)
    assert driver_factory == []


def test_hostile_dataset_names_reach_no_query_and_no_gds_call():
    gds = FakeGds()
    store, driver = make_store(gds=gds)
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
    assert len(driver.calls) == before and gds.log == []


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
    assert first.parameters["finished_at"] is None and first.parameters["error"] is None
    assert json.loads(first.parameters["versions"]) == {"neo4j": "5.28.1", "graphlabel": "0.1.0"}
    assert second.parameters["status"] == "failed" and second.parameters["error"] == "solver diverged"
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
    assert call.routing == "r" and call.parameters == {"dataset": "toy", "run_id": None, "max_rows": 5, "status": None}
    assert frame["run_id"].tolist() == ["r2", "r1"]  # the server's order (newest first)
    assert frame["status"].tolist() == ["failed", "completed"]
    assert frame["error"].tolist() == ["boom", None]
    assert frame["versions"].tolist() == [{"neo4j": "5.28.1"}, {}]
    assert frame["metrics"][0] == {"class_counts": {"a": 3}} and frame["parameters"][0] == {"k": 10}
    assert frame["started_at"][0] == pd.Timestamp("2026-01-02 04:00") and pd.isna(frame["finished_at"][0])
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
    assert store.prune_runs("toy", keep_last=2) == 1 and sorted(graph.runs) == ["r3", "r4", "r5", "r6"]
    sent = len(driver.calls)
    assert store.prune_runs("toy", keep_last=2) == 0
    assert len(driver.calls) == sent + 1  # nothing to choose: only the history was read
    text = " ".join(store.cypher("delete_runs").split())
    assert "coalesce(r.status, 'completed') <> 'running'" in text and "NOT r.run_id IN current" in text
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
    assert about["degree"] == 4.0 and about["n_neighbours"] == 3 and about["dataset"] == "people"
    assert about["labelled_at"] == pd.Timestamp("2026-01-02 03:00")
    assert neighbours["share"].tolist() == [0.75, 0.125] and neighbours["agrees"].tolist() == [True, False]
    calls = driver.sent(store.cypher("explain_neighbours"))
    assert calls[0].parameters == {"dataset": "people", "key": "a", "max_rows": 2} and calls[0].routing == "r"
    text = store.cypher("explain_node")
    assert "MATCH (a:`Person` {`pid`: $key})" in text and "-[r:`LOOKS_LIKE`]-(b:`Person`)" in text
    assert "r.`score`" in text and "b.`segment_guess`" in text and "toString(b.`segment`)" in text
    assert "$dataset" not in text  # no dataset property: every Person is the dataset
    # a node without relationships: the OPTIONAL MATCH row with no neighbour is dropped
    node["neighbours"] = [{"key": None, "label": None, "weight": 1.0}]
    about, _ = store.explain("people", "alone")
    assert about["n_neighbours"] == 0 and about["class_shares"] == {} and about["degree"] == 0.0
    sent = len(driver.calls)
    with pytest.raises(LookupError, match="no node with key 'zz' in dataset 'people'"):
        store.explain("people", "zz")
    assert len(driver.calls) == sent + 1  # the neighbours are not asked for
