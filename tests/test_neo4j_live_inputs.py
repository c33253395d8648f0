"""Issue 17 "In" on a live Neo4j 5.26 + GDS 2.13, through the flows as a user's runs go:
feature scaling applied in GDS's projection and its numbers reused by incremental runs,
categorical columns (one-hot in the projection for GDS kNN; Blum & Chawla's weighted
Hamming distance for mincut-3, built locally through the port), per-label trust read back
into the solver's problem. The embedded store's twins are in tests/test_inputs.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_inputs import vote_frame, wine_frame

pytestmark = [pytest.mark.neo4j, pytest.mark.usefixtures("prefect_harness")]


def _csv(frame: pd.DataFrame, tmp_path, name: str) -> str:
    path = tmp_path / f"{name}.csv"
    frame.to_csv(path, index=False)
    return str(path)


def test_gds_knn_on_scaled_wine_and_new_entities_in_the_recorded_units(neo4j_env, dataset, tmp_path):
    """GDS kNN reads the features scaled in its projection: the GraphBuild record holds
    the columns' means and stds, the weights are the Gaussian of the scaled distances,
    and an incremental run's new entities are measured with those recorded numbers."""
    from flows.labelling import ingest_flow, labelling_flow
    from graphstore import open_store

    frame, columns, y = wine_frame()
    first = _csv(frame.iloc[:150], tmp_path, "first")
    later = _csv(frame.iloc[150:], tmp_path, "later")
    ingest_flow(source=first, dataset=dataset, key="id", features=",".join(columns), label="label",
                store_uri=neo4j_env, rejects_path=str(tmp_path / "rejects.csv"))
    flagged = {}
    for scale in ("none", "standard"):
        summary = labelling_flow(dataset=dataset, store_uri=neo4j_env, scale=scale, full=True, publish=False,
                                 k=10)
        flagged[scale] = summary["n_flagged"]
    print(f"wine on Neo4j (150 rows, GDS 10-NN, harmonic): flagged {flagged}")
    assert flagged["standard"] < flagged["none"]
    with open_store(neo4j_env) as store:
        built = store.read_graph_build(dataset)
        graph = store.read_subgraph(dataset)
    first_rows = frame.iloc[:150]
    np.testing.assert_allclose(built["scale_center"], first_rows[columns].mean().to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(built["scale_width"], first_rows[columns].std(ddof=0).to_numpy(), rtol=1e-12)
    center, width = np.asarray(built["scale_center"]), np.asarray(built["scale_width"])
    Z = (graph.features - center) / width
    distance = np.linalg.norm(Z[graph.source] - Z[graph.target], axis=1)
    np.testing.assert_allclose(graph.weight, np.exp(-distance ** 2 / (2 * built["sigma"] ** 2)), rtol=1e-6)

    ingest_flow(source=later, dataset=dataset, key="id", features=",".join(columns), label="label",
                store_uri=neo4j_env, rejects_path=str(tmp_path / "rejects.csv"))
    summary = labelling_flow(dataset=dataset, store_uri=neo4j_env, publish=False)
    assert summary["metrics"]["incremental"] is True, summary["metrics"].get("full_run_reason")
    with open_store(neo4j_env) as store:
        after = store.read_graph_build(dataset)
        graph = store.read_subgraph(dataset)
    assert after["scale_center"] == built["scale_center"]  # reused, not refitted on 178 rows
    new = np.isin(graph.keys, frame["id"].iloc[150:].to_numpy())
    touches = new[graph.source] | new[graph.target]
    assert touches.sum() >= 28 * 10 // 2
    Z = (graph.features - center) / width
    distance = np.linalg.norm(Z[graph.source] - Z[graph.target], axis=1)
    np.testing.assert_allclose(graph.weight[touches], np.exp(-distance[touches] ** 2 / (2 * built["sigma"] ** 2)),
                               rtol=1e-6)


def test_vote_categorical_on_neo4j_gds_one_hot_and_mincut3_hamming(neo4j_env, dataset, tmp_path):
    """vote.arff's 16 categorical votes on Neo4j: GDS kNN on their one-hot (built in the
    projection from the stored categories and the recorded vocabulary), Blum & Chawla's
    mincut-3 on the information-gain-weighted Hamming distance, and an unseen category
    rebuilding the graph."""
    from flows.labelling import ingest_flow, labelling_flow
    from graphstore import open_store

    frame, y = vote_frame()
    columns = [c for c in frame.columns if c not in ("id", "label")]
    path = _csv(frame.iloc[:400], tmp_path, "vote")
    ingest_flow(source=path, dataset=dataset, key="id", features=None, categorical="*", label="label",
                store_uri=neo4j_env)
    truth = pd.Series(y, index=frame["id"])
    unlabelled = frame["id"].iloc[:400][frame["label"].iloc[:400].isna().to_numpy()]
    accuracy = {}
    for graph, metric, solver in (("knn", "euclidean", "harmonic"), ("mincut3", "hamming", "mincut")):
        labelling_flow(dataset=dataset, store_uri=neo4j_env, solver=solver, graph=graph, metric=metric,
                       full=True, publish=False)
        with open_store(neo4j_env) as store:
            predicted = store.read_predictions(dataset).to_pandas().set_index("key")["predicted_label"]
            record = store.read_graph_build(dataset)
            subgraph = store.read_subgraph(dataset)
        accuracy[graph] = float((predicted.reindex(unlabelled) == truth.reindex(unlabelled)).mean())
        assert record["vocabulary"][0] == ["?", "n", "y"]
        if graph == "knn":  # GDS's distances were those of the one-hot vectors
            from similarity.encoding import FeatureEncoding

            Z = FeatureEncoding.from_record(record).transform(subgraph.features, subgraph.categories)
            assert Z.shape[1] == sum(len(v) for v in record["vocabulary"])
            distance = np.linalg.norm(Z[subgraph.source] - Z[subgraph.target], axis=1)
            np.testing.assert_allclose(subgraph.weight, np.exp(-distance ** 2 / (2 * record["sigma"] ** 2)),
                                       rtol=1e-6, atol=1e-12)
    print(f"vote on Neo4j, 400 rows: accuracy on the unlabelled {accuracy}")
    assert accuracy["mincut3"] > 0.85
    assert accuracy["knn"] > 0.85
    # new entities with values the graph knows: their nearest on the one-hot, in the
    # recorded vocabulary
    labelling_flow(dataset=dataset, store_uri=neo4j_env, graph="knn", full=True, publish=False)
    known = frame.iloc[400:420]
    ingest_flow(source=_csv(known, tmp_path, "known"), dataset=dataset, key="id", features=None,
                categorical=",".join(columns), label="label", store_uri=neo4j_env)
    summary = labelling_flow(dataset=dataset, store_uri=neo4j_env, publish=False)
    assert summary["metrics"]["incremental"] is True, summary["metrics"].get("full_run_reason")
    assert summary["metrics"]["n_new"] == 20
    with open_store(neo4j_env) as store:
        record = store.read_graph_build(dataset)
        subgraph = store.read_subgraph(dataset)
    from similarity.encoding import FeatureEncoding

    Z = FeatureEncoding.from_record(record).transform(subgraph.features, subgraph.categories)
    new = np.isin(subgraph.keys, known["id"].to_numpy())
    touches = new[subgraph.source] | new[subgraph.target]
    assert touches.sum() >= 20 * 10 // 2
    distance = np.linalg.norm(Z[subgraph.source] - Z[subgraph.target], axis=1)
    np.testing.assert_allclose(subgraph.weight[touches],
                               np.exp(-distance[touches] ** 2 / (2 * record["sigma"] ** 2)), rtol=1e-6, atol=1e-12)
    # an unseen value at an incremental run's new entity: the run is full and rebuilds (the
    # flow's default), nothing is lost
    later = frame.iloc[420:].copy()
    later.loc[later.index[0], "crime"] = "abstain"
    ingest_flow(source=_csv(later, tmp_path, "later"), dataset=dataset, key="id", features=None,
                categorical=",".join(columns), label="label", store_uri=neo4j_env)
    summary = labelling_flow(dataset=dataset, store_uri=neo4j_env, publish=False)
    assert summary["metrics"]["incremental"] is False
    assert "'abstain'" in summary["metrics"]["full_run_reason"]
    with open_store(neo4j_env) as store:
        record = store.read_graph_build(dataset)
        predicted = store.read_predictions(dataset).to_pandas().set_index("key")["predicted_label"]
    assert "abstain" in record["vocabulary"][columns.index("crime")]
    assert predicted.loc[later["id"].iloc[0]] in ("democrat", "republican")


def test_label_confidence_on_neo4j_reaches_the_problem_and_bad_values_are_rejected(neo4j_env, dataset, tmp_path):
    from flows.labelling import ingest_flow, labelling_flow
    from graphstore import open_store
    from labelling.problems import label_problem

    frame, columns, _ = wine_frame()
    labelled = frame["label"].notna().to_numpy()
    frame["trust"] = np.where(labelled, np.linspace(0.05, 1.0, len(frame)).round(3), np.nan).astype(object)
    frame.loc[frame.index[~labelled][0], "trust"] = 0.5   # on a row without a label: rejected
    frame.loc[frame.index[labelled][1], "trust"] = "sure"  # not a number: rejected
    rejects = tmp_path / "rejects.csv"
    summary = ingest_flow(source=_csv(frame, tmp_path, "wine"), dataset=dataset, key="id",
                          features=",".join(columns), label="label", label_confidence="trust",
                          store_uri=neo4j_env, rejects_path=str(rejects))
    assert summary["stored"] == 176
    assert summary["reject_reasons"] == {"bad label confidence": 2}
    assert sorted(pd.read_csv(rejects)["reason"]) == ["label confidence trust='0.5' on a row without a label",
                                                      "label confidence trust='sure' is not a number"]
    with open_store(neo4j_env) as store:
        exported = label_problem(store.read_subgraph(dataset), dataset)
    stored = frame.set_index("id")["trust"].reindex(exported.keys)
    expected = pd.to_numeric(stored, errors="coerce").fillna(1.0).to_numpy()
    np.testing.assert_allclose(exported.problem.label_confidence, expected)
    run = labelling_flow(dataset=dataset, store_uri=neo4j_env, full=True, publish=False, solver="harmonic")
    assert run["n_labeled"] == 35
