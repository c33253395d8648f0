"""The user's own graph on the embedded store: ``--graph edges:TYPE[:WEIGHT]`` and
``KIND+edges:...`` (similarity/spec.py), ``graphlabel ingest-edges`` with its rejected rows
(labelling/edgefiles.py), labelling over them end to end on the digits. The reads every
store keeps are in tests/test_store_contract.py; Neo4j's in tests/test_neo4j_live_user_graph.py."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_digits
from sklearn.neighbors import kneighbors_graph
from typer.testing import CliRunner

from graphlabel.cli import app
from graphstore import open_store
from graphstore.schemas import EDGE_SCHEMA, SubGraph
from graphstore.user_edges import changed_endpoints, with_user_edges
from labelling.edgefiles import BAD_WEIGHT, DUPLICATE_PAIR, MISSING_NODE, SELF_LOOP, parse_edges
from labelling.records import MISSING_KEY
from similarity.spec import GraphRequest, GraphSpec, graph_problems

runner = CliRunner()


def cli(*args, ok=True):
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})
    if ok:
        assert result.exit_code == 0, result.output
    return result


# -- the spec --------------------------------------------------------------------------------


def test_graph_values_name_the_users_edges_and_are_validated():
    spec = GraphSpec.from_options("knn+edges:CO_PURCHASED:count", k=5, edges_weight=0.25)
    assert (spec.kind, spec.k, spec.edges_type, spec.edges_property, spec.edges_weight) == \
        ("knn", 5, "CO_PURCHASED", "count", 0.25)
    assert spec.graph == "knn+edges:CO_PURCHASED:count"
    assert GraphSpec.from_record(spec.as_record()) == spec
    alone = GraphSpec.from_options("edges:CO_PURCHASED")
    assert (alone.kind, alone.k, alone.metric, alone.edges_weight, alone.similarity_kind) == \
        ("edges", None, None, None, None)
    assert GraphSpec.from_options("knn+edges:T").edges_weight == 1.0  # the default factor
    assert GraphSpec.from_options("knn").edges_type is None
    for bad, message in [("edges:", "invalid relationship type ''"), ("edges:9lives", "invalid relationship type"),
                         ("knn+edge:T", "written edges:TYPE"), ("edges:T:bad-name", "invalid weight property"),
                         ("knnn+edges:T", "graph must be one of")]:
        with pytest.raises(ValueError, match=message):
            GraphSpec.from_options(bad)
    with pytest.raises(ValueError, match="edges_weight weighs the user's edges in a sum"):
        GraphSpec.from_options("edges:T", edges_weight=2.0)
    with pytest.raises(ValueError, match="edges_weight must be a positive number"):
        GraphSpec.from_options("knn+edges:T", edges_weight=-1.0)
    with pytest.raises(ValueError, match='graph "edges" needs the relationship type'):
        GraphSpec(kind="edges", k=None, metric=None, weights=None, symmetrise=None)
    # a schedule file gets every problem at once, the edges' too
    assert graph_problems("knn", edges_weight=0.5) == [
        "edges_weight weighs the user's edges in a sum with a similarity graph: it needs --graph"
        " KIND+edges:TYPE (e.g. knn+edges:CO_PURCHASED)"]
    assert GraphRequest("knn+edges:T:w", edges_weight=2.0).given() == {
        "graph": "knn", "edges_type": "T", "edges_property": "w", "edges_weight": 2.0}


def test_the_sum_of_the_two_graphs_is_taken_pair_by_pair():
    rng = np.random.default_rng(0)
    n = 30
    keys = np.array([f"n{i}" for i in range(n)], dtype=object)
    W = np.triu(rng.random((n, n)) * (rng.random((n, n)) < 0.2), 1)
    i, j = np.nonzero(W)
    graph = SubGraph(keys, np.full(n, None, dtype=object), None, i, j, W[i, j])
    U = rng.random((n, n)) * (rng.random((n, n)) < 0.15)  # directed, both ways sometimes, self loops too
    s, t = np.nonzero(U)
    import pyarrow as pa

    user = pa.table({"source": keys[s].tolist(), "target": keys[t].tolist(), "weight": U[s, t]})
    summed = with_user_edges(graph, user, GraphSpec.from_options("knn+edges:T", edges_weight=0.5))
    U_undirected = np.maximum(U, U.T)
    np.fill_diagonal(U_undirected, 0)
    expected = (W + W.T) + 0.5 * U_undirected
    got = np.zeros((n, n))
    got[summed.source, summed.target] = summed.weight
    assert np.allclose(got + got.T, expected)
    alone = with_user_edges(graph, user, GraphSpec.from_options("edges:T"))
    got = np.zeros((n, n))
    got[alone.source, alone.target] = alone.weight
    assert np.allclose(got + got.T, U_undirected)


# -- edge files ------------------------------------------------------------------------------


def test_every_bad_edge_row_is_rejected_with_its_reason_and_none_is_lost(tmp_path):
    path = tmp_path / "edges.csv"
    path.write_text("src,dst,w\n"
                    "a,b,1.5\n"      # 2 kept
                    "b,c,2\n"        # 3 kept
                    "a,zz,1\n"       # 4 missing node
                    ",c,1\n"         # 5 missing key
                    "c,c,1\n"        # 6 self loop
                    "a,c,heavy\n"    # 7 bad weight
                    "a,d,-1\n"       # 8 bad weight
                    "b,d,\n"         # 9 bad weight (missing)
                    "c,d,inf\n"      # 10 bad weight
                    "b,a,1.5\n"      # 11 repeats line 2 (the other way round): rejected, 2 kept
                    "d,a,1\n"        # 12 and 13 disagree: both rejected
                    "a,d,3\n"
                    "c,d,0\n"        # 14 zero weight: kept
                    "a,b,c,d\n")     # 15 malformed
    parsed = parse_edges(path, source_column="src", target_column="dst", weight_column="w",
                         node_keys=np.array(["a", "b", "c", "d"], dtype=object))
    assert parsed.edges.to_pylist() == [{"source": "a", "target": "b", "weight": 1.5},
                                        {"source": "b", "target": "c", "weight": 2.0},
                                        {"source": "c", "target": "d", "weight": 0.0}]
    assert parsed.rows.tolist() == [2, 3, 14]
    rejects = parsed.rejects.set_index("row")
    assert sorted(rejects.index.tolist() + parsed.rows.tolist()) == list(range(2, 16))  # every line accounted for
    assert rejects.loc[4, "kind"] == MISSING_NODE
    assert "no node 'zz'" in rejects.loc[4, "reason"]
    assert rejects.loc[5, "kind"] == MISSING_KEY
    assert "empty source 'src'" in rejects.loc[5, "reason"]
    assert rejects.loc[5, "key"] == "->c"  # the empty end as nothing, not Python's None
    assert rejects.loc[6, "kind"] == SELF_LOOP
    assert rejects.loc[7, "reason"] == "weight 'heavy' is not a number"
    assert rejects.loc[8, "reason"] == "weight '-1' is negative (weights are >= 0)"
    assert rejects.loc[9, "reason"] == "missing weight 'w' (empty or NA)"
    assert rejects.loc[10, "reason"] == "weight 'inf' is infinite"
    assert set(rejects.loc[[7, 8, 9, 10], "kind"]) == {BAD_WEIGHT}
    assert rejects.loc[11, "reason"] == "repeats the pair of row 2"
    assert rejects.loc[12, "kind"] == rejects.loc[13, "kind"] == DUPLICATE_PAIR
    assert "2 rows join 'a' and 'd' with different weights: all rejected" in rejects.loc[12, "reason"]
    assert rejects.loc[15, "kind"] == "malformed line"
    assert parsed.reject_counts == {"malformed line": 1, MISSING_KEY: 1, MISSING_NODE: 1, SELF_LOOP: 1,
                                    BAD_WEIGHT: 4, DUPLICATE_PAIR: 3}
    with pytest.raises(ValueError, match=r"columns \['weight'\] are not in the file"):
        parse_edges(path, source_column="src", target_column="dst", weight_column="weight",
                    node_keys=np.array(["a"], dtype=object))


def test_the_changed_ends_are_those_of_edges_added_removed_or_reweighted():
    import pyarrow as pa

    def table(*rows):
        return pa.table({"source": [r[0] for r in rows], "target": [r[1] for r in rows],
                         "weight": pa.array([r[2] for r in rows], pa.float64())}).cast(EDGE_SCHEMA)

    before = table(("a", "b", 1.0), ("b", "c", 2.0), ("c", "d", None), ("d", "e", 1.0), ("e", "e", 1.0))
    # a-b turned round, c-d still without weight, a self loop dropped: none of these is a change
    after = table(("b", "a", 1.0), ("b", "c", 3.0), ("d", "c", None), ("f", "g", 1.0))
    assert changed_endpoints(before, after).tolist() == ["b", "c", "d", "e", "f", "g"]
    # a pair each way is one edge of the larger weight, as the graph reads it
    assert changed_endpoints(table(("a", "b", 1.0), ("b", "a", 2.0)), table(("a", "b", 2.0))).tolist() == []
    assert changed_endpoints(table(), table(("a", "b", None))).tolist() == ["a", "b"]


# -- end to end on the digits ----------------------------------------------------------------


@pytest.fixture
def digits_files(tmp_path):
    """600 digits, 15% labelled: the nodes with their pixels, the same nodes with pure
    noise as features, and the pixels' 10-NN graph written as the user's own edges file."""
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    pick = rng.choice(len(y), 600, replace=False)
    X, y = X[pick], y[pick]
    keys = [f"d{i}" for i in pick]
    labels = np.where(rng.random(600) < 0.15, y.astype(str), "")
    files = {}
    for name, features in (("pixels", X), ("noise", rng.normal(size=(600, 8)))):
        frame = pd.DataFrame(features, columns=[f"f{i}" for i in range(features.shape[1])])
        frame.insert(0, "id", keys)
        frame["label"] = labels
        files[name] = tmp_path / f"{name}.csv"
        frame.to_csv(files[name], index=False)
    W = kneighbors_graph(X, 10, mode="connectivity", include_self=False).tocoo()
    edges = pd.DataFrame({"a": np.array(keys)[W.row], "b": np.array(keys)[W.col],
                          "strength": 1.0 + (W.row + W.col) % 3})
    files["edges"] = tmp_path / "edges.csv"
    edges.to_csv(files["edges"], index=False)
    return files, pd.Series(y.astype(str), index=keys), len(edges)


def accuracy(store_path, truth) -> float:
    with open_store(store_path) as store:
        got = store.query("MATCH (e:Entity) WHERE e.dataset = 'dg' RETURN e.key AS key, e.predicted_label AS p")
    return float((got.set_index("key")["p"] == truth.loc[got["key"]].to_numpy()).mean())


@pytest.mark.usefixtures("prefect_harness")
def test_labelling_over_the_users_edges_end_to_end(digits_files, store_path):
    files, truth, n_edges = digits_files
    cli("ingest", files["noise"], "--dataset", "dg", "--key", "id", "--features", "f*", "--label", "label",
        "--store", store_path)
    out = cli("ingest-edges", files["edges"], "--dataset", "dg", "--source", "a", "--target", "b", "--weight",
              "strength", "--type", "LOOKS_ALIKE", "--rejects", files["edges"].with_suffix(".rejects.csv"),
              "--store", store_path).output
    # sklearn's kNN lists hold a pair each way when both are among each other's 10 nearest
    # with the same weight: the second copy is a repeat, rejected with its reason
    with open_store(store_path) as store:
        stored = store.read_user_edges("dg", "LOOKS_ALIKE", "weight").num_rows
    assert f"stored {stored:,} LOOKS_ALIKE edges in dataset 'dg'" in out
    assert f"rejected {n_edges - stored:,} rows (duplicate pair: {n_edges - stored:,})" in out.replace("\n", " ")
    # the features are noise: graphlabel's kNN graph over them labels at about chance
    cli("label", "--dataset", "dg", "--rebuild-graph", "--store", store_path)
    on_noise = accuracy(store_path, truth)
    # the user's edges carry the signal
    out = cli("label", "--dataset", "dg", "--graph", "edges:LOOKS_ALIKE", "--store", store_path).output
    assert "labelled 600 nodes" in out
    on_edges = accuracy(store_path, truth)
    out = cli("label", "--dataset", "dg", "--graph", "knn+edges:LOOKS_ALIKE:weight", "--edges-weight", "1",
              "--store", store_path).output
    on_both = accuracy(store_path, truth)
    assert on_noise < 0.3 < 0.85 < on_edges
    assert on_both > on_noise + 0.3
    with open_store(store_path) as store:
        runs = store.read_runs("dg", limit=1)
        assert runs["parameters"][0]["edges_type"] == "LOOKS_ALIKE"
        assert runs["parameters"][0]["edges_weight"] == 1.0
        assert store.read_user_edges("dg", "LOOKS_ALIKE", "weight").num_rows == stored  # never written by a run
    # build-graph with the user's edges alone: graphlabel's own relationships go, the user's stay
    out = cli("build-graph", "--dataset", "dg", "--graph", "edges:LOOKS_ALIKE", "--store", store_path).output
    assert f"'dg' is labelled over the user's {stored:,} LOOKS_ALIKE edges" in out
    with open_store(store_path) as store:
        assert store.read_subgraph("dg", with_features=False).source.size == 0
        assert store.read_user_edges("dg", "LOOKS_ALIKE").num_rows == stored
    key = truth.index[0]
    out = cli("explain", key, "--dataset", "dg", "--store", store_path).output
    assert "is labelled over the user's LOOKS_ALIKE edges as well" in out.replace("\n", " ")
    # an incremental run over them: a graph of the user's edges is always labelled in full
    out = cli("label", "--dataset", "dg", "--store", store_path).output
    assert "full run:" in out
    assert accuracy(store_path, truth) == on_edges
    print(f"accuracy over the kNN graph of noise {on_noise:.3f}, the user's edges {on_edges:.3f},"
          f" both {on_both:.3f}")


@pytest.mark.usefixtures("prefect_harness")
def test_nodes_outside_the_users_edges_are_counted_and_named_as_such(digits_files, store_path):
    """Edges of half the nodes: the others get no label. The line said "labelled 600 nodes"
    and the warning blamed nodes "ingested after the last graph build"."""
    files, truth, _ = digits_files
    cli("ingest", files["pixels"], "--dataset", "dg", "--key", "id", "--features", "f*", "--label", "label",
        "--store", store_path)
    half = set(truth.index[:300])
    edges = pd.read_csv(files["edges"])
    edges[edges["a"].isin(half) & edges["b"].isin(half)].to_csv(files["edges"], index=False)
    cli("ingest-edges", files["edges"], "--dataset", "dg", "--source", "a", "--target", "b", "--type", "SEEN",
        "--rejects", files["edges"].with_suffix(".rejects.csv"), "--store", store_path)
    out = " ".join(cli("label", "--dataset", "dg", "--graph", "edges:SEEN", "--store", store_path).output.split())
    with open_store(store_path) as store:
        unreached = int(store.read_runs("dg", limit=1)["metrics"][0]["n_unreachable"])
    assert unreached > 200  # the other half, but for its given labels
    assert f"labelled {600 - unreached:,} of 600 nodes of 'dg' with harmonic" in out
    assert "have none of the user's SEEN relationships, the graph's only ones: --graph knn+edges:SEEN adds" in out
    assert "ingested after the last graph build" not in out


@pytest.mark.usefixtures("prefect_harness")
def test_the_users_edges_over_real_features_label_as_graphlabels_own_knn(digits_files, store_path):
    """The user's edges file is the pixels' 10-NN graph: labelling over it agrees with
    labelling over graphlabel's own binary 10-NN graph of the same pixels."""
    files, truth, _ = digits_files
    cli("ingest", files["pixels"], "--dataset", "dg", "--key", "id", "--features", "f*", "--label", "label",
        "--store", store_path)
    cli("ingest-edges", files["edges"], "--dataset", "dg", "--source", "a", "--target", "b", "--rejects",
        files["edges"].with_suffix(".rejects.csv"), "--store", store_path)
    # unscaled, as the user's file was made (the digits' pixels share one unit)
    cli("build-graph", "--dataset", "dg", "--weights", "binary", "--scale", "none", "--store", store_path)
    cli("label", "--dataset", "dg", "--full", "--store", store_path)
    own = accuracy(store_path, truth)
    cli("label", "--dataset", "dg", "--graph", "edges:EDGE", "--store", store_path)  # the default --type
    users = accuracy(store_path, truth)
    print(f"accuracy over graphlabel's binary 10-NN graph {own:.3f}, the user's file of it {users:.3f}")
    assert own > 0.9
    assert users == pytest.approx(own, abs=0.005)


