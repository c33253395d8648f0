"""The Neo4j store against a live Neo4j 5.26 server with GDS 2.13 (tests/live_neo4j.py
starts it for the session): what only this adapter has: GDS kNN and its options, the
write-back's history and the cookbook queries, explain on GDS graphs, every query planned
by the server, the flows on Neo4j, and which relationships graphlabel may touch. The
promises every store keeps are checked in tests/test_store_contract.py.

Each test works in datasets of its own (random names) and deletes their nodes after.
"""

from __future__ import annotations

import uuid

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from graphstore.identifiers import render
from graphstore.neo4j_store import Neo4jGraphConfig
from graphstore.queries import CYPHER_DIR, load_query, split_statements

pytestmark = pytest.mark.neo4j


def delete_dataset(driver, dataset: str, database=None) -> None:
    # Test clean-up only (the package's Cypher lives in cypher/): the dataset's nodes,
    # their relationships, its runs, its graph build and feature columns, and a lease a killed
    # run left.
    for query in ("MATCH (e:Entity {dataset: $dataset}) DETACH DELETE e",
                  "MATCH (r:LabelRun {dataset: $dataset}) DELETE r",
                  "MATCH (g:GraphBuild {dataset: $dataset}) DELETE g",
                  "MATCH (c:FeatureColumns {dataset: $dataset}) DELETE c",
                  "MATCH (l:GraphlabelLease {dataset: $dataset}) DELETE l"):
        driver.execute_query(query, parameters_={"dataset": dataset}, database_=database)


@pytest.fixture
def neo4j_store(neo4j_env):
    from graphstore import open_store

    with open_store(neo4j_env, batch_size=64) as store:  # small batches: several per write
        yield store


@pytest.fixture
def dataset(neo4j_store):
    name = f"it-{uuid.uuid4().hex[:10]}"
    yield name
    delete_dataset(neo4j_store._driver, name, neo4j_store.database)


def digits_nodes(n=240, every=6, wrong=(0,)):
    from sklearn.datasets import load_digits

    from graphstore.schemas import NODE_SCHEMA

    X, y = load_digits(return_X_y=True)
    X, y = X[:n], y[:n]
    given = [str(v) if i % every == 0 else None for i, v in enumerate(y)]
    for i in wrong:
        given[i] = str((y[i] + 1) % 10)
    keys = [f"d{i}" for i in range(n)]
    return pa.table({"key": keys, "features": X.tolist(), "label": given}).cast(NODE_SCHEMA), X, y


def dense(graph) -> np.ndarray:
    W = np.zeros((graph.n_nodes, graph.n_nodes))
    W[graph.source, graph.target] = graph.weight
    return np.maximum(W, W.T)


def test_gds_knn_matches_exact_neighbours_and_gaussian_weights(neo4j_store, dataset):
    from sklearn.neighbors import NearestNeighbors

    nodes, X, _ = digits_nodes(200)
    neo4j_store.write_nodes(dataset, nodes)
    k = 6
    # sampleRate 1 and deltaThreshold 0 make GDS kNN (NN-descent) as exhaustive as it gets
    written = neo4j_store.build_knn_edges(dataset, k=k, metric="euclidean", weights="gaussian",
                                          deterministic=True, sample_rate=1.0, delta_threshold=0.0)
    assert written.n_edges == 200 * k
    graph = neo4j_store.read_subgraph(dataset)
    order = np.argsort([int(key[1:]) for key in graph.keys])
    W = dense(graph)[np.ix_(order, order)]
    dist, idx = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X)
    exact = np.zeros_like(W, dtype=bool)
    exact[np.repeat(np.arange(200), k), idx[:, 1:].ravel()] = True
    exact |= exact.T
    found = W > 0
    assert (found & exact).sum() / exact.sum() >= 0.97
    # σ: the median distance to the k-th neighbour (as the local builder), returned for the record
    assert written.sigma == pytest.approx(np.median(dist[:, -1]), rel=0.02)
    rows, cols = np.nonzero(found)
    distances = np.linalg.norm(X[rows] - X[cols], axis=1)
    np.testing.assert_allclose(W[rows, cols], np.exp(-distances**2 / (2 * written.sigma**2)), rtol=1e-6)
    # the same seed gives the same graph
    neo4j_store.build_knn_edges(dataset, k=k, weights="gaussian", deterministic=True, sample_rate=1.0,
                                delta_threshold=0.0)
    again = neo4j_store.read_subgraph(dataset)
    np.testing.assert_allclose(dense(again)[np.ix_(order, order)], W)


