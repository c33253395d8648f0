"""The user's own graph on a live Neo4j 5.26 + GDS 2.13, through the `graphlabel` command as
a user runs it: a user's CO_PURCHASED relationships between the dataset's nodes are never
written or deleted by build-graph, full and incremental label runs or
prune-runs, and `--graph edges:CO_PURCHASED:count` / `knn+edges:...` label over them. The
reads themselves are in the store contract (tests/test_store_contract.py)."""

from __future__ import annotations

import uuid

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from sklearn.datasets import load_digits
from sklearn.neighbors import kneighbors_graph
from test_neo4j_live import delete_dataset
from test_neo4j_live_product import cli

pytestmark = [pytest.mark.neo4j, pytest.mark.usefixtures("prefect_harness")]


def snapshot(driver, dataset: str) -> pd.DataFrame:
    """Every CO_PURCHASED relationship between the dataset's nodes with all its properties,
    sorted: the state that must not change."""
    rows = driver.execute_query(
        "MATCH (a:Entity {dataset: $ds})-[r:CO_PURCHASED]->(b:Entity {dataset: $ds})"
        " RETURN a.key AS a, b.key AS b, elementId(r) AS id, properties(r) AS props",
        parameters_={"ds": dataset}, result_transformer_=lambda r: r.to_df())
    rows["props"] = rows["props"].map(lambda p: tuple(sorted(p.items())))
    return rows.sort_values(["a", "b"]).reset_index(drop=True)


def accuracy(driver, dataset: str, truth: pd.Series) -> float:
    got = driver.execute_query("MATCH (e:Entity {dataset: $ds}) RETURN e.key AS key, e.predicted_label AS p",
                               parameters_={"ds": dataset}, result_transformer_=lambda r: r.to_df())
    return float((got["p"].to_numpy() == truth.loc[got["key"]].to_numpy()).mean())


