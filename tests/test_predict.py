"""`graphlabel predict`: a maxmargin run's kept model labels records that are not in the
store (scikit-learn's digits and wine: fit on part of them in the store, predict the rest
from a CSV), and every condition a user meets ends in one line."""

from __future__ import annotations

import io
import json
import re
import uuid

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_digits, load_wine
from typer.testing import CliRunner

from graphlabel.cli import app

pytestmark = pytest.mark.usefixtures("prefect_harness")
runner = CliRunner()


def split_csvs(tmp_path, loader, n_fit):
    """The data shuffled (seed 0), a label on every 4th of the first ``n_fit`` rows (the
    store's), the rest without labels in a second CSV; returns both paths and the truth."""
    X, y = loader(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    X, y = X[order], y[order].astype(str)
    frame = pd.DataFrame(X, columns=[f"f{i:02d}" for i in range(X.shape[1])])
    frame.insert(0, "id", [f"r{i}" for i in range(len(y))])
    frame.insert(1, "label", np.where(np.arange(len(y)) % 4 == 0, y, ""))
    fit, new = tmp_path / "fit.csv", tmp_path / "new.csv"
    frame.iloc[:n_fit].to_csv(fit, index=False)
    frame.iloc[n_fit:].drop(columns="label").to_csv(new, index=False)
    return str(fit), str(new), pd.Series(y[n_fit:], index=frame["id"].iloc[n_fit:])


def invoke(*args, ok=True):
    result = runner.invoke(app, [str(a) for a in args])
    if ok:
        assert result.exit_code == 0, result.output
    return result


def without_feature_columns(blob: bytes) -> bytes:
    """A kept model as one stored before ``RunModel.feature_columns`` existed."""
    with np.load(io.BytesIO(blob)) as arrays:
        parts = dict(arrays)
    header = json.loads(str(parts["header"]))
    del header["feature_columns"]
    parts["header"] = np.array(json.dumps(header))
    buffer = io.BytesIO()
    np.savez(buffer, **parts)
    return buffer.getvalue()


def labelled_run(store, dataset, fit, solver="maxmargin") -> str:
    invoke("ingest", fit, "--dataset", dataset, "--key", "id", "--features", "f*", "--label", "label",
           "--store", store)
    invoke("build-graph", "--dataset", dataset, "--store", store)
    output = invoke("label", "--dataset", dataset, "--solver", solver, "--full", "--store", store).output
    return re.search(r"run ([0-9a-f-]{36})", output).group(1)


# wine as it comes: its columns span 0.1 to 1,000, and the SVM reads them in the graph's
# standardised units (labelling.problems.numeric_scaling; as stored, proline was the distance)
@pytest.mark.parametrize(("loader", "n_fit", "bound"), [(load_digits, 1200, 0.95), (load_wine, 120, 0.85)])
def test_predict_labels_records_not_in_the_store(tmp_path, store_path, loader, n_fit, bound):
    fit, new, truth = split_csvs(tmp_path, loader, n_fit)
    run_id = labelled_run(store_path, "data", fit)
    out = tmp_path / "predicted.csv"
    result = invoke("predict", new, "--run", run_id[-8:], "--key", "id", "--features", "f*", "--output", out,
                    "--store", store_path)
    assert f"predicted {len(truth):,} records" in result.output
    predicted = pd.read_csv(out, dtype={"key": str, "predicted_label": str})
    assert predicted.columns.tolist() == ["key", "predicted_label", "label_confidence"]
    assert predicted["key"].tolist() == truth.index.tolist()
    accuracy = (predicted["predicted_label"].to_numpy() == truth.to_numpy()).mean()
    assert accuracy > bound, accuracy
    assert predicted["label_confidence"].between(0, 1).all()
    # the confident ones are more often right than the rest
    right = predicted["predicted_label"].to_numpy() == truth.to_numpy()
    confident = predicted["label_confidence"] >= predicted["label_confidence"].median()
    assert right[confident].mean() >= right[~confident].mean()
    # what predict gives for stored records is what the run wrote on them, but where the run
    # flagged the given label: the run predicts that node by the cross-fitted model, which never
    # saw the label (solvers/maxmargin.py), predict by the model fitted on every label
    stored = invoke("query", "MATCH (e:Entity) RETURN e.key AS key, e.predicted_label AS p, "
                    "e.label_noise AS noisy ORDER BY key", "--format", "csv", "--store", store_path).output
    stored = pd.read_csv(pd.io.common.StringIO(stored), dtype={"key": str, "p": str}).set_index("key")
    invoke("predict", fit, "--run", run_id, "--key", "id", "--features", "f*", "--output", tmp_path / "again.csv",
           "--store", store_path)
    again = pd.read_csv(tmp_path / "again.csv", dtype=str).set_index("key")
    unflagged = stored.loc[again.index, "noisy"].ne(True).to_numpy()
    assert unflagged.sum() >= 0.95 * len(again)
    assert (again["predicted_label"][unflagged] == stored.loc[again.index, "p"][unflagged]).mean() == 1.0


def test_predict_refuses_what_it_cannot_do_in_one_line(tmp_path, store_path):
    fit, new, _ = split_csvs(tmp_path, load_wine, 120)
    harmonic = labelled_run(store_path, "data", fit, solver="harmonic")
    result = invoke("predict", new, "--run", harmonic, "--key", "id", "--features", "f*", "--store", store_path,
                    ok=False)
    assert result.exit_code == 1
    assert f"run {harmonic} kept no model (it is a harmonic run)" in result.output
    result = invoke("predict", new, "--run", "no-such-run", "--key", "id", "--features", "f*", "--store",
                    store_path, ok=False)
    assert result.exit_code == 1
    assert "no run 'no-such-run' in the store" in result.output
    result = invoke("predict", new, "--dataset", "data", "--key", "id", "--features", "f*", "--store", store_path,
                    ok=False)
    assert result.exit_code == 1
    assert ("dataset 'data' has no completed maxmargin run with a kept model among its newest 1000 runs: graphlabel"
            " label --dataset data --solver maxmargin --full keeps one") in " ".join(result.output.split())
    for run_or_dataset in ([], ["--run", harmonic, "--dataset", "data"]):
        result = invoke("predict", new, *run_or_dataset, "--key", "id", "--features", "f*", "--store", store_path,
                        ok=False)
        assert result.exit_code == 2
        assert "give --run ID (a maxmargin run) or --dataset NAME (its newest maxmargin run), one of them" in (
            " ".join(result.output.split()))
    maxmargin = labelled_run(store_path, "data", fit)
    result = invoke("predict", new, "--dataset", "data", "--key", "id", "--features", "f*", "--output",
                    tmp_path / "by-dataset.pq", "--store", store_path)
    assert f"with run {maxmargin} of 'data'" in " ".join(result.output.split())
    assert pd.read_parquet(tmp_path / "by-dataset.pq")["key"].tolist() == pd.read_csv(new)["id"].tolist()
    result = invoke("predict", new, "--run", maxmargin, "--key", "id", "--features", "f0*", "--store", store_path,
                    ok=False)
    assert result.exit_code == 1
    assert f"the feature columns are not the ones run {maxmargin}'s model was fitted on (13 numeric: 'f00'," \
        in " ".join(result.output.split())
    assert "these lack 'f10', 'f11', 'f12';" in result.output
    # a model kept before the columns were recorded is held to the count
    from graphstore import open_store

    with open_store(store_path) as store:
        store.write_model(maxmargin, without_feature_columns(store.read_model(maxmargin)))
    result = invoke("predict", new, "--run", maxmargin, "--key", "id", "--features", "f0*", "--store", store_path,
                    ok=False)
    assert result.exit_code == 1
    assert "the records have 10 numeric features each and the model of run" in result.output
    assert "takes 13" in result.output
    bad = pd.read_csv(new)
    bad["f03"] = bad["f03"].astype(object)
    bad.loc[0, "f03"] = "oops"
    bad.to_csv(tmp_path / "bad.csv", index=False)
    rejects = tmp_path / "rejects.csv"
    result = invoke("predict", tmp_path / "bad.csv", "--run", maxmargin, "--key", "id", "--features", "f*",
                    "--output", tmp_path / "out.csv", "--rejects", rejects, "--store", store_path)
    assert "rejected 1 row," in result.output
    assert pd.read_csv(rejects)["reason"].tolist() == ["non-numeric feature f03='oops'"]
    assert len(pd.read_csv(tmp_path / "out.csv")) == len(bad) - 1
    result = invoke("predict", new, "--run", maxmargin, "--key", "id", "--features", "f*", "--output", "x.json",
                    "--store", store_path, ok=False)
    assert result.exit_code == 2
    assert "--output must end in .parquet, .pq, .csv, got 'x.json'" in result.output
    (tmp_path / "header.csv").write_text(",".join(pd.read_csv(new).columns) + "\n")
    result = invoke("predict", tmp_path / "header.csv", "--run", maxmargin, "--key", "id", "--features", "f*",
                    "--store", store_path, ok=False)
    assert result.exit_code == 1
    assert "header.csv has no rows" in result.output
    assert "ingest" not in result.output
    for line in result.output.strip().splitlines():
        assert "Traceback" not in line


@pytest.mark.neo4j
def test_predict_with_a_run_labelled_on_neo4j(tmp_path, neo4j_env):
    from test_neo4j_live import delete_dataset

    from graphstore import open_store

    dataset = f"predict{uuid.uuid4().hex[:8]}"
    fit, new, truth = split_csvs(tmp_path, load_digits, 1200)
    try:
        run_id = labelled_run(neo4j_env, dataset, fit)
        out = tmp_path / "predicted.parquet"
        invoke("predict", new, "--run", run_id, "--key", "id", "--features", "f*", "--output", out,
               "--store", neo4j_env)
        predicted = pd.read_parquet(out)
        accuracy = (predicted["predicted_label"].to_numpy() == truth.loc[predicted["key"]].to_numpy()).mean()
        assert len(predicted) == len(truth)
        assert accuracy > 0.95, accuracy
        harmonic = labelled_run(neo4j_env, dataset, fit, solver="harmonic")
        result = invoke("predict", new, "--run", harmonic, "--key", "id", "--features", "f*", "--store",
                        neo4j_env, ok=False)
        assert f"run {harmonic} kept no model (it is a harmonic run)" in result.output
        # --dataset: its newest run that kept a model, the maxmargin one, not the newer harmonic run
        result = invoke("predict", new, "--dataset", dataset, "--key", "id", "--features", "f*", "--output",
                        tmp_path / "by-dataset.parquet", "--store", neo4j_env)
        assert f"with run {run_id} of {dataset!r}" in " ".join(result.output.split())
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "by-dataset.parquet"), predicted)
    finally:
        with open_store(neo4j_env) as store:
            delete_dataset(store._driver, dataset, store.database)


