"""The whole product on a live Neo4j 5.26 + GDS 2.13, as a user runs it: the `graphlabel`
command (a process of its own, with the environment a user sets, reporting to the test
session's Prefect server) and the flows, on scikit-learn's digits.

- ingest with rejects → build-graph (GDS kNN, euclidean and cosine; the local builder) →
  label → report, explain, query, prune-runs;
- every solver end to end, with the labels the same flow writes on the embedded store;
- incremental runs: the new entities' exact nearest, a changed given label, entities a
  user created without features;
- a graph the user already has: another label and property names, an embedding list, a
  category property as the given label, predictions written to configured names, and the
  user's own weighted relationships as the graph.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from labelling.reporting import short_run_id

# The digits' 64 pixels share one unit: these tests build their graphs unscaled ("--scale
# none") and check them against the raw pixels; tests/test_neo4j_live_inputs.py checks
# the scaled graphs.

pytestmark = [pytest.mark.neo4j, pytest.mark.usefixtures("prefect_harness")]
GRAPHLABEL = Path(sys.executable).parent / "graphlabel"


@dataclass
class Ran:
    exit_code: int
    output: str  # stdout then stderr


def cli(*args: str, ok: bool = True, cwd: Path | None = None) -> Ran:
    """`graphlabel ARGS` in a process of its own, as a user runs it, with this process's
    environment (the tests set NEO4J_* and GRAPHLABEL_NEO4J_* there) and the session's
    Prefect server, so no command starts a temporary one."""
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "COLUMNS": "200", "PREFECT_API_URL": PREFECT_API_URL.value()}
    done = subprocess.run([str(GRAPHLABEL), *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=600, cwd=cwd)
    ran = Ran(done.returncode, done.stdout + done.stderr)
    assert "Traceback" not in ran.output, ran.output  # expected conditions are one line; bugs fail here
    if ok:
        assert ran.exit_code == 0, ran.output
    else:  # an expected condition: exit 1, ending with graphlabel's one error message
        text = "\n" + ran.output
        assert ran.exit_code == 1, ran.output
        assert "\nerror: " in text, ran.output
        ran.output = " ".join(text[text.rindex("\nerror: ") + 1:].split())
    return ran


def run_id_of(output: str) -> str:
    return re.search(r", run ([0-9a-f-]{36})", output).group(1)


def digits_frame(n: int, every: int = 6, offset: int = 0, jitter: float = 0.0):
    """The first ``n`` digits as records: key, 64 pixel columns, a label on every ``every``-th.
    ``jitter`` adds that much fixed noise so that no two distances tie (the pixels are
    integers: ties make the k nearest depend on the order a store returns the nodes in)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X[offset:offset + n], y[offset:offset + n]
    X = X + jitter * np.random.default_rng(0).standard_normal(X.shape)
    frame = pd.DataFrame(X, columns=[f"p{i:02d}" for i in range(64)])
    frame.insert(0, "id", [f"d{offset + i}" for i in range(n)])
    frame.insert(1, "label", [str(v) if i % every == 0 else "" for i, v in enumerate(y)])
    return frame, X, y.astype(str)


def stored(store, dataset: str, *names: str) -> pd.DataFrame:
    columns = ", ".join(f"e.{name} AS {name}" for name in names)
    return store.query(f"MATCH (e:Entity) WHERE e.dataset = $ds RETURN e.key AS key, {columns}",
                       {"ds": dataset}).set_index("key")


def neighbour_recall(store, dataset: str, X: np.ndarray, k: int, metric: str) -> float:
    """Share of each node's exact k nearest (scikit-learn) that the stored graph holds."""
    from sklearn.neighbors import NearestNeighbors

    graph = store.read_subgraph(dataset)
    order = np.argsort([int(key[1:]) for key in graph.keys])
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    pairs = set(zip(position[graph.source].tolist(), position[graph.target].tolist()))
    pairs |= {(b, a) for a, b in pairs}
    _, idx = NearestNeighbors(n_neighbors=k + 1, metric=metric).fit(X).kneighbors(X)
    exact = [(i, j) for i in range(len(X)) for j in idx[i, 1:] if j != i]
    return float(np.mean([pair in pairs for pair in exact]))