def test_gds_delta_graph_drops_long_relationships(neo4j_store, dataset):
    nodes, X, _ = digits_nodes(120)
    neo4j_store.write_nodes(dataset, nodes)
    delta = 25.0
    neo4j_store.build_knn_edges(dataset, k=10, delta=delta, weights="binary", deterministic=True)
    graph = neo4j_store.read_subgraph(dataset)
    lengths = np.linalg.norm(graph.features[graph.source] - graph.features[graph.target], axis=1)
    assert len(lengths) > 0
    assert lengths.max() <= delta + 1e-9
    assert np.all(graph.weight == 1.0)


def _label(store, dataset, run_id, solver="harmonic", **params):
    import solvers
    from graphstore import LabelRunRecord
    from labelling.problems import label_problem, prediction_rows

    exported = label_problem(store.read_subgraph(dataset), dataset)
    prediction = solvers.solve(exported.problem, solver, **params)
    now = pd.Timestamp.now(tz="UTC")
    assert store.write_predictions(dataset, prediction_rows(exported, prediction, run_id, now)) == len(exported.keys)
    store.write_run(LabelRunRecord(run_id, dataset, solver, params, {}, {}, now, now, len(exported.keys),
                                   int(exported.problem.labeled.sum()), int(prediction.noisy.sum())))
    return exported, prediction


def test_write_back_and_the_readme_queries(neo4j_store, dataset):
    nodes, X, y = digits_nodes(240)
    neo4j_store.write_nodes(dataset, nodes)
    neo4j_store.build_knn_edges(dataset, k=8, weights="gaussian", deterministic=True)
    exported, first = _label(neo4j_store, dataset, "run-a")
    _label(neo4j_store, dataset, "run-a")  # the same run written again changes nothing
    keys = exported.keys
    predicted = exported.classes[first.labels]
    low = neo4j_store.query(load_query("examples/low_confidence", "neo4j"),
                            {"dataset": dataset, "max_confidence": 1.01, "max_rows": 5})
    order = np.lexsort((keys.astype(str), first.confidence))
    assert low["key"].tolist() == keys[order[:5]].tolist()
    flagged = neo4j_store.query(load_query("examples/flagged_with_neighbours", "neo4j"), {"dataset": dataset})
    assert set(flagged["key"]) == set(keys[first.noisy])
    for neighbours in flagged["neighbours"]:  # each neighbour once, though GDS wrote mutual pairs twice
        assert len({n["key"] for n in neighbours}) == len(neighbours)
    counts = neo4j_store.query(load_query("examples/class_counts_per_run", "neo4j"), {"dataset": dataset})
    expected = dict(zip(*np.unique(predicted, return_counts=True)))
    assert len(counts) == 1  # one row per run, its metrics once
    assert {item["label"]: item["nodes"] for item in counts["nodes_now"][0]} == expected
    drivers = neo4j_store.query(load_query("examples/prediction_drivers", "neo4j"),
                                {"dataset": dataset, "key": keys[1], "max_rows": 4})
    row = exported.problem.W.tocsr()[1]
    assert drivers["weight"].to_numpy() == pytest.approx(np.sort(row.data)[::-1][:4])
    # a second run on a sparser graph: what changed is what the two runs' arrays say. k = 1:
    # with k = 3 whether some component had no given label depended on the node ids GDS's
    # seeded sampling starts from, so on which tests had created nodes before (a full suite
    # on a fresh clone had none unlabelled)
    neo4j_store.build_knn_edges(dataset, k=1, weights="binary", deterministic=True)
    exported_b, second = _label(neo4j_store, dataset, "run-b")
    before = dict(zip(keys, predicted))
    # a node no label reaches on the sparser graph is written without a prediction (null), not
    # as classes[-1]: the query counts it as changed whatever the first run said
    after = dict(zip(exported_b.keys, np.where(second.labels >= 0, exported_b.classes[second.labels], None)))
    assert (second.labels < 0).any()  # k = 1 leaves components without a given label
    expected = sorted(k for k in before if before[k] != after[k])
    changed = neo4j_store.query(load_query("examples/changed_between_runs", "neo4j"),
                                {"dataset": dataset, "earlier_run": "run-a", "later_run": "run-b"})
    assert sorted(changed["key"]) == expected
    shifted = neo4j_store.query(
        "MATCH (e:Entity {dataset: $dataset}) RETURN count(e.previous_label_run_id) AS shifted,"
        " count(DISTINCT e.label_run_id) AS runs", {"dataset": dataset})
    assert shifted.to_dict("records") == [{"shifted": len(keys), "runs": 1}]