@pytest.mark.usefixtures("prefect_harness")
def test_an_incremental_run_or_a_model_of_another_version_is_refused_in_one_line(tmp_path, store_path):
    fit, new, _ = split_csvs(tmp_path, load_wine, 120)
    full = labelled_run(store_path, "data", fit)
    # five new entities, then an incremental maxmargin run: its SVM saw the region only
    pd.read_csv(new).head(5).to_csv(tmp_path / "more.csv", index=False)
    invoke("ingest", tmp_path / "more.csv", "--dataset", "data", "--key", "id", "--features", "f*",
           "--store", store_path)
    output = invoke("label", "--dataset", "data", "--solver", "maxmargin", "--store", store_path).output
    assert "incremental run" in output
    incremental = re.search(r"run ([0-9a-f-]{36})", output).group(1)
    result = invoke("predict", new, "--run", incremental, "--key", "id", "--features", "f*", "--store",
                    store_path, ok=False)
    assert result.exit_code == 1
    assert f"run {incremental} kept no model (it is an incremental run" in result.output
    invoke("predict", new, "--run", full, "--key", "id", "--features", "f*", "--output", tmp_path / "ok.csv",
           "--store", store_path)
    # the full run's model rewritten as a later format version would be
    from graphstore import open_store
    from labelling.run_model import FORMAT_VERSION

    with open_store(store_path) as store:
        blob = store.read_model(full)
        with np.load(io.BytesIO(blob)) as arrays:
            parts = dict(arrays)
        parts["header"] = np.array(json.dumps({**json.loads(str(parts["header"])), "version": FORMAT_VERSION + 1}))
        buffer = io.BytesIO()
        np.savez(buffer, **parts)
        store.write_model(full, buffer.getvalue())
    result = invoke("predict", new, "--run", full, "--key", "id", "--features", "f*", "--store", store_path,
                    ok=False)
    assert result.exit_code == 1
    last = result.output.strip().splitlines()[-1]
    assert last.startswith(f"error: the stored model is 'graphlabel-maxmargin' version {FORMAT_VERSION + 1}")