def test_cli_end_to_end_on_neo4j(neo4j_env, dataset, tmp_path):
    from graphstore import open_store

    frame, X, y = digits_frame(420)
    # three given labels wrong on purpose, so the README's query for flagged labels has
    # something to find (with only true labels the noise flags may, rightly, find none)
    wrong = frame.index[frame["label"] != ""][[3, 20, 50]]
    frame.loc[wrong, "label"] = [str((int(label) + 1) % 10) for label in frame.loc[wrong, "label"]]
    bad = pd.DataFrame([["", "3", *[0.0] * 64], ["bad-1", "", "oops", *[0.0] * 63]],
                       columns=frame.columns)
    csv = tmp_path / "digits.csv"
    pd.concat([frame, bad]).to_csv(csv, index=False)
    rejects = tmp_path / "rejects.csv"
    out = cli("ingest", csv, "--dataset", dataset, "--key", "id", "--features", "p*", "--label", "label",
              "--rejects", rejects, "--store", neo4j_env).output
    assert f"stored 420 nodes in dataset '{dataset}'" in out
    assert "rejected 2 rows" in out
    assert pd.read_csv(rejects)["reason"].tolist() == ["missing key", "non-numeric feature p00='oops'"]

    out = cli("build-graph", "--dataset", dataset, "--scale", "none", "--k", "8", "--store", neo4j_env).output
    assert "wrote 3,360 similarity relationships" in out  # GDS writes k per node, each direction
    with open_store(neo4j_env) as store:
        assert neighbour_recall(store, dataset, X, 8, "euclidean") >= 0.95

    out = cli("label", "--dataset", dataset, "--store", neo4j_env).output
    assert f"labelled 420 nodes of '{dataset}' with harmonic (70 given labels" in out
    run_id = run_id_of(out)
    with open_store(neo4j_env) as store:
        written = stored(store, dataset, "predicted_label", "label_confidence", "label_run_id",
                         "label_solver").loc[frame["id"]]
        hidden = frame.set_index("id")["label"] == ""
        truth = pd.Series(y, index=frame["id"])
        accuracy = (written["predicted_label"][hidden] == truth[hidden]).mean()
        assert accuracy >= 0.85  # 0.877 on the embedded store with the same data and k
        assert set(written["label_run_id"]) == {run_id}
        assert set(written["label_solver"]) == {"harmonic"}
        run = store.read_runs(run_id=run_id).iloc[0]
        assert run["status"] == "completed"
        assert run["n_nodes"] == 420
        assert run["n_labeled"] == 70
        assert run["versions"]["neo4j"]
        assert "graphdatascience" not in run["versions"]
        assert run["parameters"]["k"] == 10 or run["parameters"]["k"] == 8

    out = cli("report", "--dataset", dataset, "--store", neo4j_env).output
    assert short_run_id(run_id) in out  # ids shown by their last 8 characters
    assert "completed" in out
    out = cli("report", "--run", run_id[-8:], "--store", neo4j_env).output  # the end of an id is enough
    assert f"run {short_run_id(run_id)}: {dataset} · harmonic, completed" in out
    assert "neo4j (Python driver)" in out  # the client's version, not to be read as the server's
    key = written["label_confidence"].idxmin()
    out = cli("explain", key, "--dataset", dataset, "--store", neo4j_env).output
    assert key in out
    assert "share" in out
    # the README's quickstart query, written for the dataset, on Neo4j
    out = cli("query", f"MATCH (e:Entity) WHERE e.dataset = '{dataset}' AND e.label_noise RETURN e.key,"
              " e.given_label, e.predicted_label, e.label_confidence", "--format", "csv", "--store", neo4j_env).output
    with open_store(neo4j_env) as store:
        noise = stored(store, dataset, "label_noise")["label_noise"]
    flagged = set(noise.index[noise.fillna(False).astype(bool)])
    assert flagged
    assert {line.split(",")[0] for line in out.strip().splitlines()[1:]} == flagged

    # a second run, then retention keeps the newest and the one the nodes point to
    second = cli("label", "--dataset", dataset, "--full", "--store", neo4j_env).output
    second_id = run_id_of(second)
    out = cli("prune-runs", "--dataset", dataset, "--keep-last", "1", "--store", neo4j_env).output
    assert "deleted 1 LabelRun node" in out
    with open_store(neo4j_env) as store:
        assert store.read_runs(dataset)["run_id"].tolist() == [second_id]