def test_a_users_relationship_type_is_read_only_and_labelled_over(neo4j_env, neo4j_live, tmp_path):
    from graphstore import StoreSetupError, open_store

    dataset = f"ug-{uuid.uuid4().hex[:8]}"
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(1)
    pick = rng.choice(len(y), 330, replace=False)
    X, y = X[pick], y[pick]
    keys = np.array([f"d{i}" for i in pick])
    truth = pd.Series(y.astype(str), index=keys)
    labels = np.where(rng.random(len(y)) < 0.15, y.astype(str), "")
    # the features carry no class (noise); the user's co-purchases do (the pixels' 8-NN)
    frame = pd.DataFrame(rng.normal(size=(len(y), 6)), columns=[f"f{i}" for i in range(6)])
    frame.insert(0, "id", keys)
    frame["label"] = labels
    first, later = tmp_path / "first.csv", tmp_path / "later.csv"
    frame.iloc[:300].to_csv(first, index=False)
    frame.to_csv(later, index=False)  # 30 new entities
    W = kneighbors_graph(X, 8, mode="connectivity", include_self=False).tocoo()
    pairs = [{"a": keys[i], "b": keys[j], "count": int(1 + (i * j) % 4)} for i, j in zip(W.row, W.col)]
    try:
        cli("ingest", first, "--dataset", dataset, "--key", "id", "--features", "f*", "--label", "label",
            "--store", neo4j_env)
        # ingest-edges is for the embedded store: on Neo4j it says so, before reading the file
        out = cli("ingest-edges", tmp_path / "not-read.csv", "--dataset", dataset, "--source", "a", "--target", "b",
                  "--store", neo4j_env, ok=False).output
        assert "on Neo4j the user's relationships are the user's own" in out
        with neo4j_live.driver() as driver:
            # the user's relationships, also to the 30 entities not ingested yet (made when they come)
            driver.execute_query("UNWIND $pairs AS p MATCH (a:Entity {dataset: $ds, key: p.a}),"
                                 " (b:Entity {dataset: $ds, key: p.b})"
                                 " CREATE (a)-[:CO_PURCHASED {count: p.count, since: 2024}]->(b)",
                                 parameters_={"pairs": pairs, "ds": dataset})
            before = snapshot(driver, dataset)
        assert len(before) > 2000
        # graphlabel's own graph goes to its own type; full and incremental runs; retention
        cli("build-graph", "--dataset", dataset, "--k", "8", "--store", neo4j_env)
        cli("label", "--dataset", dataset, "--full", "--store", neo4j_env)
        with neo4j_live.driver() as driver:
            on_noise = accuracy(driver, dataset, truth)
            assert snapshot(driver, dataset).equals(before)
        out = cli("label", "--dataset", dataset, "--graph", "edges:CO_PURCHASED:count", "--store", neo4j_env).output
        assert f"labelling over {len(before):,} of the user's CO_PURCHASED relationships" in out
        with neo4j_live.driver() as driver:
            on_edges = accuracy(driver, dataset, truth)
        out = cli("explain", keys[0], "--dataset", dataset, "--store", neo4j_env).output
        assert "is labelled over the user's CO_PURCHASED edges as well" in out.replace("\n", " ")
        cli("label", "--dataset", dataset, "--graph", "knn+edges:CO_PURCHASED:count", "--edges-weight", "0.5",
            "--k", "8", "--store", neo4j_env)
        with neo4j_live.driver() as driver:
            on_both = accuracy(driver, dataset, truth)
        print(f"Neo4j, accuracy over GDS kNN of noise {on_noise:.3f}, the user's edges {on_edges:.3f},"
              f" both {on_both:.3f}")
        assert on_noise < 0.35 < 0.8 < on_edges
        assert on_both > on_noise + 0.3
        # 30 new entities and their co-purchases: an incremental run adds kNN relationships
        # for them, to SIMILAR only
        cli("ingest", later, "--dataset", dataset, "--key", "id", "--features", "f*", "--label", "label",
            "--store", neo4j_env)
        with neo4j_live.driver() as driver:
            driver.execute_query("UNWIND $pairs AS p MATCH (a:Entity {dataset: $ds, key: p.a}),"
                                 " (b:Entity {dataset: $ds, key: p.b})"
                                 " WITH a, b, p WHERE NOT (a)-[:CO_PURCHASED]->(b)"
                                 " CREATE (a)-[:CO_PURCHASED {count: p.count, since: 2024}]->(b)",
                                 parameters_={"pairs": pairs, "ds": dataset})
            grown = snapshot(driver, dataset)
        assert len(grown) == len(pairs)
        out = cli("label", "--dataset", dataset, "--store", neo4j_env).output
        assert "incremental run: 30 changed nodes (30 new)" in out, out
        cli("prune-runs", "--dataset", dataset, "--keep-last", "1", "--store", neo4j_env)
        with neo4j_live.driver() as driver:
            after = snapshot(driver, dataset)
            own = driver.execute_query(
                "MATCH (a:Entity {dataset: $ds})-[r]->(:Entity {dataset: $ds}) RETURN type(r) AS t, count(r) AS n,"
                " count(r.graphlabel_similarity) AS marked ORDER BY t", parameters_={"ds": dataset},
                result_transformer_=lambda r: r.to_df())
            assert accuracy(driver, dataset, truth) > on_noise + 0.3  # the new entities labelled over both too
        assert after.equals(grown)  # same relationships (element ids), same properties, none added or gone
        counts = own.set_index("t")
        assert counts.loc["CO_PURCHASED", "marked"] == 0
        assert counts.loc["SIMILAR", "marked"] == counts.loc["SIMILAR", "n"] > 300 * 8
        # the older way (the relationship setting pointed at the user's type): an incremental
        # write into it is refused before anything is written
        with open_store(neo4j_env, relationship="CO_PURCHASED") as store:
            with pytest.raises(StoreSetupError, match="graphlabel never writes into or deletes a user's") as refused:
                store.add_edges(dataset, pa.table({"source": [keys[0]], "target": [keys[1]], "weight": [1.0]}))
            assert "--graph edges:TYPE[:WEIGHT_PROPERTY]" in str(refused.value)
        with neo4j_live.driver() as driver:
            assert snapshot(driver, dataset).equals(grown)
    finally:
        with neo4j_live.driver() as driver:
            delete_dataset(driver, dataset)