@pytest.mark.usefixtures("prefect_harness")
def test_predict_with_text_uses_the_embedding_the_dataset_was_ingested_with(tmp_path, store_path):
    from test_text import text_frame

    frame = text_frame()
    stored, new = frame.iloc[:100].copy(), frame.iloc[100:]
    # a label on every 4th (25): with text_frame's every 8th (13 labels) the harmonic step
    # induced 0.85 of the stored topics right and the SVM got 0.70 of the new ones
    stored["label"] = np.where(np.arange(len(stored)) % 4 == 0, stored["topic"], "")
    stored.drop(columns="topic").to_csv(tmp_path / "texts.csv", index=False)
    new.drop(columns=["topic", "label"]).to_csv(tmp_path / "new.csv", index=False)
    invoke("ingest", tmp_path / "texts.csv", "--dataset", "texts", "--key", "id", "--text", "body", "--label",
           "label", "--store", store_path)
    # unscaled: the sentence embedding is made for cosine on its raw vectors (standardised
    # per dimension, 0.886 here against the 0.9 bound; README, Text)
    invoke("build-graph", "--dataset", "texts", "--k", "10", "--metric", "cosine", "--scale", "none",
           "--store", store_path)
    output = invoke("label", "--dataset", "texts", "--solver", "maxmargin", "--full", "--store", store_path).output
    run_id = re.search(r"run ([0-9a-f-]{36})", output).group(1)
    invoke("predict", tmp_path / "new.csv", "--run", run_id, "--key", "id", "--text", "body", "--output",
           tmp_path / "predicted.csv", "--store", store_path)
    predicted = pd.read_csv(tmp_path / "predicted.csv", dtype=str)
    accuracy = (predicted["predicted_label"].to_numpy() == new["topic"].to_numpy()).mean()
    assert len(predicted) == len(new)
    assert accuracy > 0.9, accuracy
    result = invoke("predict", tmp_path / "new.csv", "--run", run_id, "--key", "id", "--features", "id",
                    "--store", store_path, ok=False)
    assert result.exit_code == 1