@pytest.mark.usefixtures("prefect_harness")
def test_bad_edge_files_and_graphs_end_in_one_line(tmp_path, store_path, digits_files):
    """Through the real console script (as a user's shell runs it): one line, exit 1."""
    from test_bad_input import cli_process

    files, _, _ = digits_files
    cli("ingest", files["noise"], "--dataset", "dg", "--key", "id", "--features", "f*", "--label", "label",
        "--store", store_path)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\nx1,x2\nd0,d0\n")
    done = cli_process("ingest-edges", bad, "--dataset", "dg", "--source", "a", "--target", "b", "--rejects",
                       tmp_path / "r.csv", "--store", store_path, cwd=tmp_path)
    assert done.returncode == 1
    assert "error: no valid edge in" in done.stderr
    assert "all 2 rows rejected" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert pd.read_csv(tmp_path / "r.csv")["kind"].tolist() == [MISSING_NODE, SELF_LOOP]
    for args, message, code in [
        (("build-graph", "--graph", "edges:NOT_LOADED"), "has no NOT_LOADED edges between its nodes", 1),
        # bad options (exit 2), refused before a flow starts
        (("label", "--graph", "edges:T", "--edges-weight", "2"), "edges_weight weighs the user's edges", 2),
        (("build-graph", "--graph", "edges:bad-type"), "invalid relationship type 'bad-type'", 2),
    ]:
        done = cli_process(*args, "--dataset", "dg", "--store", store_path, cwd=tmp_path)
        assert done.returncode == code, done.stderr
        assert message in done.stderr.replace("\n", "")
        assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.usefixtures("prefect_harness")