def test_labelling_flow_runs_against_neo4j(prefect_harness, neo4j_env, neo4j_store, dataset, capfd):
    from flows.labelling import labelling_flow

    nodes, _, y = digits_nodes(300, every=5, wrong=())
    neo4j_store.write_nodes(dataset, nodes)
    summary = labelling_flow(dataset=dataset, store_uri=neo4j_env, k=8, solver="harmonic")
    assert summary["n_nodes"] == 300
    assert summary["n_labeled"] == 60
    assert summary["n_edges"] > 0
    frame = neo4j_store.query(
        "MATCH (e:Entity {dataset: $dataset}) RETURN e.key AS key, e.predicted_label AS p,"
        " e.label_run_id AS run", {"dataset": dataset})
    assert set(frame["run"]) == {summary["run_id"]}
    truth = dict(zip([f"d{i}" for i in range(300)], map(str, y)))
    accuracy = np.mean([truth[k] == p for k, p in zip(frame["key"], frame["p"])])
    assert accuracy > 0.85
    runs = neo4j_store.query("MATCH (r:LabelRun {run_id: $id}) RETURN r.solver AS solver",
                             {"id": summary["run_id"]})
    assert runs["solver"].tolist() == ["harmonic"]
    # a clean run logs no error: Prefect once tried to hash the store for a cache key
    # (it holds the driver's locks) and logged a traceback per task
    logged = capfd.readouterr()
    assert "Traceback" not in logged.err + logged.out
    assert "ERROR" not in logged.err + logged.out


def test_a_gds_graph_rebuilt_since_the_last_run_makes_the_next_run_full(prefect_harness, neo4j_env, neo4j_store,
                                                                        dataset):
    """`build-graph --k 5` on GDS after a run on its 8-NN graph: the next `label` (the graph
    as built, as the CLI runs it) relabels every node and says why; the run after it, with
    nothing changed, is incremental again (the GraphBuild's built_at reads back the same
    from the server each time)."""
    from flows.labelling import build_graph_flow, labelling_flow

    nodes, _, _ = digits_nodes(200, every=5, wrong=())
    neo4j_store.write_nodes(dataset, nodes)
    labelling_flow(dataset=dataset, store_uri=neo4j_env, k=8, publish=False)
    build_graph_flow(dataset, store_uri=neo4j_env, k=5)
    rebuilt = labelling_flow(dataset=dataset, store_uri=neo4j_env, build_graph=False, publish=False)
    assert not rebuilt["metrics"]["incremental"]
    assert rebuilt["metrics"]["full_run_reason"].startswith(
        "the similarity graph was rebuilt since the last run (k 8 → 5"), rebuilt["metrics"]["full_run_reason"]
    runs = neo4j_store.query("MATCH (e:Entity {dataset: $dataset}) RETURN DISTINCT e.label_run_id AS run",
                             {"dataset": dataset})
    assert runs["run"].tolist() == [rebuilt["run_id"]]
    again = labelling_flow(dataset=dataset, store_uri=neo4j_env, build_graph=False, publish=False)
    assert again["metrics"]["incremental"], again["metrics"].get("full_run_reason")
    assert again["metrics"]["n_region"] == 0


def test_explain_and_label_shares_match_the_solvers_graph_on_gds(neo4j_store, dataset):
    """On a GDS graph (a pair written once per direction it was found in) explain and the
    label_shares example see the graph the solver saw (the store contract checks explain's
    promise on hand-made relationships)."""
    nodes, _, _ = digits_nodes(120)
    neo4j_store.write_nodes(dataset, nodes)
    neo4j_store.build_knn_edges(dataset, k=6, weights="gaussian", deterministic=True)
    exported, prediction = _label(neo4j_store, dataset, "run-current")
    W = exported.problem.W.tocsr()
    y = exported.problem.y
    voted = np.where(y >= 0, y, prediction.labels)
    i = 1
    row = W[i]
    expected: dict = {}
    for j, w in zip(row.indices, row.data):
        label = exported.classes[voted[j]] if voted[j] >= 0 else None
        expected[label] = expected.get(label, 0.0) + w
    node, neighbours = neo4j_store.explain(dataset, exported.keys[i], limit=3)
    assert node["class_shares"] == pytest.approx({c: w / row.data.sum() for c, w in expected.items()})
    assert node["n_neighbours"] == row.nnz
    assert node["label_run_id"] == "run-current"
    assert neighbours["weight"].to_numpy() == pytest.approx(np.sort(row.data)[::-1][:3])
    shares = neo4j_store.query(load_query("examples/label_shares", "neo4j"),
                               {"dataset": dataset, "key": exported.keys[i]})
    assert dict(zip(shares["label"], shares["class_weight"])) == pytest.approx(expected)