def test_cosine_gds_knn_and_the_local_builder_on_neo4j(neo4j_env, dataset, tmp_path, monkeypatch):
    from graphstore import open_store

    frame, X, _ = digits_frame(300)
    csv = tmp_path / "digits.csv"
    frame.to_csv(csv, index=False)
    cli("ingest", csv, "--dataset", dataset, "--key", "id", "--features", "p*", "--label", "label",
        "--store", neo4j_env)
    cli("build-graph", "--dataset", dataset, "--scale", "none", "--k", "6", "--metric", "cosine", "--weights", "cosine",
        "--store", neo4j_env)
    with open_store(neo4j_env) as store:
        assert neighbour_recall(store, dataset, X, 6, "cosine") >= 0.95
        graph = store.read_subgraph(dataset)
        a, b = graph.features[graph.source], graph.features[graph.target]
        cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        np.testing.assert_allclose(graph.weight, np.maximum(cosine, 0), rtol=1e-9)
    monkeypatch.setenv("GRAPHLABEL_NEO4J_EDGE_BUILDER", "local")
    out = cli("build-graph", "--dataset", dataset, "--scale", "none", "--k", "6", "--store", neo4j_env).output
    written = int(re.search(r"wrote ([\d,]+) similarity relationships", out).group(1).replace(",", ""))
    with open_store(neo4j_env) as store:
        # exact search: every exact neighbour (up to ties among equal distances, which the
        # store's node order breaks), one relationship per pair, each marked as graphlabel's
        assert neighbour_recall(store, dataset, X, 6, "euclidean") >= 0.995
        assert len(store.read_subgraph(dataset).source) == written
        marked = store.query("MATCH (:Entity {dataset: $ds})-[r:SIMILAR]->() RETURN count(r) AS all,"
                             " count(r.graphlabel_similarity) AS marked", {"ds": dataset})
        assert marked.to_dict("records") == [{"all": written, "marked": written}]


SOLVERS = [
    # solver, graph kind, solver parameters, accuracy it must reach on the hidden digits
    ("harmonic", "knn", {}, 0.9),
    ("mincut", "delta_half", {}, 0.3),
    ("lcsnc", "knn", {"cv": 3}, 0.5),
    ("spectral", "knn", {}, 0.85),
    ("maxmargin", "knn", {}, 0.85),
    ("nmf", "knn", {}, 0.85),
]


@pytest.mark.parametrize("solver, graph, params, floor", SOLVERS, ids=[s[0] for s in SOLVERS])
def test_every_solver_writes_on_neo4j_what_it_writes_on_the_embedded_store(
        neo4j_env, dataset, store_path, monkeypatch, solver, graph, params, floor):
    """The same flow, data and (exact, locally built) graph on Neo4j and on Kùzu: the labels
    and confidences written must agree, and beat the floor on the hidden labels."""
    from flows.labelling import ingest_parsed, labelling_flow
    from graphstore import open_store
    from labelling.records import parse_records

    frame, X, y = digits_frame(360, every=5, jitter=1e-3)
    records = parse_records(frame, key="id", features="p*", label="label")
    monkeypatch.setenv("GRAPHLABEL_NEO4J_EDGE_BUILDER", "local")  # both graphs by the same builder
    written = {}
    for uri in (neo4j_env, store_path):
        with open_store(uri, create=True) as store:
            ingest_parsed(store, dataset, records, None)
        summary = labelling_flow(dataset, store_uri=uri, solver=solver, solver_params=params, graph=graph,
                                 k=8, full=True, scale="none")
        assert summary["n_nodes"] == 360
        with open_store(uri) as store:
            written[uri] = stored(store, dataset, "predicted_label", "label_confidence",
                                  "label_solver").sort_index()
    on_neo4j, on_kuzu = written[neo4j_env], written[store_path]
    assert set(on_neo4j["label_solver"]) == {solver}
    assert on_neo4j["predicted_label"].tolist() == on_kuzu["predicted_label"].tolist()
    np.testing.assert_allclose(on_neo4j["label_confidence"], on_kuzu["label_confidence"], atol=1e-6)
    truth = pd.Series(y, index=frame["id"]).loc[on_neo4j.index]
    hidden = frame.set_index("id")["label"].loc[on_neo4j.index] == ""
    assert (on_neo4j["predicted_label"][hidden] == truth[hidden]).mean() >= floor