def test_new_entities_with_the_users_edges_still_get_knn_edges(digits_files, store_path, tmp_path):
    """knn+edges, incrementally: entities that arrive with edges of the user's are still new
    to graphlabel's own kNN graph, and get their kNN relationships."""
    files, truth, _ = digits_files
    frame = pd.read_csv(files["noise"], keep_default_na=False, dtype={"label": str})
    first = tmp_path / "first.csv"
    frame.iloc[:500].to_csv(first, index=False)
    cli("ingest", first, "--dataset", "dg", "--key", "id", "--features", "f*", "--label", "label",
        "--store", store_path)
    edges = ("ingest-edges", files["edges"], "--dataset", "dg", "--source", "a", "--target", "b", "--type", "CO",
             "--rejects", tmp_path / "edge-rejects.csv", "--store", store_path)
    out = cli(*edges).output
    assert "missing node: " in out  # the edges of the 100 entities not ingested yet
    cli("label", "--dataset", "dg", "--graph", "knn+edges:CO", "--store", store_path)
    cli("ingest", files["noise"], "--dataset", "dg", "--key", "id", "--features", "f*", "--label", "label",
        "--store", store_path)
    out = " ".join(cli(*edges).output.split())  # now every edge has its nodes
    loaded = pd.read_csv(files["edges"])
    new_keys = set(frame["id"].iloc[500:])
    touching = loaded[loaded["a"].isin(new_keys) | loaded["b"].isin(new_keys)]
    # the new entities, and the old ones at the other end of their edges (marked changed)
    changed = len(set(touching["a"]) | set(touching["b"]))
    assert f"{changed:,} nodes at the ends of added, removed or reweighted edges marked changed" in out
    out = cli("label", "--dataset", "dg", "--store", store_path).output
    assert f"incremental run: {changed} changed nodes (100 new)" in out
    with open_store(store_path) as store:
        own = store.read_subgraph("dg", with_features=False)
        degree = np.bincount(own.source, minlength=own.n_nodes) + np.bincount(own.target, minlength=own.n_nodes)
        assert (degree > 0).all()  # the 100 new entities have kNN relationships too
        runs = store.read_runs("dg", limit=1)
    # each new entity's 10 nearest; a pair of new entities in each other's lists counts once
    assert 100 * 10 * 0.9 <= runs["metrics"][0]["n_edges_added"] <= 100 * 10
    assert accuracy(store_path, truth) > 0.85


