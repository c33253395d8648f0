"""A dataset's feature columns are matched by name (labelling/feature_columns.py): a second
ingest or a ``predict`` of scikit-learn's wine with its 13 columns reversed reads them in
the dataset's order, and a renamed column is refused in one line with nothing stored. Before,
both were checked by count only: the reversed file was stored permuted, and ``predict``
gave every record of it ``barolo``, exit status 0. On the embedded store through the CLI,
and on a live Neo4j 5.26 + GDS 2.13 through the same commands."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from test_inputs import wine_frame
from typer.testing import CliRunner

from graphlabel.cli import app
from labelling.feature_columns import FeatureColumns, FeatureColumnsDiffer, RecordedColumns
from labelling.records import parse_records, record_columns

runner = CliRunner()

NAMES = ["id", "a", "b", "c", "colour", "label"]


def invoke(*args, ok=True):
    result = runner.invoke(app, [str(a) for a in args])
    if ok:
        assert result.exit_code == 0, result.output
    return result


def said(result) -> str:
    return " ".join(result.output.split())


def recorded(numeric=("a", "b", "c"), text=None, categorical=("colour",)) -> RecordedColumns:
    return RecordedColumns(FeatureColumns(numeric, text, categorical), "dataset 'd' was ingested with", "do X")


# -- the rule ---------------------------------------------------------------------------------


def test_the_same_columns_in_another_order_are_taken_in_the_recorded_order():
    spec = record_columns(NAMES, key="id", features="c,a,b", categorical="colour", label="label",
                          recorded=recorded())
    assert spec.features == ["a", "b", "c"]
    assert spec.categorical == ["colour"]
    # a glob resolves to the file's order first; the record's order wins
    spec = record_columns(["id", "c", "b", "a", "colour"], key="id", features="*", categorical="colour",
                          recorded=recorded())
    assert spec.features == ["a", "b", "c"]


@pytest.mark.parametrize(("features", "categorical", "expected"), [
    ("a,b,x", "colour", "these lack 'c' and add 'x'; do X"),
    ("a,b", "colour", "these lack 'c'; do X"),
    ("a,b,c,colour", None, "'colour' is numeric here, categorical there; do X"),
])
def test_other_columns_are_refused_in_one_line_naming_them(features, categorical, expected):
    names = [*NAMES, "x"]
    with pytest.raises(FeatureColumnsDiffer) as error:
        record_columns(names, key="id", features=features, categorical=categorical, recorded=recorded())
    message = str(error.value)
    assert message.startswith("the feature columns are not the ones dataset 'd' was ingested with"
                              " (3 numeric: 'a', 'b', 'c'; 1 categorical: 'colour'): ")
    assert message.endswith(expected)
    assert "\n" not in message


def test_the_record_reads_back_and_a_list_column_is_one_name():
    columns = FeatureColumns(("pixels",), "body", ("colour", "size"))
    assert FeatureColumns.from_record(columns.as_record()) == columns
    assert FeatureColumns.from_record(None) is None
    frame = pd.DataFrame({"id": ["a", "b"], "pixels": [[1.0, 2.0], [3.0, 4.0]]})
    assert parse_records(frame, key="id", features="pixels").columns == FeatureColumns(("pixels",))


def test_a_different_order_already_parsed_is_refused_by_a_dataset_with_nodes(store_path):
    """``ingest_parsed`` takes records parsed without the record (the demo's, the Python
    API's): their features are already in the file's order, so another order is refused."""
    from flows.labelling import ingest_parsed
    from graphstore import open_store

    frame, columns, _ = wine_frame()
    with open_store(store_path, create=True) as store:
        ingest_parsed(store, "wine", parse_records(frame.iloc[:100], key="id", features=columns, label="label"),
                      None)
        reversed_records = parse_records(frame.iloc[100:], key="id", features=columns[::-1], label="label")
        with pytest.raises(FeatureColumnsDiffer, match="the same columns in another order"):
            ingest_parsed(store, "wine", reversed_records, None)
        assert store.count_nodes("wine") == 100


# -- through the CLI, on each store ----------------------------------------------------------


def wine_files(tmp_path):
    """The first 150 wine rows, and the other 28 three ways: the columns as the first, the
    columns reversed, and 'alcohol' renamed; the truth of the 28."""
    frame, columns, y = wine_frame()
    later = frame.iloc[150:].drop(columns="label")
    paths = {"first": frame.iloc[:150], "same": later, "reversed": later[["id", *columns[::-1]]],
             "renamed": later.rename(columns={"alcohol": "alcool"})}
    for name, table in paths.items():
        table.to_csv(tmp_path / f"{name}.csv", index=False)
    return {name: str(tmp_path / f"{name}.csv") for name in paths}, columns, y[150:]


def stored_features(store_uri: str, dataset: str) -> pd.DataFrame:
    from graphstore import open_store

    with open_store(store_uri) as store:
        graph = store.read_subgraph(dataset, with_edges=False)
    return pd.DataFrame(graph.features, index=graph.keys)


def check_columns_matched_by_name(tmp_path, store: str, dataset: str):
    files, columns, _ = wine_files(tmp_path)
    ingest = ("ingest", "--dataset", dataset, "--key", "id", "--store", store)
    invoke(*ingest[:1], files["first"], *ingest[1:], "--features", "*", "--label", "label")
    invoke(*ingest[:1], files["reversed"], *ingest[1:], "--features", "*")
    frame, _, _ = wine_frame()
    np.testing.assert_array_equal(stored_features(store, dataset).sort_index().to_numpy(),
                                  frame.set_index("id")[columns].sort_index().to_numpy())
    refused = invoke(*ingest[:1], files["renamed"], *ingest[1:], "--features", "*", ok=False)
    assert refused.exit_code == 1
    assert f"error: the feature columns are not the ones dataset {dataset!r} was ingested with (13 numeric:" \
        in said(refused)
    assert "these lack 'alcohol' and add 'alcool'; ingest the columns it has" in said(refused)

    # predict: the run's model keeps the names; without --features it reads them by name
    invoke("build-graph", "--dataset", dataset, "--store", store)
    run = re.search(r"run ([0-9a-f-]{36})", invoke("label", "--dataset", dataset, "--solver", "maxmargin",
                                                   "--full", "--store", store).output).group(1)
    outputs = {}
    for name in ("same", "reversed"):
        for options in ((), ("--features", "*")):
            out = tmp_path / f"{name}{len(options)}.csv"
            invoke("predict", files[name], "--run", run, "--key", "id", "--output", out, "--store", store, *options)
            outputs[name, options] = pd.read_csv(out)
    first = outputs["same", ()]
    assert len(first) == 28
    for frame_ in outputs.values():
        pd.testing.assert_frame_equal(frame_, first)
    refused = invoke("predict", files["renamed"], "--run", run, "--key", "id", "--features", "*", "--store", store,
                     ok=False)
    assert f"the feature columns are not the ones run {run}'s model was fitted on" in said(refused)
    assert "these lack 'alcohol' and add 'alcool'; leave --features" in said(refused)
    assert "name a label column in --label" in said(refused)
    return first


@pytest.mark.usefixtures("prefect_harness")
def test_a_reversed_file_is_stored_and_predicted_in_the_datasets_order(tmp_path, store_path):
    from graphstore import open_store

    predicted = check_columns_matched_by_name(tmp_path, store_path, "wine")
    _, _, truth = wine_files(tmp_path)
    names = {str(c) for c in range(3)}
    assert set(predicted["predicted_label"].astype(str)) <= names
    # the reversed columns, read by count, gave every record one class; by name it is wine
    assert (predicted["predicted_label"].astype(str).to_numpy() == truth.astype(str)).mean() > 0.8
    with open_store(store_path) as store:
        assert FeatureColumns.from_record(store.read_feature_columns("wine")).numeric[0] == "alcohol"


@pytest.mark.usefixtures("prefect_harness")
def test_a_dataset_without_nodes_takes_the_next_columns_and_one_without_a_record_gets_one(tmp_path, store_path):
    from graphstore import open_store

    files, columns, _ = wine_files(tmp_path)
    frame, _, _ = wine_frame()
    with open_store(store_path, create=True) as store:
        # a dataset stored before the record existed: nodes, no record
        store.write_nodes("old", parse_records(frame.iloc[:150], key="id", features=columns).nodes)
        store.write_feature_columns("gone", FeatureColumns(("x", "y")).as_record())  # its nodes were deleted
    for dataset in ("old", "gone"):
        invoke("ingest", files["same"], "--dataset", dataset, "--key", "id", "--features", "*", "--store",
               store_path)
        with open_store(store_path) as store:
            assert FeatureColumns.from_record(store.read_feature_columns(dataset)) == FeatureColumns(tuple(columns))
    invoke("drop-dataset", "--dataset", "gone", "--yes", "--store", store_path)
    with open_store(store_path) as store:
        assert store.read_feature_columns("gone") is None
        assert store.read_feature_columns("old") is not None


@pytest.mark.neo4j
@pytest.mark.usefixtures("prefect_harness")
def test_a_reversed_file_is_stored_and_predicted_in_the_datasets_order_on_neo4j(tmp_path, neo4j_env, dataset):
    from graphstore import open_store

    check_columns_matched_by_name(tmp_path, neo4j_env, dataset)
    with open_store(neo4j_env) as store:
        store.drop_dataset(dataset)
        assert store.read_feature_columns(dataset) is None