def test_incremental_runs_on_neo4j_give_new_entities_their_exact_nearest(neo4j_env, dataset, tmp_path):
    from graphstore import open_store

    frame, X, y = digits_frame(630)
    first, later = frame.iloc[:600], frame.iloc[600:]
    truth = pd.Series(y, index=frame["id"])
    csv = tmp_path / "first.csv"
    first.to_csv(csv, index=False)
    cli("ingest", csv, "--dataset", dataset, "--key", "id", "--features", "p*", "--label", "label",
        "--store", neo4j_env)
    cli("build-graph", "--dataset", dataset, "--scale", "none", "--k", "8", "--store", neo4j_env)
    cli("label", "--dataset", dataset, "--store", neo4j_env)

    # 30 new entities: edges to their 8 nearest (GDS filtered kNN missed some), weighted
    # with the recorded σ
    csv = tmp_path / "later.csv"
    later.to_csv(csv, index=False)
    cli("ingest", csv, "--dataset", dataset, "--key", "id", "--features", "p*", "--label", "label",
        "--store", neo4j_env)
    out = cli("label", "--dataset", dataset, "--store", neo4j_env).output
    assert "incremental run: 30 changed nodes (30 new)" in out
    new_keys = later["id"].tolist()
    with open_store(neo4j_env) as store:
        sigma = store.read_graph_build(dataset)["sigma"]
        edges = store.query(
            "MATCH (a:Entity {dataset: $ds})-[r:SIMILAR]->(b:Entity) WHERE a.key IN $keys"
            " RETURN a.key AS a, b.key AS b, r.weight AS w, r.graphlabel_similarity AS score",
            {"ds": dataset, "keys": new_keys})
        features = frame.set_index("id")[[f"p{i:02d}" for i in range(64)]]
        # a pair of two new entities is written once, from either (a GDS build writes it both ways)
        assert edges.groupby("a").size().max() == 8
        pairs = set(zip(edges["a"], edges["b"]))
        for key in new_keys:
            distance = np.linalg.norm(features.to_numpy() - features.loc[key].to_numpy(), axis=1)
            nearest = features.index[np.argsort(distance, kind="stable")[1:9]]  # itself first, at 0
            assert all((key, other) in pairs or (other, key) in pairs for other in nearest), key
        d = np.linalg.norm(features.loc[edges["a"]].to_numpy() - features.loc[edges["b"]].to_numpy(), axis=1)
        np.testing.assert_allclose(edges["w"], np.exp(-d ** 2 / (2 * sigma ** 2)), rtol=1e-9)
        incremental = stored(store, dataset, "predicted_label")["predicted_label"]
    # the labels a full run on the same graph gives the new entities
    cli("label", "--dataset", dataset, "--full", "--store", neo4j_env)
    with open_store(neo4j_env) as store:
        full = stored(store, dataset, "predicted_label")["predicted_label"]
    # the embedded store, same data and k, exact neighbours: 0.90 agreement, 0.77 accuracy
    # (0.87 for the full run): the region's boundary is clamped at hard labels
    assert (incremental[new_keys] == full[new_keys]).mean() >= 0.85
    assert (incremental[new_keys] == truth[new_keys]).mean() >= 0.7

    # a changed given label is picked up by the next incremental run
    changed = frame.iloc[[1]].copy()
    changed["label"] = str((int(y[1]) + 1) % 10)
    changed.to_csv(csv, index=False)
    out = cli("ingest", csv, "--dataset", dataset, "--key", "id", "--features", "p*", "--label", "label",
              "--store", neo4j_env).output
    assert re.search(r"stored 1 node in dataset '[^']+', which also holds [\d,]+ nodes of earlier ingests", out), out
    out = cli("label", "--dataset", dataset, "--store", neo4j_env).output
    assert "incremental run: 1 changed node (0 new)" in out
    with open_store(neo4j_env) as store:
        node = stored(store, dataset, "given_label", "labelled_at", "updated_at").loc["d1"]
        assert node["given_label"] == changed["label"].item()
        assert node["labelled_at"] > node["updated_at"]

    # entities a user created without features: no edges, no label, said in the run
    with open_store(neo4j_env) as store:
        store._driver.execute_query("UNWIND ['bare-1', 'bare-2'] AS k CREATE (:Entity {dataset: $ds, key: k})",
                                    parameters_={"ds": dataset})
    out = cli("label", "--dataset", dataset, "--store", neo4j_env).output
    with open_store(neo4j_env) as store:
        bare = stored(store, dataset, "predicted_label", "label_confidence").loc[["bare-1", "bare-2"]]
        assert bare["predicted_label"].isna().all()
        assert (bare["label_confidence"] == 0).all()
        run = store.read_runs(dataset, limit=1).iloc[0]
        assert run["status"] == "completed"
        assert run["metrics"]["n_unreachable"] >= 2