@pytest.mark.usefixtures("prefect_harness")
def test_reloaded_edges_relabel_the_region_around_those_that_changed(digits_files, store_path, tmp_path, caplog):
    """A type's file loaded again with edges removed, reweighted and added marks the ends of
    those edges changed, and only those: the next run relabels around them. It marked none,
    and the run said "0 changed nodes" over a graph that had changed (a files walk; the
    README said such a run is full)."""
    files, _, _ = digits_files
    cli("ingest", files["pixels"], "--dataset", "dg", "--key", "id", "--features", "f*", "--label", "label",
        "--store", store_path)
    load = ("ingest-edges", tmp_path / "edges.csv", "--dataset", "dg", "--source", "source", "--target", "target",
            "--weight", "weight", "--type", "CO", "--rejects", tmp_path / "rejects.csv", "--store", store_path)
    # one row per pair, as the store keeps them after the repeats are rejected
    pd.read_csv(files["edges"]).rename(columns={"a": "source", "b": "target", "strength": "weight"}) \
        .to_csv(tmp_path / "edges.csv", index=False)
    first = cli(*load).output
    assert "stored" in first
    assert "nodes at the ends of" not in first  # before the first run, which labels every node anyway
    with open_store(store_path) as store:
        stored = store.read_user_edges("dg", "CO", "weight").to_pandas()
    cli("label", "--dataset", "dg", "--graph", "knn+edges:CO:weight", "--store", store_path)
    edited = stored.iloc[3:].copy()  # three removed
    edited.iloc[:2, edited.columns.get_loc("weight")] += 1.0  # two reweighted
    keys = sorted(set(stored["source"]) | set(stored["target"]))
    linked = set(zip(stored["source"], stored["target"])) | set(zip(stored["target"], stored["source"]))
    added = next((a, b) for a in keys for b in keys if a < b and (a, b) not in linked)
    edited.loc[len(stored)] = [added[0], added[1], 2.0]  # one added
    edited.to_csv(tmp_path / "edges.csv", index=False)
    moved = pd.concat([stored.iloc[:5], edited.iloc[-1:]])
    ends = set(moved["source"]) | set(moved["target"])
    out = " ".join(cli(*load).output.split())
    assert f"{len(ends)} nodes at the ends of added, removed or reweighted edges marked changed" in out
    out = cli("label", "--dataset", "dg", "--store", store_path).output
    assert f"incremental run: {len(ends)} changed nodes (0 new)" in out
    # the solve's node count (region and class anchors) beside the region's, said how they meet
    assert re.search(r"relabelled with [\d,]+ fixed around them \(solved with \d+ class anchors? standing for them\)",
                     caplog.text), caplog.text[-3000:]
    # the same file again moves no edge: nothing is marked, the next run has nothing to do
    # (the console script: a CliRunner's output can carry a logging error's source lines)
    from test_bad_input import cli_process

    again = cli_process(*load, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "stored" in again.stdout
    assert "marked changed" not in again.stdout + again.stderr
    rerun = cli_process("label", "--dataset", "dg", "--store", store_path, cwd=tmp_path)
    assert "incremental run: 0 changed nodes" in rerun.stdout + rerun.stderr