# -- every query file, planned by the server ----------------------------------------------

CONFIGS = {
    "defaults": Neo4jGraphConfig(),
    "own graph": Neo4jGraphConfig(node_label="Person", key="pid", dataset=None, features=("age", "income"),
                                  given_label="segment", relationship="LOOKS_LIKE", weight="score",
                                  run_label="Run", edge_marker="by_graphlabel"),
}


@pytest.mark.parametrize("config_name", sorted(CONFIGS))
def test_every_query_file_is_planned_by_the_server_without_deprecations(neo4j_live, config_name):
    """The server's own parser and planner (EXPLAIN: planned, not run) on every rendered
    Neo4j template and example, with notifications on, so that a deprecated syntax or
    procedure in graphlabel's Cypher shows here before a Neo4j upgrade removes it."""
    from neo4j import NotificationMinimumSeverity

    fragments = CONFIGS[config_name].fragments()
    files = sorted(CYPHER_DIR.rglob("*.neo4j.cypher")) + sorted(
        p for p in CYPHER_DIR.rglob("*.cypher") if p.name.count(".") == 1)
    assert len(files) > 30
    deprecated = []
    with neo4j_live.driver() as driver:
        for path in files:
            name = path.relative_to(CYPHER_DIR).as_posix().split(".")[0]
            for statement in split_statements(render(load_query(name, "neo4j"), fragments)):
                if statement.startswith("CREATE CONSTRAINT"):
                    continue  # schema commands have no plan; ensure_schema runs them for real
                with driver.session(notifications_min_severity=NotificationMinimumSeverity.INFORMATION) as session:
                    summary = session.run("EXPLAIN " + statement).consume()
                deprecated += [(name, status.status_description) for status in summary.gql_status_objects
                               if status.classification.name == "DEPRECATION"]
    assert deprecated == []


# -- which relationships graphlabel may touch ---------------------------------------------


def test_a_users_relationships_of_the_same_type_are_never_deleted_or_built_into(neo4j_env, dataset):
    """A user whose own relationships use the configured type (here SIMILAR between the
    dataset's nodes): build-graph is refused before anything is deleted, and labelling
    over them (no build) works; graphlabel's builds go to a type of their own."""
    from graphstore import StoreSetupError, open_store

    nodes, X, y = digits_nodes(90)
    with open_store(neo4j_env) as store:
        store.write_nodes(dataset, nodes)
        store._driver.execute_query(
            "MATCH (a:Entity {dataset: $ds}), (b:Entity {dataset: $ds})"
            " WHERE toInteger(substring(a.key, 1)) + 1 = toInteger(substring(b.key, 1))"
            " CREATE (a)-[:SIMILAR {weight: 0.5, since: 2020}]->(b)", parameters_={"ds": dataset})
        mine = store.query("MATCH (:Entity {dataset: $ds})-[r:SIMILAR]->() RETURN count(r) AS n", {"ds": dataset})
        assert mine["n"].item() == 89
        with pytest.raises(StoreSetupError, match="holds 89 relationships .* graphlabel did not create"):
            store.build_knn_edges(dataset, k=5)
        with pytest.raises(StoreSetupError, match="graphlabel did not create"):
            store.replace_edges(dataset, pa.table({"source": ["d0"], "target": ["d5"], "weight": [1.0]}))
        graph = store.read_subgraph(dataset)  # labelling over the user's own relationships
        assert len(graph.source) == 89
        assert np.all(graph.weight == 0.5)
    # graphlabel's build in a type of its own leaves the user's relationships as they were
    with open_store(neo4j_env, relationship="GRAPHLABEL_KNN") as store:
        assert store.build_knn_edges(dataset, k=5, deterministic=True).n_edges == 90 * 5
        after = store.query("MATCH (:Entity {dataset: $ds})-[r:SIMILAR]->() RETURN count(r) AS n,"
                            " collect(DISTINCT r.since) AS since, collect(DISTINCT r.weight) AS w", {"ds": dataset})
        assert after.to_dict("records") == [{"n": 89, "since": [2020], "w": [0.5]}]
        store.build_knn_edges(dataset, k=3, deterministic=True)  # a rebuild replaces only its own
        counts = store.query("MATCH (:Entity {dataset: $ds})-[r]->() RETURN type(r) AS t, count(r) AS n"
                             " ORDER BY t", {"ds": dataset})
        assert counts.to_dict("records") == [{"t": "GRAPHLABEL_KNN", "n": 270}, {"t": "SIMILAR", "n": 89}]


