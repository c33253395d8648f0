"""The embedded store and ``open_store`` refuse bad names before anything runs.

The Kùzu connection is wrapped in a recorder, so "refused before executing" is checked
against what the database was actually asked to do, not against the error alone.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from engines import ENGINE

from graphstore import open_store
from graphstore.kuzu_store import DEFAULT_ENGINE
from graphstore.schemas import EDGE_SCHEMA, NODE_SCHEMA, PREDICTION_SCHEMA

HOSTILE_DATASETS = ["", "a:b", "x' OR 1=1 //", "1st", "a b", "ds`) DETACH DELETE e //", "a" * 65, "../x",
                    "ds\nMATCH (n) DETACH DELETE n", None, 7]


class RecordingConnection:
    """Passes every call to the real Kùzu connection and records each query executed."""

    def __init__(self, connection):
        self.connection = connection
        self.executed = []

    def execute(self, query, *args, **kwargs):
        self.executed.append(query)
        return self.connection.execute(query, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.connection, name)


def test_hostile_dataset_names_never_reach_kuzu(embedded_store):
    recorder = embedded_store._conn = RecordingConnection(embedded_store._conn)
    nodes = pa.table({"key": ["a", "b"], "features": [[1.0], [2.0]], "label": ["x", None]}).cast(NODE_SCHEMA)
    edges = pa.table({"source": ["a"], "target": ["b"], "weight": [1.0]}).cast(EDGE_SCHEMA)
    rows = pa.table({"key": ["a"], "predicted_label": ["x"], "label_confidence": [1.0], "label_noise": [False],
                     "label_run_id": ["r"], "label_solver": ["harmonic"],
                     "labelled_at": [dt.datetime(2026, 1, 1)]}).cast(PREDICTION_SCHEMA)
    calls = (("write_nodes", (nodes,)), ("replace_edges", (edges,)), ("read_subgraph", ()),
             ("count_nodes", ()), ("write_predictions", (rows,)))
    for bad in HOSTILE_DATASETS:
        for method, args in calls:
            with pytest.raises(ValueError, match="invalid dataset name"):
                getattr(embedded_store, method)(bad, *args)
    assert recorder.executed == []
    # the recorder does see queries: a good name goes through, and stores the nodes
    assert embedded_store.write_nodes("fine.name-1", nodes) == 2
    assert embedded_store.count_nodes("fine.name-1") == 2
    assert recorder.executed


@pytest.mark.parametrize("uri", ["http://alice:s3cret@example.org/x", "NEO4J://alice:s3cret@db:7687",
                                 "file:///tmp/store", "s3://bucket/store"])
def test_unknown_store_schemes_are_refused_not_made_into_folders(uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="unsupported store URI") as caught:
        open_store(uri)
    assert "s3cret" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # no Kùzu folder named after the URI


@pytest.mark.parametrize("uri", ["127.0.0.1:7687", "localhost:7687", "db.example.org:7687"])
def test_a_server_address_without_its_scheme_is_refused_not_made_into_a_folder(uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=f"looks like a server's address: a Neo4j store is bolt://{uri}"
                                         rf" \(or neo4j://{uri}\); an embedded store's folder of that name is"
                                         f" {DEFAULT_ENGINE}://{uri}"):
        open_store(uri, create=True)
    assert list(tmp_path.iterdir()) == []
    with open_store(f"{ENGINE}://{uri}", create=True) as store:  # a folder of that name, said so
        assert store.count_nodes("toy") == 0
    with open_store(uri) as store:  # and once it exists, by its name too
        assert store.count_nodes("toy") == 0


def test_engine_uris_and_plain_folders_still_open(tmp_path):
    for uri in (f"{ENGINE}://{tmp_path / 'a'}", str(tmp_path / "b@2024")):  # '@' is fine in a folder name
        with open_store(uri, create=True) as store:
            assert store.count_nodes("toy") == 0