def test_a_graph_build_killed_half_way_is_built_again_on_neo4j(neo4j_env, dataset, tmp_path):
    """`build-graph` killed while GDS builds (a newcomer's walk: the next `label` was
    "incremental, 0 changed" over whatever relationships were left, without a word): the
    command's process is killed once the build has begun, and the next run rebuilds the
    graph as the killed build was asked for (k 5, unscaled) and relabels every node, saying
    why; it takes over the dataset's lease the killed build held, at once."""
    import time

    from prefect.settings import PREFECT_API_URL

    from graphstore import open_store

    frame, _, _ = digits_frame(1797, every=10)
    csv = tmp_path / "digits.csv"
    frame.to_csv(csv, index=False)
    cli("ingest", csv, "--dataset", dataset, "--key", "id", "--features", "p*", "--label", "label",
        "--store", neo4j_env)
    cli("label", "--dataset", dataset, "--scale", "none", "--store", neo4j_env)
    env = {**os.environ, "COLUMNS": "200", "PREFECT_API_URL": PREFECT_API_URL.value()}
    build = subprocess.Popen([str(GRAPHLABEL), "build-graph", "--dataset", dataset, "--k", "5", "--scale", "none",
                              "--store", neo4j_env], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with open_store(neo4j_env) as store:
            deadline = time.monotonic() + 120
            while not (store.read_graph_build(dataset) or {}).get("unfinished"):
                assert build.poll() is None, "the build finished before it could be killed"
                assert time.monotonic() < deadline
                time.sleep(0.02)
    finally:
        build.kill()
        build.wait()
    out = " ".join(cli("label", "--dataset", dataset, "--store", neo4j_env).output.split())
    # the killed build's lease (graphstore/neo4j_lease.py) is taken at once, not after its time
    assert f"the graph of dataset '{dataset}' was held by build-graph (pid {build.pid} on" in out
    assert "whose process is gone: taken over" in out
    assert (f"full run: the last build of the similarity graph of '{dataset}' did not finish (interrupted or"
            f" failed): it is built again (5-NN, euclidean, gaussian weights, scale none; build-graph") in out
    with open_store(neo4j_env) as store:
        assert "unfinished" not in store.read_graph_build(dataset)
        runs = store.query("MATCH (e:Entity {dataset: $ds}) RETURN e.label_run_id AS run, count(*) AS n",
                           {"ds": dataset})
    assert runs["run"].tolist() == [run_id_of(out)]
    assert runs["n"].tolist() == [1797]
    again = cli("label", "--dataset", dataset, "--store", neo4j_env).output
    assert "incremental run: 0 changed nodes" in again


def test_a_users_own_graph_labelled_through_the_configuration(neo4j_env, neo4j_live, monkeypatch):
    """Nodes created the way a user would (label Customer_…, key cid, an embedding list, a
    `segment` category on some), labelled through GRAPHLABEL_NEO4J_* settings into the
    user's property names; then the user's own weighted KNOWS relationships as the graph."""
    from sklearn.datasets import load_digits
    from sklearn.neighbors import kneighbors_graph

    from graphstore import open_store

    tag = uuid.uuid4().hex[:8]
    label, knows, similar = f"Customer_{tag}", f"KNOWS_{tag}", f"GL_SIMILAR_{tag}"
    X, y = load_digits(return_X_y=True)
    X, y = X[:300], y[:300]
    names = np.array(["bronze", "silver", "gold"])
    segment = names[y % 3]
    given = np.arange(300) % 7 == 0
    rows = [{"cid": f"c{i}", "embedding": X[i].tolist(), "segment": segment[i] if given[i] else None}
            for i in range(300)]
    with neo4j_live.driver() as driver:
        driver.execute_query(f"UNWIND $rows AS row CREATE (c:`{label}` {{cid: row.cid, embedding: row.embedding}})"
                             " SET c.segment = row.segment", parameters_={"rows": rows})
        W = kneighbors_graph(X, 6, mode="connectivity", include_self=False)
        W = W.maximum(W.T).tocoo()
        pairs = [{"a": f"c{i}", "b": f"c{j}", "s": 0.5 + (i + j) % 5 / 10} for i, j in zip(W.row, W.col) if i < j]
        driver.execute_query(f"UNWIND $pairs AS p MATCH (a:`{label}` {{cid: p.a}}), (b:`{label}` {{cid: p.b}})"
                             f" CREATE (a)-[:`{knows}` {{strength: p.s}}]->(b)", parameters_={"pairs": pairs})
    settings = {"NODE_LABEL": label, "KEY": "cid", "DATASET": "", "FEATURES": "embedding",
                "GIVEN_LABEL": "segment", "RELATIONSHIP": similar, "PREDICTED_LABEL": "segment_guess",
                "LABEL_CONFIDENCE": "segment_confidence", "LABEL_NOISE": "segment_suspect",
                "RUN_LABEL": f"SegmentRun_{tag}"}
    for name, value in settings.items():
        monkeypatch.setenv(f"GRAPHLABEL_NEO4J_{name}", value)
    try:
        cli("build-graph", "--dataset", "customers", "--k", "8", "--store", neo4j_env)
        out = cli("label", "--dataset", "customers", "--store", neo4j_env).output
        assert "labelled 300 nodes of 'customers' with harmonic (43 given labels" in out
        with neo4j_live.driver() as driver:
            written = driver.execute_query(
                f"MATCH (c:`{label}`) RETURN c.cid AS cid, c.segment_guess AS guess, c.segment_confidence AS conf,"
                " c.predicted_label AS default_name", result_transformer_=lambda r: r.to_df()).set_index("cid")
            runs = driver.execute_query(f"MATCH (r:`SegmentRun_{tag}`) RETURN r.dataset AS ds, r.status AS status",
                                        result_transformer_=lambda r: r.to_df())
        truth = pd.Series(segment, index=[f"c{i}" for i in range(300)])
        assert written["default_name"].isna().all()  # nothing written under graphlabel's own names
        assert (written["guess"] == truth.loc[written.index]).mean() >= 0.85
        assert runs.to_dict("records") == [{"ds": "customers", "status": "completed"}]

        # the user's own relationships as the graph: read, never written or deleted
        monkeypatch.setenv("GRAPHLABEL_NEO4J_RELATIONSHIP", knows)
        monkeypatch.setenv("GRAPHLABEL_NEO4J_WEIGHT", "strength")
        out = cli("build-graph", "--dataset", "customers", "--store", neo4j_env, ok=False).output
        assert "graphlabel did not create" in out
        cli("label", "--dataset", "customers", "--full", "--store", neo4j_env)
        with open_store(neo4j_env) as store:
            graph = store.read_subgraph("customers")
            assert len(graph.source) == len(pairs)
            from flows.solving import solve_by_component
            from labelling.options import RunOptions
            from labelling.problems import label_problem

            exported = label_problem(graph, "customers")
            # the flow's own solve path: class masses are normalised per batch of the
            # connected components that hold two classes (labelling.components)
            expected = exported.classes[solve_by_component(exported, RunOptions()).labels]
            now = store.query(f"MATCH (c:`{label}`) RETURN c.cid AS cid, c.segment_guess AS guess")
            assert dict(zip(now["cid"], now["guess"])) == dict(zip(exported.keys, expected))
            after = store.query(f"MATCH ()-[r:`{knows}`]->() RETURN count(r) AS n, sum(r.strength) AS s,"
                                " count(r.graphlabel_similarity) AS marked")
            assert after.to_dict("records") == [{"n": len(pairs), "s": pytest.approx(sum(p["s"] for p in pairs)),
                                                 "marked": 0}]
    finally:
        with neo4j_live.driver() as driver:
            driver.execute_query(f"MATCH (c:`{label}`) DETACH DELETE c")
            driver.execute_query(f"MATCH (r:`SegmentRun_{tag}`) DELETE r")
            driver.execute_query("MATCH (g:GraphBuild {dataset: 'customers'}) DELETE g")
            driver.execute_query("MATCH (c:FeatureColumns {dataset: 'customers'}) DELETE c")


def test_a_class_with_one_given_label_is_kept_and_said_unchecked_on_neo4j(neo4j_env, dataset, tmp_path):
    """test_arff_files' glass with one 'tableware' label, through the CLI on Neo4j + GDS."""
    from test_arff_files import check_the_lone_label_was_kept_and_said_unchecked, glass_with_one_tableware_label

    from graphstore import open_store

    path, lone = glass_with_one_tableware_label(tmp_path)
    cli("ingest", path, "--dataset", dataset, "--key", "#", "--features", "*", "--label", "Type",
        "--store", neo4j_env)
    out = cli("label", "--dataset", dataset, "--store", neo4j_env).output
    with open_store(neo4j_env) as store:
        check_the_lone_label_was_kept_and_said_unchecked(out, store, dataset, lone)


def test_the_readme_neo4j_example_labels_every_digit(neo4j_env, dataset, tmp_path):
    """README "Running on Neo4j" (all 1,797 digits, a label on every 10th) with build-graph's
    default scaling, as the README had it before it added ``--scale none`` (standard, GDS
    kNN, Gaussian weights). Scaled so, a few far digits have only relationships of weight
    1e-20 or so; they used to get no prediction ("no given label reaches them") though every
    neighbour had one."""
    from graphstore import open_store

    frame, _, y = digits_frame(1797, every=10)
    csv = tmp_path / "digits.csv"
    frame.to_csv(csv, index=False)
    cli("ingest", csv, "--dataset", dataset, "--key", "id", "--label", "label", "--features", "p*",
        "--store", neo4j_env)
    built = cli("build-graph", "--dataset", dataset, "--k", "10", "--store", neo4j_env).output
    out = cli("label", "--dataset", dataset, "--solver", "harmonic", "--store", neo4j_env).output
    assert "got no prediction" not in out, out
    assert "joined to the others only by relationships of negligible weight" in out, out
    # GDS writes a pair of mutual neighbours both ways; the report counts each pair once and says so
    written = int(re.search(r"wrote ([\d,]+) similarity relationships", built).group(1).replace(",", ""))
    report = cli("report", "--run", run_id_of(out), "--store", neo4j_env).output
    pairs = int(re.search(r"node pairs joined \(edges solved over\)\W+([\d,]+)", report).group(1).replace(",", ""))
    assert written == 1797 * 10
    assert 1797 * 10 / 2 <= pairs < written
    # the README's example queries, by name, from a folder that is not the repository
    low = cli("query", "low_confidence", "-p", f"dataset={dataset}", "-p", "max_confidence=0.6", "-p", "max_rows=5",
              "--format", "json", "--store", neo4j_env, cwd=tmp_path).output
    rows = json.loads(low)
    assert 1 <= len(rows) <= 5
    assert all(row["confidence"] < 0.6 for row in rows)
    assert cli("query", "changed_between_runs", "-p", f"dataset={dataset}", "-p", "later_run=x", "-p",
               "earlier_run=y", "--store", neo4j_env, cwd=tmp_path).output.strip().endswith("0 rows")
    # the two slips of a newcomer's walk: a number where keys are text, a dataset's typo (said alone)
    slips = {name: " ".join(cli("query", "MATCH (e:Entity) WHERE e.dataset = $dataset AND e.key = $key RETURN e.key",
                                "-p", f"dataset={name}", "-p", "key=7", "--store", neo4j_env).output.split())
             for name in (dataset, f"{dataset}x")}
    assert "0 rows" in slips[dataset]
    assert """note: -p key=7 was sent as a number: a text value (keys are text) is -p 'key="7"'""" in slips[dataset]
    assert f"note: no dataset '{dataset}x' in the store (no node belongs to it); its datasets: " in slips[f"{dataset}x"]
    assert "was sent as a number" not in slips[f"{dataset}x"]
    with open_store(neo4j_env) as store:
        heaviest = store.query(
            "MATCH (e:Entity)-[r:SIMILAR]-(:Entity) WHERE e.dataset = $ds "
            "RETURN e.key AS key, max(r.weight) AS heaviest", {"ds": dataset}).set_index("key")["heaviest"]
        faint = heaviest.index[heaviest < 1e-12 * heaviest.max()]
        assert len(faint) >= 1  # the case this test is about is present in the graph GDS built
        predicted = stored(store, dataset, "predicted_label")["predicted_label"]
        assert predicted.notna().all()
        hidden = (frame["label"] == "").to_numpy()
        truth = pd.Series(y, index=frame["id"])
        assert (predicted[frame["id"][hidden]] == truth[frame["id"][hidden]]).mean() > 0.9


def test_weka_arff_file_through_the_cli_on_neo4j(neo4j_env, dataset, tmp_path):
    """weka's vote.arff as a user brings it: no key column (``--key '#'``: each record's
    line), '?' as the class of the unlabelled records and as a vote of its own, two lines
    that are no record; ingested, graphed by GDS kNN and labelled through the command."""
    from test_arff_files import vote_arff

    from graphstore import open_store

    path, truth, given = vote_arff(tmp_path)
    with path.open("a") as file:
        file.write("n,y,n,y,y,y,n,n,n,y,?,y,y,y,n,y\n"  # 16 values of 17
                   "n,y,n,y,y,y,n,n,n,y,?,y,y,y,n,maybe,republican\n")  # a vote the header does not declare
    rejects = tmp_path / "rejects.csv"
    out = cli("ingest", path, "--dataset", dataset, "--key", "#", "--categorical", "*", "--label", "Class",
              "--rejects", rejects, "--store", neo4j_env).output
    assert f"stored 435 nodes in dataset '{dataset}'" in out
    assert "rejected 2 rows (malformed line: 2)" in out
    reasons = pd.read_csv(rejects)["reason"]
    assert reasons[0].startswith("16 values where the header declares 17 attributes")
    assert reasons[1].startswith("export-administration-act-south-africa holds 'maybe', not one of its declared")

    out = cli("label", "--dataset", dataset, "--store", neo4j_env).output
    assert f"labelled 435 nodes of '{dataset}' with harmonic ({len(given)} given labels" in out
    with open_store(neo4j_env) as store:
        nodes = stored(store, dataset, "given_label", "predicted_label", "categories")
    assert set(nodes.index) == set(truth.index)
    assert set(nodes.index[nodes["given_label"].notna()]) == given
    assert any("?" in votes for votes in nodes["categories"])
    hidden = truth.drop(sorted(given))
    accuracy = float((nodes.loc[hidden.index, "predicted_label"] == hidden).mean())
    print(f"vote.arff on Neo4j (GDS 10-NN on the one-hot votes, harmonic, 20 labels): accuracy {accuracy:.3f}")
    assert accuracy > 0.85