def test_a_graph_build_that_stopped_half_way_is_refused_until_rebuilt(neo4j_store, dataset):
    from graphstore import StoreSetupError

    nodes, _, _ = digits_nodes(60)
    neo4j_store.write_nodes(dataset, nodes)
    neo4j_store.build_knn_edges(dataset, k=4, deterministic=True)
    # what a build killed between gds.knn.write and the weights leaves: scores, no weights
    neo4j_store._driver.execute_query(
        "MATCH (a:Entity {dataset: $ds})-[r:SIMILAR]->() WITH r LIMIT 7 REMOVE r.weight",
        parameters_={"ds": dataset})
    with pytest.raises(StoreSetupError, match="half built .7 relationships without a 'weight'"):
        neo4j_store.read_subgraph(dataset)
    neo4j_store.build_knn_edges(dataset, k=4, deterministic=True)
    assert len(neo4j_store.read_subgraph(dataset).source) > 0


# -- what the bad-input and solver work added to the adapter, on the server --------------


def test_noise_scores_and_the_median_sigma_reach_neo4j(prefect_harness, neo4j_env, neo4j_store, dataset):
    from flows.labelling import labelling_flow

    nodes, X, _ = digits_nodes(240, every=4, wrong=(0, 4, 8))
    neo4j_store.write_nodes(dataset, nodes)
    summary = labelling_flow(dataset=dataset, store_uri=neo4j_env, k=8, full=True, publish=False,
                             scale="none")  # checked against the raw pixels' distances
    frame = neo4j_store.query("MATCH (e:Entity {dataset: $ds}) RETURN e.key AS key, e.given_label AS given,"
                              " e.label_noise AS noisy, e.label_noise_score AS score", {"ds": dataset})
    given = frame["given"].notna()
    # a score for the given labels the solver judged (GDS kNN is randomised: a given label in a
    # component of one class is not solved, so it has none), never for the others
    assert frame.loc[~given, "score"].isna().all()
    assert frame.loc[given, "score"].notna().mean() >= 0.8
    assert set(frame.loc[frame["noisy"].fillna(False).astype(bool), "key"]) <= set(frame.loc[given, "key"])
    # the GDS graph's σ is the median distance to the farthest of each node's k nearest
    sigma = neo4j_store.read_graph_build(dataset)["sigma"]
    assert sigma > 0
    assert summary is not None
    graph = neo4j_store.read_subgraph(dataset)
    order = np.argsort([int(key[1:]) for key in graph.keys])
    W = dense(graph)[np.ix_(order, order)]
    rows, cols = np.nonzero(W)
    d = np.linalg.norm(X[rows] - X[cols], axis=1)
    np.testing.assert_allclose(W[rows, cols], np.exp(-d ** 2 / (2 * sigma ** 2)), rtol=1e-6)


def test_status_says_the_ports_the_running_server_listens_on(neo4j_live):
    """``neo4j_server.py status`` named the process and folder, not the ports, so a folder
    started on other ports earlier could not be found again (a newcomer's walk)."""
    import subprocess
    import sys

    from live_neo4j import SERVER_SCRIPT

    if neo4j_live.settings is None:
        pytest.skip("the server NEO4J_URI names is not one of this run's folders")
    settings = neo4j_live.settings
    done = subprocess.run([sys.executable, str(SERVER_SCRIPT), "status", "--home", str(settings.home)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (f", bolt://127.0.0.1:{settings.bolt_port} (browser http://127.0.0.1:{settings.http_port}), home"
            f" {settings.home}") in done.stdout