def _vote_split(tmp_path, n_fit=360):
    """vote.arff shuffled (seed 0): the first ``n_fit`` rows (with the given labels among
    them) to ingest, the rest, unlabelled, to predict; one of those holds a vote value the
    run never saw."""
    from test_inputs import vote_frame

    frame, y = vote_frame()
    order = np.random.default_rng(0).permutation(len(y))
    frame, y = frame.iloc[order].reset_index(drop=True), y[order]
    fit, new = tmp_path / "vote_fit.csv", tmp_path / "vote_new.csv"
    frame.iloc[:n_fit].to_csv(fit, index=False)
    rest = frame.iloc[n_fit:].drop(columns="label").copy()
    rest.iloc[0, 1] = "abstained"  # not one of the fitted '?', 'n', 'y'
    rest.to_csv(new, index=False)
    return str(fit), str(new), pd.Series(y[n_fit:], index=rest["id"]), str(rest["id"].iloc[0])


def _predict_vote(store, dataset, tmp_path):
    fit, new, truth, unseen = _vote_split(tmp_path)
    invoke("ingest", fit, "--dataset", dataset, "--key", "id", "--categorical", "*", "--label", "label",
           "--store", store)
    invoke("build-graph", "--dataset", dataset, "--store", store)
    output = invoke("label", "--dataset", dataset, "--solver", "maxmargin", "--full", "--store", store).output
    run_id = re.search(r"run ([0-9a-f-]{36})", output).group(1)
    out, rejects = tmp_path / "vote_predicted.csv", tmp_path / "vote_rejects.csv"
    result = invoke("predict", new, "--run", run_id, "--key", "id", "--categorical", "*", "--output", out,
                    "--rejects", rejects, "--store", store)
    assert f"predicted {len(truth) - 1:,} records" in result.output
    assert "rejected 1 row," in result.output
    rejected = pd.read_csv(rejects)
    assert rejected["key"].tolist() == [unseen]
    assert rejected["kind"].tolist() == ["unseen category"]
    assert rejected["reason"].iloc[0] == ("handicapped-infants holds 'abstained', a value the run's model was not"
                                          " fitted with")  # the column's name (it said "categorical column 1")
    predicted = pd.read_csv(out, dtype={"key": str, "predicted_label": str}).set_index("key")
    accuracy = float((predicted["predicted_label"] == truth.loc[predicted.index]).mean())
    assert accuracy > 0.85, accuracy
    # fewer categorical columns than the run's would shift the one-hot: one line
    result = invoke("predict", new, "--run", run_id, "--key", "id", "--categorical", "crime", "--store", store,
                    ok=False)
    assert result.exit_code == 1
    assert "(16 categorical: 'handicapped-infants', " in result.output, result.output
    assert "these lack 'handicapped-infants', 'water-project-cost-sharing', " in result.output, result.output
    assert " and 9 more; leave --features" in " ".join(result.output.split())
    # the same records with their label column, as a person predicts a file shaped as the one
    # ingested: '*' takes the label column too, unless --label names it as at ingest
    labelled = tmp_path / "vote_new_labelled.csv"
    pd.read_csv(new, dtype=str).assign(label=truth.to_numpy()).to_csv(labelled, index=False)
    result = invoke("predict", labelled, "--run", run_id, "--key", "id", "--categorical", "*", "--store", store,
                    ok=False)
    assert "these add 'label'; leave --features" in " ".join(result.output.split()), result.output
    assert "name a label column in --label" in " ".join(result.output.split())
    again = tmp_path / "vote_predicted_again.csv"
    invoke("predict", labelled, "--run", run_id, "--key", "id", "--categorical", "*", "--label", "label",
           "--output", again, "--rejects", rejects, "--store", store)
    pd.testing.assert_frame_equal(pd.read_csv(again, dtype={"key": str}), pd.read_csv(out, dtype={"key": str}))
    return accuracy


def test_predict_encodes_categorical_columns_with_the_runs_vocabulary(tmp_path, store_path):
    """vote.arff's 16 y/n/? votes, one-hot beside nothing numeric: the run keeps its
    vocabulary, predict encodes new records with it, and a value outside it rejects the row."""
    print(f"vote, predict on the 74 records not stored: accuracy {_predict_vote(store_path, 'vote', tmp_path):.3f}")


@pytest.mark.neo4j
def test_predict_encodes_categorical_columns_on_neo4j(tmp_path, neo4j_env):
    from test_neo4j_live import delete_dataset

    from graphstore import open_store

    dataset = f"predictvote{uuid.uuid4().hex[:8]}"
    try:
        _predict_vote(neo4j_env, dataset, tmp_path)
    finally:
        with open_store(neo4j_env) as store:
            delete_dataset(store._driver, dataset, store.database)
